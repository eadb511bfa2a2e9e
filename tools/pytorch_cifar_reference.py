#!/usr/bin/env python3
"""PyTorch twins of the pytorch-cifar (kuangliu) models in nn/models/, written as kuangliu defines
them (models/vgg.py, resnet.py, preact_resnet.py, mobilenetv2.py at commit 49b7aa9), to check
that ringgrad builds the same networks. Writes tests/fixtures/model_zoo_parameters.txt: for each
model its parameter count, then every parameter's name and shape in registration order, so the
test also checks that pytorch-cifar checkpoints' keys and shapes match ours.

    /work/venv-torch/bin/python tools/pytorch_cifar_reference.py   # rewrites the fixture
"""
import os
import sys

import torch.nn as nn
import torch.nn.functional as F

from resnet_reference import Airbench94, BasicBlock

VGG_CFG = {
    'VGG16': [64, 64, 'M', 128, 128, 'M', 256, 256, 256, 'M', 512, 512, 512, 'M', 512, 512, 512, 'M'],
}


class VGG(nn.Module):
    def __init__(self, vgg_name, num_classes=10):
        super().__init__()
        self.features = self._make_layers(VGG_CFG[vgg_name])
        self.classifier = nn.Linear(512, num_classes)

    def forward(self, x):
        return self.classifier(self.features(x).view(x.size(0), -1))

    def _make_layers(self, cfg):
        layers = []
        in_channels = 3
        for x in cfg:
            if x == 'M':
                layers += [nn.MaxPool2d(kernel_size=2, stride=2)]
            else:
                layers += [nn.Conv2d(in_channels, x, kernel_size=3, padding=1),
                           nn.BatchNorm2d(x), nn.ReLU(inplace=True)]
                in_channels = x
        layers += [nn.AvgPool2d(kernel_size=1, stride=1)]
        return nn.Sequential(*layers)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, self.expansion * planes, kernel_size=1, bias=False)
        self.bn3 = nn.BatchNorm2d(self.expansion * planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != self.expansion * planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, self.expansion * planes, kernel_size=1, stride=stride,
                          bias=False),
                nn.BatchNorm2d(self.expansion * planes))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return F.relu(out + self.shortcut(x))


class ResNet(nn.Module):
    """kuangliu's ResNet: `block` is BasicBlock (expansion 1) or Bottleneck (expansion 4)."""

    def __init__(self, block, num_blocks, num_classes=10):
        super().__init__()
        self.in_planes = 64
        self.conv1 = nn.Conv2d(3, 64, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.layer1 = self._make_layer(block, 64, num_blocks[0], stride=1)
        self.layer2 = self._make_layer(block, 128, num_blocks[1], stride=2)
        self.layer3 = self._make_layer(block, 256, num_blocks[2], stride=2)
        self.layer4 = self._make_layer(block, 512, num_blocks[3], stride=2)
        self.linear = nn.Linear(512 * getattr(block, 'expansion', 1), num_classes)

    def _make_layer(self, block, planes, num_blocks, stride):
        layers = []
        for stride in [stride] + [1] * (num_blocks - 1):
            layers.append(block(self.in_planes, planes, stride))
            self.in_planes = planes * getattr(block, 'expansion', 1)
        return nn.Sequential(*layers)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer4(self.layer3(self.layer2(self.layer1(out))))
        return self.linear(F.avg_pool2d(out, 4).view(x.size(0), -1))


class PreActBlock(nn.Module):
    expansion = 1

    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(in_planes)
        self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=3, stride=stride, padding=1,
                               bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=1, padding=1, bias=False)
        if stride != 1 or in_planes != self.expansion * planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, self.expansion * planes, kernel_size=1, stride=stride,
                          bias=False))

    def forward(self, x):
        out = F.relu(self.bn1(x))
        shortcut = self.shortcut(out) if hasattr(self, 'shortcut') else x
        out = self.conv1(out)
        out = self.conv2(F.relu(self.bn2(out)))
        return out + shortcut


