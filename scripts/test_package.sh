#!/usr/bin/env bash
# The CMake package's test (CI runs it): builds ringgrad's libraries CPU-only in build-package/,
# installs them with `cmake --install` into a temporary prefix, then configures, builds and runs
# tests/downstream against that prefix alone (find_package(ringgrad) -> ringgrad::ringgrad): a
# project with its own op in its own folder that trains a small model with it.
# Where build/ holds a CUDA build (scripts/build.sh), its package is installed too and the same
# downstream project is built against it — the op's CUDA kernel compiled by nvcc, everything
# linked to cudart, cuBLAS, cuDNN and NCCL — and run (its CPU work runs without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
tmp=$(mktemp -d /tmp/rg_package.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1

cmake -S . -B build-package -DRG_CUDA=OFF -DRG_NATIVE=OFF >/dev/null
cmake --build build-package -j"$(nproc)" --target rg_train rg_emulator
cmake --install build-package --prefix "$tmp/cpu" >/dev/null
# Nothing of the source tree leaks into the package: the downstream build sees only the prefix.
if grep -rq "$PWD" "$tmp/cpu/lib/cmake/ringgrad"; then
  echo "test_package: the installed package refers to the source tree:"
  grep -rn "$PWD" "$tmp/cpu/lib/cmake/ringgrad"
  exit 1
fi
# The version: 0.1 is found, 0.2 (another minor version of a 0.x API) is refused.
mkdir -p "$tmp/version_probe"
cat >"$tmp/version_probe/CMakeLists.txt" <<'PROBE'
cmake_minimum_required(VERSION 3.25)
project(version_probe LANGUAGES CXX)
find_package(ringgrad 0.1 REQUIRED)
find_package(ringgrad 0.2 QUIET)
if(ringgrad_FOUND)
  message(FATAL_ERROR "ringgrad 0.1 claims to satisfy 0.2")
endif()
PROBE
cmake -S "$tmp/version_probe" -B "$tmp/version_probe/build" -DCMAKE_PREFIX_PATH="$tmp/cpu" >/dev/null
downstream() {  # PREFIX BUILD_DIR
  (cd "$tmp" && cmake -S "$OLDPWD/tests/downstream" -B "$2" -DCMAKE_PREFIX_PATH="$1" \
    -DCMAKE_BUILD_TYPE=Release >/dev/null)
  cmake --build "$tmp/$2" -j"$(nproc)"
  ctest --test-dir "$tmp/$2" --output-on-failure
}
downstream "$tmp/cpu" downstream-cpu
echo "test_package: CPU package passed in $((SECONDS - start)) s"

if grep -qs 'kWithCuda = true' build/generated/core/config.h; then
  cmake --build build -j"$(nproc)" --target rg_train rg_emulator
  cmake --install build --prefix "$tmp/cuda" >/dev/null
  grep -q 'set(RINGGRAD_WITH_CUDA ON)' "$tmp/cuda/lib/cmake/ringgrad/ringgradConfig.cmake"
  downstream "$tmp/cuda" downstream-cuda
  echo "test_package: CUDA package passed in $((SECONDS - start)) s"
else
  echo "test_package: no CUDA build in build/: the CUDA package is not tested"
fi
