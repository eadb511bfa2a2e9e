#!/usr/bin/env bash
# Writes a complete new op (folder, tests, fixture, registry lines) — tools/new_op.py says what:
#   scripts/new_op.sh NAME [--pointwise|--custom|--reduction] [--python PYTHON_WITH_TORCH]
# ops/README.md, "Add an op with the scaffold", walks through one.
set -euo pipefail
exec python3 "$(dirname "$0")/../tools/new_op.py" "$@"
