#!/usr/bin/env bash
# doc_commands.sh --source DIR --build DIR --work DIR [--only REGEX] [--list] [--timeout S] [--jobs N]
#
# Runs every command the docs give: the ```bash/```sh blocks of every README.md in the tree and
# of every page under docs/ (docs/learn/ included), each in a scratch folder of its own, with
# its marks applied (tests/docs/doc_blocks.pl; tests/README.md, "Commands in the docs"). Prints
# one line per block — PASS, SKIP (and why) or FAIL, with the doc's file and line — and exits 1
# if a block failed, a mark is wrong, or a command wrote into the source tree.
#
# What a block sees: its own empty folder as the working directory (and TMPDIR, HOME), in it
# build/apps and build/tests (the build's programs), scripts/, tests/ and tools/ (the source's),
# the build's apps on PATH, RINGGRAD_DATA pointing at a tiny CIFAR-10 of random pixels, and
# DOC_TEST_DATA, a folder of small data sets for the commands that take one (made once per run:
# tiny_cifar/, shapes2d/ (PNG images and masks), volumes/ (.npy), photos/ (32x32 PNGs)).
set -uo pipefail

source_dir="" build_dir="" work="" only="" list=0 default_timeout=60 jobs_at_once=2
while (($#)); do
  case $1 in
    --source) source_dir=$2 && shift ;;
    --build) build_dir=$2 && shift ;;
    --work) work=$2 && shift ;;
    --only) only=$2 && shift ;;
    --list) list=1 ;;
    --timeout) default_timeout=$2 && shift ;;
    --jobs) jobs_at_once=$2 && shift ;;
    *) echo "doc_commands.sh: unknown argument $1" >&2 && exit 2 ;;
  esac
  shift
done
[[ -n $source_dir && -n $build_dir && -n $work ]] ||
  { echo "usage: doc_commands.sh --source DIR --build DIR --work DIR [--only REGEX] [--list]" >&2; exit 2; }
source_dir=$(cd "$source_dir" && pwd) build_dir=$(cd "$build_dir" && pwd)
here=$(cd "$(dirname "$0")" && pwd)

rm -rf "$work" && mkdir -p "$work/blocks" || exit 2
work=$(cd "$work" && pwd)
cd "$source_dir" || exit 2
# (tests/docs/fixtures: docs wrong on purpose, for the test of this test)
mapfile -t docs < <(find . \( -name 'build*' -o -name '.git' -o -path ./tests/docs/fixtures \) -prune -o \
                      \( -name README.md -o -path './docs/*.md' \) -type f -print | sed 's|^\./||' | sort)
perl "$here/doc_blocks.pl" "$work/blocks" "${docs[@]}" || exit 2

failed=0 passed=0 skipped=0
while IFS= read -r problem; do
  echo "FAIL  $problem"
  failed=$((failed + 1))
done <"$work/blocks/lint.txt"

has_gpu=0
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU' && has_gpu=1
has_mpirun=0
command -v "${MPIRUN:-mpirun}" >/dev/null 2>&1 && has_mpirun=1

# The small data sets, once.
data="$work/data"
if ((!list)); then
  mkdir -p "$data"
  bash "$here/../parallel_mpi/tiny_cifar.sh" "$data/tiny_cifar" 64 &&
    "$build_dir/tests/doc_test_data" "$data" >"$work/data.log" 2>&1 ||
    { echo "FAIL  the doc test's data sets (see $work/data.log)"; exit 1; }
fi

status_before=""
git -C "$source_dir" rev-parse --git-dir >/dev/null 2>&1 &&
  status_before=$(git -C "$source_dir" status --porcelain --untracked-files=all)

