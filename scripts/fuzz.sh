#!/usr/bin/env bash
# Fuzzes every reader of outside data (tests/fuzz) for SECONDS each (default 60):
#   bash scripts/fuzz.sh [SECONDS] [TARGET...]    # targets: safetensors image cifar_binary
#                                                 #   csv_list image_folder npy mask class_map
#                                                 #   model_card config
# Builds an instrumented clang build in build-fuzz/ (libFuzzer, AddressSanitizer,
# UndefinedBehaviorSanitizer; the first build takes a while), starts each target from its
# committed seeds (tests/fuzz/corpus/<target>) plus what earlier runs found
# (build-fuzz/corpus/<target>), and writes any crashing input to build-fuzz/findings/<target>/.
# Exits non-zero when a target found something.
# FUZZ_RUNS=N stops each target after N executions instead (the long runs of tests/README.md);
# FUZZ_ARGS adds libFuzzer flags, e.g. FUZZ_ARGS=-max_len=512.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(safetensors image cifar_binary csv_list image_folder npy mask class_map
  model_card config)

# Two fuzz.sh at once (one lane per core) must not configure and build the tree together:
# CMake's MPI probe fails when two configures share build-fuzz/.
mkdir -p build-fuzz
(
  flock 9
  source scripts/sanitizer_build.sh
  cmake --build build-fuzz -j"$(nproc)" --target "${targets[@]/#/fuzz_}"
) 9>build-fuzz/.build.lock

limit=(-max_total_time="$seconds") length="${seconds}s"
[[ -n ${FUZZ_RUNS:-} ]] && limit=(-runs="$FUZZ_RUNS") length="$FUZZ_RUNS executions"
read -r -a extra <<<"${FUZZ_ARGS:-}"
# The readers write each input to a temporary file: in memory it runs twice as fast.
[[ -d /dev/shm && -w /dev/shm ]] && export TMPDIR=/dev/shm

failed=()
for t in "${targets[@]}"; do
  mkdir -p "build-fuzz/corpus/$t" "build-fuzz/findings/$t"
  log="build-fuzz/findings/$t/last_run.log"
  echo "fuzz: $t for $length"
  if ASAN_OPTIONS=detect_leaks=1 "build-fuzz/tests/fuzz/fuzz_$t" "${limit[@]}" "${extra[@]}" \
      -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="build-fuzz/findings/$t/" \
      "build-fuzz/corpus/$t" "tests/fuzz/corpus/$t" >"$log" 2>&1; then
    echo "fuzz: $t: $(grep -m1 number_of_executed_units "$log" | awk '{print $2}') executions, no finding"
  else
    echo "fuzz: $t: FOUND something, see $log and build-fuzz/findings/$t/"
    grep -m3 -E "ERROR|SUMMARY" "$log" || true
    failed+=("$t")
  fi
done
((${#failed[@]} == 0)) || { echo "fuzz: findings in ${failed[*]}"; exit 1; }
echo "fuzz: all ${#targets[@]} targets clean"
