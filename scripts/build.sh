#!/usr/bin/env bash
# Configures and builds ringgrad in build/ (Release, ccache, CUDA when the toolkit is found).
#   bash scripts/build.sh                        # everything: libraries, apps, tests, benchmarks
#   bash scripts/build.sh --target train_cifar   # only that program and what it links
# Other arguments go to CMake, e.g. scripts/build.sh -DRG_CUDA=OFF
set -euo pipefail
cd "$(dirname "$0")/.."
targets=() cmake_args=()
while (($#)); do
  case "$1" in
    --target) targets+=(--target "$2"); shift 2 ;;
    --target=*) targets+=(--target "${1#--target=}"); shift ;;
    *) cmake_args+=("$1"); shift ;;
  esac
done
bash scripts/setup.sh
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
cmake -S . -B build "${cmake_args[@]}" >/dev/null
cmake --build build -j"$(nproc)" "${targets[@]}"
