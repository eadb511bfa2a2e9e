#!/usr/bin/env bash
# tiny_cifar.sh DIR N: a CIFAR-10 of random pixels in the binary layout — 5 training batch
# files and a test file of N records each (label i % 10, then 3072 pixel bytes) — for whole
# runs of train_cifar in the fault tests, where only what the job does matters, not accuracy.
set -euo pipefail
[[ $# -eq 2 && "$2" =~ ^[0-9]+$ ]] || { echo "usage: tiny_cifar.sh DIR N" >&2; exit 2; }
dir=$1 n=$2
mkdir -p "$dir"
for name in data_batch_1 data_batch_2 data_batch_3 data_batch_4 data_batch_5 test_batch; do
  for ((i = 0; i < n; i++)); do
    printf "\\x0$((i % 10))"
    head -c 3072 /dev/urandom
  done >"$dir/$name.bin.tmp"
  mv "$dir/$name.bin.tmp" "$dir/$name.bin"
done
