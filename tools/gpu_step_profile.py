#!/usr/bin/env python3
"""Where a GPU train step's time goes, kernel by kernel, ringgrad beside PyTorch.

    python3 tools/gpu_step_profile.py RINGGRAD.csv PYTORCH.csv [--top 12]
    python3 tools/gpu_step_profile.py --trace-pytorch PYTORCH.csv [--model resnet18] [--batch 128]

Reads two CSV files of kernel times over a few train steps each and keeps the last step of
each: the longest tail that repeats once just before itself (a warm step launches the same
kernels as the one before it; the first steps may differ, with first allocations). ringgrad's
comes from Nsight Compute (`ncu --csv --print-units base --print-kernel-base demangled
--metrics gpu__time_duration.sum bench_train ...`, page raw or details); PyTorch's from
--trace-pytorch, which times two warm steps of tools/bench_train_vs_pytorch.py's twin under
torch.profiler and writes the same columns. (Under ncu, whose every kernel waits for the
profiler, cuDNN's autotuner would time garbage and pick slow algorithms: torch.profiler traces
the steps without stopping them. bench_train without --cudnn-benchmark has no autotuner.)
scripts/gpu_quick_check.sh's profile step writes both files.

    python3 tools/gpu_step_profile.py --train-steps RINGGRAD.csv

counts the kernels of each training step of a whole `train_cifar` run profiled by ncu with the
data set on the device: a step starts with the device data path's gather (`gather_kernel`), an
epoch with its draws (`plan_kernel`), so the steps of the first epoch are the stretches from one
gather to the next, the last one ending at the evaluation's plan. Prints each step's kernels and
GPU time and, for the last one, the time by kind: issue 40's "kernels per step" of the real loop
(data, forward, loss, metrics, backward, optimizer, schedule, lookahead when its step comes).
Prints, for that step, the GPU time by kind of kernel (convolution, GEMM, BatchNorm, elementwise,
reduction, optimizer, copy) and the kernels that take the most time, for each framework. The sum
of kernel times is the step's GPU-busy time; the step's wall time (bench_train) minus that sum is
what the GPU spent waiting for the host.
"""
import argparse
import csv
import re
import sys
from collections import Counter

METRIC = "gpu__time_duration.sum"

# First match wins: the library kernels first, then ours and PyTorch's by what they do.
KINDS = [
    ("batchnorm", r"batch_?norm|bn_|_bn|welford"),
    ("conv", r"cudnn|conv|dgrad|wgrad|fprop|implicit|winograd"),
    ("gemm", r"gemm|cublas|cutlass|xmma"),
    ("optimizer", r"sgd|adam|momentum|multi_tensor|foreach|optim"),
    ("pooling", r"pool"),
    ("reduce", r"reduce|sum|softmax|cross_entropy|nll|loss|max|mean"),
    ("copy", r"copy|cast|convert|fill|memset|transpose"),
    ("elementwise", r"elementwise|vectorized|unrolled|accumulate|relu|add|mul|pointwise|binary"),
]


def kind_of(name):
    low = name.lower()
    for kind, pattern in KINDS:
        if re.search(pattern, low):
            return kind
    return "other"


def read_kernels(path):
    """[(name, ns)] in launch order from an ncu CSV (either page)."""
    with open(path, newline="") as f:
        lines = [line for line in f if line.startswith('"')]  # drop ==PROF== and app output
    rows = list(csv.reader(lines))
    header = next((r for r in rows if "Kernel Name" in r), None)
    if header is None:
        sys.exit(f"gpu_step_profile: {path} has no ncu CSV header (no 'Kernel Name' column)")
    name_col, id_col = header.index("Kernel Name"), header.index("ID")
    kernels = []
    if METRIC in header:  # page raw: one row per kernel, one column per metric
        col = header.index(METRIC)
        for r in rows:
            if r is not header and len(r) > col and r[id_col].isdigit():
                kernels.append((r[name_col], float(r[col].replace(",", ""))))
    else:  # page details: one row per kernel and metric
        metric_col, value_col = header.index("Metric Name"), header.index("Metric Value")
        for r in rows:
            if len(r) > value_col and r[metric_col] == METRIC and r[id_col].isdigit():
                kernels.append((r[name_col], float(r[value_col].replace(",", ""))))
    if not kernels:
        sys.exit(f"gpu_step_profile: {path} has no {METRIC} values")
    return kernels


