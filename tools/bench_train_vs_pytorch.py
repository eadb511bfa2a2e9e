#!/usr/bin/env python3
"""Train-step throughput of ringgrad next to PyTorch, same model, batch and threads, in one run.

    python3 tools/bench_train_vs_pytorch.py [--model resnet18] [--batch 128] [--threads 2]
                                            [--steps 5]

Runs build/apps/bench_train (forward, cross-entropy, backward, SGD step on random data) and
the same step in PyTorch on the model of tools/resnet_reference.py, alternating the two so
that both see the same machine load, and prints one JSON object. Needs PyTorch (pip install
torch) and a built ringgrad (bash scripts/build.sh).
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))


def pytorch_step_rate(model_name, batch, threads, steps, warmup=1):
    import torch
    import resnet_reference

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    base, _, width = model_name.partition("@")
    model = getattr(resnet_reference, base)(float(width) if width else 1.0)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    x = torch.randn(batch, 3, 32, 32)
    y = torch.arange(batch) % 10

    def step():
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return {"framework": "pytorch", "version": torch.__version__, "model": model_name,
            "batch": batch, "threads": threads, "steps": steps,
            "images_per_second": round(batch * steps / sum(times), 1),
            "best_images_per_second": round(batch / min(times), 1)}


def ringgrad_step_rate(model_name, batch, threads, steps):
    exe = os.path.join(ROOT, "build", "apps", "bench_train")
    out = subprocess.run([exe, "--model", model_name, "--batch", str(batch), "--threads",
                          str(threads), "--steps", str(steps)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="resnet18")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--rounds", type=int, default=2, help="alternations of the two frameworks")
    a = p.parse_args()
    runs = {"ringgrad": [], "pytorch": []}
    for _ in range(a.rounds):
        runs["ringgrad"].append(ringgrad_step_rate(a.model, a.batch, a.threads, a.steps))
        runs["pytorch"].append(pytorch_step_rate(a.model, a.batch, a.threads, a.steps))
    best = {k: max(v, key=lambda r: r["images_per_second"]) for k, v in runs.items()}
    best["speedup"] = round(best["ringgrad"]["images_per_second"] /
                            best["pytorch"]["images_per_second"], 2)
    best["load_average"] = os.getloadavg()
    print(json.dumps(best, indent=2))


if __name__ == "__main__":
    main()
