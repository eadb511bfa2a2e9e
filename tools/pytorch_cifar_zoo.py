#!/usr/bin/env python3
"""pytorch-cifar's own models as the twins of ringgrad's zoo (nn/models/): kuangliu's definitions
are imported from a checkout of https://github.com/kuangliu/pytorch-cifar (tested at commit
49b7aa9), not rewritten, so what is compared is the code pytorch-cifar users train. An
instrument: nothing here enters the library, and the tests read only the files it writes.

    git clone https://github.com/kuangliu/pytorch-cifar /tmp/pytorch-cifar
    /work/venv-torch/bin/python tools/pytorch_cifar_zoo.py --pytorch-cifar /tmp/pytorch-cifar

writes
  tests/fixtures/model_zoo_parameters.txt  per model one line: its parameter count, and the
      number and an FNV-1a hash of its parameters' and of its buffers' "name shape" lines in
      PyTorch's registration order — its state_dict's keys and shapes, which
      tests/nn/model_zoo_test.cpp compares with ringgrad's (the listing itself, 16,000 lines, would
      be half a megabyte; --describe NAME prints it, as the test prints ringgrad's on a mismatch);
  tests/fixtures/model_zoo_values.safetensors  each model at full size, its weights, BatchNorm
      statistics and input drawn from a formula both sides compute (zoo_fill below and
      tests/support/zoo_fill.h: a hash of the tensor's name and the element's index, so no weights
      are stored): eval-mode logits, then one train-mode step — logits, loss, and per parameter
      two numbers of its gradient (its dot product with a formula vector, and its norm), per
      BatchNorm statistic the same of its value after the step. tests/nn/model_zoo_parity_test.cpp
      computes the same in ringgrad.

    ... tools/pytorch_cifar_zoo.py --pytorch-cifar DIR --full /tmp/zoo_full [--models dpn92 ...]

writes instead, per model, /tmp/zoo_full/<model>.safetensors with the whole gradient and every
statistic after the step, element by element, and runs the same ringgrad test against each file
(RG_ZOO_VALUES=<file> build/tests/test_nn --gtest_filter='ZooParity*'): the full-size check, too
large to commit (DPN92's gradients alone are 137 MB).
"""
import argparse
import math
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FIXTURES = os.path.join(ROOT, "tests", "fixtures")

# ---- the formula (tests/support/zoo_fill.h computes the same, bit for bit) ---------------------
MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def fnv1a64(text):
    h = 0xCBF29CE484222325
    for b in text.encode():
        h = ((h ^ b) * 0x100000001B3) & MASK
    return h


def uniform(name, n):
    """n values in [-1, 1), multiples of 2^-23 (exact in f32): splitmix64 of the name's hash."""
    z = np.uint64(fnv1a64(name)) + np.arange(1, n + 1, dtype=np.uint64) * np.uint64(GOLDEN)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return ((z >> np.uint64(40)).astype(np.int64) - (1 << 23)).astype(np.float64) / (1 << 23)


def zoo_fill(name, shape):
    """The value of state entry `name`: f64 computed, rounded once to f32 (i64 for the counter)."""
    n = math.prod(shape)
    if name.endswith("num_batches_tracked"):
        return torch.zeros(shape, dtype=torch.int64)
    u = uniform(name, n)
    if name.endswith("running_mean"):
        v = 0.1 * u
    elif name.endswith("running_var"):
        v = 1.25 + 0.25 * u
    elif len(shape) == 1 and name.endswith("weight"):  # BatchNorm's scale
        v = 1.0 + 0.25 * u
    elif len(shape) == 1:  # biases
        v = 0.1 * u
    else:  # conv and linear weights: variance 1 / fan_in
        v = u * math.sqrt(3.0 / math.prod(shape[1:]))
    return torch.from_numpy(v.astype(np.float32).reshape(shape))


def the_input():
    """Two images (2, 3, 32, 32) of values in [-1, 1), about what normalised images hold."""
    return torch.from_numpy(uniform("input", 2 * 3 * 32 * 32).astype(np.float32)).reshape(
        2, 3, 32, 32)


LABELS = torch.tensor([3, 7])


def projection(name, n):
    return uniform(name + "#r", n)


