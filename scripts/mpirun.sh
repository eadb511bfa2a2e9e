#!/usr/bin/env bash
# Launches N local processes of a ringgrad program, as horovodrun does with mpirun underneath:
#
#   scripts/mpirun.sh 4 build/apps/train_cifar --data data/cifar10 ...
#
# - --allow-run-as-root only when running as root (containers);
# - --oversubscribe: more ranks than cores is allowed (a laptop can run 4 ranks);
# - --bind-to none: Open MPI would pin each rank to one core, starving its compute threads;
# - -x forwards the environment the ranks need (PATH, LD_LIBRARY_PATH, RG_*, NCCL_*, CUDA_*);
# - --mca orte_abort_on_non_zero_status 0: when a rank dies, mpirun would kill the others at
#   once; instead they live on for a moment, notice the death in their next collective and
#   print which rank died and what they were doing, then end the job (MPI_Abort). That setting
#   also makes mpirun's own exit status 0 whatever the ranks return, so each rank runs under
#   this script again (--rank), which records its exit status, and the script exits with the
#   worst one. The wrapper matters twice: with that setting Open MPI 4.1's mpirun never exits
#   once a rank dies of a signal while no other rank aborts the job (two ranks preempted by
#   SIGTERM; found by tests/chaos), and the wrapper turns such a death into an exit status.
# Extra mpirun options can go in RG_MPIRUN_FLAGS. MPIRUN picks the launcher (default mpirun).
#
# Elastic (torchrun's --nnodes MIN:MAX --max-restarts R, shrinking only):
#
#   scripts/mpirun.sh --elastic MIN:MAX [--max-restarts R] [--hosts H:S,H:S...] N PROGRAM ARGS...
#
# runs the job as above on N ranks (at most MAX); when it fails having lost ranks, it starts the
# same command again on the ranks that remain — while at least MIN remain, at most R times
# (default 3) — and logs each membership change. The command resumes itself: train_cifar and
# train_unet with --resume auto continue from the last checkpoint, keeping the global batch on
# the new number of ranks (train/global_batch.h). Which ranks were lost:
#   - local ranks (no --hosts): the ranks the survivors saw die (ringgrad's engine writes them
#     to $RG_ELASTIC_DIR, which this script sets), less those that ended the job themselves
#     (MPI_Abort after naming the fault); N minus those remain;
#   - --hosts H:S,...: S slots on host H (passed to mpirun as --host); before a restart each host
#     is probed (mpirun --host H -np 1 true, 20 s at most) and the ones that cannot start a
#     process are dropped with their slots (a host lost, a link cut).
# A job that fails without losing a rank or a host (an error of the program, which a restart
# would repeat) is not restarted. RG_ELASTIC_JOB_START (the job's start, seconds since 1970)
# tells the program which files in its output folder an earlier attempt of this job wrote
# (train/outputs.h). RG_ELASTIC_ON_RESTART, if set, is a shell command run before each restart
# with RG_ELASTIC_RESTART (1, 2, ...) and RG_ELASTIC_RANKS (the new count) in its environment.
set -uo pipefail

if [[ "${1:-}" == "--rank" ]]; then  # internal: one rank, its exit status recorded
  status_dir=$2
  shift 2
  "$@"
  status=$?
  echo "$status" >"$status_dir/rank.${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-0}}"
  exit "$status"
fi

usage() {
  echo "usage: scripts/mpirun.sh [--elastic MIN:MAX [--max-restarts R] [--hosts H:S,...]] N PROGRAM [ARGS...]" >&2
  exit 2
}
elastic="" max_restarts=3 hosts=""
while (($#)) && [[ $1 == --* ]]; do
  case "$1" in
    --elastic) elastic=${2:-}; shift 2 ;;
    --max-restarts) max_restarts=${2:-}; shift 2 ;;
    --hosts) hosts=${2:-}; shift 2 ;;
    *) echo "scripts/mpirun.sh: unknown option $1" >&2; usage ;;
  esac
