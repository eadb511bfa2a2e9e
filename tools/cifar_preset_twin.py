#!/usr/bin/env python3
"""PyTorch twins of `train_cifar --preset quick` and `--preset resnet18`: a measuring instrument.

    python3 tools/cifar_preset_twin.py --recipe quick|resnet18 --data DIR [--json OUT]
        [--device cuda|cpu] [--amp O0|O1] [--amp-dtype bf16|fp16] [--channels-last]
        [--from-run RINGGRAD_OUT] [--epochs N] [--train-limit N] [--test-limit N]
        [--batch-size N] [--seed S]

Issue 40 compares each preset's time and accuracy with the same recipe trained by PyTorch on
the same GPU in the same run. This script is that recipe in PyTorch eager, as ringgrad runs it
(apps/train_cifar/config.cpp's presets(), read on 2026-11-28); nothing of it enters ringgrad:

- the model: tools/resnet_reference.py's `airbench(0.5)` (nn's "airbench@0.5") or `resnet18()`,
  initialised as nn/ initialises them — every Conv2d's weight N(0, 2 / fan_out) (nn/conv.cpp;
  PyTorch's own default is a uniform), biases, Linear layers and BatchNorm as PyTorch's
  defaults, which nn/ copies; airbench's 2x2 whitening conv set from 5,000 training images
  evenly spaced over the set (the centred covariance of their 2x2 patches, eps 5e-4, largest
  eigenvalue first, each filter and its negation; nn/models/airbench.cpp) and frozen;
- SGD over one parameter group (norm_bias_lr_scale 1: every parameter, BatchNorm's too, with
  the same lr and weight decay), the preset's momentum, Nesterov and weight decay; PyTorch's
  torch.optim.SGD is ringgrad's update rule (optim/update_math.h says so);
- the one-cycle schedule as optim/lr_scheduler.cpp's OneCycleLR::lr_at defines it (pct_start
  0.3, cosine both ways, div_factor 25, final_div_factor 1e4, phase ends as PyTorch places
  them), over epochs x full batches, stepped after every optimizer step (a step GradScaler
  skips too, as ringgrad's trainer steps its schedule); torch's LambdaLR applies it;
- cross-entropy in f32 with the preset's label smoothing;
- the classic augmentation on the device, on whole batches: a random 32x32 crop of the image
  padded with 4 zero (black) pixels, then a horizontal flip with probability 1/2, then
  x / 255 normalised with data/transforms.h's CIFAR-10 mean and std;
- batches of the preset's size in a fresh random order each epoch, the last partial one dropped
  (ringgrad's LastBatch::drop); the test set in batches of 256, every epoch's evaluation with
  flip test-time augmentation: the f32 logits of each image and its mirror image averaged
  (apps/train_cifar/cifar_task.cpp), the prediction their argmax;
- --train-limit / --test-limit keep N images evenly spaced over the set, as ringgrad's
  data::take (data/evenly_spaced.h).

What cannot be the same is the randomness: the initial weights, the order and the crops come
from PyTorch's generators, not ringgrad's Philox streams (and the 5,000 whitening images from
train.pt's fixed random order rather than the class-sorted folder): the same recipe, another
draw. --from-run makes the twin follow a ringgrad run: it reads that run's resolved config from
its last.safetensors (metadata "config"), refuses one whose recipe differs from the twin's,
takes its precision, layout, epochs, batch size and limits (an explicit flag still wins), and
checks that the twin's lr at every epoch's start equals the lr the run logged in metrics.csv.

Timing as tools/airbench94_reference.py's: the data on the device before any timing, cuDNN's
autotuner on (torch.backends.cudnn.benchmark, as ringgrad's GPU presets time their plans) and
TF32 off (ringgrad's f32 convolutions are f32), one training step and the evaluation's batch
shapes on a throwaway model first, then CUDA events around each epoch's training (its shuffle
included) and around the final evaluation, summed; the other epochs' evaluations are not timed
(ringgrad's metrics.csv gives them, tools/airbench_compare.py leaves them out too). On the CPU
(smoke runs) the clock is the host's. Prints, and writes to --json, one JSON object in
airbench94_reference.py's format (framework, recipe, device, device_seconds, accuracy,
epoch_accuracy, epochs, versions) and how it ran, so tools/airbench_compare.py reads it as is.

DIR holds train.pt and test.pt (airbench94_reference.py --make-pt, or
cifar_jpg_to_airbench_pt.py), or export_dataset's raw files, turned into them on the fly by
airbench94_reference.py's own code.
"""
import argparse
import csv
import json
import math
import os
import struct
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import airbench94_reference  # noqa: E402 - its data files and version helpers, one copy

