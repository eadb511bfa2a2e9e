#!/usr/bin/env python3
"""Train-step throughput of ringgrad next to PyTorch, same model, batch and threads, in one run.

    python3 tools/bench_train_vs_pytorch.py [--model resnet18] [--batch 128] [--threads 2]
                                            [--steps 5] [--rounds 2] [--device cpu|cuda[:N]]
                                            [--amp O0|O1] [--amp-dtype fp16|bf16]
                                            [--channels-last] [--ringgrad-arg=--FLAG ...]
    python3 tools/bench_train_vs_pytorch.py --models resnet18:128,airbench@0.5:256,airbench:256 \\
                                            [--baseline OTHER/build/apps/bench_train]

Runs build/apps/bench_train (forward, cross-entropy, backward, SGD step on random data) and
the same step in PyTorch on the twin in tools/resnet_reference.py (the CIFAR ResNets, and
airbench at any width) or, with --pytorch-cifar DIR, pytorch-cifar's own definition of any other
zoo model (tools/pytorch_cifar_zoo.py's table), alternating the frameworks round by round so that all see the same
machine load, and prints one JSON object per model: the best round of each (images/s over the
timed steps) and ringgrad's speed-up, best round against best round; then each round's speed-up
(its two figures were measured back to back) and their median, which show how much the speed-up
moves with the machine's load from one round to the next. The parameter counts of ringgrad's model and the twin
must agree, or the script stops: a speed comparison of two different nets means nothing.
--baseline times a second ringgrad build in the same alternation (e.g. one built from main), so
a change is measured against its reference under the same load.

On a GPU (--device cuda) both run with cuDNN's autotuner on (torch.backends.cudnn.benchmark,
PyTorch's fastest eager setting; bench_train --cudnn-benchmark) but TF32 off
(torch.backends.cudnn.allow_tf32, on by default in PyTorch): ringgrad's f32 convolutions do not
run in TF32, so f32 is f32 on both sides. Both sides time each step to the device's completion;
--amp O1 is PyTorch's torch.autocast with a GradScaler beside ringgrad's O1 (the same policy);
with --amp-dtype bf16 neither side scales the loss (PyTorch's recommended use; ringgrad's
--loss-scale auto), so no step reads a verdict back.
--channels-last puts PyTorch's model and input in torch.channels_last (NHWC), its fastest
layout for convolutions on a GPU (issue 40 compares against PyTorch AMP with channels_last);
it changes PyTorch's side only: give ringgrad's own layout flag to bench_train through
--ringgrad-arg (repeatable, passed as it is), and the report says what each side ran.
Each side also reports host_ms_per_step, the host's time until its step returns, before the wait
for the device: on a GPU it shows which side's host waits for the GPU inside a step.
The report names the machine (CPU model, its AVX2/AVX-512/AMX flags) and the load average,
and gives each side's CPU time per step (all its threads; the median round) and their ratio,
cpu_speedup: on a machine shared with other work the load inflates wall times, PyTorch's
OpenMP threads (which wait for each other at every parallel region) far more than ringgrad's.
Needs PyTorch (pip install torch) and a built ringgrad (bash scripts/build.sh).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))


PYTORCH_CIFAR = os.environ.get("PYTORCH_CIFAR", "")  # --pytorch-cifar: a checkout of kuangliu's


def pytorch_model(model_name):
    """The twin: tools/resnet_reference.py's (the CIFAR ResNets and airbench at any width), else
    pytorch-cifar's own definition from a checkout (--pytorch-cifar DIR; tools/pytorch_cifar_zoo.py
    maps the zoo's names to its constructors)."""
    import resnet_reference

    base, _, width = model_name.partition("@")
    if hasattr(resnet_reference, base):
        return getattr(resnet_reference, base)(float(width) if width else 1.0)
    if PYTORCH_CIFAR:
        sys.path.insert(0, os.path.abspath(PYTORCH_CIFAR))
        import models as pytorch_cifar_models  # noqa: E402 (pytorch-cifar's package)
        from pytorch_cifar_zoo import twins
        table = twins(pytorch_cifar_models)
        if model_name in table:
            return table[model_name]()
    sys.exit(f"bench_train_vs_pytorch: no PyTorch twin of '{model_name}' in "
             "tools/resnet_reference.py" +
             ("" if PYTORCH_CIFAR else " (--pytorch-cifar DIR for pytorch-cifar's models)"))


