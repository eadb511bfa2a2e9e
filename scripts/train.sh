#!/usr/bin/env bash
# The main job: installs what is missing, builds, and trains on CIFAR-10.
# The recipe is the quick preset unless the arguments name another with --preset; every other
# argument changes that recipe (a flag, --set key=value, --config FILE):
#   bash scripts/train.sh                        # the quick recipe
#   bash scripts/train.sh --amp O1 --no-progress # the quick recipe at O1, without the bar
#   bash scripts/train.sh --preset airbench94    # another recipe, named
# It builds train_cifar alone (and the libraries it links), not the tests and benchmarks: on a
# fresh 2-core machine that is the difference between minutes and most of the first quarter hour.
# RINGGRAD_TRAIN_DRY_RUN=1 prints the first line, the build and the command instead of running
# them (tests/apps/train_sh_test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

args=("$@")
recipe=""
changes=()  # the arguments other than --preset NAME
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[i]}" in
    --preset) recipe="${args[i + 1]:-}" && i=$((i + 1)) ;;
    --preset=*) recipe="${args[i]#--preset=}" ;;
    -h | --help) recipe="help" ;;
    *) changes+=("${args[i]}") ;;
  esac
done
if [[ -z $recipe ]]; then
  args=(--preset quick "${args[@]}")
  recipe="quick"
fi
if [[ $recipe != help ]]; then
  line="train.sh: the ${recipe} recipe (train_cifar --preset ${recipe})"
  ((${#changes[@]} > 0)) && line+=", changed by: ${changes[*]}"
  echo "$line"
fi
build=(bash scripts/build.sh --target train_cifar)
if [[ ${RINGGRAD_TRAIN_DRY_RUN:-0} == 1 ]]; then
  echo "${build[*]}"
  echo "./build/apps/train_cifar ${args[*]}"
  exit 0
fi
"${build[@]}" >/dev/null
exec ./build/apps/train_cifar "${args[@]}"