done
(($# >= 2)) && [[ "$1" =~ ^[1-9][0-9]*$ ]] || usage
n=$1
shift

launcher=${MPIRUN:-mpirun}
self_path=$(realpath "$0")
# What a job leaves behind if this script ends early: its watcher, its status folder.
watcher="" status_dir="" elastic_dir=""
cleanup() {
  [[ -n $watcher ]] && kill "$watcher" 2>/dev/null
  rm -rf "$status_dir" "$elastic_dir"
}
trap cleanup EXIT

# run_job RANKS HOST_LIST PROGRAM [ARGS...]: one job under mpirun (HOST_LIST: its --host, or
# empty); returns the worst exit status of the ranks.
run_job() {
  local ranks=$1 host_list=$2 name
  shift 2
  local flags=(-np "$ranks" --oversubscribe --bind-to none --mca orte_abort_on_non_zero_status 0)
  [[ -n $host_list ]] && flags+=(--host "$host_list")
  [[ $(id -u) -eq 0 ]] && flags+=(--allow-run-as-root)
  for name in PATH LD_LIBRARY_PATH $(compgen -e | grep -E '^(RG_|NCCL_|CUDA_|OMP_)' || true); do
    [[ -n "${!name+set}" ]] && flags+=(-x "$name")
  done
  # shellcheck disable=SC2206  # RG_MPIRUN_FLAGS is split on purpose
  flags+=(${RG_MPIRUN_FLAGS:-})

  status_dir=$(mktemp -d)
  # With that setting Open MPI 4.1's mpirun does not always exit once its ranks have: after a
  # rank that had begun MPI_Init was killed and the others ended, it waited with no process left
  # (found by tests/chaos). So once every rank has recorded its exit status, mpirun gets 5 s to
  # exit on its own; then this watcher ends it, and the ranks' statuses stand. mpirun is found as
  # this shell's other child, not by name: MPIRUN may be a symlink or a script of another name.
  # Short sleeps: a sleep outlives a killed watcher and holds the caller's output pipe meanwhile.
  local parent=$BASHPID
  (
    while (($(compgen -G "$status_dir/rank.*" | wc -l) < ranks)); do sleep 0.2; done
    for ((i = 0; i < 25; i++)); do sleep 0.2; done
    self=$BASHPID
    pid=$(pgrep -P "$parent" | grep -vx "$self") || exit 0
    echo "scripts/mpirun.sh: every rank has ended, but $launcher has not 5 s later; ending it" >&2
    touch "$status_dir/ended_mpirun"
    # shellcheck disable=SC2086  # the pid
    kill -TERM $pid 2>/dev/null
    for ((i = 0; i < 10; i++)); do sleep 0.2; done
    # shellcheck disable=SC2086
    kill -KILL $pid 2>/dev/null
  ) &
  watcher=$!
  "$launcher" "${flags[@]}" bash "$self_path" --rank "$status_dir" "$@"
  local status=$?
  kill "$watcher" 2>/dev/null
  wait "$watcher" 2>/dev/null
  watcher=""
  # mpirun's own status means nothing once the watcher ended it; the ranks' statuses decide.
  [[ -f $status_dir/ended_mpirun ]] && status=0

  # The worst status of all: mpirun's own (MPI_Abort, a failed start), else a rank's, else a
  # rank that never recorded one (killed).
  if ((status == 0)); then
    local r s
    for ((r = 0; r < ranks; r++)); do
      if [[ -f "$status_dir/rank.$r" ]]; then
        s=$(<"$status_dir/rank.$r")
      else
        s=1
        echo "scripts/mpirun.sh: rank $r ended without an exit status (killed?)" >&2
      fi
      ((s > status)) && status=$s
    done
  fi
  rm -rf "$status_dir"
  status_dir=""
  return "$status"
}

if [[ -z $elastic ]]; then
  [[ -z $hosts ]] || { echo "scripts/mpirun.sh: --hosts goes with --elastic" >&2; usage; }
  run_job "$n" "" "$@"
  exit $?
fi

# ---- elastic ---------------------------------------------------------------------------------
[[ $elastic =~ ^([1-9][0-9]*):([1-9][0-9]*)$ ]] ||
  { echo "scripts/mpirun.sh: --elastic takes MIN:MAX (ranks), e.g. 2:4; got '$elastic'" >&2; exit 2; }
min=${BASH_REMATCH[1]} max=${BASH_REMATCH[2]}
((min <= max)) || { echo "scripts/mpirun.sh: --elastic $elastic: MIN is above MAX" >&2; exit 2; }
[[ $max_restarts =~ ^[0-9]+$ ]] ||
  { echo "scripts/mpirun.sh: --max-restarts takes a count, got '$max_restarts'" >&2; exit 2; }
say() { echo "scripts/mpirun.sh --elastic $elastic: $*" >&2; }
count() { (($1 == 1)) && echo "1 rank" || echo "$1 ranks"; }

host_names=() host_slots=()
if [[ -n $hosts ]]; then
  IFS=, read -ra entries <<<"$hosts"
  for entry in "${entries[@]}"; do
    [[ $entry =~ ^([^:]+):([1-9][0-9]*)$ ]] ||
      { echo "scripts/mpirun.sh: --hosts takes HOST:SLOTS,...; got '$entry'" >&2; exit 2; }
    host_names+=("${BASH_REMATCH[1]}") host_slots+=("${BASH_REMATCH[2]}")
  done
fi
# The hosts still in the job as mpirun's --host list, capped at `ranks` slots.
host_list() {
  local ranks=$1 list="" i take
  for i in "${!host_names[@]}"; do
    ((ranks > 0)) || break
    take=$((host_slots[i] < ranks ? host_slots[i] : ranks))
    list+="${list:+,}${host_names[i]}:$take"
    ranks=$((ranks - take))
  done
  echo "$list"
}
slots() {
  local total=0 s
  for s in "${host_slots[@]}"; do total=$((total + s)); done
  echo "$total"
}
# probe HOST: can mpirun start a process there (within 20 s)?
probe() {
  local flags=(--host "$1:1" -np 1)
  [[ $(id -u) -eq 0 ]] && flags+=(--allow-run-as-root)
  # shellcheck disable=SC2206
  flags+=(${RG_MPIRUN_FLAGS:-})
  timeout --kill-after=5 20 "$launcher" "${flags[@]}" true >/dev/null 2>&1
}

RG_ELASTIC_JOB_START=$(date +%s.%N)
RG_ELASTIC_DIR=$(mktemp -d)
elastic_dir=$RG_ELASTIC_DIR
export RG_ELASTIC_JOB_START RG_ELASTIC_DIR
ranks=$n
if ((${#host_names[@]})); then
  (($(slots) < ranks)) && ranks=$(slots)
fi
((ranks > max)) && ranks=$max
((ranks >= min)) || { say "$(count "$ranks") to start with, fewer than $min"; exit 2; }
restarts=0
while :; do
  list=""
  ((${#host_names[@]})) && list=$(host_list "$ranks")
  say "attempt $((restarts + 1)): $(count "$ranks")${list:+ on $list}"
  rm -f "$RG_ELASTIC_DIR"/lost.* "$RG_ELASTIC_DIR"/ended.*
  run_job "$ranks" "$list" "$@"
  status=$?
  if ((status == 0)); then
    say "the job ended well after $restarts restart(s)"
    exit 0
  fi
  # Who is gone: hosts where no process starts any more (with --hosts), else the ranks the
  # survivors saw die. A rank that ended the job on purpose (MPI_Abort after naming a fault) left
  # ended.<rank>: seen gone by a slower survivor, it is not lost. (The survivors write these
  # files on their own host: under --hosts only those on this one reach the supervisor; a rank
  # that dies on another host is caught there by the timeout, and its host still answers.)
  lost=$(cat "$RG_ELASTIC_DIR"/lost.* 2>/dev/null | sort -un |
    while read -r r; do [[ -f $RG_ELASTIC_DIR/ended.$r ]] || echo "$r"; done | tr '\n' ' ')
  remaining=$ranks lost_what=""
  if ((${#host_names[@]})); then
    kept_names=() kept_slots=() lost_hosts=""
    for i in "${!host_names[@]}"; do
      if probe "${host_names[i]}"; then
        kept_names+=("${host_names[i]}") kept_slots+=("${host_slots[i]}")
      else
        lost_hosts+="${lost_hosts:+, }${host_names[i]}"
      fi
    done
    if [[ -n $lost_hosts ]]; then
      host_names=("${kept_names[@]}") host_slots=("${kept_slots[@]}")
      remaining=$(slots)
      ((remaining > ranks)) && remaining=$ranks
      lost_what="lost host(s) $lost_hosts (no process could start there within 20 s)"
    elif [[ -n $lost ]]; then
      # Every host answers, but ranks died: each one's slot goes (mpirun places ranks by slot,
      # filling the hosts of the --host list in order).
      for r in $lost; do
        first=0
        for i in "${!host_names[@]}"; do
          if ((r < first + host_slots[i])); then
            host_slots[i]=$((host_slots[i] - 1))
            break
          fi
          first=$((first + host_slots[i]))
        done
      done
      kept_names=() kept_slots=()
      for i in "${!host_names[@]}"; do
        ((host_slots[i] > 0)) && kept_names+=("${host_names[i]}") kept_slots+=("${host_slots[i]}")
      done
      host_names=("${kept_names[@]}") host_slots=("${kept_slots[@]}")
      count=$(wc -w <<<"$lost")
      remaining=$((ranks - count))
      lost_what="lost rank(s) ${lost% } (named by the ranks that saw them die; their slots go)"
    fi
  else
    if [[ -n $lost ]]; then
      count=$(wc -w <<<"$lost")
      remaining=$((ranks - count))
      lost_what="lost rank(s) ${lost% } (named by the ranks that saw them die)"
    fi
  fi
  if [[ -z $lost_what ]]; then
    say "attempt $((restarts + 1)) failed (exit status $status) without losing a rank or host:" \
      "not restarted (an error of the program, which a restart would repeat)"
    exit "$status"
  fi
  ((remaining > max)) && remaining=$max
  say "attempt $((restarts + 1)) ended (exit status $status): $lost_what; $(count "$remaining") $( ((remaining == 1)) && echo remains || echo remain)"
  if ((remaining < min)); then
    say "fewer than $(count "$min") remain$( ((min == 1)) && echo s): the job ends (exit status $status)"
    exit "$status"
  fi
  if ((restarts >= max_restarts)); then
    say "no restart left (--max-restarts $max_restarts): the job ends (exit status $status)"
    exit "$status"
  fi
  restarts=$((restarts + 1))
  say "membership change: $ranks -> $(count "$remaining"); restart $restarts of $max_restarts, from the last checkpoint"
  if [[ -n ${RG_ELASTIC_ON_RESTART:-} ]]; then
    RG_ELASTIC_RESTART=$restarts RG_ELASTIC_RANKS=$remaining bash -c "$RG_ELASTIC_ON_RESTART" ||
      say "RG_ELASTIC_ON_RESTART failed (status $?); restarting all the same"
  fi
  ranks=$remaining
done
