#!/usr/bin/env bash
# Configures and builds ringgrad in build/ (Release, ccache, CUDA when the toolkit is found).
# Extra arguments go to CMake, e.g. scripts/build.sh -DRG_CUDA=OFF
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
cmake -S . -B build "$@" >/dev/null
cmake --build build -j"$(nproc)"
