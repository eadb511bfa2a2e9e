#!/usr/bin/env bash
# Configures build-fuzz/: the one clang tree of AddressSanitizer + UndefinedBehaviorSanitizer
# with libFuzzer's coverage instrumentation (-fsanitize=fuzzer-no-link), CPU-only and portable.
# scripts/fuzz.sh links the fuzz targets in it and scripts/asan.sh the test suites, so CI
# compiles each library once for both. Sourced, not run: it leaves the caller in the root.
bash scripts/setup.sh fuzz
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
# A UBSan report is an error, not a line in the log.
rg_san_flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined"
# clang knows neither GCC's -Wno-restrict nor, without -march, the AVX-512 kernels' ABI.
rg_san_flags+=" -fno-omit-frame-pointer -Wno-unknown-warning-option -Wno-psabi"
# Line tables only (not full debug info): enough for file:line in every report, and the
# whole tree (every suite, for scripts/asan.sh) compiles and links faster.
cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG" \
  -DRG_CUDA=OFF -DRG_NATIVE=OFF -DRG_FUZZ=ON -DCMAKE_CXX_FLAGS="$rg_san_flags" >/dev/null
