#!/usr/bin/env bash
# Two "hosts" on one machine: a data-parallel job across a network, without a second machine.
#
#   sudo scripts/two_hosts.sh [BUILD_DIR]       (default build/; needs build/apps/train_cifar)
#
# 1. Two network namespaces, rg<pid>a and rg<pid>b, joined by a veth pair: 10.77.0.1/24 and
#    10.77.0.2/24. Each is a host with its own network stack (processes and files are shared).
# 2. mpirun runs in the first; for the second "host" Open MPI's remote-launch agent
#    (plm_rsh_agent), normally ssh, is a small script that enters the other namespace
#    (`ip netns exec`) and starts Open MPI's daemon there. Messages go over TCP on the veth
#    addresses only (btl tcp,self; btl_tcp_if_include, oob_tcp_if_include): no shared memory.
# 3. train_cifar on 2 hosts x 1 rank must end with the same checkpoint, tensor for tensor and
#    bit for bit, as the same run as 2 processes on one host.
# 4. The link is cut mid-run (`ip link set ... down`): the ranks must end with a named error
#    (a collective timed out waiting for the other rank) within --collective-timeout, never hang.
# 5. The same cut under scripts/mpirun.sh --elastic 1:2 --hosts 10.77.0.1:1,10.77.0.2:1: the job
#    ends as in 4, the supervisor finds that no process starts on 10.77.0.2 any more, and starts
#    the job again on the host that is left, from the last checkpoint (2 ranks x 8 -> 1 x 16, the
#    global batch kept); it must finish, and end as a plain resume on one rank of that checkpoint
#    ends, bit for bit.
#
# Root is needed (namespaces, veth). Where they cannot be made — not root, no `ip`, a container
# without CAP_NET_ADMIN — the script says why and exits 77 (skipped). Everything it creates is
# removed on exit. CI runs it (.ci/run; CI is root), after the test suites.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
train=$build/apps/train_cifar
skip() { echo "two_hosts.sh: SKIP: $*"; exit 77; }
die() { echo "two_hosts.sh: FAIL: $*"; exit 1; }

[[ $(id -u) -eq 0 ]] || skip "needs root to create network namespaces (run it with sudo)"
command -v ip >/dev/null || bash scripts/setup.sh two-hosts >/dev/null || skip "no 'ip' (iproute2)"
command -v mpirun >/dev/null || skip "no mpirun (scripts/setup.sh installs Open MPI)"
command -v python3 >/dev/null || skip "no python3 (compares the checkpoints)"
[[ -x $train ]] || die "$train not built (scripts/build.sh)"

a=rg$$a b=rg$$b
work=$(mktemp -d /tmp/two_hosts.XXXXXX)
cleanup() {
  ip netns pids "$a" 2>/dev/null | xargs -r kill -9 2>/dev/null
  ip netns pids "$b" 2>/dev/null | xargs -r kill -9 2>/dev/null
  ip netns del "$a" 2>/dev/null
  ip netns del "$b" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
ip netns add "$a" 2>"$work/err" || skip "cannot create a network namespace: $(cat "$work/err")"
ip netns add "$b" || skip "cannot create a second network namespace"
ip link add "v$a" type veth peer name "v$b" 2>"$work/err" || skip "cannot create a veth pair: $(cat "$work/err")"
ip link set "v$a" netns "$a" && ip link set "v$b" netns "$b" || die "cannot move the veth ends"
ip -n "$a" addr add 10.77.0.1/24 dev "v$a" && ip -n "$b" addr add 10.77.0.2/24 dev "v$b" || die "addresses"
# When the link goes, mpirun and the remote daemon must notice that TCP is gone. With data in
# flight (mpirun's order to end the job) Linux retransmits for tcp_retries2 = 15 rounds by
# default, about 15 minutes, before it gives up on the connection; these namespaces give up
# after 5 (about 6 s). The ranks do not depend on it: their timeout names the cut at once.
for ns in "$a" "$b"; do
  ip -n "$ns" link set lo up
  ip netns exec "$ns" sysctl -q -w net.ipv4.tcp_retries2=5 || die "cannot set tcp_retries2 in $ns"
done
ip -n "$a" link set "v$a" up && ip -n "$b" link set "v$b" up || die "cannot bring the link up"
echo "two_hosts.sh: hosts $a (10.77.0.1) and $b (10.77.0.2), joined by a veth pair"

# The remote-launch agent: called as `agent HOST COMMAND...` the way mpirun calls ssh; runs the
# command in HOST's namespace (a shell joins the words, as ssh's remote shell does), under a
# host name of its own (a UTS namespace): ringgrad watches the processes of ranks whose host
# name is its own through /proc, and the pid namespace is shared here, so with one name the
# ranks would see each other die where real hosts only see the timeout.
cat >"$work/agent.sh" <<EOF
#!/usr/bin/env bash
host=\$1; shift
case "\$host" in
  10.77.0.1) ns=$a ;;
  10.77.0.2) ns=$b ;;
  *) echo "agent: unknown host \$host" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" unshare --uts /bin/sh -c "hostname rg-\$ns && \$*"
