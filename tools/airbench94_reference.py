#!/usr/bin/env python3
"""PyTorch's airbench94 as a measuring instrument: one timed run of PyPI's `airbench` package.

    python3 tools/airbench94_reference.py --data DIR [--json OUT] [--epochs 9.9] [--no-warmup]
    python3 tools/airbench94_reference.py --data RAW_DIR --make-pt DIR   # the files, once

DIR holds train.pt and test.pt (tools/cifar_jpg_to_airbench_pt.py makes them with PIL and NumPy),
or the raw files that `build/apps/export_dataset --split train|test --out DIR/train|DIR/test`
writes: the pixels as ringgrad itself decodes them, read here with torch alone (the lent GPU
machines' Python has neither PIL nor NumPy). The training images are then put in a fixed random
order (torch.randperm, seed 0), as airbench94 initialises its whitening layer from the first
5,000 and the image folders are grouped by class. The package is `airbench` 0.1.8 (Keller Jordan's
cifar10-airbench, MIT), imported from the path in $AIRBENCH_PATH when set (the unpacked sdist
that scripts/gpu_pack.sh packs), else from the installed packages. Nothing of it enters ringgrad.

What runs is the package's own recipe, untouched: `airbench.warmup94()` first (one step, so that
cuDNN's autotuner and the lazy CUDA set-up are not timed, as its README directs), then
`airbench.train94()`: the data already on the GPU (its CifarLoader loads it there before any
timing), its time the sum of CUDA-event intervals around each epoch's training plus the final
flip-and-translate evaluation — and around the whitening layer's initialisation from 5,000
training images (a few milliseconds; ringgrad does that on the host, before its timing). The
run's figures are read from the values its logger receives (`print_training_details`), which are
also printed as usual. Prints, and writes to --json, one JSON object: framework, recipe, device,
the device time in seconds, the final (TTA) accuracy, each epoch's accuracy without TTA, versions.

The package imports torchvision for its Normalize only (and to download CIFAR-10, which it does
not do when DIR has the files); where torchvision is missing a stand-in with the same arithmetic
(x - mean) / std per channel takes its place, and the JSON says so.
"""
import argparse
import json
import os
import sys
import tempfile
import types


def stand_in_torchvision():
    """torchvision.transforms.Normalize's arithmetic, for a machine without torchvision."""
    import torch

    class Normalize:
        def __init__(self, mean, std):
            self.mean, self.std = mean, std

        def __call__(self, x):
            mean = torch.as_tensor(self.mean, dtype=x.dtype, device=x.device).view(-1, 1, 1)
            std = torch.as_tensor(self.std, dtype=x.dtype, device=x.device).view(-1, 1, 1)
            return (x - mean) / std  # torchvision's F.normalize: sub_(mean).div_(std)

    tv = types.ModuleType("torchvision")
    tv.transforms = types.ModuleType("torchvision.transforms")
    tv.transforms.Normalize = Normalize
    tv.datasets = types.ModuleType("torchvision.datasets")
    sys.modules.update({"torchvision": tv, "torchvision.transforms": tv.transforms,
                        "torchvision.datasets": tv.datasets})


def from_export(src, dst):
    """train.pt and test.pt in dst from export_dataset's raw files in src."""
    import torch

    for split in ("train", "test"):
        with open(os.path.join(src, split + ".shape")) as f:
            lines = f.read().split("\n")
        n, h, w, c = (int(v) for v in lines[0].split())
        classes = [line for line in lines[1:] if line]
        with open(os.path.join(src, split + ".u8"), "rb") as f:
            images = torch.frombuffer(bytearray(f.read()), dtype=torch.uint8).view(n, h, w, c)
        with open(os.path.join(src, split + ".labels"), "rb") as f:
            labels = torch.frombuffer(bytearray(f.read()), dtype=torch.int64)
        if labels.numel() != n:
            sys.exit(f"airbench94_reference: {src}/{split}: {labels.numel()} labels for {n} images")
        if split == "train":
            order = torch.randperm(n, generator=torch.Generator().manual_seed(0))
            images, labels = images[order], labels[order]
        torch.save({"images": images.contiguous(), "labels": labels.clone(), "classes": classes},
                   os.path.join(dst, split + ".pt"))
        print(f"airbench94_reference: {split}.pt from {src}: {n} images {h}x{w}x{c}", flush=True)