def pytorch_step(model_name, batch, threads, device, amp, amp_dtype, channels_last=False):
    """One PyTorch train step on random data, as bench_train's: a function of no arguments."""
    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    dev = torch.device(device)
    if dev.type == "cuda":
        torch.backends.cudnn.benchmark = True
        torch.backends.cudnn.allow_tf32 = False  # as ringgrad's f32 (ConvPlanOptions)
    layout = torch.channels_last if channels_last else torch.contiguous_format
    model = pytorch_model(model_name).to(dev, memory_format=layout)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    x = torch.randn(batch, 3, 32, 32, device=dev).contiguous(memory_format=layout)
    y = torch.arange(batch, device=dev) % 10
    half = {"fp16": torch.float16, "bf16": torch.bfloat16}[amp_dtype]
    scaler = torch.amp.GradScaler(dev.type, enabled=amp == "O1" and half == torch.float16)

    def step():
        """Queues the step; returns the host's seconds until then (bench_train's
        host_ms_per_step). A GPU step is done when the device is, as bench_train times it."""
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast(dev.type, dtype=half, enabled=amp == "O1"):
            logits = model(x)
        scaler.scale(torch.nn.functional.cross_entropy(logits.float(), y)).backward()
        scaler.step(opt)
        scaler.update()
        host = time.perf_counter() - t0
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        return host

    step.parameters = sum(p.numel() for p in model.parameters())
    return step


def pytorch_step_rate(model_name, batch, threads, steps, device, amp, amp_dtype,
                      channels_last=False, warmup=1):
    import torch

    step = pytorch_step(model_name, batch, threads, device, amp, amp_dtype, channels_last)
    if torch.device(device).type == "cuda":
        warmup = max(warmup, 3)  # the autotuner tries its algorithms in the first steps
    for _ in range(warmup):
        step()
    times, host = [], 0.0
    cpu0 = time.process_time()
    for _ in range(steps):
        t0 = time.perf_counter()
        host += step()
        times.append(time.perf_counter() - t0)
    cpu = time.process_time() - cpu0
    return {"framework": "pytorch", "version": torch.__version__, "device": device,
            "model": model_name, "amp": amp, "dtype": amp_dtype if amp != "O0" else "fp32",
            "batch": batch, "threads": threads, "steps": steps,
            "channels_last": channels_last, "parameters": step.parameters,
            "images_per_second": round(batch * steps / sum(times), 1),
            "best_images_per_second": round(batch / min(times), 1),
            "host_ms_per_step": round(1e3 * host / steps, 2),
            "cpu_ms_per_step": round(1e3 * cpu / steps, 1)}


def ringgrad_step_rate(exe, model_name, batch, threads, steps, device, amp, amp_dtype,
                       extra=()):
    args = [exe, "--model", model_name, "--batch", str(batch), "--threads", str(threads),
            "--steps", str(steps), "--device", device, "--amp", amp]
    if device != "cpu":
        args += ["--warmup", "3", "--cudnn-benchmark"]
    if amp != "O0":
        args += ["--amp-dtype", amp_dtype]
    out = subprocess.run(args + list(extra), check=True, capture_output=True, text=True).stdout
    result = json.loads(out)
    result["extra_args"] = list(extra)  # e.g. its layout flag: the report says what ran
    return result


def parse_models(a):
    if not a.models:
        return [(a.model, a.batch)]
    models = []
    for item in a.models.split(","):
        name, _, batch = item.partition(":")
        models.append((name, int(batch) if batch else a.batch))
    return models


