#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: builds ringgrad with the CUDA backend, runs every GPU test
# (CTest label `gpu`) and the emulated kernel tests, and writes one report, gpu_report.txt
# (device, driver, every result). On a machine without a GPU it says so and exits 0.
# Benchmarks: bench_ops --device cuda (cuDNN convolutions, f32 and f16), bench_train --device
# cuda (ResNet18 train steps in f32 and at every AMP level), the same steps beside PyTorch
# (tools/bench_train_vs_pytorch.py --device cuda, where torch with CUDA is installed) and, with
# two or more GPUs, bench_allreduce --device cuda (our ring over NCCL against ncclAllReduce).
# Training: train_cifar --device cuda with the quick preset and the resnet18 preset (accuracy
# and time from each run's summary). The whole report takes about an hour on one H100-class GPU.
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
  echo
  echo "## ResNet18 train steps (bench_train --device cuda, batch 128)"
  ./build/apps/bench_train --device cuda --model resnet18 --batch 128 --steps 20 --warmup 3 --amp all
  echo
  echo "## Beside PyTorch on the same GPU (tools/bench_train_vs_pytorch.py --device cuda)"
  if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    python3 tools/bench_train_vs_pytorch.py --device cuda --model resnet18 --steps 20
  else
    echo "skipped: no PyTorch with CUDA in python3 (pip install torch, then run it again)"
  fi
  for preset in quick resnet18; do
    echo
    echo "## Training: train_cifar --preset $preset --device cuda"
    ./build/apps/train_cifar --preset "$preset" --device cuda --no-progress \
      --out "runs/gpu_check_$preset" --overwrite | tail -n 4
  done
  gpus=$(nvidia-smi -L | wc -l)
  if [ "$gpus" -ge 2 ]; then
    echo
    echo "## Allreduce over NCCL, $gpus GPUs (bench_allreduce --device cuda)"
    bash scripts/mpirun.sh "$gpus" ./build/apps/bench_allreduce --device cuda
  fi
} 2>&1 | tee "$report"
echo "gpu_check: report written to $report"
