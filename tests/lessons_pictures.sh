#!/usr/bin/env bash
# The lessons' pictures stay true (docs/learn/): ring.svg and zero.svg, drawn again from real runs
# of this build, must equal the committed files byte for byte (both runs are deterministic); the
# DDP timeline is drawn from a fresh 2-process trace (its times vary: it must only draw).
# Usage: tests/lessons_pictures.sh BUILD_DIR SOURCE_DIR WORK_DIR
set -euo pipefail
build=$1 source=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
for picture in ring zero; do
  "$build/apps/lesson_pictures" "$picture" "$work/$picture.svg" >/dev/null
  if ! cmp -s "$work/$picture.svg" "$source/docs/learn/$picture.svg"; then
    echo "FAIL: docs/learn/$picture.svg is not what this build draws: run scripts/draw_lessons.sh"
    exit 1
  fi
  echo "PASS: docs/learn/$picture.svg is what this build draws"
done
bash "$source/scripts/mpirun.sh" 2 "$build/apps/check_equivalence" --trace "$work/trace.json" >/dev/null
"$build/apps/lesson_pictures" timeline "$work/trace.json" "$work/ddp-timeline.svg" >/dev/null
grep -q "bucket 0" "$work/ddp-timeline.svg" || grep -q "rank 1" "$work/ddp-timeline.svg"
echo "PASS: a DDP timeline drawn from a fresh 2-process trace"
