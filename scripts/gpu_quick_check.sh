#!/usr/bin/env bash
# gpu_quick_check.sh [--budget SECONDS] [STEP...]: the GPU checks that fit a short lease, from
# a build in build/ or from the pack of scripts/gpu_pack.sh (.gpu_pack/, unpacked into build/).
# Steps, in this order (default: all):
#   env      GPU, driver, cuDNN and PyTorch versions, which CUDA libraries the programs load
#   tests    every GPU test, one process each (a crash costs one test, not the rest)
#   nccl     the NCCL backend on cuda tensors, a rank per GPU under mpirun: every collective,
#            ring and NCCL's own, DDP with SyncBatchNorm (test_parallel_mpi's Nccl* tests), and
#            bench_allreduce --device cuda (needs Open MPI's mpirun)
#   bench    bench_train --device cuda --amp all (ResNet18), and O0, O1 with --cudnn-benchmark;
#            bench_ops --device cuda f32/f16/bf16
#   train    train_cifar --device cuda, quick and airbench94 presets (needs .gpu_pack's data)
#            and train_unet --device cuda on its generated shapes
#   pytorch  tools/bench_train_vs_pytorch.py --device cuda, f32 and O1 (needs torch with CUDA)
#   memcheck compute-sanitizer memcheck over the kernels' parity tests (the custom kernels', the
#            cuBLAS and cuDNN ops')
#   racecheck compute-sanitizer racecheck (shared-memory hazards) over the custom kernels' parity
#            tests: the block reductions (core/cuda/reduce_kernels.cuh: warp shuffles, then
#            shared memory between __syncthreads) under softmax, batch norm, the losses, max,
#            sum and the optimizers' norms
#   synccheck compute-sanitizer synccheck (barriers and warp-synchronous calls used wrongly:
#            a __syncthreads in divergent code, a __shfl_*_sync mask naming absent threads) over
#            the same tests
#   cudnn    apps/cudnn_device_json: the GPU's cuDNN description (tests/fixtures/cudnn/)
#   profile  the time of every kernel in an f32 ResNet18 train step, ringgrad's (Nsight Compute)
#            beside PyTorch's (torch.profiler), by tools/gpu_step_profile.py (needs ncu, torch)
#   mpi      scripts/mpirun.sh 2 train_cifar --device cuda, one epoch of the quick preset: on two
#            GPUs it trains; on one, rank 1 has no cuda:1 and the job must end at once, naming
#            why (needs Open MPI's mpirun and .gpu_pack's data)
#   resnet18 train_cifar --preset resnet18 --device cuda --amp O1 (bf16) --cudnn-benchmark, 30
#            epochs: last, as it takes whatever the budget leaves
# Each step gets at most its own cap and what is left of the budget (default 600 s). Reports go
# to $OUT if set, else gpu_quick_report/: one file per step; one line per result on stdout.
set -u
cd "$(dirname "$0")/.."
budget=600
if [ "${1:-}" = --budget ]; then budget=$2; shift 2; fi
steps=" ${*:-env tests nccl bench train pytorch memcheck racecheck synccheck cudnn profile mpi resnet18} "
report=${OUT:-gpu_quick_report}
mkdir -p "$report"
export PYTHONUNBUFFERED=1
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu_quick_check: no NVIDIA GPU or driver on this machine; nothing to check"
  exit 0
fi
if [ -f .gpu_pack/bins.tar.xz ]; then
  mkdir -p build && tar -xJf .gpu_pack/bins.tar.xz -C build
fi
data=""
if [ -f .gpu_pack/cifar.tar.gz ]; then
  data=$(mktemp -d) && tar -xzf .gpu_pack/cifar.tar.gz -C "$data"
fi
# Tests find their fixtures under the source path they were built in.
src=$(strings build/tests/test_cudnn 2>/dev/null | grep -m1 -o '^/.*/tests/fixtures$' || true)
if [ -n "$src" ] && [ ! -e "${src%/tests/fixtures}" ]; then
  mkdir -p "$(dirname "${src%/tests/fixtures}")" && ln -s "$PWD" "${src%/tests/fixtures}"
fi
# The machine's CUDA libraries (a CUDA image, or the nvidia-* wheels of its PyTorch), then the
# pack's own.
cuda_libs=$(find /usr/local /opt /usr/lib -xdev \( -name 'libcudnn.so.9' -o -name 'libcublas.so.13' \
  -o -name 'libcudart.so.13' -o -name 'libnccl.so.2' \) 2>/dev/null | xargs -r -n1 dirname | sort -u |
  tr '\n' ':')
export LD_LIBRARY_PATH=${cuda_libs}${LD_LIBRARY_PATH:-}${LD_LIBRARY_PATH:+:}$PWD/build/carrylibs

