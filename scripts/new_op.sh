#!/usr/bin/env bash
# Writes a new op: its folder, ops/NAME/, and — where a Python with PyTorch is found — its fixture,
# tests/fixtures/NAME.safetensors. Nothing else: CMake finds the folder, ops/ops.h is generated,
# and every suite and bench_ops find the op through its spec (NAME_spec.cpp).
#   scripts/new_op.sh NAME [--pointwise|--custom|--reduction] [--python PYTHON] [--root TREE]
# The files are copies of tools/op_templates/<kind>/ with template_op renamed (TemplateOp in
# CamelCase), clang-formatted: an op that builds and passes its tests at once, with a
# placeholder formula — y = x³ (backward 3·x²·gy), or for --reduction y = Σ x² over the last dim —
# to replace. ops/README.md, "Add an op", walks through one.
#   --pointwise (default): the math is a pair of RG_HOST_DEVICE functors that the elementwise
#     engine applies on the CPU and in its CUDA grid-stride kernel (ops/silu is one).
#   --custom: the op owns its kernels: a CPU kernel (NAME_cpu.cpp, the reference) and CUDA kernels
#     with launchers in NAME_kernels.cuh, which nvcc compiles for the GPU and the host compiler
#     against the kernel emulator for the spec's kernel check (ops/softmax is one).
#   --reduction: as --custom, for an op that reduces the last dim: a block per row combines its
#     elements with the warp-shuffle tree of core/cuda/reduce_kernels.cuh.
#   --python PYTHON: a Python with PyTorch, for the fixture (default: $RG_TORCH_PYTHON, python3,
#     /work/venv-torch/bin/python — the first that imports torch).
#   --root TREE: the tree to write into (default: this one).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
root="$here" kind=pointwise python="" name=""
usage() { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while (($#)); do
  case "$1" in
    --pointwise | --custom | --reduction) kind="${1#--}" ;;
    --python) python="${2:?--python needs a value}"; shift ;;
    --root) root="$(cd "${2:?--root needs a value}" && pwd)"; shift ;;
    -h | --help) usage ;;
    -*) echo "new_op: unknown option $1" >&2; usage ;;
    *) [[ -z "$name" ]] || usage; name="$1" ;;
  esac
  shift
done
[[ -n "$name" ]] || usage

die() { echo "new_op: $*" >&2; exit 1; }
[[ "$name" =~ ^[a-z][a-z0-9_]*$ && "$name" != *_ ]] ||
  die "'$name' is not a lower_snake_case name (letters, digits, _)"
keywords=" alignas alignof and asm auto bool break case catch char class concept const consteval
  constexpr constinit const_cast continue default delete do double dynamic_cast else enum explicit
  export extern false float for friend goto if inline int long mutable namespace new noexcept not
  nullptr operator or private protected public register reinterpret_cast requires return short
  signed sizeof static static_assert static_cast struct switch template this thread_local throw
  true try typedef typeid typename union unsigned using virtual void volatile while xor "
[[ " $(echo $keywords) " != *" $name "* ]] || die "'$name' is a C++ keyword; pick another name"
[[ ! -e "$root/ops/$name" ]] || die "ops/$name/ already exists"
if grep -rqsE --include="*.h" "\bTensor $name\(" "$root"/ops; then die "an op named $name exists already"; fi
[[ ! -e "$root/tests/fixtures/$name.safetensors" ]] || die "tests/fixtures/$name.safetensors exists"

camel=""
IFS=_ read -ra parts <<<"$name"
for part in "${parts[@]}"; do camel+="${part^}"; done

templates="$here/tools/op_templates/$kind"
mkdir -p "$root/ops/$name"
written=()
for template in "$templates"/*; do
  file="$(basename "$template")"
  file="ops/$name/${file/template_op/$name}"
  sed -e "s/template_op/$name/g" -e "s/TemplateOp/$camel/g" "$template" >"$root/$file"
  written+=("$file")
done
(cd "$root" && clang-format -i --style=file ops/"$name"/*.h ops/"$name"/*.cpp ops/"$name"/*.cu \
  $(ls ops/"$name"/*.cuh 2>/dev/null))

if [[ -z "$python" ]]; then
  for candidate in "${RG_TORCH_PYTHON:-}" python3 /work/venv-torch/bin/python; do
    if [[ -n "$candidate" ]] && command -v "$candidate" >/dev/null &&
      "$candidate" -c 'import torch' 2>/dev/null; then
      python="$candidate"
      break
    fi
  done
fi
if [[ -n "$python" ]] && "$python" -c 'import torch' 2>/dev/null; then
  (cd "$root" && "$python" tools/make_fixtures.py "$name" >/dev/null)
  written+=("tests/fixtures/$name.safetensors")
  fixture="fixture written with $python"
else
  fixture="no Python with PyTorch found: run \`python3 tools/make_fixtures.py $name\` where torch is
  installed (until then Spec/Fixtures.MatchPyTorch/$name fails, naming the missing file)"
fi

echo "new_op: wrote the $kind op '$name':"
printf '  %s\n' "${written[@]}"
echo "new_op: $fixture"
[[ "$kind" == reduction ]] && formula="Σ x² over the last dim" || formula="x³"
echo "new_op: now replace the placeholder formula ($formula) in ops/$name/"
