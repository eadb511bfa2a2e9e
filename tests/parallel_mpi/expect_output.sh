#!/usr/bin/env bash
# Runs a command and checks how it ended — for tests whose command is meant to fail:
#   expect_output.sh --max-seconds S (whole seconds) --exit zero|nonzero|any|N [--expect REGEX]... -- COMMAND...
# Passes when COMMAND ended within S seconds, with that kind of exit status (or exactly N), and its output
# (stdout and stderr together) has a line matching each REGEX (grep -E). Prints the output and
# what was wrong.
set -uo pipefail

max_seconds="" exit_kind="" patterns=()
while (($#)); do
  case "$1" in
    --max-seconds) max_seconds="$2"; shift 2 ;;
    --exit) exit_kind="$2"; shift 2 ;;
    --expect) patterns+=("$2"); shift 2 ;;
    --) shift; break ;;
    *) echo "expect_output.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -n "$max_seconds" && -n "$exit_kind" && $# -gt 0 ]] || {
  echo "usage: expect_output.sh --max-seconds S --exit zero|nonzero|any|N [--expect REGEX]... -- COMMAND..." >&2
  exit 2
}

output=$(mktemp)
trap 'rm -f "$output"' EXIT
start=$(date +%s%N)
# A hang is what this guards against: give up well after the limit, never wait forever.
timeout --kill-after=5 $((max_seconds + 20)) "$@" >"$output" 2>&1
status=$?
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
cat "$output"
echo "---- expect_output.sh: exit status $status after $elapsed_ms ms"

ok=1
if [[ "$exit_kind" == zero && $status -ne 0 ]] || [[ "$exit_kind" == nonzero && $status -eq 0 ]]; then
  echo "FAIL: expected a $exit_kind exit status, got $status"; ok=0
elif [[ $exit_kind =~ ^[0-9]+$ ]] && ((status != exit_kind)); then
  echo "FAIL: expected exit status $exit_kind, got $status"; ok=0
fi
if ((elapsed_ms > max_seconds * 1000)); then
  echo "FAIL: took $elapsed_ms ms, more than $max_seconds s"; ok=0
fi
for p in "${patterns[@]}"; do
  grep -Eq -- "$p" "$output" || { echo "FAIL: no line matches: $p"; ok=0; }
done
((ok)) && echo "PASS" && exit 0
exit 1