# One block in its scratch folder; its verdict line (and, on failure, its output's tail) goes to
# $work/results/ID.
run_block() {
  local id=$1 where=$2 limit=$3 expected=$4
  local scratch="$work/run/$id" result="$work/results/$id"
  mkdir -p "$scratch/build" "$scratch/tmp" "$scratch/home"
  ln -s "$build_dir/apps" "$scratch/build/apps"
  ln -s "$build_dir/tests" "$scratch/build/tests"
  for d in scripts tests tools; do ln -s "$source_dir/$d" "$scratch/$d"; done
  local begin=$SECONDS
  (
    cd "$scratch" &&
      env PATH="$build_dir/apps:$PATH" HOME="$scratch/home" TMPDIR="$scratch/tmp" \
        RINGGRAD_DATA="$data/tiny_cifar" DOC_TEST_DATA="$data" \
        OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        OMPI_MCA_rmaps_base_oversubscribe=1 \
        timeout --kill-after=5 "$limit" bash "$work/blocks/$id.sh"
  ) >"$scratch.log" 2>&1 </dev/null
  local status=$? took=$((SECONDS - begin)) ok=0 why
  if ((status == 124 || status == 137)); then
    why="stopped at its limit of ${limit} s"
  elif [[ $expected == nonzero ]]; then
    ((status != 0)) && ok=1
    why="exit $status, expected non-zero"
  else
    ((status == expected)) && ok=1
    why="exit $status, expected $expected"
  fi
  if ((ok)); then
    echo "PASS  $where  (${took} s)" >"$result"
    rm -rf "$scratch" "$scratch.log"
  else
    {
      echo "FAIL  $where  ($why, after ${took} s; the block is $work/blocks/$id.sh, its folder $scratch)"
      sed 's/^/      | /' "$scratch.log" | tail -n 15
    } >"$result"
  fi
}

mkdir -p "$work/results"
start_all=$SECONDS
order=()
for meta in "$work"/blocks/*.meta; do
  [[ -e $meta ]] || break
  id=$(basename "$meta" .meta)
  declare -A m=()
  while IFS='=' read -r key value; do m[$key]=$value; done <"$meta"
  where="${m[file]}:${m[line]}"
  [[ -n $only && ! $where =~ $only ]] && continue
  if ((list)); then
    echo "---- $where"
    cat "$work/blocks/$id.sh"
    continue
  fi
  order+=("$id")
  reason=""
  [[ -n ${m[skip]} ]] && reason=${m[skip]}
  [[ -z $reason && ${m[gpu]} == 1 && $has_gpu == 0 ]] && reason="needs a GPU; this machine has none"
  [[ -z $reason && ${m[mpirun]} == 1 && $has_mpirun == 0 ]] && reason="needs mpirun; none on PATH"
  if [[ -n $reason ]]; then
    echo "SKIP  $where  ($reason)" >"$work/results/$id"
    continue
  fi
  # At most --jobs blocks at once: most of a block's time is starting processes and MPI.
  while (($(jobs -rp | wc -l) >= jobs_at_once)); do wait -n; done
  run_block "$id" "$where" "${m[timeout]:-$default_timeout}" "${m[exit]}" &
done
wait
for id in "${order[@]}"; do
  cat "$work/results/$id"
  case $(head -c 4 "$work/results/$id") in
    PASS) passed=$((passed + 1)) ;;
    SKIP) skipped=$((skipped + 1)) ;;
    *) failed=$((failed + 1)) ;;
  esac
done
((list)) && exit 0

if [[ -n $status_before || -d $source_dir/.git || -f $source_dir/.git ]]; then
  status_after=$(git -C "$source_dir" status --porcelain --untracked-files=all 2>/dev/null)
  if [[ $status_after != "$status_before" ]]; then
    echo "FAIL  a command wrote into the source tree:"
    diff <(echo "$status_before") <(echo "$status_after") | sed -n 's/^> /      /p'
    failed=$((failed + 1))
  fi
fi
echo "doc_commands: $passed PASS, $skipped SKIP, $failed FAIL ($((SECONDS - start_all)) s)"
((failed == 0))
