#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: builds ringgrad with the CUDA backend, runs every GPU test
# (CTest label `gpu`) and the emulated kernel tests, and writes one report, gpu_report.txt
# (device, driver, every result). On a machine without a GPU it says so and exits 0.
# Benchmarks: bench_ops --device cuda (cuDNN convolutions, f32 and f16) and, with two or more
# GPUs, bench_allreduce --device cuda (our ring over NCCL against ncclAllReduce).
set -uo pipefail
cd "$(dirname "$0")/.."
report=${1:-gpu_report.txt}
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu_check: no NVIDIA GPU or driver on this machine; nothing to check"
  exit 0
fi
bash scripts/build.sh -DRG_CUDA=ON || exit 1
{
  echo "# ringgrad GPU check, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv
  echo
  echo "## GPU tests (ctest -L gpu)"
  (cd build && ctest -L gpu --output-on-failure --timeout 600)
  echo
  echo "## Emulated kernel tests (the same kernels on the CPU)"
  ./build/tests/test_kernels
  echo
  echo "## Convolutions through cuDNN (bench_ops --device cuda)"
  ./build/apps/bench_ops --device cuda --dtype f32
  ./build/apps/bench_ops --device cuda --dtype f16
  gpus=$(nvidia-smi -L | wc -l)
  if [ "$gpus" -ge 2 ]; then
    echo
    echo "## Allreduce over NCCL, $gpus GPUs (bench_allreduce --device cuda)"
    bash scripts/mpirun.sh "$gpus" ./build/apps/bench_allreduce --device cuda
  fi
} 2>&1 | tee "$report"
echo "gpu_check: report written to $report"
