#!/usr/bin/env bash
# scripts/train.sh keeps the quick recipe when a user adds flags, runs another recipe only when
# named, and says which on its first line (issue 42: `train.sh --no-progress` used to drop the
# preset and start the 200-epoch classic recipe).
set -euo pipefail
cd "$(dirname "$0")/../.."
export RINGGRAD_TRAIN_DRY_RUN=1
failures=0
# It builds only what training needs (issue 53: a fresh machine built every test and benchmark
# before the first epoch).
build="bash scripts/build.sh --target train_cifar"
expect() {  # expect "ARGS" "FIRST LINE" "COMMAND"
  local out first built cmd
  # shellcheck disable=SC2086
  out=$(bash scripts/train.sh $1)
  first=$(sed -n 1p <<<"$out")
  built=$(sed -n 2p <<<"$out")
  cmd=$(sed -n 3p <<<"$out")
  if [[ $first != "$2" || $built != "$build" || $cmd != "$3" ]]; then
    echo "FAIL: train.sh $1"
    echo "  first line: '$first' (expected '$2')"
    echo "  build:      '$built' (expected '$build')"
    echo "  command:    '$cmd' (expected '$3')"
    failures=$((failures + 1))
  fi
}
exe=./build/apps/train_cifar
expect "" "train.sh: the quick recipe (train_cifar --preset quick)" "$exe --preset quick"
expect "--no-progress" "train.sh: the quick recipe (train_cifar --preset quick), changed by: --no-progress" \
  "$exe --preset quick --no-progress"
expect "--amp O1 --out /tmp/x" \
  "train.sh: the quick recipe (train_cifar --preset quick), changed by: --amp O1 --out /tmp/x" \
  "$exe --preset quick --amp O1 --out /tmp/x"
expect "--preset airbench94 --amp O1" \
  "train.sh: the airbench94 recipe (train_cifar --preset airbench94), changed by: --amp O1" \
  "$exe --preset airbench94 --amp O1"
expect "--epochs 2 --preset=classic" \
  "train.sh: the classic recipe (train_cifar --preset classic), changed by: --epochs 2" \
  "$exe --epochs 2 --preset=classic"
out=$(bash scripts/train.sh --help)
[[ $out == "$build"$'\n'"$exe --help" ]] || { echo "FAIL: train.sh --help printed '$out'"; failures=$((failures + 1)); }
((failures == 0)) && echo "train.sh: all cases pass"
exit $((failures > 0))