class PreActResNet(nn.Module):
    def __init__(self, block, num_blocks, num_classes=10):
        super().__init__()
        self.in_planes = 64
        self.conv1 = nn.Conv2d(3, 64, kernel_size=3, stride=1, padding=1, bias=False)
        self.layer1 = self._make_layer(block, 64, num_blocks[0], stride=1)
        self.layer2 = self._make_layer(block, 128, num_blocks[1], stride=2)
        self.layer3 = self._make_layer(block, 256, num_blocks[2], stride=2)
        self.layer4 = self._make_layer(block, 512, num_blocks[3], stride=2)
        self.linear = nn.Linear(512 * block.expansion, num_classes)

    def _make_layer(self, block, planes, num_blocks, stride):
        layers = []
        for stride in [stride] + [1] * (num_blocks - 1):
            layers.append(block(self.in_planes, planes, stride))
            self.in_planes = planes * block.expansion
        return nn.Sequential(*layers)

    def forward(self, x):
        out = self.conv1(x)  # no BN/ReLU after the last stage either: kuangliu's choice
        out = self.layer4(self.layer3(self.layer2(self.layer1(out))))
        return self.linear(F.avg_pool2d(out, 4).view(x.size(0), -1))


class MobileNetV2Block(nn.Module):
    """kuangliu's `Block`: expand (1x1) + depthwise (3x3) + project (1x1)."""

    def __init__(self, in_planes, out_planes, expansion, stride):
        super().__init__()
        self.stride = stride
        planes = expansion * in_planes
        self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=1, stride=1, padding=0, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=stride, padding=1,
                               groups=planes, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, out_planes, kernel_size=1, stride=1, padding=0, bias=False)
        self.bn3 = nn.BatchNorm2d(out_planes)
        self.shortcut = nn.Sequential()
        if stride == 1 and in_planes != out_planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=1, padding=0, bias=False),
                nn.BatchNorm2d(out_planes))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return out + self.shortcut(x) if self.stride == 1 else out


class MobileNetV2(nn.Module):
    # (expansion, out_planes, num_blocks, stride); stride 1 in the second row and in conv1 for
    # CIFAR (kuangliu's NOTEs).
    cfg = [(1, 16, 1, 1), (6, 24, 2, 1), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
           (6, 160, 3, 2), (6, 320, 1, 1)]

    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(32)
        self.layers = self._make_layers(in_planes=32)
        self.conv2 = nn.Conv2d(320, 1280, kernel_size=1, stride=1, padding=0, bias=False)
        self.bn2 = nn.BatchNorm2d(1280)
        self.linear = nn.Linear(1280, num_classes)

    def _make_layers(self, in_planes):
        layers = []
        for expansion, out_planes, num_blocks, stride in self.cfg:
            for stride in [stride] + [1] * (num_blocks - 1):
                layers.append(MobileNetV2Block(in_planes, out_planes, expansion, stride))
                in_planes = out_planes
        return nn.Sequential(*layers)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(self.layers(out))))
        return self.linear(F.avg_pool2d(out, 4).view(x.size(0), -1))


# ringgrad's make_model names -> the pytorch-cifar constructors.
MODELS = {
    'airbench94': Airbench94,  # not pytorch-cifar's: airbench94.py's net (resnet_reference.py)
    'vgg16': lambda: VGG('VGG16'),
    'resnet34': lambda: ResNet(BasicBlock, [3, 4, 6, 3]),
    'resnet50': lambda: ResNet(Bottleneck, [3, 4, 6, 3]),
    'resnet101': lambda: ResNet(Bottleneck, [3, 4, 23, 3]),
    'preactresnet18': lambda: PreActResNet(PreActBlock, [2, 2, 2, 2]),
    'mobilenetv2': lambda: MobileNetV2(),
}


def describe(name, model):
    lines = [f"model {name} {sum(p.numel() for p in model.parameters())}"]
    for key, p in model.named_parameters():
        lines.append(f"  {key} {'x'.join(str(d) for d in p.shape)}")
    return lines


if __name__ == "__main__":
    wanted = sys.argv[1:] or list(MODELS)
    out = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures",
                       "model_zoo_parameters.txt")
    lines = ["# made by tools/pytorch_cifar_reference.py: model <name> <parameter count>, then",
             "# each parameter's name and shape as PyTorch registers them"]
    for name in wanted:
        lines += describe(name, MODELS[name]())
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {out}")
