#!/usr/bin/env python3
"""The CIFAR ResNets of nn/models/resnet.h and the airbench nets of nn/models/airbench.h and
airbench94.h in PyTorch, to check parameter counts and to time PyTorch on the same model
(tools/bench_train_vs_pytorch.py). ResNet definitions follow pytorch-cifar (kuangliu)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + self.shortcut(x))


class ResNet(nn.Module):
    def __init__(self, blocks, widths, stem, num_classes=10, width=1.0):
        super().__init__()
        w = lambda c: max(1, round(c * width))
        cin = w(stem)
        self.conv1 = nn.Conv2d(3, cin, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cin)
        for s, (n, c) in enumerate(zip(blocks, widths)):
            layers = []
            for b in range(n):
                layers.append(BasicBlock(cin, w(c), 2 if b == 0 and s > 0 else 1))
                cin = w(c)
            setattr(self, f"layer{s + 1}", nn.Sequential(*layers))
        self.stages = len(blocks)
        self.linear = nn.Linear(cin, num_classes)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        for s in range(self.stages):
            y = getattr(self, f"layer{s + 1}")(y)
        return self.linear(F.adaptive_avg_pool2d(y, 1).flatten(1))


class AirbenchGroup(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1, bias=False)
        self.norm1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.norm2 = nn.BatchNorm2d(cout)

    def forward(self, x):
        y = F.relu(self.norm1(F.max_pool2d(self.conv1(x), 2)))
        return F.relu(self.norm2(self.conv2(y)))


class Airbench(nn.Module):
    """nn/models/airbench.h: a 2x2 whitening conv (3 -> 24, with bias), three groups of
    conv-pool-BN-ReLU-conv-BN-ReLU at widths 64, 256, 256 (times the width multiplier), a global
    max-pool and a bias-free linear head whose output is scaled by 1/9."""

    def __init__(self, num_classes=10, width=1.0):
        super().__init__()
        w = lambda c: max(1, round(c * width))
        self.whiten = nn.Conv2d(3, 24, 2)
        cin = 24
        for i, c in enumerate((64, 256, 256)):
            setattr(self, f"group{i + 1}", AirbenchGroup(cin, w(c)))
            cin = w(c)
        self.head = nn.Linear(cin, num_classes, bias=False)

    def forward(self, x):
        y = F.relu(self.whiten(x))
        y = self.group3(self.group2(self.group1(y)))
        y = F.adaptive_max_pool2d(y, 1).flatten(1)
        return self.head(y) / 9


class Airbench94Group(nn.Module):
    """airbench94.py's ConvGroup, with our parameter names."""

    def __init__(self, cin, cout):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1, bias=False)
        self.norm1 = nn.BatchNorm2d(cout, eps=1e-12, momentum=1 - 0.6)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.norm2 = nn.BatchNorm2d(cout, eps=1e-12, momentum=1 - 0.6)
        for norm in (self.norm1, self.norm2):
            norm.weight.requires_grad = False
        # airbench94.py's Conv.reset_parameters: dirac_(w[:w.size(1)]), so as many filters as
        # input channels start as the identity: min(cin, cout) of conv1 and all of conv2.
        for conv in (self.conv1, self.conv2):
            nn.init.dirac_(conv.weight.data[:conv.weight.size(1)])

    def forward(self, x):
        y = F.gelu(self.norm1(F.max_pool2d(self.conv1(x), 2)))
        return F.gelu(self.norm2(self.conv2(y)))


class Airbench94(nn.Module):
    """nn/models/airbench94.h, as make_net() of Keller Jordan's airbench94.py builds it: a 2x2
    whitening conv (3 -> 24, bias), GELU, three groups at widths 64, 256, 256 with GELU and
    BatchNorm (eps 1e-12, momentum 0.4, weight frozen at 1), max-pool 3, a bias-free linear head
    scaled by 1/9."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.whiten = nn.Conv2d(3, 24, 2)
        self.whiten.bias.data.zero_()
        self.whiten.weight.requires_grad = False
        cin = 24
        for i, c in enumerate((64, 256, 256)):
            setattr(self, f"group{i + 1}", Airbench94Group(cin, c))
            cin = c
        self.head = nn.Linear(cin, num_classes, bias=False)

    def forward(self, x):
        y = F.gelu(self.whiten(x))
        y = self.group3(self.group2(self.group1(y)))
        y = F.max_pool2d(y, 3).flatten(1)
        return self.head(y) / 9


def airbench94(width=1.0):
    # bench_train_vs_pytorch.py passes a width; airbench94 has only its own.
    if width != 1.0:
        raise ValueError("airbench94 takes no width multiplier")
    return Airbench94()


def airbench(width=1.0):
    return Airbench(width=width)


def resnet18(width=1.0):
    return ResNet([2, 2, 2, 2], [64, 128, 256, 512], 64, width=width)


def resnet20(width=1.0):
    return ResNet([3, 3, 3], [16, 32, 64], 16, width=width)


if __name__ == "__main__":
    for name, m in [("resnet18", resnet18()), ("resnet20", resnet20()), ("airbench", airbench()),
                    ("airbench@0.5", airbench(0.5)), ("airbench94", airbench94())]:
        print(name, sum(p.numel() for p in m.parameters()))