def cudnn_version():
    import torch
    try:
        return torch.backends.cudnn.version()
    except Exception:  # noqa: BLE001 - a figure for the report, not worth failing the run
        return None


def package_version():
    """airbench's version: from the unpacked sdist's folder name (airbench-0.1.8), else pip's."""
    path = os.environ.get("AIRBENCH_PATH", "")
    if os.path.basename(path.rstrip("/")).startswith("airbench-"):
        return os.path.basename(path.rstrip("/"))[len("airbench-"):]
    try:
        from importlib.metadata import version
        return version("airbench")
    except Exception:  # noqa: BLE001 - a figure for the report, not worth failing the run
        return "unknown"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True,
                   help="folder with train.pt and test.pt, or export_dataset's train.* and test.*")
    p.add_argument("--json", help="also write the result here")
    p.add_argument("--epochs", type=float, default=None,
                   help="train94's epochs (default: the package's own, 9.9)")
    p.add_argument("--no-warmup", action="store_true", help="skip airbench.warmup94()")
    p.add_argument("--make-pt", metavar="DIR",
                   help="only write train.pt and test.pt from export_dataset's files into DIR")
    a = p.parse_args()
    data = os.path.abspath(a.data)
    exported = all(os.path.isfile(os.path.join(data, s + ext)) for s in ("train", "test")
                   for ext in (".u8", ".labels", ".shape"))
    if not exported:
        for name in ("train.pt", "test.pt"):
            if not os.path.isfile(os.path.join(data, name)):
                sys.exit(f"airbench94_reference: {data} holds neither {name} "
                         "(tools/cifar_jpg_to_airbench_pt.py) nor export_dataset's files")
    if a.make_pt:
        if not exported:
            sys.exit(f"airbench94_reference: --make-pt needs export_dataset's files in {data}")
        os.makedirs(a.make_pt, exist_ok=True)
        return from_export(data, a.make_pt)
    if os.environ.get("AIRBENCH_PATH"):
        sys.path.insert(0, os.environ["AIRBENCH_PATH"])
    import torch
    if not torch.cuda.is_available():
        sys.exit("airbench94_reference: airbench94 needs a CUDA GPU (torch.cuda.is_available() "
                 "is False)")
    try:
        import torchvision
        torchvision_version = torchvision.__version__
    except ImportError:
        stand_in_torchvision()
        torchvision_version = "absent: Normalize stand-in"
    import airbench
    import airbench.utils

    # The package reads and writes 'cifar10/{train,test}.pt' relative to the working directory.
    work = tempfile.mkdtemp(prefix="airbench94_")
    if exported:
        os.mkdir(os.path.join(work, "cifar10"))
        from_export(data, os.path.join(work, "cifar10"))
    else:
        os.symlink(data, os.path.join(work, "cifar10"))
    os.chdir(work)

    seen = []  # the variables train() logs: one dict per epoch, then the final evaluation's
    log = airbench.utils.print_training_details

    def capture(variables, is_final_entry):
        seen.append({k: variables.get(k) for k in
                     ("epoch", "val_acc", "tta_val_acc", "total_time_seconds")})
        log(variables, is_final_entry)

    airbench.utils.print_training_details = capture
    if not a.no_warmup:
        airbench.warmup94()
    seen.clear()
    kwargs = {} if a.epochs is None else {"epochs": a.epochs}
    airbench.train94(**kwargs)
    final = seen[-1]
    if final.get("tta_val_acc") is None:
        sys.exit("airbench94_reference: the run logged no final evaluation")
    import airbench.lib_airbench94 as lib94
    result = {
        "framework": "pytorch",
        "recipe": "airbench94",
        "device": torch.cuda.get_device_name(),
        "device_seconds": final["total_time_seconds"],
        "accuracy": final["tta_val_acc"],
        "epoch_accuracy": [e["val_acc"] for e in seen[:-1]],
        "epochs": a.epochs if a.epochs is not None else lib94.hyp["opt"]["train_epochs"],
        "torch": torch.__version__,
        "cudnn": cudnn_version(),
        "torchvision": torchvision_version,
        "airbench": package_version(),
    }
    line = json.dumps(result)
    print(line, flush=True)
    if a.json:
        with open(a.json, "w") as f:
            f.write(line + "\n")


if __name__ == "__main__":
    main()
