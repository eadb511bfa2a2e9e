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
set -uo pipefail

if [[ "${1:-}" == "--rank" ]]; then  # internal: one rank, its exit status recorded
  status_dir=$2
  shift 2
  "$@"
  status=$?
  echo "$status" >"$status_dir/rank.${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-0}}"
  exit "$status"
fi

if (($# < 2)) || ! [[ "$1" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: scripts/mpirun.sh N PROGRAM [ARGS...]   (N local processes)" >&2
  exit 2
fi
n=$1
shift

flags=(-np "$n" --oversubscribe --bind-to none --mca orte_abort_on_non_zero_status 0)
[[ $(id -u) -eq 0 ]] && flags+=(--allow-run-as-root)
for name in PATH LD_LIBRARY_PATH $(compgen -e | grep -E '^(RG_|NCCL_|CUDA_|OMP_)' || true); do
  [[ -n "${!name+set}" ]] && flags+=(-x "$name")
done
# shellcheck disable=SC2206  # RG_MPIRUN_FLAGS is split on purpose
flags+=(${RG_MPIRUN_FLAGS:-})

status_dir=$(mktemp -d)
launcher=${MPIRUN:-mpirun}
# With that setting Open MPI 4.1's mpirun does not always exit once its ranks have: after a rank
# that had begun MPI_Init was killed and the others ended, it waited with no process left
# (found by tests/chaos). So once every rank has recorded its exit status, mpirun gets 5 s to
# exit on its own; then this watcher ends it, and the ranks' statuses stand. mpirun is found as
# this script's other child, not by name: MPIRUN may be a symlink or a script of another name.
# Short sleeps: a sleep outlives a killed watcher and holds the caller's output pipe meanwhile.
(
  while (($(compgen -G "$status_dir/rank.*" | wc -l) < n)); do sleep 0.2; done
  for ((i = 0; i < 25; i++)); do sleep 0.2; done
  self=$BASHPID
  pid=$(pgrep -P $$ | grep -vx "$self") || exit 0
  echo "scripts/mpirun.sh: every rank has ended, but $launcher has not 5 s later; ending it" >&2
  touch "$status_dir/ended_mpirun"
  # shellcheck disable=SC2086  # the pid
  kill -TERM $pid 2>/dev/null
  for ((i = 0; i < 10; i++)); do sleep 0.2; done
  # shellcheck disable=SC2086
  kill -KILL $pid 2>/dev/null
) &
watcher=$!
trap 'kill $watcher 2>/dev/null; rm -rf "$status_dir"' EXIT
"$launcher" "${flags[@]}" bash "$(realpath "$0")" --rank "$status_dir" "$@"
status=$?
# mpirun's own status means nothing once the watcher ended it; the ranks' statuses decide.
[[ -f $status_dir/ended_mpirun ]] && status=0

# The worst status of all: mpirun's own (MPI_Abort, a failed start), else a rank's, else a
# rank that never recorded one (killed).
if ((status == 0)); then
  for ((r = 0; r < n; r++)); do
    if [[ -f "$status_dir/rank.$r" ]]; then
      s=$(<"$status_dir/rank.$r")
    else
      s=1
      echo "scripts/mpirun.sh: rank $r ended without an exit status (killed?)" >&2
    fi
    ((s > status)) && status=$s
  done
fi
exit "$status"