EOF
chmod +x "$work/agent.sh"

bash tests/parallel_mpi/tiny_cifar.sh "$work/data" 64
common=(--data "$work/data" --model resnet20@0.25 --batch-size 8 --train-limit 128 --test-limit 32
        --threads 1 --workers 1 --no-progress --overwrite)
mpi_env=(-x PATH --allow-run-as-root --bind-to none)
[[ -n ${LD_LIBRARY_PATH:-} ]] && mpi_env+=(-x LD_LIBRARY_PATH)

# Two hosts, one rank each, TCP over the veth pair only.
two_hosts() {
  ip netns exec "$a" mpirun "${mpi_env[@]}" --host 10.77.0.1:1,10.77.0.2:1 -np 2 \
    --mca plm_rsh_agent "$work/agent.sh" --mca plm_rsh_no_tree_spawn 1 \
    --mca btl tcp,self --mca btl_tcp_if_include 10.77.0.0/24 \
    --mca oob_tcp_if_include 10.77.0.0/24 --mca orte_abort_on_non_zero_status 0 \
    "$train" "${common[@]}" "$@"
}

echo "two_hosts.sh: where the ranks run (each must see only its own veth address and host name):"
two_hosts_plain() {
  ip netns exec "$a" mpirun "${mpi_env[@]}" --host 10.77.0.1:1,10.77.0.2:1 -np 2 \
    --mca plm_rsh_agent "$work/agent.sh" --mca plm_rsh_no_tree_spawn 1 \
    --mca oob_tcp_if_include 10.77.0.0/24 "$@"
}
two_hosts_plain sh -c 'echo "  rank $OMPI_COMM_WORLD_RANK on host $(hostname): $(ip -4 -brief addr show | grep 10.77)"' ||
  die "mpirun cannot start a process on both hosts"

echo "two_hosts.sh: [1/4] one host, 2 processes"
mpirun "${mpi_env[@]}" --oversubscribe -np 2 "$train" "${common[@]}" --epochs 2 \
  --out "$work/one_host" >"$work/one_host.log" 2>&1 || { cat "$work/one_host.log"; die "one-host run failed"; }
tail -2 "$work/one_host.log"

echo "two_hosts.sh: [2/4] two hosts x 1 process"
two_hosts --epochs 2 --out "$work/two_hosts" >"$work/two_hosts.log" 2>&1 ||
  { cat "$work/two_hosts.log"; die "two-host run failed"; }
