#!/usr/bin/env bash
# gpu_multi_check.sh [--budget SECONDS]: for the first machine with two GPUs or more — runs, in
# order, what has never run on one (docs/nccl.md, "Not yet run on a GPU"), and writes one
# report, $OUT/multi_gpu.txt (else gpu_multi_report/multi_gpu.txt), ending in a PASS/FAIL line
# per step. Uses a build in build/ or the pack of scripts/gpu_pack.sh (like gpu_quick_check.sh,
# which also runs this as its step `multi`). Needs Open MPI's mpirun for the steps with ranks.
#   copies       tensors between GPUs and back, the reduce-add of two GPUs' tensors; DataParallel
#                with one replica per GPU against one device (test_parallel DataParallelOnGpu.*)
#   dp           check_equivalence --device cuda --devices N: DP over cuda:0..N-1, judged
#   nccl         every collective on cuda tensors across N ranks, our ring over ncclSend/ncclRecv
#                (and its combine kernel) and NCCL's own, and DDP + SyncBatchNorm over NCCL
#                (test_parallel_mpi Nccl*)
#   bandwidth    bench_allreduce --device cuda under mpirun: our ring's bus bandwidth beside
#                ncclAllReduce's, and the ratio at 64 MB and above (the goal: >= 0.9)
#   ddp          check_equivalence under mpirun, N ranks on N GPUs (NCCL), and 2 ranks sharing
#                cuda:0 (--backend mpi)
#   abort        a rank killed mid-job (mpi_faults kill_cuda) and one late past the timeout
#                (timeout_cuda): the others must abort the NCCL communicator (ncclCommAbort)
#                and the job end within the collective timeout
#   leave        a rank that returns from main after 3 allreduces while the others wait in #4
#                over NCCL (mpi_faults leave_return_cuda): its departure notice must fail them
#                at once, naming it, and abort the communicator (issue 53)
#   resume       train_cifar 1 epoch on N GPUs (NCCL), resumed on 1 with the global batch kept
#                ("resumed on 1 rank, was N: per-rank batch ... kept"), with 2 accumulation steps
set -u
cd "$(dirname "$0")/.."
budget=900
if [ "${1:-}" = --budget ]; then budget=$2; shift 2; fi
outdir=${OUT:-gpu_multi_report}
mkdir -p "$outdir"
report=$outdir/multi_gpu.txt
: >"$report"
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
if [ "$gpus" -lt 2 ]; then
  echo "gpu_multi_check: needs 2 GPUs or more; this machine has $gpus" | tee -a "$report"
  exit 0
fi
if [ -f .gpu_pack/bins.tar.xz ] && [ ! -x build/apps/check_equivalence ]; then
  mkdir -p build && tar -xJf .gpu_pack/bins.tar.xz -C build
fi
cuda_libs=$(find /usr/local /opt /usr/lib -xdev \( -name 'libcudnn.so.9' -o -name 'libcublas.so.13' \
  -o -name 'libcudart.so.13' -o -name 'libnccl.so.2' \) 2>/dev/null | xargs -r -n1 dirname | sort -u |
  tr '\n' ':')
export LD_LIBRARY_PATH=${cuda_libs}${LD_LIBRARY_PATH:-}${LD_LIBRARY_PATH:+:}$PWD/build/carrylibs
# The pack's CIFAR-10 (scripts/gpu_pack.sh), for the steps that train.
data=""
if [ -f .gpu_pack/cifar.tar.gz ]; then
  data=$(mktemp -d) && tar -xzf .gpu_pack/cifar.tar.gz -C "$data"
fi
{
  echo "# ringgrad on $gpus GPUs, $(date -u '+%Y-%m-%d %H:%M UTC')"
  nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv
  nvidia-smi topo -m 2>/dev/null
} >>"$report"

verdicts=()
# run NAME CAP CMD...: appends CMD's output to the report under a heading; its status.
run() {
  local name=$1 cap=$2 left=$((budget - SECONDS - 5))
  shift 2
  [ "$left" -lt "$cap" ] && cap=$left
  if [ "$cap" -le 3 ]; then echo "## $name: skipped, budget spent" >>"$report"; return 124; fi
  local t0=$SECONDS rc=0
  echo "## $name: $*" >>"$report"
  timeout -k 5 "$cap" "$@" >>"$report" 2>&1 || rc=$?
  echo "## $name: rc=$rc in $((SECONDS - t0)) s" >>"$report"
  return $rc
}
verdict() {  # verdict STEP OK(0/1) TEXT
  local v=FAIL
  [ "$2" -eq 0 ] && v=PASS
  verdicts+=("$v $1: $3")
  echo "$v $1: $3"
}
has_mpirun() { command -v mpirun >/dev/null; }

# copies, DP over every GPU
run copies 120 build/tests/test_parallel --gtest_filter='DataParallelOnGpu.*'
verdict copies $? "copies between GPUs, DP with a replica per GPU (test_parallel DataParallelOnGpu.*)"
run dp 120 build/apps/check_equivalence --device cuda --devices "$gpus"
verdict dp $? "check_equivalence --device cuda --devices $gpus"

