#!/usr/bin/env bash
# The core and data test suites under AddressSanitizer + UndefinedBehaviorSanitizer (with
# LeakSanitizer), in the clang tree of scripts/sanitizer_build.sh that the fuzzers share:
#   bash scripts/asan.sh [SUITE...]     # default: core data (test_core, test_data)
# These are the suites of the readers of outside data (safetensors, CIFAR, images, CSV lists)
# and of the tensor core every other layer stands on; tests/README.md says why the others are
# left out of CI and how long this takes. Any sanitizer report fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
suites=("$@")
((${#suites[@]})) || suites=(core data)

source scripts/sanitizer_build.sh
cmake --build build-fuzz -j"$(nproc)" --target "${suites[@]/#/test_}"

# Leaks inside Open MPI's own plugins are suppressed (scripts/lsan_openmpi.supp); ringgrad's
# never are. halt_on_error: the first report ends the suite with a failure.
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=0:strict_string_checks=1"
export LSAN_OPTIONS="suppressions=$PWD/scripts/lsan_openmpi.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
for s in "${suites[@]}"; do
  echo "asan: test_$s"
  opts=$ASAN_OPTIONS
  # Suites linked with Open MPI: full stacks, so that its leaks reach the suppressed libraries.
  [[ $s == parallel || $s == apps ]] && opts+=":fast_unwind_on_malloc=0"
  (cd build-fuzz/tests && ASAN_OPTIONS=$opts "./test_$s" --gtest_brief=1)
done
echo "asan: ${suites[*]} clean under ASan+UBSan"