# ---- the twins --------------------------------------------------------------------------------

def twins(M):
    """ringgrad's make_model names -> pytorch-cifar's constructors (module `models` of a checkout).
    Left out: ShuffleNetG2/G3 (models/shufflenet.py sizes a layer with out_planes/4, a float, which
    nn.Conv2d refuses under Python 3: the definition does not build, so no checkpoint of it
    exists)."""
    sys.path.insert(0, HERE)
    from resnet_reference import Airbench94  # not pytorch-cifar's: airbench94.py's net
    return {
        "airbench94": Airbench94,
        "resnet18": M.ResNet18, "resnet34": M.ResNet34, "resnet50": M.ResNet50,
        "resnet101": M.ResNet101, "resnet152": M.ResNet152,
        "preactresnet18": M.PreActResNet18, "preactresnet34": M.PreActResNet34,
        "preactresnet50": M.PreActResNet50, "preactresnet101": M.PreActResNet101,
        "preactresnet152": M.PreActResNet152,
        "vgg11": lambda: M.VGG("VGG11"), "vgg13": lambda: M.VGG("VGG13"),
        "vgg16": lambda: M.VGG("VGG16"), "vgg19": lambda: M.VGG("VGG19"),
        "mobilenet": M.MobileNet, "mobilenetv2": M.MobileNetV2,
        "regnetx_200mf": M.RegNetX_200MF, "regnetx_400mf": M.RegNetX_400MF,
        "regnety_400mf": M.RegNetY_400MF,
        "resnext29_2x64d": M.ResNeXt29_2x64d, "resnext29_4x64d": M.ResNeXt29_4x64d,
        "resnext29_8x64d": M.ResNeXt29_8x64d, "resnext29_32x4d": M.ResNeXt29_32x4d,
        "simpledla": M.SimpleDLA, "dla": M.DLA,
        "densenet121": M.DenseNet121, "densenet161": M.DenseNet161,
        "densenet169": M.DenseNet169, "densenet201": M.DenseNet201,
        "densenet_cifar": M.densenet_cifar,
        "dpn26": M.DPN26, "dpn92": M.DPN92,
        "googlenet": M.GoogLeNet, "senet18": M.SENet18,
        "shufflenetv2": lambda: M.ShuffleNetV2(1), "efficientnetb0": M.EfficientNetB0,
        "lenet": M.LeNet, "pnasneta": M.PNASNetA, "pnasnetb": M.PNASNetB,
    }


def build(ctor, name):
    torch.manual_seed(0)
    net = ctor()
    if name == "efficientnetb0":
        # Its dropout before the linear draws from PyTorch's generator: off for the parity step
        # (ringgrad's test builds its twin with dropout_rate 0 too). Its drop-connect rates are 0
        # already (pytorch-cifar never advances the block counter).
        net.cfg = dict(net.cfg, dropout_rate=0.0)
    return net


def fill(net):
    with torch.no_grad():
        for key, t in net.state_dict(keep_vars=True).items():
            t.copy_(zoo_fill(key, tuple(t.shape)))


def shape_text(shape):
    return "x".join(str(d) for d in shape) if len(shape) else "scalar"


def listing(entries):
    return "".join(f"{k} {shape_text(t.shape)}\n" for k, t in entries)


def describe(name, net):
    params, buffers = list(net.named_parameters()), list(net.named_buffers())
    return (f"model {name} {sum(p.numel() for p in net.parameters())} "
            f"params {len(params)} {fnv1a64(listing(params)):016x} "
            f"buffers {len(buffers)} {fnv1a64(listing(buffers)):016x}")


def stats(name, t):
    v = t.detach().double().flatten().numpy()
    return [float(np.dot(v, projection(name, v.size))), float(np.sqrt(np.dot(v, v)))]


