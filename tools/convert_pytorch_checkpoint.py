#!/usr/bin/env python3
"""Converts a PyTorch checkpoint of a CIFAR classifier — pytorch-cifar's checkpoint/ckpt.pth
({'net': state_dict, 'acc': ..., 'epoch': ...}), or a bare state_dict saved with torch.save — into
a safetensors file with a ringgrad model card (train/model_card.h): the model, its classes and
pytorch-cifar's normalisation, so that `predict` and `train_cifar --init-from` need no flags.

    /work/venv-torch/bin/python tools/convert_pytorch_checkpoint.py checkpoint/ckpt.pth \\
        resnet18.safetensors --model resnet18
    ./build/apps/predict --checkpoint resnet18.safetensors cat.png

--model is a ringgrad model name (apps/README.md lists them; pytorch-cifar's ResNet18() is
resnet18, ResNeXt29_2x64d() resnext29_2x64d). DataParallel's "module." prefix (main.py saves
through it) is stripped. The file is read with torch.load(weights_only=True): tensors and plain
values only, no code runs. The one tool of the repository that needs PyTorch besides the
instruments: it is not part of the build or the tests.
"""
import argparse
import json
import sys

CIFAR10_CLASSES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse",
                   "ship", "truck"]
# pytorch-cifar's main.py: transforms.Normalize((0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010))
PYTORCH_CIFAR_MEAN = [0.4914, 0.4822, 0.4465]
PYTORCH_CIFAR_STD = [0.2023, 0.1994, 0.2010]


def channel_values(text):
    values = [float(v) for v in text.split(",")]
    if len(values) != 3:
        raise argparse.ArgumentTypeError(f"expected three numbers R,G,B, got {text!r}")
    return values


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("checkpoint", help="ckpt.pth (pytorch-cifar's) or a torch.save'd state_dict")
    p.add_argument("out", help="the safetensors file to write")
    p.add_argument("--model", required=True, help="ringgrad's name of the model (resnet18, ...)")
    p.add_argument("--mean", type=channel_values, default=PYTORCH_CIFAR_MEAN,
                   help="R,G,B (default pytorch-cifar's 0.4914,0.4822,0.4465)")
    p.add_argument("--std", type=channel_values, default=PYTORCH_CIFAR_STD,
                   help="R,G,B (default pytorch-cifar's 0.2023,0.1994,0.2010)")
    args = p.parse_args()

    import torch
    from safetensors.torch import save_file

    loaded = torch.load(args.checkpoint, map_location="cpu", weights_only=True)
    extra = {}
    if isinstance(loaded, dict) and "net" in loaded and isinstance(loaded["net"], dict):
        state = loaded["net"]
        for key in ("acc", "epoch"):  # what pytorch-cifar records beside the weights
            if key in loaded:
                extra[f"pytorch_cifar.{key}"] = str(loaded[key])
    elif isinstance(loaded, dict) and all(torch.is_tensor(v) for v in loaded.values()):
        state = loaded
    else:
        sys.exit(f"{args.checkpoint}: neither pytorch-cifar's {{'net', 'acc', 'epoch'}} nor a "
                 "state_dict of tensors")
    prefixed = all(k.startswith("module.") for k in state)
    tensors = {(k[len("module."):] if prefixed else k): v.detach().contiguous().clone()
               for k, v in state.items()}
    heads = [t for t in tensors.values() if t.dim() == 2]
    if not heads:
        sys.exit(f"{args.checkpoint}: no 2-D weight (a classifier's last layer) in its state_dict")
    classes = heads[-1].shape[0]  # state_dicts keep registration order: the head comes last
    names = CIFAR10_CLASSES if classes == 10 else [str(c) for c in range(classes)]
    card = {
        "model.card": "1",
        "model.task": "classification",
        "model.name": args.model,
        "model.outputs": str(classes),
        "model.classes": json.dumps(names),
        "preprocess.channels": "3",
        "preprocess.input_size": "32x32",
        "preprocess.mean": json.dumps(args.mean),
        "preprocess.std": json.dumps(args.std),
        "converted_from": args.checkpoint,
    }
    save_file(tensors, args.out, metadata={**card, **extra})
    print(f"wrote {args.out}: {args.model}, {len(tensors)} tensors, {classes} classes"
          f"{', module. prefix stripped' if prefixed else ''}"
          f"{', ' + ', '.join(f'{k} {v}' for k, v in extra.items()) if extra else ''}")


if __name__ == "__main__":
    main()