tail -2 "$work/two_hosts.log"
# same_tensors A B: every tensor of the two checkpoints, byte for byte (the metadata holds the
# --out paths).
same_tensors() {
  python3 - "$1" "$2" <<'EOF'
import json, struct, sys
def tensors(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    header.pop("__metadata__", None)
    data = raw[8 + n:]
    return {k: (v["dtype"], v["shape"], data[v["data_offsets"][0]:v["data_offsets"][1]])
            for k, v in header.items()}
one, two = tensors(sys.argv[1]), tensors(sys.argv[2])
if one.keys() != two.keys():
    sys.exit(f"different tensors: {sorted(one.keys() ^ two.keys())}")
bad = [k for k in one if one[k] != two[k]]
if bad:
    sys.exit(f"{len(bad)} of {len(one)} tensors differ, e.g. {bad[:3]}")
print(f"two_hosts.sh: the checkpoints are equal: {len(one)} tensors, bit for bit")
EOF
}
same_tensors "$work/one_host/last.safetensors" "$work/two_hosts/last.safetensors" || die "the checkpoints differ"

echo "two_hosts.sh: [3/4] the link cut mid-run (--collective-timeout 10)"
timeout_s=10
two_hosts --epochs 50 --collective-timeout "$timeout_s" --out "$work/cut" >"$work/cut.log" 2>&1 &
job=$!
# Cut once training runs (the first epoch's line is printed after its checkpoint).
for _ in $(seq 600); do
  grep -q "^epoch 1/" "$work/cut.log" && break
  sleep 0.1
done
grep -q "^epoch 1/" "$work/cut.log" || { cat "$work/cut.log"; die "the run never finished an epoch"; }
ip -n "$a" link set "v$a" down
cut_at=$(date +%s%N)
echo "two_hosts.sh: link down at $(date +%T.%N | cut -c1-12)"
# The ranks must report within the timeout (+ the 1 s abort grace and slack for a loaded
# machine); mpirun itself may need its daemons, which the cut separated, so it gets a bound too.
ended=""
for _ in $(seq $(((timeout_s + 20) * 10))); do
  if ! kill -0 "$job" 2>/dev/null; then ended=yes; break; fi
  sleep 0.1
done
elapsed_ms=$((($(date +%s%N) - cut_at) / 1000000))
cat "$work/cut.log" | grep -E "ringgrad: rank|error" || true
# Rank r runs on the r-th host of --host: whoever reports names the rank on the other side.
named=$(grep -Eo -m1 "ringgrad: rank [01] of 2: .*timed out after ${timeout_s}000 ms waiting for rank [01]" "$work/cut.log") ||
  { cat "$work/cut.log"; die "no rank named the timed-out collective and the other rank"; }
reporter=${named#ringgrad: rank } reporter=${reporter%% *}
lost=${named##* }
((lost != reporter)) || die "rank $reporter named itself"
hosts=(10.77.0.1 10.77.0.2)
if [[ -z $ended ]]; then
  echo "two_hosts.sh: the ranks reported the cut, but mpirun was still running ${elapsed_ms} ms after it"
  ip netns pids "$a" | xargs -r kill -9 2>/dev/null
  ip netns pids "$b" | xargs -r kill -9 2>/dev/null
  die "mpirun did not end"
fi
left=$( (ip netns pids "$a"; ip netns pids "$b") | xargs -r ps -o comm= -p 2>/dev/null | grep -c train_cifar)
((left == 0)) || die "$left train_cifar process(es) still alive after mpirun ended"
echo "two_hosts.sh: the job ended ${elapsed_ms} ms after the cut; rank $reporter (host ${hosts[reporter]}) named the collective and rank $lost, the rank on the lost host ${hosts[lost]}"

echo "two_hosts.sh: [4/4] the link cut under scripts/mpirun.sh --elastic 1:2: the job goes on on 10.77.0.1"
ip -n "$a" link set "v$a" up || die "cannot bring the link up again"
two_hosts_plain true || die "the link did not come back"
elastic_flags="--mca plm_rsh_agent $work/agent.sh --mca plm_rsh_no_tree_spawn 1 --mca btl tcp,self"
elastic_flags+=" --mca btl_tcp_if_include 10.77.0.0/24 --mca oob_tcp_if_include 10.77.0.0/24"
fresh=()  # the common flags without --overwrite: an elastic job resumes (--resume auto)
for f in "${common[@]}"; do [[ $f == --overwrite ]] || fresh+=("$f"); done
started=$(date +%s%N)
ip netns exec "$a" env RG_MPIRUN_FLAGS="$elastic_flags" \
  RG_ELASTIC_ON_RESTART="cp -a '$work/elastic' '$work/elastic_at_restart'" \
  bash scripts/mpirun.sh --elastic 1:2 --max-restarts 1 --hosts 10.77.0.1:1,10.77.0.2:1 2 \
  "$train" "${fresh[@]}" --epochs 4 --collective-timeout "$timeout_s" \
  --out "$work/elastic" --resume auto >"$work/elastic.log" 2>&1 &
job=$!
for _ in $(seq 600); do
  grep -q "^epoch 1/" "$work/elastic.log" && break
  sleep 0.1
done
grep -q "^epoch 1/" "$work/elastic.log" || { cat "$work/elastic.log"; die "the elastic run never finished an epoch"; }
ip -n "$a" link set "v$a" down
echo "two_hosts.sh: link down at $(date +%T.%N | cut -c1-12)"
for _ in $(seq 1800); do
  kill -0 "$job" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$job" 2>/dev/null; then
  cat "$work/elastic.log"
  die "the elastic job was still running 180 s after the cut"
fi
wait "$job"
status=$?
elapsed_ms=$((($(date +%s%N) - started) / 1000000))
grep -E "^scripts/mpirun.sh --elastic|^resumed|^done:" "$work/elastic.log"
((status == 0)) || { cat "$work/elastic.log"; die "the elastic job failed (exit status $status)"; }
grep -q "lost host(s) 10.77.0.2" "$work/elastic.log" || die "the supervisor did not name the lost host"
grep -q "membership change: 2 -> 1 rank;" "$work/elastic.log" || die "no restart on 1 rank"
grep -q "attempt 2: 1 rank on 10.77.0.1:1" "$work/elastic.log" || die "the restart was not on the host left"
grep -q "resumed on 1 rank, was 2: per-rank batch 8 → 16, global 16 kept" "$work/elastic.log" ||
  die "the restart did not keep the global batch"
[[ -d $work/elastic_at_restart ]] || die "RG_ELASTIC_ON_RESTART did not run"
ip netns exec "$a" mpirun "${mpi_env[@]}" -np 1 "$train" "${fresh[@]}" --epochs 4 \
  --out "$work/elastic_at_restart" --resume auto >"$work/plain_resume.log" 2>&1 ||
  { cat "$work/plain_resume.log"; die "the plain resume on one rank failed"; }
same_tensors "$work/elastic_at_restart/last.safetensors" "$work/elastic/last.safetensors" ||
  die "the elastic job ended elsewhere than a plain resume on one rank"
echo "two_hosts.sh: the elastic job ended well ${elapsed_ms} ms after its start, on 10.77.0.1 alone after the cut"
echo "two_hosts.sh: PASS"
