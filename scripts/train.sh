#!/usr/bin/env bash
# The main job: installs what is missing, builds, and trains on CIFAR-10.
# Arguments go to train_cifar; the default is the quick recipe on all cores:
#   bash scripts/train.sh                       # --preset quick
#   bash scripts/train.sh --preset classic      # ResNet18, 200 epochs (days on a CPU)
#   bash scripts/train.sh --data /path/to/cifar10 --epochs 30
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >/dev/null
args=("$@")
[[ ${#args[@]} -eq 0 ]] && args=(--preset quick)
exec ./build/apps/train_cifar "${args[@]}"
