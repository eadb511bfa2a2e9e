#!/usr/bin/env bash
# ThreadSanitizer over ringgrad's threads. First the emulated CUDA kernels: every CUDA thread is
# an OS thread in the emulator, so a missing __syncthreads (or any unordered shared-memory
# access) is a data race that TSan reports. Then the host threads: the thread pool (core), the
# DataLoader's workers (data), ThreadGroup's collectives, DataParallel's device threads and
# DDP and SyncBatchNorm over ThreadGroup (parallel). Builds a CPU-only TSan tree in build-tsan
# (ccache keeps reruns quick), runs those tests, plus a deliberately racy kernel that TSan must
# catch. (The CPU-only build's device errors, Spec/DeviceErrors.*, run in scripts/asan.sh's tree,
# CPU-only too, with the rest of test_ops.)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
# Portable code (RG_NATIVE=OFF): GCC 12 misreads AVX-512 intrinsics as uninitialised under TSan.
# Line tables only (-g1): file:line in every report, and a cold tree compiles faster than -g.
cmake -S . -B build-tsan -DRG_CUDA=OFF -DRG_NATIVE=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS="-fsanitize=thread" >/dev/null
cmake --build build-tsan -j"$(nproc)" --target test_kernels tsan_missing_syncthreads \
  test_core test_data test_parallel
cd build-tsan
# halt_on_error: the first race fails the run. The pointwise ops' functors (the pointwise engine's
# kernel, Spec/PointwiseKernels.*) and the collectives' elementwise kernels are left out: they have
# no barrier and no shared memory (each thread writes only its own elements), and their launches
# take minutes under TSan; the emulator and barrier-heavy kernels, ops' own kernels included
# (Spec/EmulatedKernels.*), run in full.
TSAN_OPTIONS="halt_on_error=1" ./tests/test_kernels \
  --gtest_filter=-Spec/PointwiseKernels.*:CollectiveKernels.*
ctest --output-on-failure -R '^kernels\.tsan'
# The host threads (Random.SeededAndIndependentOfThreadCount restarts the pool at another size).
TSAN_OPTIONS="halt_on_error=1" ./tests/test_core \
  --gtest_filter='ThreadPool.*:Random.SeededAndIndependentOfThreadCount'
TSAN_OPTIONS="halt_on_error=1" ./tests/test_data --gtest_filter='DataLoader.*'
# DDP and SyncBatchNorm run their ranks as threads over ThreadGroup, with DDP's allreduces
# overlapping backward.
TSAN_OPTIONS="halt_on_error=1" ./tests/test_parallel \
  --gtest_filter='ThreadGroup.*:DataParallel.*:DDP.*:SyncBatchNorm.*'