def run_twin(name, net, full):
    """The values tests/nn/model_zoo_parity_test.cpp compares, under keys '<name>.<what>'. In f64:
    a deep net's f32 gradients carry rounding errors amplified up to 1e6-fold (PyTorch's own f32
    gradients of ResNet152 differ from its f64 ones by 8 % in some BatchNorm biases, at a batch of
    4), so f32 on both sides could only be compared loosely. In f64 the two must agree to ~1e-10:
    the same math, not merely similar numbers. (f32 parity is the ops' own tests'.)"""
    fill(net)
    net.double()
    x = the_input().double()
    out = {}
    net.eval()
    with torch.no_grad():
        out["eval_logits"] = net(x)
    net.train()
    logits = net(x)
    loss = F.cross_entropy(logits, LABELS)
    loss.backward()
    out["train_logits"] = logits.detach()
    out["loss"] = loss.detach().reshape(1)
    grads = []
    for key, p in net.named_parameters():
        if p.grad is None:  # never used in forward (EfficientNet's expansion-1 conv1 / bn1)
            grads.append([0.0, -1.0])
            continue
        grads.append(stats(key, p.grad))
        if full:
            out["grad." + key] = p.grad.detach().clone()
    out["grads"] = torch.tensor(grads, dtype=torch.float64)
    buffers = []
    for key, b in net.named_buffers():
        if not b.is_floating_point():
            continue
        buffers.append(stats(key, b))
        if full:
            out["buffer." + key] = b.detach().clone()
    out["buffers"] = torch.tensor(buffers, dtype=torch.float64).reshape(-1, 2)
    return {f"{name}.{k}": v.contiguous() for k, v in out.items()}


CIFAR10_MEAN = [0.4914, 0.4822, 0.4465]  # ringgrad's (data/transforms.h), its default
CIFAR10_STD = [0.2470, 0.2435, 0.2616]
PYTORCH_CIFAR_MEAN = [0.4914, 0.4822, 0.4465]  # pytorch-cifar's main.py
PYTORCH_CIFAR_STD = [0.2023, 0.1994, 0.2010]


def cifar_images(n):
    """n images (n, 3, 32, 32) u8 from the formula: floor((u + 1) · 128)."""
    u = uniform("images", n * 3 * 32 * 32)
    return np.floor((u + 1.0) * 128.0).astype(np.uint8).reshape(n, 3, 32, 32)


