#!/usr/bin/env bash
# The test command: installs what is missing, builds everything, runs every test with CTest.
# GPU tests skip with a message on machines without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh "$@"
cd build
ctest --output-on-failure -j"$(nproc)" --timeout 600
