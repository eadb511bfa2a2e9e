#!/usr/bin/env bash
# tiny_cifar.sh DIR N: a CIFAR-10 of random pixels in the binary layout — 5 training batch
# files and a test file of N records each (label i % 10, then 3072 pixel bytes) — for whole
# runs of train_cifar in the fault tests, where only what the job does matters, not accuracy.
# The pixels are pseudo-random from a fixed seed per file (Perl's drand48, the same on every
# machine): a test on these data passes or fails the same way everywhere (the resume tests'
# float-order bounds depend on the data: /dev/urandom made them pass on one build and fail on
# the next).
set -euo pipefail
[[ $# -eq 2 && "$2" =~ ^[0-9]+$ ]] || { echo "usage: tiny_cifar.sh DIR N" >&2; exit 2; }
dir=$1 n=$2
mkdir -p "$dir"
file=0
for name in data_batch_1 data_batch_2 data_batch_3 data_batch_4 data_batch_5 test_batch; do
  perl -e 'my ($seed, $n) = @ARGV; srand($seed); binmode STDOUT;
    for my $i (0 .. $n - 1) { print chr($i % 10), pack("C*", map { int(rand(256)) } 1 .. 3072) }' \
    $((1000 + file)) "$n" >"$dir/$name.bin.tmp"
  mv "$dir/$name.bin.tmp" "$dir/$name.bin"
  file=$((file + 1))
done
