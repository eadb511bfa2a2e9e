#!/usr/bin/env bash
# The emulated CUDA kernels under ThreadSanitizer: every CUDA thread is an OS thread in the
# emulator, so a missing __syncthreads (or any unordered shared-memory access) is a data race
# that TSan reports. Builds a CPU-only TSan tree in build-tsan (ccache keeps reruns quick) and
# runs the kernel tests, plus a deliberately racy kernel that TSan must catch; also checks the
# CPU-only build's device errors.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
# Portable code (RG_NATIVE=OFF): GCC 12 misreads AVX-512 intrinsics as uninitialised under TSan.
cmake -S . -B build-tsan -DRG_CUDA=OFF -DRG_NATIVE=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS="-fsanitize=thread" >/dev/null
cmake --build build-tsan -j"$(nproc)" --target test_kernels tsan_missing_syncthreads test_ops
cd build-tsan
# halt_on_error: the first race fails the run. The all-functor pointwise test and the
# collectives' elementwise kernels are left out: they have no barrier and no shared memory (each
# thread writes only its own elements), and their launches take minutes under TSan; the emulator
# and barrier-heavy kernels run in full.
TSAN_OPTIONS="halt_on_error=1" ./tests/test_kernels \
  --gtest_filter=-PointwiseKernel.EveryFunctorMatchesTheCpuLoop:CollectiveKernels.*
ctest --output-on-failure -R '^kernels\.tsan'
# This tree is also CI's CPU-only build (RG_CUDA=OFF): the ops link without any CUDA symbol, and
# refuse cuda tensors with this build's errors.
./tests/test_ops --gtest_filter='OpsOnDevices.*'
