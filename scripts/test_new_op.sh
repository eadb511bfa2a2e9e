#!/usr/bin/env bash
# The scaffold's test (CI runs it): copies the tree to a temporary folder, writes one op of each
# kind with scripts/new_op.sh (scaffold_pw --pointwise, scaffold_cu --custom, scaffold_rd
# --reduction), builds a CPU-only
# tree of just the targets their tests need (only their test files: -DRG_TEST_FILES) and runs
# them — gradcheck, PyTorch parity, bad inputs, devices, and the CUDA kernels through the
# emulator — then compiles each generated _cuda.cu with nvcc (that file alone) where the CUDA
# toolkit is installed, and checks the generated files are clang-formatted.
# The fixture needs PyTorch: without a Python that has it (RG_TORCH_PYTHON, python3, or
# /work/venv-torch/bin/python), the PyTorch-parity tests are left out, and the script says so.
# ccache with CCACHE_BASEDIR set to the copy reuses objects compiled in any earlier copy or tree
# of the same configuration.   Usage: scripts/test_new_op.sh [--keep]
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
keep=0
[[ "${1:-}" == "--keep" ]] && keep=1
start=$SECONDS
tmp=$(mktemp -d /tmp/rg_new_op.XXXXXX)
cleanup() { if ((keep)); then echo "test_new_op: kept $tmp"; else rm -rf "$tmp"; fi; }
trap cleanup EXIT

# The tree as git sees it (tracked files and new ones not ignored), without build folders.
git ls-files -z --cached --others --exclude-standard | tar -C "$root" --null -T - -cf - |
  tar -C "$tmp" -xf -
cd "$tmp"

has_torch=0
for py in "${RG_TORCH_PYTHON:-}" python3 /work/venv-torch/bin/python; do
  if [[ -n "$py" ]] && command -v "$py" >/dev/null && "$py" -c 'import torch' 2>/dev/null; then
    has_torch=1 python_flag=(--python "$py")
    break
  fi
done
((has_torch)) || python_flag=()
python3 tools/new_op.py scaffold_pw --pointwise "${python_flag[@]}"
python3 tools/new_op.py scaffold_cu --custom "${python_flag[@]}"
python3 tools/new_op.py scaffold_rd --reduction "${python_flag[@]}"

# The generated sources, and the registry files the scaffold edited, are formatted.
for f in ops/scaffold_*/* tests/ops/scaffold_*_test.cpp tests/kernels/scaffold_*_test.cpp \
  apps/bench_ops_registry.h tests/gpu/ops_parity_test.cpp \
  tests/kernels/pointwise_kernels_test.cpp; do
  clang-format --style=file "$f" | cmp -s - "$f" || { echo "test_new_op: $f is not formatted"; exit 1; }
done

export CCACHE_BASEDIR="$tmp" CCACHE_NOHASHDIR=1
# The ops' device tests and the pointwise kernels' parity test run too: the scaffold adds lines
# to both.
cmake -S . -B build -DRG_CUDA=OFF -DRG_NATIVE=OFF \
  -DRG_TEST_FILES='(scaffold_|device_test|pointwise_kernels_test)' >/dev/null
cmake --build build -j"$(nproc)" --target test_ops test_kernels bench_ops
echo "test_new_op: built in $((SECONDS - start)) s"

filter='Scaffold*:OpsOnDevices.*:PointwiseKernel.*'
((has_torch)) || filter="$filter-*.MatchesPyTorch"
((has_torch)) || echo "test_new_op: no Python with PyTorch here: the fixture parity tests are left out"
./build/tests/test_ops --gtest_filter="$filter"
./build/tests/test_kernels --gtest_filter="$filter"
# The benchmark knows the three ops (one registry line each) and runs them.
./build/apps/bench_ops --op scaffold_pw,scaffold_cu,scaffold_rd --shape 64,33 --repeat 1 \
  --threads 1 >bench.json
for op in scaffold_pw scaffold_cu scaffold_rd; do grep -q "\"op\": \"$op\"" bench.json; done

# The CUDA side: each generated .cu compiles with nvcc as the CUDA build compiles it.
nvcc=/usr/local/cuda/bin/nvcc
if [[ -x "$nvcc" ]]; then
  mkdir -p build/cuda_generated/core
  sed 's/@RG_WITH_CUDA_BOOL@/true/' core/config.h.in >build/cuda_generated/core/config.h
  for op in scaffold_pw scaffold_cu scaffold_rd; do
    cu="ops/$op/${op}_cuda.cu"
    ccache "$nvcc" -I"$tmp" -I"$tmp/build/cuda_generated" -isystem=/usr/include/eigen3 \
      -isystem=/usr/local/cuda/include -O3 -DNDEBUG \
      --generate-code=arch=compute_90,code=[compute_90,sm_90] -Werror=all-warnings -std=c++20 \
      -x cu -c "$cu" -o "build/$(basename "$cu").o"
  done
  echo "test_new_op: the generated .cu files compile with nvcc"
else
  echo "test_new_op: no CUDA toolkit at /usr/local/cuda: the nvcc check is left out"
fi
echo "test_new_op: passed in $((SECONDS - start)) s"