def last_step(kernels):
    """The longest tail of the launch sequence that repeats right before itself: the same
    kernels, in any order (where streams interleave, the order of two launches can change)."""
    names = [n for n, _ in kernels]
    for k in range(len(names) // 2, 0, -1):
        if Counter(names[-k:]) == Counter(names[-2 * k:-k]):
            return kernels[-k:]
    sys.exit("gpu_step_profile: no repeated step in the profile (profile two steps or more)")


def summary(kernels):
    by_kind, by_name = {}, {}
    for name, ns in kernels:
        kind = kind_of(name)
        t, n = by_kind.get(kind, (0.0, 0))
        by_kind[kind] = (t + ns, n + 1)
        t, n = by_name.get(name, (0.0, 0))
        by_name[name] = (t + ns, n + 1)
    return by_kind, by_name


def train_steps(kernels, step_marker=r"gather_kernel", epoch_marker=r"plan_kernel"):
    """The kernels of each training step of the first epoch (see the module's doc)."""
    plans = [i for i, (n, _) in enumerate(kernels) if re.search(epoch_marker, n)]
    if len(plans) < 2:
        sys.exit(f"gpu_step_profile: fewer than two '{epoch_marker}' launches (an epoch and its "
                 "evaluation, with --data-on-device on)")
    starts = [i for i in range(plans[0], plans[1]) if re.search(step_marker, kernels[i][0])]
    if not starts:
        sys.exit(f"gpu_step_profile: no '{step_marker}' launch in the first epoch")
    return [kernels[a:b] for a, b in zip(starts, starts[1:] + [plans[1]])]


def print_train_steps(path, top):
    steps = train_steps(read_kernels(path))
    counts = [len(s) for s in steps]
    times = [sum(ns for _, ns in s) / 1e6 for s in steps]
    print(f"train_cifar's first epoch, {len(steps)} steps: kernels per step "
          f"{' '.join(map(str, counts))} (median {sorted(counts)[len(counts) // 2]}); GPU ms per "
          f"step {' '.join(f'{t:.2f}' for t in times)}")
    by_kind, by_name = summary(steps[-1])
    print("the last step by kind: " + ", ".join(
        f"{k} {n} ({t / 1e6:.2f} ms)" for k, (t, n) in sorted(by_kind.items(), key=lambda kv: -kv[1][0])))
    for name, (t, n) in sorted(by_name.items(), key=lambda kv: -kv[1][0])[:top]:
        short = name.removeprefix("void ").split("(")[0]
        print(f"  {t / 1e6:8.3f} ms {n:4d}x  {kind_of(name):<11} {short[:100]}")


def trace_pytorch(out, model, batch, amp, amp_dtype, device):
    """Kernel times of two warm PyTorch steps (after three: cuDNN's autotuner) to `out`."""
    import os

    import torch
    from torch.profiler import ProfilerActivity, profile

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bench_train_vs_pytorch

    step = bench_train_vs_pytorch.pytorch_step(model, batch, 8, device, amp, amp_dtype)
    for _ in range(3):
        step()
    on_gpu = torch.device(device).type == "cuda"
    with profile(activities=[ProfilerActivity.CUDA if on_gpu else ProfilerActivity.CPU]) as prof:
        step()
        step()
    kind = torch.autograd.DeviceType.CUDA if on_gpu else torch.autograd.DeviceType.CPU
    events = sorted((e for e in prof.events() if e.device_type == kind),
                    key=lambda e: e.time_range.start)
    with open(out, "w", newline="") as f:
        w = csv.writer(f, quoting=csv.QUOTE_ALL)
        w.writerow(["ID", "Kernel Name", METRIC])
        for i, e in enumerate(events):
            w.writerow([i, e.name, round(e.time_range.elapsed_us() * 1000)])
    print(f"gpu_step_profile: {len(events)} kernels of two PyTorch {torch.__version__} steps "
          f"in {out}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("ringgrad", nargs="?")
    p.add_argument("pytorch", nargs="?")
    p.add_argument("--top", type=int, default=12)
    p.add_argument("--trace-pytorch", metavar="CSV", help="write PyTorch's kernel times")
    p.add_argument("--train-steps", metavar="CSV",
                   help="kernels per step of a train_cifar run profiled by ncu")
    p.add_argument("--model", default="resnet18")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--amp", default="O0", choices=["O0", "O1"])
    p.add_argument("--amp-dtype", default="fp16", choices=["fp16", "bf16"])
    p.add_argument("--device", default="cuda", help="cuda[:N] (cpu: to try the tool)")
    a = p.parse_args()
    if a.train_steps:
        return print_train_steps(a.train_steps, a.top)
    if a.trace_pytorch:
        return trace_pytorch(a.trace_pytorch, a.model, a.batch, a.amp, a.amp_dtype, a.device)
    if not (a.ringgrad and a.pytorch):
        p.error("give RINGGRAD.csv and PYTORCH.csv, or --trace-pytorch CSV")
    steps = {"ringgrad": last_step(read_kernels(a.ringgrad)),
             "pytorch": last_step(read_kernels(a.pytorch))}
    sums = {fw: summary(k) for fw, k in steps.items()}
    print(f"{'kind':<12} {'ringgrad ms':>12} {'kernels':>8} {'pytorch ms':>12} {'kernels':>8}")
    kinds = sorted({k for s in sums.values() for k in s[0]},
                   key=lambda k: -sums["ringgrad"][0].get(k, (0, 0))[0])
    for kind in kinds + ["total"]:
        cells = []
        for fw in ("ringgrad", "pytorch"):
            if kind == "total":
                t, n = sum(ns for _, ns in steps[fw]), len(steps[fw])
            else:
                t, n = sums[fw][0].get(kind, (0.0, 0))
            cells += [f"{t / 1e6:12.3f}", f"{n:8d}"]
        print(f"{kind:<12} " + " ".join(cells))
    for fw in ("ringgrad", "pytorch"):
        print(f"\n{fw}: the {a.top} kernels that take the most time in one step")
        top = sorted(sums[fw][1].items(), key=lambda kv: -kv[1][0])[:a.top]
        for name, (t, n) in top:
            short = name.removeprefix("void ").split("(")[0]
            print(f"  {t / 1e6:8.3f} ms {n:4d}x  {kind_of(name):<11} {short[:100]}")


if __name__ == "__main__":
    main()
