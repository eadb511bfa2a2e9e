#!/usr/bin/env bash
# Downloads the official CIFAR-10 binary archive into data/cifar10 (needs internet; the
# build machines have none — they use a local copy, see README).
set -euo pipefail
cd "$(dirname "$0")/.."
url="https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"
md5="c32a1d4ab5d03f1284b67883e8d87530"
mkdir -p data/cifar10
if [[ -f data/cifar10/test_batch.bin ]]; then echo "data/cifar10 already holds CIFAR-10"; exit 0; fi
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
curl -fL --retry 3 -o "$tmp" "$url"
echo "$md5  $tmp" | md5sum -c - >/dev/null || { echo "download_cifar10: checksum mismatch"; exit 1; }
tar -xzf "$tmp" -C data/cifar10 --strip-components=1
echo "CIFAR-10 is in data/cifar10"
