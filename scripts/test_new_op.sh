#!/usr/bin/env bash
# The scaffold's test (CI runs it): copies the tree to a temporary folder and writes one op of each
# kind with scripts/new_op.sh (scaffold_pw --pointwise, scaffold_cu --custom, scaffold_rd
# --reduction); checks that each op is its folder and its fixture and nothing else, and that the
# files are clang-formatted; builds a CPU-only tree of just what their tests need (their specs and
# the generic suites: -DRG_TEST_FILES) and runs them — gradcheck, PyTorch parity, bad inputs,
# devices, and the CUDA kernels through the emulator — and the benchmark on them; then compiles
# each generated _cuda.cu with nvcc (that file alone) where the CUDA toolkit is installed.
# The fixtures need PyTorch: without a Python that has it (RG_TORCH_PYTHON, python3, or
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

has_torch=0 python_flag=()
for py in "${RG_TORCH_PYTHON:-}" python3 /work/venv-torch/bin/python; do
  if [[ -n "$py" ]] && command -v "$py" >/dev/null && "$py" -c 'import torch' 2>/dev/null; then
    has_torch=1 python_flag=(--python "$py")
    break
  fi
done
find . -type f | sort >"$tmp.before"
bash scripts/new_op.sh scaffold_pw --pointwise "${python_flag[@]}"
bash scripts/new_op.sh scaffold_cu --custom "${python_flag[@]}"
bash scripts/new_op.sh scaffold_rd --reduction "${python_flag[@]}"

# Each op is its folder and its fixture: no other file of the tree was written.
find . -type f | sort >"$tmp.after"
added=$(comm -13 "$tmp.before" "$tmp.after" | grep -vE '^\./ops/scaffold_(pw|cu|rd)/' || true)
rm -f "$tmp.before" "$tmp.after"
expected=""
((has_torch)) && expected=$(printf './tests/fixtures/scaffold_%s.safetensors\n' cu pw rd)
if [[ "$added" != "$expected" ]]; then
  echo "test_new_op: the scaffold wrote outside the ops' folders and fixtures:"
  echo "$added"
  exit 1
fi
for f in ops/scaffold_*/*.h ops/scaffold_*/*.cpp ops/scaffold_*/*.cu ops/scaffold_*/*.cuh; do
  clang-format --style=file "$f" | cmp -s - "$f" || { echo "test_new_op: $f is not formatted"; exit 1; }
done

export CCACHE_BASEDIR="$tmp" CCACHE_NOHASHDIR=1
# Only the scaffolded ops' specs and the generic suites that iterate them.
cmake -S . -B build -DRG_CUDA=OFF -DRG_NATIVE=OFF -DRG_TEST_FILES='(scaffold_|/op_spec)' >/dev/null
cmake --build build -j"$(nproc)" --target test_ops test_kernels bench_ops
echo "test_new_op: built in $((SECONDS - start)) s"

filter='*/scaffold_*:OpSpecs.*'
((has_torch)) || filter="$filter:-Spec/Fixtures.*"
((has_torch)) || echo "test_new_op: no Python with PyTorch here: the fixture parity tests are left out"
./build/tests/test_ops --gtest_filter="$filter"
./build/tests/test_kernels --gtest_filter='*/scaffold_*'
# Every generic suite has each op: a spec part the suites missed would show as a missing test.
suites=(Spec/Gradchecks Spec/BadInputs Spec/DeviceErrors Spec/LogicalCpu)
((has_torch)) && suites+=(Spec/Fixtures)
for op in scaffold_pw scaffold_cu scaffold_rd; do
  for suite in "${suites[@]}"; do
    ./build/tests/test_ops --gtest_list_tests --gtest_filter="$suite.*/$op" | grep -q "/$op" ||
      { echo "test_new_op: $op has no test in $suite"; exit 1; }
  done
  ./build/tests/test_kernels --gtest_list_tests \
    --gtest_filter="Spec/EmulatedKernels.*/$op:Spec/PointwiseKernels.*/$op" | grep -q "/$op" ||
    { echo "test_new_op: $op has no emulated-kernel test"; exit 1; }
done
# The benchmark finds the three ops through their specs and runs them.
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
