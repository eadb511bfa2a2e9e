#!/usr/bin/env python3
"""Counts the lines a learner reads in docs/learn/: README.md's learner entry, the lessons' index,
each lesson's page and the code its "Read" section names (the textbook file, then the real
functions). Lines are what a reader sees: blank lines and the doc-test marks (HTML comments,
invisible on the page) are not counted; code comments are (they say why).

    python3 tools/lesson_reading.py [--check]

--check: every "(N lines)" a lesson states for what it names must be within 20 % of the count.
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# What each lesson's "Read" section names: (file, [functions or classes] or None for all of it),
# with the "(N lines)" the page states for it.
LESSONS = {
    "1-ring.md": [
        ("parallel/textbook/ring.cpp", None, 45),
        ("parallel/ring_allreduce.cpp", ["run", "exchange_messages", "ring_allreduce"], 45),
        ("parallel/transport.h", ["class Transport"], 20),
    ],
    "2-data-parallel.md": [
        ("parallel/textbook/data_parallel.cpp", None, 75),
        ("parallel/data_parallel_functions.cpp",
         ["class ScatterBackward", "class GatherBackward", "class BroadcastBackward"], 60),
        ("parallel/data_parallel.cpp", ["DataParallel::forward", "run_replicas"], 65),
    ],
    "3-ddp.md": [
        ("parallel/textbook/ddp.cpp", None, 115),
        ("parallel/ddp.cpp", ["begin_iteration", "on_gradient", "use_slot", "mark_ready",
                               "launch", "finish", "wait_for_buckets"], 75),
        ("parallel/comm_hooks.cpp", None, 60),
    ],
    "4-sync-batch-norm.md": [
        ("parallel/textbook/sync_bn.cpp", None, 60),
        ("parallel/sync_batch_norm.cpp",
         ["sync_batch_norm", "gather_stats", "SyncBatchNormBackward::apply"], 75),
    ],
    "5-mixed-precision.md": [
        ("parallel/textbook/loss_scaler.cpp", None, 60),
        ("optim/loss_scaler.cpp", ["LossScaler::unscale", "LossScaler::step",
                                   "LossScaler::update"], 75),
        ("optim/update_math.h", ["unscale_element"], 5),
        ("optim/amp.cpp", ["MixedPrecision::backward", "MixedPrecision::step"], 40),
    ],
    "6-zero.md": [
        ("parallel/textbook/zero.cpp", None, 80),
        ("parallel/zero.cpp", ["reduce_scatter_hook", "bucket_reduced",
                               "ZeroRedundancyOptimizer::step", "all_gather_parameters"], 75),
        ("parallel/zero.cpp", ["make_pieces"], 35),
    ],
}


def seen(lines):
    """The lines a reader sees: not blank, not an HTML comment (the doc-test marks)."""
    return [l for l in lines if l.strip() and not re.fullmatch(r"\s*<!--.*-->\s*", l)]


def definition(lines, name, first_line=0):
    """The lines of a function's or class's definition, with the comment just above it.
    "Class::method" is also found as a method defined inside the class's body."""
    kind, _, bare = name.rpartition(" ")
    if kind:  # "class X" / "struct X": the declaration with a body
        start = re.compile(rf"^\s*(class|struct)\s+{re.escape(bare)}\b[^;]*$")
    else:  # a definition: the name, '(' and no ';' before the line's end
        start = re.compile(rf"^\s*[\w:<>,&*~ ]*\b{re.escape(bare)}\s*\([^;]*$")
    found = find(lines, start, first_line)
    if found is None and "::" in name and not kind:
        owner, method = name.rsplit("::", 1)
        body = find(lines, re.compile(rf"^\s*(class|struct)\s+{re.escape(owner)}\b[^;]*$"), 0)
        if body is not None:
            return definition(lines, method, first_line=lines.index(body[0]))
    if found is None:
        sys.exit(f"lesson_reading: no definition of '{name}'")
    return found


def find(lines, start, first_line):
    for i in range(first_line, len(lines)):
        line = lines[i]
        if not start.match(line) or line.lstrip().startswith(("return", "//")):
            continue
        depth, j, opened = 0, i, False
        while j < len(lines):
            code = lines[j].split("//")[0]
            depth += code.count("{") - code.count("}")
            opened = opened or "{" in code
            if ";" in code and not opened and depth == 0:
                break  # a declaration after all
            if opened and depth == 0:
                first = i
                while first > 0 and lines[first - 1].strip().startswith("//"):
                    first -= 1
                return lines[first:j + 1]
            j += 1
    return None


def main():
    check = "--check" in sys.argv[1:]
    readme = (ROOT / "README.md").read_text().splitlines()
    entry_start = next(i for i, l in enumerate(readme) if l.startswith("## Learn data parallelism"))
    entry_end = next(i for i in range(entry_start + 1, len(readme)) if readme[i].startswith("## "))
    total = len(seen(readme[entry_start:entry_end]))
    index = len(seen((ROOT / "docs/learn/README.md").read_text().splitlines()))
    total += index
    print(f"README.md's entry {total - index}, docs/learn/README.md {index}")
    wrong = []
    for lesson, reading in LESSONS.items():
        page = len(seen((ROOT / "docs/learn" / lesson).read_text().splitlines()))
        parts, code = [], 0
        for path, names, stated in reading:
            lines = (ROOT / path).read_text().splitlines()
            chosen = lines if names is None else sum((definition(lines, n) for n in names), [])
            n = len(seen(chosen))
            code += n
            parts.append(f"{path} {n}")
            if abs(n - stated) > 0.2 * stated:
                wrong.append(f"{lesson}: {path} says {stated} lines, counts {n}")
        total += page + code
        print(f"{lesson}: page {page} + code {code} ({', '.join(parts)}) = {page + code}")
    print(f"from README.md's entry to the end of lesson 6: {total} lines")
    for w in wrong:
        print(w)
    return 1 if check and wrong else 0


if __name__ == "__main__":
    sys.exit(main())