def predict_fixtures(M):
    """tests/fixtures/pytorch_predict.safetensors: a PyTorch user's ResNet18 (pytorch-cifar's, the
    formula's weights and statistics) in eval mode on four images, as torchvision's ToTensor and
    Normalize feed it: its probabilities with ringgrad's normalisation and with pytorch-cifar's,
    for tests/apps/predict_test.cpp. And tests/fixtures/pytorch_dataparallel_state_dict.safetensors:
    a state_dict as PyTorch writes it — nn.DataParallel(nn.Sequential(Conv2d(3, 4, 3),
    BatchNorm2d(4))).state_dict(), its statistics moved by one train-mode batch, through
    safetensors.torch.save_file — with its eval output on one formula input in the first file."""
    from safetensors.torch import save_file
    out = {}
    net = M.ResNet18()
    fill(net)
    net.eval()
    images = cifar_images(4)
    x = torch.from_numpy(images).float() / 255  # transforms.ToTensor()
    for tag, mean, std in (("ringgrad", CIFAR10_MEAN, CIFAR10_STD),
                           ("pytorch_cifar", PYTORCH_CIFAR_MEAN, PYTORCH_CIFAR_STD)):
        normalised = (x - torch.tensor(mean).view(1, 3, 1, 1)) / torch.tensor(std).view(1, 3, 1, 1)
        with torch.no_grad():
            logits = net(normalised).double()
        out[f"resnet18.probabilities.{tag}"] = torch.softmax(logits, dim=1)
    torch.manual_seed(0)
    small = torch.nn.DataParallel(torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3),
                                                      torch.nn.BatchNorm2d(4)))
    small.train()
    with torch.no_grad():
        small(torch.randn(2, 3, 8, 8))
    small.eval()
    with torch.no_grad():
        out["sequential.eval_output"] = small(the_input()[:1, :, :8, :8])
    save_file({k: v.contiguous() for k, v in small.state_dict().items()},
              os.path.join(FIXTURES, "pytorch_dataparallel_state_dict.safetensors"))
    save_file({k: v.contiguous() for k, v in out.items()},
              os.path.join(FIXTURES, "pytorch_predict.safetensors"),
              metadata={"made_by": "tools/pytorch_cifar_zoo.py", "torch": torch.__version__})
    print("wrote", os.path.join(FIXTURES, "pytorch_predict.safetensors"), "and",
          os.path.join(FIXTURES, "pytorch_dataparallel_state_dict.safetensors"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pytorch-cifar", required=True,
                        help="a checkout of github.com/kuangliu/pytorch-cifar (its models/)")
    parser.add_argument("--models", nargs="*", help="ringgrad names (default: all)")
    parser.add_argument("--full", metavar="DIR",
                        help="write whole gradients per model into DIR and run ringgrad's test "
                             "against each (does not touch tests/fixtures)")
    parser.add_argument("--predict-only", action="store_true",
                        help="rewrite the two pytorch_* fixtures of predict and the loader only")
    parser.add_argument("--parameters-only", action="store_true",
                        help="rewrite model_zoo_parameters.txt only (seconds, not minutes)")
    parser.add_argument("--describe", metavar="NAME",
                        help="print a model's parameters and buffers, one 'name shape' a line")
    parser.add_argument("--test-binary", default=os.path.join(ROOT, "build", "tests", "test_nn"))
    args = parser.parse_args()
    from safetensors.torch import save_file

    sys.path.insert(0, os.path.abspath(args.pytorch_cifar))
    import models as M  # noqa: E402 (pytorch-cifar's package)

    torch.set_num_threads(max(1, torch.get_num_threads()))
    table = twins(M)
    wanted = args.models or list(table)
    if args.predict_only:
        predict_fixtures(M)
        return
    if args.describe:
        net = build(table[args.describe], args.describe)
        print("parameters:\n" + listing(net.named_parameters()) + "buffers:\n" +
              listing(net.named_buffers()), end="")
        return
    if args.full:
        os.makedirs(args.full, exist_ok=True)
        failed = []
        for name in wanted:
            net = build(table[name], name)
            path = os.path.join(args.full, f"{name}.safetensors")
            save_file(run_twin(name, net, full=True), path)
            env = dict(os.environ, RG_ZOO_VALUES=path)
            r = subprocess.run([args.test_binary, f"--gtest_filter=*ZooParity*{name}"],
                               env=env, capture_output=True, text=True)
            ok = r.returncode == 0 and "[  PASSED  ] 1 test" in r.stdout
            print(f"{name:18s} {'ok' if ok else 'FAILED'} ({os.path.getsize(path) >> 20} MiB)",
                  flush=True)
            if not ok:
                failed.append(name)
                print(r.stdout[-3000:], r.stderr[-2000:])
            os.remove(path)
        sys.exit(1 if failed else 0)

    lines = ["# made by tools/pytorch_cifar_zoo.py from pytorch-cifar's models (kuangliu):",
             "# model <name> <parameter count> params <n> <hash> buffers <n> <hash>, the hashes",
             "# FNV-1a 64 of the 'name shape' lines (shape 64x3x3x3, or scalar) in PyTorch's order"]
    values = {}
    for name in wanted:
        net = build(table[name], name)
        lines.append(describe(name, net))
        if name != "airbench94" and not args.parameters_only:  # its whitening is data-dependent; tests/nn/airbench94_test.cpp
            values.update(run_twin(name, net, full=False))
        print(name, flush=True)
    with open(os.path.join(FIXTURES, "model_zoo_parameters.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    if args.parameters_only:
        print("wrote", os.path.join(FIXTURES, "model_zoo_parameters.txt"))
        return
    # f32 keeps the fixture small; the statistics are computed in f64 on both sides.
    values = {k: v.float() if v.dtype == torch.float64 else v for k, v in values.items()}
    save_file(values, os.path.join(FIXTURES, "model_zoo_values.safetensors"),
              metadata={"made_by": "tools/pytorch_cifar_zoo.py",
                        "pytorch_cifar": "kuangliu/pytorch-cifar@49b7aa9",
                        "torch": torch.__version__})
    print("wrote", os.path.join(FIXTURES, "model_zoo_parameters.txt"), "and",
          os.path.join(FIXTURES, "model_zoo_values.safetensors"))
    predict_fixtures(M)


if __name__ == "__main__":
    main()