# step NAME CAP FILE CMD...: CMD for at most CAP seconds and what the budget leaves, its output
# appended to FILE (its stderr to $err instead, when set); its status on stdout.
step() {
  local name=$1 cap=$2 file=$3 left=$((budget - SECONDS - 5))
  shift 3
  [ "$left" -lt "$cap" ] && cap=$left
  if [ "$cap" -le 3 ]; then echo "[$name] skipped: budget spent"; return 124; fi
  local t0=$SECONDS rc=0
  timeout -k 5 "$cap" "$@" >>"$file" 2>>"${err:-$file}" || rc=$?
  echo "[$name] rc=$rc in $((SECONDS - t0)) s"
  return $rc
}
has() { [[ $steps == *" $1 "* ]]; }

if has env; then
  {
    nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv
    uname -r
    python3 -c 'import torch; print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version())'
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    ldd build/tests/test_gpu_ops build/apps/train_cifar | grep -E 'cud|nccl|cublas|not found' | sort -u
  } >"$report/env.txt" 2>&1
  head -n 2 "$report/env.txt"
  grep "not found" "$report/env.txt"
fi

if has tests; then
  for bin in test_gpu_runtime test_cuda_runtime test_cudnn test_gpu_ops; do
    for t in $(build/tests/$bin --gtest_list_tests | awk '/^[^ ]/{s=$1} /^  /{print s $1}'); do
      one=$(mktemp)
      step "$t" 120 "$one" build/tests/$bin --gtest_filter="$t" >>"$one"
      r=$(cat "$one")
      { echo "=== $bin $t"; echo "$r"; } >>"$report/tests.txt"
      v=PASS
      grep -q "^\[  SKIPPED \]" <<<"$r" && v=SKIP
      grep -q "^\[  FAILED  \]" <<<"$r" && v=FAIL
      grep -q "^\[  PASSED  \] 1 test" <<<"$r" || [ $v != PASS ] || v=CRASH
      echo "$v $bin $t"
    done
  done
fi

if has nccl; then
  if ! command -v mpirun >/dev/null; then
    echo "[nccl] skipped: no mpirun on this machine"
  else
    gpus=$(nvidia-smi -L | wc -l)
    step nccl_tests 120 "$report/nccl.txt" scripts/mpirun.sh "$gpus" build/tests/test_parallel_mpi \
      --gtest_filter='Nccl*'
    step bench_allreduce 60 "$report/nccl.txt" scripts/mpirun.sh "$gpus" build/apps/bench_allreduce \
      --device cuda --max-bytes $((64 << 20)) --repeat 1
    grep -E "^\[  (PASSED|FAILED|SKIPPED) |busbw|error" "$report/nccl.txt" | head -n 12
  fi
fi

if has bench; then
  step bench_train 90 "$report/bench.txt" build/apps/bench_train --device cuda --model resnet18 \
    --batch 128 --steps 20 --warmup 3 --amp all
  step bench_train_cudnn_benchmark 60 "$report/bench.txt" build/apps/bench_train --device cuda \
    --model resnet18 --batch 128 --steps 20 --warmup 3 --amp O0 O1 --cudnn-benchmark
  grep -o -e '"amp": "[^"]*", "dtype": "[^"]*".*"images_per_second": [0-9.]*' \
    -e '"host_ms_per_step": [0-9.]*' -e '"cudnn_benchmark": [a-z]*' "$report/bench.txt"
  for dtype in f32 f16 bf16; do
    step "bench_ops_$dtype" 60 "$report/bench.txt" build/apps/bench_ops --device cuda --dtype $dtype
  done
  grep '"aggregate"' "$report/bench.txt"
fi

if has train; then
  if [ -n "$data" ]; then
    for preset in quick airbench94; do
      step "train_$preset" 120 "$report/train.txt" build/apps/train_cifar --preset $preset \
        --device cuda --no-progress --data "$data" --out "$(mktemp -d)" --workers 8
      grep "^done" "$report/train.txt" | tail -n 1
    done
  else
    echo "[train_cifar] skipped: no .gpu_pack/cifar.tar.gz"
  fi
  step train_unet 90 "$report/train.txt" build/apps/train_unet --device cuda --epochs 2 \
    --out "$(mktemp -d)"
  tail -n 2 "$report/train.txt"
fi

if has pytorch; then
  for amp in O0 O1; do
    step "vs_pytorch_$amp" 90 "$report/vs_pytorch.txt" python3 tools/bench_train_vs_pytorch.py \
      --device cuda --models resnet18:128 --steps 20 --rounds 2 --amp $amp
  done
  grep -E '"(framework|amp|images_per_second|host_ms_per_step|speedup)"' "$report/vs_pytorch.txt"
fi

if has memcheck; then
  step memcheck 150 "$report/memcheck.txt" compute-sanitizer --tool memcheck --error-exitcode 9 \
    build/tests/test_gpu_ops --gtest_filter='GpuOptimStep.*:GpuOpsParity.*:-GpuOpsParity.OutOfRange*'
  grep -E "ERROR SUMMARY|FAILED" "$report/memcheck.txt"
