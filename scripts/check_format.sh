#!/usr/bin/env bash
# Fails when a C++/CUDA source differs from clang-format with the project's .clang-format.
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files '*.h' '*.cpp' '*.cu' '*.cuh')
bad=()
for f in $files; do
  if ! clang-format --style=file "$f" | cmp -s - "$f"; then bad+=("$f"); fi
done
if ((${#bad[@]})); then
  echo "check_format: these files need clang-format -i: ${bad[*]}"
  exit 1
fi
echo "check_format: all files formatted"