if has_mpirun; then
  run nccl 180 scripts/mpirun.sh "$gpus" build/tests/test_parallel_mpi --gtest_filter='Nccl*'
  verdict nccl $? "every collective and DDP+SyncBN over NCCL on $gpus GPUs"

  bench=$(mktemp)
  run bandwidth 240 scripts/mpirun.sh "$gpus" build/apps/bench_allreduce --device cuda \
    --max-bytes $((256 << 20)) --repeat 3
  rc=$?
  # The JSON bench_allreduce printed (rank 0's), from the report's last heading on.
  awk '/^## bandwidth: scripts/{keep=1; buf=""} keep{buf=buf $0 "\n"} END{printf "%s", buf}' \
    "$report" | sed -n '/^{"benchmark"/,/^]}/p' >"$bench"
  ratio=$(python3 - "$bench" <<'EOF' 2>>"$report"
import json, sys
rows = json.load(open(sys.argv[1]))["results"]
print("| bytes | ring busbw GB/s | ncclAllReduce busbw GB/s | ring / nccl |", file=sys.stderr)
worst = None
for r in rows:
    q = r["ring"]["busbw_GBps"] / max(r["native"]["busbw_GBps"], 1e-12)
    print(f"| {r['bytes']} | {r['ring']['busbw_GBps']:.2f} | {r['native']['busbw_GBps']:.2f} | {q:.2f} |",
          file=sys.stderr)
    if r["bytes"] >= 64 << 20:
        worst = q if worst is None else min(worst, q)
print("none" if worst is None else f"{worst:.2f}")
EOF
  )
  rm -f "$bench"
  ok=1
  [ "$rc" -eq 0 ] && [ "$ratio" != none ] && [ -n "$ratio" ] &&
    python3 -c "import sys; sys.exit(0 if float('$ratio') >= 0.9 else 1)" && ok=0
  verdict bandwidth $ok "our ring / ncclAllReduce bus bandwidth at >= 64 MB: worst ${ratio:-?} (goal >= 0.9)"

  run ddp_nccl 180 scripts/mpirun.sh "$gpus" build/apps/check_equivalence --device cuda
  verdict ddp_nccl $? "check_equivalence under mpirun, $gpus ranks on $gpus GPUs (NCCL)"
  run ddp_shared 180 scripts/mpirun.sh 2 build/apps/check_equivalence --device cuda:0 --backend mpi
  verdict ddp_shared $? "check_equivalence under mpirun, 2 ranks sharing cuda:0 (--backend mpi)"

  for scenario in kill_cuda timeout_cuda; do
    t0=$SECONDS
    run "abort_$scenario" 90 env OMPI_MCA_orte_abort_on_non_zero_status=0 \
      mpirun --oversubscribe --bind-to none $([ "$(id -u)" = 0 ] && echo --allow-run-as-root) \
      -x LD_LIBRARY_PATH -np "$gpus" build/tests/mpi_faults "$scenario"
    took=$((SECONDS - t0))
    # The survivors' own message (rank 0's), and the abort in it; the job over well within
    # the scenario's timeout (kill: 60 s, detected at once through /proc; timeout: 5 s).
    section=$(awk -v h="## abort_$scenario: env" 'index($0, h) == 1 {buf=""} {buf=buf $0 "\n"} END{printf "%s", buf}' "$report")
    limit=$([ $scenario = kill_cuda ] && echo 20 || echo 30)
    ok=1
    grep -q "rank 0 of $gpus: .*NCCL communicator aborted (ncclCommAbort)" <<<"$section" &&
      [ "$took" -lt "$limit" ] && ok=0
    verdict "abort_$scenario" $ok "rank 0 aborted NCCL naming the fault; job over in $took s (limit $limit s)"
  done

  t0=$SECONDS
  run leave_cuda 90 env OMPI_MCA_orte_abort_on_non_zero_status=0 \
    mpirun --oversubscribe --bind-to none $([ "$(id -u)" = 0 ] && echo --allow-run-as-root) \
    -x LD_LIBRARY_PATH -np "$gpus" build/tests/mpi_faults leave_return_cuda
  took=$((SECONDS - t0))
  section=$(awk -v h="## leave_cuda: env" 'index($0, h) == 1 {buf=""} {buf=buf $0 "\n"} END{printf "%s", buf}' "$report")
  ok=1
  grep -q "rank 1 of $gpus: .*rank 0 left the job (its program returned) after 3 collectives; rank 1 waits in allreduce #4.*NCCL communicator aborted" <<<"$section" &&
    [ "$took" -lt 20 ] && ok=0
  verdict leave_cuda $ok "rank 1 named rank 0's departure and aborted NCCL; job over in $took s (timeout 60 s)"

  if [ -n "$data" ]; then
    out=$(mktemp -d)
    run resume_first 300 scripts/mpirun.sh "$gpus" build/apps/train_cifar --preset quick \
      --device cuda --no-progress --data "$data" --out "$out" --workers 4 --train-limit 5120 \
      --batch-size 128 --accumulate-steps 2 --epochs 2 --stop-after-epochs 1
    run resume_on_one 300 build/apps/train_cifar --preset quick --device cuda --no-progress \
      --data "$data" --out "$out" --workers 4 --train-limit 5120 --batch-size 128 \
      --accumulate-steps 2 --epochs 2 --resume auto
    grep -q "resumed on 1 rank, was $gpus: per-rank batch 128 → $((128 * gpus)), global $((256 * gpus)) kept" "$report"
    verdict resume $? "train_cifar resumed from $gpus GPUs on 1, the global batch kept"
  else
    verdict resume 1 "no CIFAR data (gpu_pack.sh's cifar.tar.gz): not run"
  fi
else
  verdict mpi 1 "no mpirun on this machine: nccl, bandwidth, ddp, abort, leave and resume not run"
fi

{
  echo
  echo "## summary"
  printf '%s\n' "${verdicts[@]}"
} >>"$report"
echo "gpu_multi_check: $SECONDS s; report in $report"