# The presets' values (apps/train_cifar/config.cpp). The keys of TWIN_FIXED are what the twin
# implements and the presets leave at train_cifar's defaults; --from-run checks both.
RECIPES = {
    "quick": {"model": "airbench@0.5", "epochs": 8, "batch_size": 256, "lr": 1.2,
              "momentum": 0.85, "nesterov": True, "weight_decay": 1e-4,
              "label_smoothing": 0.2, "tta": True},
    "resnet18": {"model": "resnet18", "epochs": 30, "batch_size": 256, "lr": 0.2,
                 "momentum": 0.9, "nesterov": True, "weight_decay": 5e-4,
                 "label_smoothing": 0.1, "tta": True},
}
TWIN_FIXED = {"schedule": "onecycle", "augmentation": "classic", "warmup_epochs": 0,
              "lr_scaling": "none", "norm_bias_lr_scale": 1, "lookahead": False,
              "clip_grad_norm": 0, "tta_translate": False, "tta_epochs": "every",
              "whiten_bias_epochs": 0, "sync_bn": False, "dp": 0}
CIFAR10_MEAN = (0.4914, 0.4822, 0.4465)  # data/transforms.h kCifar10Mean, kCifar10Std
CIFAR10_STD = (0.2470, 0.2435, 0.2616)
TEST_BATCH = 256  # apps/train_cifar/cifar_data.cpp: the test loaders' batch
CROP_PADDING = 4
WHITENING_IMAGES, WHITENING_EPS = 5000, 5e-4  # apps/train_cifar/run.cpp, nn/models/airbench.h


def onecycle_lr(step, max_lr, total_steps, pct_start=0.3, div_factor=25.0,
                final_div_factor=1e4):
    """optim/lr_scheduler.cpp's OneCycleLR::lr_at, cosine annealing, line by line."""
    if not 0 <= step <= total_steps:
        raise ValueError(f"onecycle_lr: step {step} outside 0 .. {total_steps}")
    initial = max_lr / div_factor
    minimum = initial / final_div_factor
    end1 = pct_start * total_steps - 1
    end2 = float(total_steps - 1)
    rising = step <= end1
    begin, end = (0.0, end1) if rising else (end1, end2)
    if end == begin:
        raise ValueError(f"onecycle_lr: step {step} falls in a phase of zero length")
    pct = (step - begin) / (end - begin)
    start, stop = (initial, max_lr) if rising else (max_lr, minimum)
    return stop + (start - stop) / 2.0 * (math.cos(math.pi * pct) + 1)


