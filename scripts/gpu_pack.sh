#!/usr/bin/env bash
# gpu_pack.sh [DIR] [--data CIFAR_DIR]: packs what gpu_quick_check.sh needs on a GPU machine
# that cannot build ringgrad itself (no network for setup.sh, minutes of GPU time too dear for
# a build): the GPU test programs, the apps and the shared libraries they use that a CUDA
# image may lack, stripped, in DIR/bins.tar.xz (~10 MB); and the image-folder CIFAR-10 in
# DIR/cifar.tar.gz (~20 MB) when it is found. The CUDA libraries themselves (cudart, cuBLAS,
# cuDNN, NCCL) are left out: the GPU machine has its own. Build first (bash scripts/build.sh,
# with the CUDA backend). DIR defaults to .gpu_pack (git ignores it).
# Also the reference of gpu_quick_check's airbench step: PyPI's airbench (pure Python, 12 kB), as
# its sdist DIR/airbench-0.1.8.tar.gz — the GPU machine has PyTorch but no network.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=.gpu_pack data=../shared/data/cifar10-jpg
while [ $# -gt 0 ]; do
  case $1 in
    --data) data=$2; shift 2 ;;
    -*) echo "gpu_pack.sh: unknown option $1" >&2; exit 2 ;;
    *) dir=$1; shift ;;
  esac
done
programs="tests/test_gpu_runtime tests/test_cuda_runtime tests/test_cudnn tests/test_gpu_ops
          tests/gpu_sanitizer_canaries
          tests/test_parallel_mpi tests/test_parallel tests/mpi_faults tests/test_apps
          apps/bench_ops apps/bench_train apps/bench_allreduce apps/train_cifar apps/train_unet
          apps/predict apps/cudnn_device_json apps/check_equivalence apps/export_dataset"
for p in $programs; do
  [ -x "build/$p" ] || { echo "gpu_pack.sh: build/$p is missing: build with CUDA first" >&2; exit 1; }
done
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/tests" "$stage/apps" "$stage/carrylibs" "$dir"
for p in $programs; do strip -o "$stage/$p" "build/$p"; done
# Every library the programs load, less the C/C++ runtime (the GPU machine's own is newer) and
# the CUDA libraries (its own match its driver).
for p in $programs; do ldd "build/$p"; done | awk '$3 ~ /^\// {print $3}' | sort -u |
  grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|libdl|libpthread|librt|ld-linux[^/]*)\.so|/lib(cudart|cublas|cublasLt|cudnn[a-z_]*|nccl)\.so' |
  while read -r lib; do cp -L "$lib" "$stage/carrylibs/"; done
tar -cJf "$dir/bins.tar.xz" -C "$stage" .
echo "gpu_pack.sh: $dir/bins.tar.xz ($(du -h "$dir/bins.tar.xz" | cut -f1)), built from $(git describe --always --dirty)"
# The reference's package, fetched here once (pip's own cache keeps it).
airbench=airbench-0.1.8.tar.gz
if [ ! -f "$dir/$airbench" ]; then
  "${PYTHON:-python3}" -m pip download airbench==0.1.8 --no-deps --no-binary :all: -d "$dir" \
    >/dev/null 2>&1 || echo "gpu_pack.sh: could not download airbench 0.1.8 from PyPI: the airbench step will time ringgrad alone"
fi
[ -f "$dir/$airbench" ] && echo "gpu_pack.sh: $dir/$airbench (PyTorch's airbench94, for the airbench step)"
if [ -d "$data/train" ] && [ -d "$data/test" ]; then
  tar -czf "$dir/cifar.tar.gz" -C "$data" train test
  echo "gpu_pack.sh: $dir/cifar.tar.gz ($(du -h "$dir/cifar.tar.gz" | cut -f1)) from $data"
else
  echo "gpu_pack.sh: no image-folder CIFAR-10 at $data (--data DIR): training steps will be skipped"
fi