fi

# The custom kernels' parity tests: the cuBLAS/cuDNN ones are left out (a hazard inside
# NVIDIA's kernels is not ours to fix), and so is the out-of-range test, whose kernel faults on
# purpose.
custom_kernel_tests='GpuOptimStep.*:GpuOpsParity.*:-GpuOpsParity.OutOfRange*:GpuOpsParity.CublasAndCudnnOpsMatchTheCpu:GpuOpsParity.BenchmarkedConvolutionsMatchTheCpu'
# canary TOOL KIND: the tool must report gpu_sanitizer_canaries' kernel wrong on purpose (exit
# status 9), or its clean run over the real kernels proves nothing.
canary() {
  local rc=0
  step "$1_canary" 30 "$report/$1.txt" compute-sanitizer --tool "$1" --error-exitcode 9 \
    build/tests/gpu_sanitizer_canaries "$2" || rc=$?
  if [ $rc = 9 ]; then echo "[$1_canary] PASS: $1 reported the $2 canary"
  else echo "[$1_canary] FAIL: $1 did not report the $2 canary (rc=$rc)"; fi
}
if has racecheck; then
  canary racecheck race
  # --racecheck-report all: every hazard, errors and warnings; an error makes the exit status 9.
  step racecheck 240 "$report/racecheck.txt" compute-sanitizer --tool racecheck \
    --racecheck-report all --error-exitcode 9 build/tests/test_gpu_ops \
    --gtest_filter="$custom_kernel_tests"
  grep -E "RACECHECK SUMMARY|ERROR SUMMARY|FAILED" "$report/racecheck.txt"
fi

if has synccheck; then
  canary synccheck divergent
  step synccheck 150 "$report/synccheck.txt" compute-sanitizer --tool synccheck \
    --error-exitcode 9 build/tests/test_gpu_ops --gtest_filter="$custom_kernel_tests"
  grep -E "ERROR SUMMARY|FAILED" "$report/synccheck.txt"
fi

if has cudnn; then
  err=$report/cudnn_device.err step cudnn_device_json 30 "$report/cudnn_device.json" \
    build/apps/cudnn_device_json
  grep -E '"deviceName"|"multiProcessorCount"' "$report/cudnn_device.json"
fi

if has profile; then
  ncu=$(command -v ncu || find /usr/local /opt -xdev -name ncu -type f 2>/dev/null | head -n 1)
  if [ -z "$ncu" ]; then
    echo "[profile] skipped: no ncu on this machine"
  else
    # One pass, caches and clocks left alone: each kernel's time as it runs in the step.
    ncu_args=(--csv --print-units base --print-kernel-base demangled --metrics
      gpu__time_duration.sum --cache-control none --clock-control none --launch-count 6000)
    err=$report/profile.err step profile_ringgrad 150 "$report/profile_ringgrad.csv" \
      "$ncu" "${ncu_args[@]}" build/apps/bench_train --device cuda --model resnet18 \
      --batch 128 --warmup 1 --steps 2
    err=$report/profile.err step profile_pytorch 120 "$report/profile.err" \
      python3 tools/gpu_step_profile.py --trace-pytorch "$report/profile_pytorch.csv"
    python3 tools/gpu_step_profile.py "$report/profile_ringgrad.csv" \
      "$report/profile_pytorch.csv" >"$report/profile.txt" 2>&1
    head -n 12 "$report/profile.txt"
  fi
fi

if has mpi; then
  if ! command -v mpirun >/dev/null; then
    echo "[mpi] skipped: no mpirun on this machine"
  elif [ -z "$data" ]; then
    echo "[mpi] skipped: no .gpu_pack/cifar.tar.gz"
  else
    echo "[mpi] $(nvidia-smi -L | wc -l) GPU(s) for 2 ranks"
    step mpirun_2 90 "$report/mpi.txt" scripts/mpirun.sh 2 build/apps/train_cifar --preset quick \
      --device cuda --no-progress --data "$data" --out "$(mktemp -d)" --workers 4 \
      --stop-after-epochs 1
    grep -E "error|abort|^epoch 1|^done" "$report/mpi.txt" | head -n 4
  fi
fi

if has resnet18; then
  if [ -n "$data" ]; then
    step train_resnet18 300 "$report/train.txt" build/apps/train_cifar --preset resnet18 \
      --device cuda --amp O1 --amp-dtype bf16 --cudnn-benchmark --no-progress --data "$data" \
      --out "$(mktemp -d)" --workers 8
    grep "^epoch\|^done" "$report/train.txt" | tail -n 2
  else
    echo "[train_resnet18] skipped: no .gpu_pack/cifar.tar.gz"
  fi
fi

echo "gpu_quick_check: $SECONDS s; reports in $report"