def evenly_spaced(size, limit):
    """data/evenly_spaced.h: `limit` indices i * size / limit (integer division); 0: all."""
    if limit <= 0 or limit >= size:
        return list(range(size))
    return [i * size // limit for i in range(limit)]


def safetensors_metadata(path):
    """The "__metadata__" of a safetensors file's JSON header, read without torch."""
    with open(path, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(length)).get("__metadata__", {})


def channels_last_of(config):
    """Whether a ringgrad run's config asks for NHWC activations. The option is being added as
    this is written; accept the spellings it may take: a bool `channels_last`, or a
    `memory_format` naming channels_last / nhwc."""
    if "channels_last" in config:
        return bool(config["channels_last"])
    if "memory_format" in config:
        return str(config["memory_format"]).lower() in ("channels_last", "nhwc")
    # Another spelling would leave the twin in NCHW unnoticed: refuse it instead.
    unknown = [k for k in config if any(w in k.lower() for w in ("channel", "layout", "nhwc",
                                                                 "format"))
               and k != "data_format"]
    if unknown:
        sys.exit(f"cifar_preset_twin: the run's config has {unknown}: which layout is that? "
                 "(the twin reads channels_last or memory_format; teach channels_last_of)")
    return False


def follow_run(run, recipe_name):
    """The resolved config of a ringgrad run (its --out folder), checked against the recipe."""
    config = json.loads(safetensors_metadata(os.path.join(run, "last.safetensors"))["config"])
    want = dict(RECIPES[recipe_name], **TWIN_FIXED)
    for followed in ("epochs", "batch_size"):  # followed, not checked (smoke runs change them)
        want.pop(followed)
    differ = [f"{k}: ringgrad {config.get(k)!r}, twin {v!r}" for k, v in want.items()
              if k in config and not (config[k] == v or (isinstance(v, float) and
                                                         math.isclose(config[k], v)))]
    if config.get("amp", "O0") not in ("O0", "O1"):
        differ.append(f"amp: ringgrad {config['amp']}, the twin runs O0 or O1")
    if differ:
        sys.exit(f"cifar_preset_twin: {run} ran another recipe than the twin's {recipe_name}:\n  "
                 + "\n  ".join(differ))
    return config


def check_lr_log(run, lrs_at_epoch_start):
    """ringgrad's metrics.csv logs each epoch's lr at its first step: the twin's must agree.
    Checked before the twin trains; a run stopped early (its cap) logged fewer epochs, which
    are checked as far as they go."""
    path = os.path.join(run, "metrics.csv")
    with open(path, newline="") as f:
        logged = [float(r["lr"]) for r in csv.DictReader(f)]
    for epoch, (theirs, ours) in enumerate(zip(logged, lrs_at_epoch_start), 1):
        if not math.isclose(theirs, ours, rel_tol=1e-5, abs_tol=1e-9):
            sys.exit(f"cifar_preset_twin: epoch {epoch} starts at lr {ours!r} in the twin but "
                     f"{theirs!r} in {path}: not the same schedule")
    return min(len(logged), len(lrs_at_epoch_start))


def load_split(directory, split, limit):
    import torch

    d = torch.load(os.path.join(directory, split + ".pt"), weights_only=True)
    images, labels = d["images"], d["labels"]  # uint8 N x 32 x 32 x 3 (HWC), int64 N
    keep = torch.tensor(evenly_spaced(images.shape[0], limit))
    return images[keep].contiguous(), labels[keep].contiguous()


def normalize(images_nhwc_u8, mean, std, channels_last):
    """ToFloat then Normalize, on u8 NHWC images; an NCHW tensor, in NHWC memory if asked."""
    import torch

    x = (images_nhwc_u8.float() / 255 - mean) / std
    x = x.permute(0, 3, 1, 2)  # NCHW by shape, still NHWC in memory: torch's channels_last
    return x.contiguous(memory_format=torch.channels_last if channels_last else
                        torch.contiguous_format)


def classic_augment(images_nhwc_u8, generator):
    """RandomCrop(32, padding 4 of zeros) then RandomHorizontalFlip(0.5), a batch at once."""
    import torch

    n, h, w, c = images_nhwc_u8.shape
    p = CROP_PADDING
    dev = images_nhwc_u8.device
    padded = images_nhwc_u8.new_zeros(n, h + 2 * p, w + 2 * p, c)  # black, before Normalize
    padded[:, p:p + h, p:p + w] = images_nhwc_u8
    top = torch.randint(0, 2 * p + 1, (n,), device=dev, generator=generator)
    left = torch.randint(0, 2 * p + 1, (n,), device=dev, generator=generator)
    rows = (top[:, None] + torch.arange(h, device=dev))[:, :, None]
    cols = (left[:, None] + torch.arange(w, device=dev))[:, None, :]
    out = padded[torch.arange(n, device=dev)[:, None, None], rows, cols]  # n x h x w x c
    flip = torch.rand(n, device=dev, generator=generator) < 0.5
    return torch.where(flip[:, None, None, None], out.flip(2), out)


def whitening_filters(images):
    """nn/models/airbench.cpp's whitening_filters (centred covariance): 24 x 3 x 2 x 2, f64."""
    import torch

    count, total, outer = 0, torch.zeros(12, dtype=torch.float64), torch.zeros(
        12, 12, dtype=torch.float64)
    for chunk in images.double().cpu().split(500):
        # 2x2x3 patches, each ordered (c, dy, dx) like the conv's weight.
        patches = chunk.unfold(2, 2, 1).unfold(3, 2, 1).permute(0, 2, 3, 1, 4, 5).reshape(-1, 12)
        count += patches.shape[0]
        total += patches.sum(0)
        outer += patches.T @ patches
    mean = total / count
    cov = outer / count - torch.outer(mean, mean)
    values, vectors = torch.linalg.eigh(cov)  # ascending: the largest last
    values, vectors = values.flip(0), vectors.flip(1)
    filters = (vectors / torch.sqrt(values + WHITENING_EPS)).T  # row k: the k-th largest's
    return torch.cat([filters, -filters]).reshape(24, 3, 2, 2)


def make_model(name, whitening=None):
    """The twin of nn::make_model(name), initialised as nn/ initialises it; airbench's whitening
    conv gets the filters `whitening` (whitening_filters) and is frozen, as init_whitening."""
    import torch
    import resnet_reference

    base, _, width = name.partition("@")
    model = getattr(resnet_reference, base)(float(width) if width else 1.0)
    for m in model.modules():
        if isinstance(m, torch.nn.Conv2d):
            # nn/conv.cpp: kaiming_normal_(fan_out) with ReLU's gain; std sqrt(2 / fan_out).
            fan_out = m.weight.shape[0] * m.weight[0, 0].numel()
            torch.nn.init.normal_(m.weight, 0.0, math.sqrt(2.0 / fan_out))
    if base == "airbench":
        with torch.no_grad():
            model.whiten.weight.copy_(whitening)
        model.whiten.weight.requires_grad_(False)
    return model


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--recipe", required=True, choices=sorted(RECIPES))
    p.add_argument("--data", required=True,
                   help="folder with train.pt and test.pt, or export_dataset's train.* and test.*")
    p.add_argument("--json", help="also write the result here")
    p.add_argument("--device", default="cuda", help="cuda[:N] (the measurement) or cpu (smoke)")
    p.add_argument("--amp", choices=["O0", "O1"], help="O1: torch.autocast (default O0)")
    p.add_argument("--amp-dtype", choices=["bf16", "fp16"],
                   help="O1's 16-bit type (default bf16); fp16 adds a GradScaler")
    p.add_argument("--channels-last", action=argparse.BooleanOptionalAction, default=None,
                   help="model and inputs in torch.channels_last (NHWC)")
    p.add_argument("--from-run", metavar="OUT",
                   help="a ringgrad train_cifar --out folder: follow its precision, layout, "
                        "epochs, batch size and limits, check its recipe and its logged lrs")
    p.add_argument("--epochs", type=int, help="default: the preset's")
    p.add_argument("--batch-size", type=int, help="default: the preset's (smoke runs only)")
    p.add_argument("--train-limit", type=int, help="N training images, evenly spaced (0: all)")
    p.add_argument("--test-limit", type=int, help="N test images, evenly spaced (0: all)")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()

    recipe = dict(RECIPES[a.recipe])
    run = follow_run(a.from_run, a.recipe) if a.from_run else {}

    def setting(flag, key, default):
        """An explicit flag, else the followed run's value, else the default."""
        return flag if flag is not None else run.get(key, default)

    amp = setting(a.amp, "amp", "O0")
    amp_dtype = setting(a.amp_dtype, "amp_dtype", "bf16")
    channels_last = a.channels_last if a.channels_last is not None else channels_last_of(run)
    epochs = setting(a.epochs, "epochs", recipe["epochs"])
    batch = setting(a.batch_size, "batch_size", recipe["batch_size"])
    train_limit = setting(a.train_limit, "train_limit", 0)
    test_limit = setting(a.test_limit, "test_limit", 0)

    data = os.path.abspath(a.data)
    if not all(os.path.isfile(os.path.join(data, s + ".pt")) for s in ("train", "test")):
        if not all(os.path.isfile(os.path.join(data, s + ext)) for s in ("train", "test")
                   for ext in (".u8", ".labels", ".shape")):
            sys.exit(f"cifar_preset_twin: {data} holds neither train.pt/test.pt nor "
                     "export_dataset's files")
        made = tempfile.mkdtemp(prefix="cifar_preset_twin_")
        airbench94_reference.from_export(data, made)
        data = made

    import torch
    import torch.nn.functional as F

    dev = torch.device(a.device)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            sys.exit("cifar_preset_twin: --device cuda needs torch with a CUDA GPU")
        torch.backends.cudnn.benchmark = True
        torch.backends.cudnn.allow_tf32 = False  # ringgrad's f32 convolutions are f32
        torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(a.seed)
    half = {"bf16": torch.bfloat16, "fp16": torch.float16}[amp_dtype]
    use_autocast = amp == "O1"
    layout = torch.channels_last if channels_last else torch.contiguous_format

    # ---- data: on the device before any timing ---------------------------------------------
    train_x, train_y = load_split(data, "train", train_limit)
    test_x, test_y = load_split(data, "test", test_limit)
    mean = torch.tensor(CIFAR10_MEAN, device=dev)
    std = torch.tensor(CIFAR10_STD, device=dev)
    train_x, train_y = train_x.to(dev), train_y.to(dev)
    test_x, test_y = test_x.to(dev), test_y.to(dev)
    n_train, n_test = train_x.shape[0], test_x.shape[0]
    steps_per_epoch = n_train // batch  # the last partial batch dropped
    if steps_per_epoch == 0:
        sys.exit(f"cifar_preset_twin: {n_train} training images make no full batch of {batch}")
    total_steps = epochs * steps_per_epoch
    whitening = None
    if recipe["model"].startswith("airbench"):
        # apps/train_cifar/cifar_task.cpp's sample_images: evenly spaced, test transform.
        keep = torch.tensor(evenly_spaced(n_train, min(WHITENING_IMAGES, n_train)), device=dev)
        whitening = whitening_filters(normalize(train_x[keep], mean, std, False))

    def build():
        return make_model(recipe["model"], whitening).to(dev, memory_format=layout)

    def forward(model, x):
        with torch.autocast(dev.type, dtype=half, enabled=use_autocast):
            return model(x).float()  # the loss and the TTA average in f32, as ringgrad's

    def train_step(model, opt, scaler, x, y):
        loss = F.cross_entropy(forward(model, x), y, label_smoothing=recipe["label_smoothing"])
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    def evaluate(model):
        """Accuracy over the test set, each image's logits averaged with its mirror's; the
        count stays on the device until the end."""
        model.eval()
        correct = torch.zeros((), dtype=torch.int64, device=dev)
        with torch.no_grad():
            for i in range(0, n_test, TEST_BATCH):
                x = normalize(test_x[i:i + TEST_BATCH], mean, std, channels_last)
                logits = forward(model, x)
                if recipe["tta"]:
                    logits = (logits + forward(model, x.flip(3))) * 0.5
                correct += (logits.argmax(1) == test_y[i:i + TEST_BATCH]).sum()
        model.train()
        return correct

    def make_optimizer(model):
        opt = torch.optim.SGD(model.parameters(), lr=recipe["lr"], momentum=recipe["momentum"],
                              nesterov=recipe["nesterov"], weight_decay=recipe["weight_decay"])
        # LambdaLR multiplies the group's lr (the peak) by the factor: ringgrad's lr_at(step).
        schedule = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda step: onecycle_lr(step, recipe["lr"], total_steps) / recipe["lr"])
        return opt, schedule

    def make_scaler():
        return torch.amp.GradScaler(dev.type, enabled=use_autocast and half == torch.float16)

    generator = torch.Generator(device=dev)
    generator.manual_seed(a.seed)

    # ---- warm-up: a throwaway model, one step and the evaluation's shapes ------------------
    throwaway = build()
    opt, _ = make_optimizer(throwaway)
    x = normalize(classic_augment(train_x[:batch], generator), mean, std, channels_last)
    train_step(throwaway, opt, make_scaler(), x, train_y[:batch])
    last = n_test - (n_test - 1) // TEST_BATCH * TEST_BATCH
    throwaway.eval()
    with torch.no_grad():
        for size in sorted({min(TEST_BATCH, n_test), last}):
            x = normalize(test_x[:size], mean, std, channels_last)
            forward(throwaway, x)
            forward(throwaway, x.flip(3))
    del throwaway, opt
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)

    # ---- the timed run -----------------------------------------------------------------------
    model = build()
    opt, schedule = make_optimizer(model)
    if a.from_run:
        # The twin's schedule (LambdaLR's lr, not only the formula) at each epoch's first step.
        probe = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=recipe["lr"])
        probe_schedule = torch.optim.lr_scheduler.LambdaLR(probe, schedule.lr_lambdas[0])
        expected = []
        for step in range(total_steps):
            if step % steps_per_epoch == 0:
                expected.append(probe.param_groups[0]["lr"])
            probe.step()
            probe_schedule.step()
        checked = check_lr_log(a.from_run, expected)
        print(f"cifar_preset_twin: the lr at the first step of epochs 1-{checked} equals "
              f"{a.from_run}/metrics.csv's", flush=True)
    scaler = make_scaler()
    print(f"cifar_preset_twin: {a.recipe}: {recipe['model']}, {n_train} train / {n_test} test "
          f"images, batch {batch}, {epochs} epochs of {steps_per_epoch} steps, amp {amp}"
          f"{' ' + amp_dtype if use_autocast else ''}, "
          f"{'channels_last' if channels_last else 'NCHW'}, {dev}", flush=True)

    def timer():
        """start(), stop() -> seconds on the device (CUDA events) or the host (CPU)."""
        if dev.type == "cuda":
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            return lambda: (end.record(), end.synchronize(), begin.elapsed_time(end) / 1e3)[-1]
        t0 = time.perf_counter()
        return lambda: time.perf_counter() - t0

    epoch_seconds, epoch_accuracy, lrs_at_epoch_start = [], [], []
    eval_seconds = 0.0
    for epoch in range(epochs):
        lrs_at_epoch_start.append(opt.param_groups[0]["lr"])
        stop = timer()
        order = torch.randperm(n_train, device=dev, generator=generator)
        for s in range(steps_per_epoch):
            idx = order[s * batch:(s + 1) * batch]
            x = normalize(classic_augment(train_x[idx], generator), mean, std, channels_last)
            train_step(model, opt, scaler, x, train_y[idx])
            schedule.step()
        epoch_seconds.append(stop())
        stop = timer()
        correct = evaluate(model)
        seconds = stop()
        if epoch + 1 == epochs:
            eval_seconds = seconds  # only the final evaluation counts, as in ringgrad's total
        epoch_accuracy.append(correct.item() / n_test)
        print(f"epoch {epoch + 1}/{epochs}  lr {lrs_at_epoch_start[-1]:.6g}  test accuracy "
              f"{100 * epoch_accuracy[-1]:.2f}%  train {epoch_seconds[-1]:.3f} s", flush=True)

    result = {
        "framework": "pytorch",
        "recipe": a.recipe,
        "device": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
        "device_seconds": sum(epoch_seconds) + eval_seconds,
        "accuracy": epoch_accuracy[-1],
        "epoch_accuracy": epoch_accuracy,
        "epochs": epochs,
        "torch": torch.__version__,
        "cudnn": airbench94_reference.cudnn_version(),
        "model": recipe["model"],
        "amp": amp,
        "amp_dtype": amp_dtype if use_autocast else None,
        "channels_last": channels_last,
        "batch_size": batch,
        "train_images": n_train,
        "test_images": n_test,
        "epoch_seconds": epoch_seconds,
        "eval_seconds": eval_seconds,
        "followed_run": a.from_run,
    }
    line = json.dumps(result)
    print(line, flush=True)
    if a.json:
        with open(a.json, "w") as f:
            f.write(line + "\n")


if __name__ == "__main__":
    main()
