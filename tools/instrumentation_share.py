#!/usr/bin/env python3
"""The share of instrumentation and error text in the parallel algorithms' functions (issue 50).

For each named function: its lines (body, without blank and comment-only lines), and how many of
them are instrumentation (trace spans, timers, phase counters, trace text) or error text (checks,
error messages). Reads the tree at a git revision, so that before and after come from one command:

    python3 tools/instrumentation_share.py            # the work tree
    python3 tools/instrumentation_share.py 5f0a3da    # a commit
"""
import re
import subprocess
import sys

# (file, function pattern): the functions the issue names, in the files they live in.
FUNCTIONS = [
    ("parallel/ring_allreduce.cpp", r"void run\(Phase phase"),
    ("parallel/ring_allreduce.cpp", r"void exchange\(|void exchange_messages\("),
    ("parallel/data_parallel.cpp", r"Tensor DataParallel::forward\("),
    ("parallel/data_parallel.cpp", r"std::vector<Tensor> DataParallel::run_replicas\("),
    ("parallel/ddp.cpp", r"void on_gradient\("),
    ("parallel/ddp.cpp", r"void mark_ready\("),
    ("parallel/ddp.cpp", r"void launch\("),
    ("parallel/ddp.cpp", r"void finish\(\)"),
    ("parallel/ddp.cpp", r"void use_slot\("),
    ("parallel/sync_batch_norm.cpp", r"std::vector<Tensor> apply\("),
    ("parallel/sync_batch_norm.cpp", r"std::vector<BatchNormStats> gather_stats\("),
    ("parallel/sync_batch_norm.cpp", r"^Tensor sync_batch_norm\("),
    ("parallel/zero.cpp", r"void ZeroRedundancyOptimizer::gradients_reduced\(|"
                          r"void ZeroRedundancyOptimizer::bucket_reduced\("),
    ("parallel/zero.cpp", r"ZeroRedundancyOptimizer::reduce_scatter_hook\("),
    ("parallel/zero.cpp", r"void ZeroRedundancyOptimizer::step\(\)"),
    ("parallel/zero.cpp", r"void ZeroRedundancyOptimizer::all_gather_parameters\(\)"),
]

INSTRUMENTATION = re.compile(
    r"trace::|trace\(|Span|times_->|Clock|ms_since|seconds_since|waited|launched_in_hooks|"
    r"last = \{|bytes_str|options\.trace|hand_over|std::snprintf\(line|\bline\b|\blist\b|"
    r"\.set_args|span")
ERROR_TEXT = re.compile(r"RG_CHECK|fail\(|throw|try \{|catch \(|msg <<|_error\(|"
                        r"\"[^\"]*\"\s*$|^\s*\"")


def read(path, rev):
    if rev is None:
        with open(path) as f:
            return f.read()
    return subprocess.run(["git", "show", f"{rev}:{path}"], capture_output=True, text=True,
                          check=False).stdout


def body(text, pattern):
    """The function's lines from its signature to its closing brace, or None."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if re.search(pattern, line):
            depth, started = 0, False
            for j in range(i, len(lines)):
                depth += lines[j].count("{") - lines[j].count("}")
                started = started or "{" in lines[j]
                if started and depth == 0:
                    return lines[i:j + 1]
    return None


def count(lines):
    code = [l for l in lines if l.strip() and not l.strip().startswith("//")]
    instr = sum(1 for l in code if INSTRUMENTATION.search(l))
    err = sum(1 for l in code if not INSTRUMENTATION.search(l) and ERROR_TEXT.search(l))
    return len(code), instr, err


def main():
    rev = sys.argv[1] if len(sys.argv) > 1 else None
    print(f"| function ({rev or 'work tree'}) | lines | instrumentation | error text | share |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for path, pattern in FUNCTIONS:
        lines = body(read(path, rev), pattern)
        if lines is None:
            continue
        n, instr, err = count(lines)
        name = re.sub(r"\\\(.*|\\|\^", "", pattern.split("|")[0]).split()[-1]
        print(f"| `{path.split('/')[-1]}`: {name} | {n} | {instr} | {err} | "
              f"{100 * (instr + err) / max(n, 1):.0f} % |")


if __name__ == "__main__":
    main()
