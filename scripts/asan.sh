#!/usr/bin/env bash
# The test suites under AddressSanitizer + UndefinedBehaviorSanitizer (with LeakSanitizer), in
# the clang tree of scripts/sanitizer_build.sh that the fuzzers share:
#   bash scripts/asan.sh [SUITE...]     # default: all of them (CI)
# Suites: core data ops nn optim parallel train apps kernels — each test program run whole —
# and mpi: the CTest tests of tests/parallel_mpi (test_parallel_mpi under mpirun with 1-4
# ranks, the fault jobs, train_cifar's fault runs, the launchers, the chaos test) and
# check_equivalence's (DP and DDP against one device) with the instrumented programs. Any
# sanitizer report fails the run; tests/README.md has what they found and the times. The tree
# is CPU-only: test_ops is also CI's run of the ops' device errors in a build without CUDA
# (Spec/DeviceErrors.*).
set -euo pipefail
cd "$(dirname "$0")/.."
suites=("$@")
((${#suites[@]})) || suites=(core data ops nn optim parallel train apps kernels mpi)

targets=()
for s in "${suites[@]}"; do
  case $s in
    mpi) targets+=(test_parallel_mpi mpi_faults train_cifar chaos_check check_equivalence) ;;
    core | data | ops | nn | optim | parallel | train | apps | kernels) targets+=("test_$s") ;;
    *) echo "asan.sh: unknown suite '$s' (core data ops nn optim parallel train apps kernels mpi)" >&2
       exit 2 ;;
  esac
done
source scripts/sanitizer_build.sh
cmake --build build-fuzz -j"$(nproc)" --target "${targets[@]}"

# halt_on_error: the first report ends the program with a failure. Leaks inside Open MPI's own
# libraries are suppressed (scripts/lsan_openmpi.supp), ringgrad's never are.
base_options="detect_leaks=1:halt_on_error=1:abort_on_error=0:strict_string_checks=1"
export LSAN_OPTIONS="suppressions=$PWD/scripts/lsan_openmpi.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
for s in "${suites[@]}"; do
  start=$SECONDS
  export ASAN_OPTIONS=$base_options
  # Programs linked with Open MPI (rg_parallel and above): full stacks, so that its leaks reach
  # the suppressed libraries — with the fast unwinder most of them stop in a plugin that
  # MPI_Finalize has unloaded ("<unknown module>") and match nothing.
  case $s in parallel | train | apps | kernels | mpi) ASAN_OPTIONS+=":fast_unwind_on_malloc=0" ;; esac
  if [[ $s == mpi ]]; then
    echo "asan: the MPI tests (ctest -R '^(parallel_mpi|check_equivalence)\.')"
    # The ranks inherit the sanitizers' options from mpiexec's environment.
    (cd build-fuzz &&
      ctest -R '^(parallel_mpi|check_equivalence)\.' -j"$(nproc)" --output-on-failure --timeout 600)
  else
    echo "asan: test_$s"
    if [[ $s == nn ]]; then
      # The zoo's parity with PyTorch runs 39 full-size models in f64: minutes each in this
      # portable, instrumented tree (CI passed 13 min in test_nn and stopped it). Five small
      # models cover the zoo's blocks (depthwise and grouped convolutions, SE gates, channel
      # shuffle, drop-connect, concatenation); CTest runs all 39 in the plain build.
      few="lenet:mobilenet:shufflenetv2:efficientnetb0:regnetx_200mf"
      (cd build-fuzz/tests && ./test_nn --gtest_brief=1 --gtest_filter='-PyTorchCifar/ZooParity.*' &&
        ./test_nn --gtest_brief=1 \
          --gtest_filter="$(sed 's|[^:]*|PyTorchCifar/ZooParity.MatchesPyTorchForwardAndOneTrainStep/&|g' <<<"$few")")
    elif [[ $s == apps ]]; then
      # Likewise the zoo's whole train_cifar runs (11 models): two small ones here.
      (cd build-fuzz/tests &&
        ./test_apps --gtest_brief=1 --gtest_filter='-PyTorchCifar/TrainCifarZoo.*' &&
        ./test_apps --gtest_brief=1 --gtest_filter='PyTorchCifar/TrainCifarZoo.*/lenet:PyTorchCifar/TrainCifarZoo.*/shufflenetv2')
    else
      (cd build-fuzz/tests && "./test_$s" --gtest_brief=1)
    fi
  fi
  echo "asan: $s clean in $((SECONDS - start)) s"
done
echo "asan: ${suites[*]} clean under ASan+UBSan"