def machine():
    """The CPU (model name and the vector flags the kernels choose by), for the report: speed
    figures name the machine they came from."""
    model, flags = "?", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and model == "?":
                    model = value.strip()
                elif key.strip() == "flags" and not flags:
                    flags = set(value.split())
    except OSError:
        pass
    wanted = ["avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16"]
    return {"cpu": model, "cores": os.cpu_count(),
            "flags": [f for f in wanted if f in flags]}


def main():
    global PYTORCH_CIFAR
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="resnet18")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--models", help="NAME[:BATCH],... (instead of --model/--batch)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--rounds", type=int, default=2, help="alternations of the frameworks")
    p.add_argument("--device", default="cpu", help="cpu or cuda[:N], for both frameworks")
    p.add_argument("--amp", default="O0", choices=["O0", "O1"])
    p.add_argument("--amp-dtype", default="fp16", choices=["fp16", "bf16"])
    p.add_argument("--channels-last", action="store_true",
                   help="PyTorch's model and input in torch.channels_last (PyTorch's side only)")
    p.add_argument("--ringgrad-arg", action="append", default=[], metavar="ARG",
                   help="one more argument for bench_train (repeatable; --ringgrad-arg=--FLAG)")
    p.add_argument("--exe", default=os.path.join(ROOT, "build", "apps", "bench_train"),
                   help="ringgrad's bench_train")
    p.add_argument("--baseline", help="a second bench_train, timed in the same alternation")
    p.add_argument("--pytorch-cifar", default=PYTORCH_CIFAR, metavar="DIR",
                   help="a checkout of github.com/kuangliu/pytorch-cifar: the twins of the zoo's "
                        "other models (vgg16, densenet121, dpn92, ...)")
    a = p.parse_args()
    PYTORCH_CIFAR = a.pytorch_cifar
    for model, batch in parse_models(a):
        exes = {"ringgrad": a.exe}
        if a.baseline:
            exes["ringgrad_baseline"] = a.baseline
        runs = {k: [] for k in list(exes) + ["pytorch"]}
        for _ in range(a.rounds):
            for k, exe in exes.items():
                runs[k].append(ringgrad_step_rate(exe, model, batch, a.threads, a.steps,
                                                  a.device, a.amp, a.amp_dtype, a.ringgrad_arg))
            runs["pytorch"].append(pytorch_step_rate(model, batch, a.threads, a.steps, a.device,
                                                     a.amp, a.amp_dtype, a.channels_last))
        theirs = runs["pytorch"][0]["parameters"]
        ours = runs["ringgrad"][0].get("parameters")
        if ours != theirs:
            sys.exit(f"bench_train_vs_pytorch: {model} has {ours} parameters in ringgrad but "
                     f"{theirs} in its PyTorch twin: not the same net")
        best = {k: max(v, key=lambda r: r["images_per_second"]) for k, v in runs.items()}
        best["speedup"] = round(best["ringgrad"]["images_per_second"] /
                                best["pytorch"]["images_per_second"], 2)
        rounds = [rg_round["images_per_second"] / pt_round["images_per_second"]
                  for rg_round, pt_round in zip(runs["ringgrad"], runs["pytorch"])]
        best["round_speedups"] = [round(r, 2) for r in rounds]
        best["median_round_speedup"] = round(statistics.median(rounds), 2)
        # CPU time (all threads) per step, which a shared machine's load inflates far less than
        # wall time: the median round of each framework, and their ratio.
        # (A bench_train built before it reported CPU time gives none: then no ratio.)
        cpu = {k: statistics.median(r["cpu_ms_per_step"] for r in runs[k]) for k in runs
               if all("cpu_ms_per_step" in r for r in runs[k])}
        best["cpu_ms_per_step"] = cpu
        if "ringgrad" in cpu:
            best["cpu_speedup"] = round(cpu["pytorch"] / cpu["ringgrad"], 2)
        if a.baseline:
            best["speedup_over_baseline"] = round(
                best["ringgrad"]["images_per_second"] /
                best["ringgrad_baseline"]["images_per_second"], 2)
        best["load_average"] = os.getloadavg()
        best["machine"] = machine()
        print(json.dumps(best, indent=2), flush=True)


if __name__ == "__main__":
    main()
