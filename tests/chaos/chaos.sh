#!/usr/bin/env bash
# The chaos test: a 2-rank DDP run of train_cifar, killed again and again at random steps and
# moments and resumed each time with --resume auto, must end with what the same run
# uninterrupted ends with — both checkpoints bit for bit, metrics.csv row for row, the
# TensorBoard records as one run (tests/chaos/chaos_check.cpp judges).
#
#   chaos.sh --train TRAIN_CIFAR --check CHAOS_CHECK [--work DIR]
#   CHAOS_SEED=N (default: from the clock, printed) CHAOS_TRIALS=N (default 8)
#
# Each trial resumes the run from its last checkpoint and ends it one of these ways, drawn with
# the seed, at a step drawn among the next two epochs' (train_cifar --fault, parallel/faults.h)
# or, for a signal from outside, at a moment drawn within the start-up (MPI, data, model, the
# resume) or within the epoch after the line that rank 0 prints when training starts or when
# one of the next epochs ends (its steps, its evaluation, the checkpoint writes):
#   step        kill:rank=R:step=S            SIGKILL just before step S
#   backward    kill:rank=R:step=S:at=backward SIGKILL half-way through step S's backward,
#                                             DDP's allreduces under way
#   checkpoint  kill:rank=0:step=S:at=checkpoint  SIGKILL while rank 0 writes the epoch's
#                                             checkpoint (complete, not yet renamed in place)
#   exit        exit:rank=R:step=S:code=3     a rank ends without shutting down
#   sigkill     SIGKILL to rank R from outside (start-up, a step, evaluation, logs, a
#                                             checkpoint write: wherever it lands)
#   sigterm     SIGTERM to both ranks at once (a scheduler preempting the job: no survivor is
#                                             left to name anyone)
# Then elastic trials (below): 3 ranks under scripts/mpirun.sh --elastic 2:3, one killed.
# After each trial the job must have ended within 60 s (never a hang) with no rank left behind;
# the checkpoint must load, never go back, and metrics.csv keep a row for every epoch it holds;
# an injected fault must have fired (a kill at=checkpoint leaves its temporary behind, which the
# next run removes). Then a last run completes the training and the folders are compared.
# A run with a checkpoint to continue from resumes with --resume auto; one before the first
# checkpoint starts over with --overwrite. The seed reproduces the draws (steps, ranks, kinds,
# delays); where an outside signal lands also depends on the machine's speed. Jobs start through scripts/mpirun.sh (MPIRUN picks the
# launcher), as a user starts them: plain mpirun with orte_abort_on_non_zero_status=0 never
# exits once a rank dies of a signal while no other rank aborts the job (Open MPI 4.1), which
# this test found; mpirun.sh's per-rank wrapper turns such a death into an exit status.
set -uo pipefail
train="" check="" work=""
while (($#)); do
  case "$1" in
    --train) train=$2; shift 2 ;;
    --check) check=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    *) echo "chaos.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -x $train && -x $check ]] ||
  { echo "usage: chaos.sh --train TRAIN_CIFAR --check CHAOS_CHECK [--work DIR]" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
mpirun_sh=$here/../../scripts/mpirun.sh
seed=${CHAOS_SEED:-$(($(date +%s%N) / 1000 % 1000000))}
trials=${CHAOS_TRIALS:-8}
RANDOM=$seed
echo "chaos: seed $seed, $trials trials (CHAOS_SEED=$seed reproduces the draws)"
fail() { echo "chaos: FAIL (seed $seed): $*"; exit 1; }

if [[ -z $work ]]; then
  work=$(mktemp -d /tmp/rg_chaos.XXXXXX)
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"
rm -rf "${work:?}"/{straight,chaos} "$work"/*.log
[[ -f $work/data/test_batch.bin ]] || bash "$here/../parallel_mpi/tiny_cifar.sh" "$work/data" 32

# 2 ranks x 4 steps of 8 images x 8 epochs. Small DDP buckets (20 KiB of the model's 70 KiB of
# gradients) put allreduces in flight during backward.
epochs=8 steps_per_epoch=4
total=$((epochs * steps_per_epoch))
common=(--data "$work/data" --model resnet20@0.25 --epochs $epochs --batch-size 8
        --train-limit 64 --test-limit 16 --threads 1 --workers 1 --no-progress --seed 11
        --bucket-mb 0.02 --collective-timeout 10)
job_pid="" job_start=0
# launch LOG ARGS...: the 2-rank job in the background (job_pid: the launcher's pid).
launch() {
  local log=$1
  shift
  job_start=$(date +%s%N)
  bash "$mpirun_sh" 2 "$train" "${common[@]}" "$@" >"$log" 2>&1 &
  job_pid=$!
}
# The job's processes: the ranks, their wrappers (mpirun.sh --rank), mpirun's children.
job_processes() { pgrep -f -- "--out $work/$1( |$)" || true; }
# finish SECONDS: waits for the job; sets job_status and job_ms (since its launch). A job still
# running SECONDS after its launch is killed (with its ranks) and the test fails: no fault may
# end in a hang.
finish() {
  local limit_ms=$(($1 * 1000)) start=$job_start
  while kill -0 "$job_pid" 2>/dev/null; do
    if (($(date +%s%N) - start > limit_ms * 1000000)); then
      # shellcheck disable=SC2046  # the pids
      kill -9 $(job_processes chaos) $(job_processes straight) "$job_pid" 2>/dev/null
      fail "the job was still running after $1 s (a hang)"
    fi
    sleep 0.05
  done
  wait "$job_pid"
  job_status=$?
  job_ms=$((($(date +%s%N) - start) / 1000000))
}
# rank_pid R [RUN]: the pid of rank R's train_cifar in the run writing $work/RUN (default: chaos;
# empty before mpirun started it).
rank_pid() {
  local p
  for p in $(job_processes "${2:-chaos}"); do
    [[ $(cat "/proc/$p/comm" 2>/dev/null) == train_cifar ]] || continue
    if tr '\0' '\n' 2>/dev/null <"/proc/$p/environ" | grep -qx "OMPI_COMM_WORLD_RANK=$1"; then
      echo "$p"
      return
    fi
  done
}
# signal_ranks SIGNAL RANK...: sends SIGNAL to those ranks of the running job at once, first
# waiting for mpirun to start them; fails when the job ended before. RUN: the run's folder name.
signal_ranks() {
  local sig=$1 r p pids=()
  shift
  for r in "$@"; do
    while p=$(rank_pid "$r" "${RUN:-chaos}"); [[ -z $p ]]; do
      kill -0 "$job_pid" 2>/dev/null || return 1
      sleep 0.01
    done
    pids+=("$p")
  done
  kill "-$sig" "${pids[@]}" 2>/dev/null
}

echo "chaos: the uninterrupted run ($epochs epochs of $steps_per_epoch steps, 2 ranks)"
t0=$(date +%s%N)
launch "$work/straight.log" --out "$work/straight"
# When its first epoch ends, for the outside signals' timing.
first_ms=""
while kill -0 "$job_pid" 2>/dev/null && [[ -z $first_ms ]]; do
  grep -q "^epoch 1/" "$work/straight.log" && first_ms=$((($(date +%s%N) - t0) / 1000000))
  sleep 0.01
done
finish 300
((job_status == 0)) || { cat "$work/straight.log"; fail "the uninterrupted run failed"; }
run_ms=$((($(date +%s%N) - t0) / 1000000))
epoch_ms=$(((run_ms - ${first_ms:-0}) / (epochs - 1) + 1))
startup_ms=$((${first_ms:-$run_ms} > epoch_ms ? ${first_ms:-$run_ms} - epoch_ms : 1))
echo "chaos: it took $run_ms ms: $startup_ms ms of start-up, then about $epoch_ms ms an epoch"

kinds=(step backward checkpoint exit sigkill sigterm)
# How the next run continues, as a user would: --resume auto from the last checkpoint; before
# the first one, --overwrite (--resume auto refuses to start over an earlier attempt's files).
resume_args() {
  if ((done_step > 0)); then resume=(--resume auto); else resume=(--overwrite); fi
}
read -r done_epoch done_step < <("$check" progress "$work/chaos") || fail "progress"
for ((trial = 1; trial <= trials; ++trial)); do
  left=$((total - done_step))
  ((left > 0)) || { echo "chaos: the run is complete after $((trial - 1)) trials"; break; }
  resume_args
  kind=${kinds[RANDOM % ${#kinds[@]}]}
  rank=$((RANDOM % 2))
  reach=$((left < 2 * steps_per_epoch ? left : 2 * steps_per_epoch))
  step=$((done_step + 1 + RANDOM % reach))
  # An outside signal: within the start-up (one trial in three), or within an epoch's time after
  # rank 0's line that training starts (anchor = done_epoch) or that the next epoch ended, as
  # the line reaches the log (mpirun forwards it with some delay).
  anchor=$((done_epoch + RANDOM % 3 - 1))
  delay_ms=$(((RANDOM * 32768 + RANDOM) % (anchor < done_epoch ? startup_ms : epoch_ms)))
  if ((anchor < done_epoch)); then
    moment="$delay_ms ms into the start-up"
  elif ((anchor == done_epoch)); then
    moment="$delay_ms ms after the line that training starts"
  else
    moment="$delay_ms ms after epoch $anchor's line"
  fi
  args=(--out "$work/chaos" "${resume[@]}")
  case $kind in
    step) what="kill:rank=$rank:step=$step" ;;
    backward) what="kill:rank=$rank:step=$step:at=backward" ;;
    checkpoint) what="kill:rank=0:step=$step:at=checkpoint" ;;
    exit) what="exit:rank=$rank:step=$step:code=3" ;;
    sigkill) what="SIGKILL to rank $rank $moment" ;;
    sigterm) what="SIGTERM to both ranks $moment" ;;
  esac
  [[ $kind == sigkill || $kind == sigterm ]] || args+=(--fault "$what")
  log="$work/trial$trial.log"
  launch "$log" "${args[@]}"
  signalled=""
  if [[ $kind == sigkill || $kind == sigterm ]]; then
    if ((anchor >= done_epoch)); then
      line="^epoch $anchor/"
      ((anchor == done_epoch)) && line="^model "
      while ! grep -q "$line" "$log" 2>/dev/null && kill -0 "$job_pid" 2>/dev/null; do sleep 0.005; done
    fi
    sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
    if [[ $kind == sigterm ]]; then
      signal_ranks TERM 0 1 && signalled=yes
    else
      signal_ranks KILL "$rank" && signalled=yes
    fi
  fi
  finish 60
  left_behind=$(job_processes chaos)
  # shellcheck disable=SC2086  # the pids
  [[ -z $left_behind ]] || { kill -9 $left_behind; fail "trial $trial ($what): processes left behind: $left_behind"; }
  if [[ $kind == checkpoint ]]; then
    compgen -G "$work/chaos/.last.safetensors.tmp.*" >/dev/null ||
      { cat "$log"; fail "trial $trial ($what): no temporary left: the kill did not come mid-write"; }
  fi
  read -r epoch now_step < <("$check" progress "$work/chaos") ||
    { cat "$log"; fail "trial $trial ($what): the checkpoint is unreadable or metrics.csv lost rows"; }
  if ((job_status == 0)); then
    # Only an outside signal may come too late: the run had finished.
    [[ $kind == sigkill || $kind == sigterm ]] ||
      { cat "$log"; fail "trial $trial: the job ended normally: $what never fired"; }
    outcome="the run finished first (no signal)"
    [[ -n $signalled ]] && outcome="the run finished as the signal came"
  else
    if [[ $kind != sigkill && $kind != sigterm ]]; then
      grep -q "injected fault ${what}" "$log" || { cat "$log"; fail "trial $trial: $what did not fire"; }
    fi
    named=$(grep -o -m1 -E "rank [01] \(pid [0-9]+\) has exited|timed out after [0-9]+ ms|MPI_Init did not return within [0-9]+ ms" "$log")
    outcome="exit $job_status${named:+, \"$named\"}"
  fi
  ((now_step >= done_step)) || fail "trial $trial: the checkpoint went back from step $done_step to $now_step"
  printf 'chaos: trial %d: %-44s -> %s after %d ms; checkpoint at epoch %d (step %d) -> %d (step %d)\n' \
    "$trial" "$what" "$outcome" "$job_ms" "$done_epoch" "$done_step" "$epoch" "$now_step"
  done_epoch=$epoch done_step=$now_step
done

resume_args
launch "$work/final.log" --out "$work/chaos" "${resume[@]}"
finish 300
((job_status == 0)) || { cat "$work/final.log"; fail "the last resumed run failed"; }
echo "chaos: the last run: $(grep -m1 '^resumed from' "$work/final.log" || echo 'nothing to resume (a fresh start)')"
if compgen -G "$work/chaos/.*.tmp.*" >/dev/null; then fail "temporaries left in the run folder: $(ls -a "$work/chaos")"; fi
"$check" compare "$work/straight" "$work/chaos" || fail "the interrupted run differs from the uninterrupted one"

# Elastic trials (scripts/mpirun.sh --elastic 2:3): 3 ranks, one of them killed from outside
# (SIGKILL) at a moment drawn within an epoch; the survivors name it, the job ends, and the
# supervisor starts it again on the 2 left, from the last checkpoint, the global batch kept
# (3 x 4 -> 2 x 6). It must end as a plain resume on 2 ranks of that same checkpoint ends (its
# folder copied by RG_ELASTIC_ON_RESTART at the restart): both checkpoints bit for bit, the logs.
elastic_trials=${CHAOS_ELASTIC_TRIALS:-2}
elastic=(--data "$work/data" --model resnet20@0.25 --epochs 6 --batch-size 4 --train-limit 48
         --test-limit 16 --threads 1 --workers 1 --no-progress --seed 11 --bucket-mb 0.02
         --collective-timeout 10)
for ((trial = 1; trial <= elastic_trials; ++trial)); do
  run=elastic$trial copy=$work/restart$trial
  rm -rf "${work:?}/$run" "$copy"
  rank=$((RANDOM % 3))
  # Killed after epoch anchor's line, within one epoch of the 2-rank run (epoch_ms): 1 to 2 of
  # this job's shorter 3-rank epochs. Of 6, so that the kill never lands after training (with 4,
  # a kill drawn after epoch 2 once reached a rank in its shutdown: exit 137, no restart).
  anchor=$((1 + RANDOM % 2))
  delay_ms=$(((RANDOM * 32768 + RANDOM) % epoch_ms))
  log=$work/$run.log
  job_start=$(date +%s%N)
  RG_ELASTIC_ON_RESTART="cp -a '$work/$run' '$copy'" \
    bash "$mpirun_sh" --elastic 2:3 --max-restarts 1 3 "$train" "${elastic[@]}" \
    --out "$work/$run" --resume auto >"$log" 2>&1 &
  job_pid=$!
  while ! grep -q "^epoch $anchor/" "$log" 2>/dev/null && kill -0 "$job_pid" 2>/dev/null; do sleep 0.005; done
  sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
  RUN=$run signal_ranks KILL "$rank" || { cat "$log"; fail "elastic trial $trial: the job ended before the kill"; }
  finish 300
  left_behind=$(job_processes "$run")
  # shellcheck disable=SC2086  # the pids
  [[ -z $left_behind ]] || { kill -9 $left_behind; fail "elastic trial $trial: processes left behind"; }
  ((job_status == 0)) || { cat "$log"; fail "elastic trial $trial: the elastic job failed (exit $job_status)"; }
  grep -q "membership change: 3 -> 2 ranks; restart 1 of 1" "$log" ||
    { cat "$log"; fail "elastic trial $trial: no restart on 2 ranks"; }
  grep -q "resumed on 2 ranks, was 3: per-rank batch 4 → 6, global 12 kept" "$log" ||
    { cat "$log"; fail "elastic trial $trial: the restart did not keep the global batch"; }
  [[ -d $copy ]] || fail "elastic trial $trial: RG_ELASTIC_ON_RESTART did not run"
  read -r at_epoch at_step < <("$check" progress "$copy") || fail "elastic trial $trial: the copied checkpoint"
  # The plain resume on 2 ranks of the same checkpoint.
  job_start=$(date +%s%N)
  bash "$mpirun_sh" 2 "$train" "${elastic[@]}" --out "$copy" --resume auto >"$work/$run.plain.log" 2>&1 &
  job_pid=$!
  finish 300
  ((job_status == 0)) || { cat "$work/$run.plain.log"; fail "elastic trial $trial: the plain resume failed"; }
  "$check" compare "$copy" "$work/$run" >"$work/$run.compare.log" ||
    { cat "$work/$run.compare.log"; fail "elastic trial $trial: the elastic run differs from the plain resume on 2 ranks"; }
  named=$(grep -o -m1 -E "rank [012] \(pid [0-9]+\) has exited" "$log")
  printf 'chaos: elastic trial %d: SIGKILL to rank %d %d ms after epoch %d'"'"'s line -> "%s", restarted on 2 ranks from epoch %d (step %d); equal to the plain resume on 2 (%s)\n' \
    "$trial" "$rank" "$delay_ms" "$anchor" "$named" "$at_epoch" "$at_step" \
    "$(grep -c 'bit for bit' "$work/$run.compare.log") checkpoints bit for bit, $(grep -o '[0-9]* rows' "$work/$run.compare.log")"
done
echo "chaos: PASS (seed $seed)"
