#!/usr/bin/env bash
# Redraws the lessons' pictures (docs/learn/*.svg) from real runs of this build:
#   ring.svg          a ring allreduce of 3 ranks over threads
#   zero.svg          ZeRO-1's blocks over DDP's buckets, 3 ranks over threads
#   ddp-timeline.svg  one step of a 2-process DDP run (bench_ddp --trace under mpirun)
# Usage: scripts/draw_lessons.sh [BUILD_DIR [OUT_DIR]]   (defaults: build, docs/learn)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-docs/learn}
mkdir -p "$out"
"$build/apps/lesson_pictures" ring "$out/ring.svg"
"$build/apps/lesson_pictures" zero "$out/zero.svg"
trace=$(mktemp -d)/ddp_trace.json
bash scripts/mpirun.sh 2 "$build/apps/bench_ddp" --model resnet20 --global-batch 32 --steps 3 \
  --warmup 1 --bucket-mb 0.25 --first-bucket-mb 0.05 --trace "$trace" --trace-steps 3:4 >/dev/null
"$build/apps/lesson_pictures" timeline "$trace" "$out/ddp-timeline.svg"
rm -rf "$(dirname "$trace")"
