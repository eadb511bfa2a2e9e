#!/usr/bin/env python3
"""Convolution kernels of ringgrad next to PyTorch's, layer by layer, in one run.

    python3 tools/bench_convs_vs_pytorch.py [--model resnet18|resnet20|airbench94|zoo] [--dtype bf16]
                                            [--threads 1] [--repeat 5] [--batch 128]

Runs build/apps/bench_ops on every distinct convolution of the model (forward, backward-data,
backward-weight; --clock cpu: the CPU time of the process, which a shared machine's load
inflates far less than wall time) and then the same three calls in PyTorch on the same shapes
and dtype (torch.nn.functional.conv2d, torch.nn.grad.conv2d_input, conv2d_weight; CPU time by
time.process_time, best of --repeat after a warm-up call, as bench_ops). PyTorch's CPU
convolutions are oneDNN's (its bf16 ones on AMX or AVX512-BF16 where the CPU has them), so
this compares ringgrad's kernels with oneDNN's as PyTorch calls them, NCHW in and out.
Prints one JSON object: per layer the milliseconds of each side and PyTorch / ringgrad, and
the totals weighted by how often each layer occurs in the model.
Needs PyTorch (pip install torch) and a built ringgrad (bash scripts/build.sh).
"""
import argparse
import json
import os
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pytorch_times(conv, batch, dtype, repeat):
    import torch

    g = conv.get("groups", 1)
    x = torch.randn(batch, conv["C"], conv["H"], conv["H"]).to(dtype)
    w = torch.randn(conv["O"], conv["C"] // g, conv["k"], conv["k"]).to(dtype)
    s, p = conv["stride"], conv["pad"]
    gy = torch.randn_like(torch.nn.functional.conv2d(x, w, stride=s, padding=p, groups=g))

    def best(f):
        f()
        t = 1e9
        for _ in range(repeat):
            t0 = time.process_time()
            f()
            t = min(t, time.process_time() - t0)
        return 1e3 * t

    return {
        "forward": best(lambda: torch.nn.functional.conv2d(x, w, stride=s, padding=p, groups=g)),
        "backward_data": best(
            lambda: torch.nn.grad.conv2d_input(x.shape, w, gy, stride=s, padding=p, groups=g)),
        "backward_weight": best(
            lambda: torch.nn.grad.conv2d_weight(x, w.shape, gy, stride=s, padding=p, groups=g)),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="resnet18", choices=["resnet18", "resnet20", "airbench94", "zoo"])
    p.add_argument("--dtype", default="bf16", choices=["f32", "bf16"])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--exe", default=os.path.join(ROOT, "build", "apps", "bench_ops"))
    a = p.parse_args()
    out = subprocess.run([a.exe, "--model", a.model, "--dtype", a.dtype, "--threads",
                          str(a.threads), "--repeat", str(a.repeat), "--batch", str(a.batch),
                          "--clock", "cpu"], check=True, capture_output=True, text=True).stdout
    ours = json.loads(out)
    import torch

    torch.set_num_threads(a.threads)
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[a.dtype]
    kinds = ["forward", "backward_data", "backward_weight"]
    layers, totals = [], {"ringgrad": 0.0, "pytorch": 0.0}
    for conv in ours["convs"]:
        theirs = pytorch_times(conv, a.batch, dtype, a.repeat)
        row = {"name": conv["name"], "count": conv["count"]}
        for k in kinds:
            rg_ms = conv[k]["ms"]
            row[k] = {"ringgrad_ms": rg_ms, "pytorch_ms": round(theirs[k], 3),
                      "ratio": round(theirs[k] / rg_ms, 2)}
            totals["ringgrad"] += conv["count"] * rg_ms
            totals["pytorch"] += conv["count"] * theirs[k]
        layers.append(row)
    print(json.dumps({
        "model": a.model, "dtype": a.dtype, "threads": a.threads, "batch": a.batch,
        "clock": "cpu", "ringgrad_cpu_kernels": ours.get("cpu_kernels"),
        "pytorch": torch.__version__, "layers": layers,
        "weighted_total_ms": {k: round(v, 1) for k, v in totals.items()},
        "ratio": round(totals["pytorch"] / totals["ringgrad"], 2),
        "load_average": os.getloadavg()}, indent=2))


if __name__ == "__main__":
    main()
