#!/usr/bin/env python3
"""The UNet of nn/models/unet.h in PyTorch: milesial's Pytorch-UNet structure (DoubleConv, Down,
Up, OutConv, with its parameter names), generalised as ringgrad's UNetConfig is — 2-D or 3-D,
depth, base width, a transposed-conv or interpolating decoder, BatchNorm or none.

    /work/venv-torch/bin/python tools/unet_reference.py

writes tests/fixtures/unet_parameters.txt: for each configuration of CONFIGS, its parameter
count, every parameter's name and shape, and the output shape for an input shape (odd sizes
included, which exercise the decoder's padding). tests/nn/unet_test.cpp reads it without torch.
tools/fixtures/unet.py uses the same classes for value parity (tests/fixtures/unet.safetensors).
"""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


def layers(dims):
    if dims == 2:
        return nn.Conv2d, nn.BatchNorm2d, nn.MaxPool2d, nn.ConvTranspose2d, "bilinear"
    return nn.Conv3d, nn.BatchNorm3d, nn.MaxPool3d, nn.ConvTranspose3d, "trilinear"


class DoubleConv(nn.Module):
    def __init__(self, dims, cin, cout, mid, bn):
        super().__init__()
        Conv, BN, _, _, _ = layers(dims)
        mods = [Conv(cin, mid, 3, padding=1, bias=not bn)]
        mods += [BN(mid)] if bn else []
        mods += [nn.ReLU(inplace=True), Conv(mid, cout, 3, padding=1, bias=not bn)]
        mods += [BN(cout)] if bn else []
        mods += [nn.ReLU(inplace=True)]
        self.double_conv = nn.Sequential(*mods)

    def forward(self, x):
        return self.double_conv(x)


class Down(nn.Module):
    def __init__(self, dims, cin, cout, bn):
        super().__init__()
        _, _, Pool, _, _ = layers(dims)
        self.maxpool_conv = nn.Sequential(Pool(2), DoubleConv(dims, cin, cout, cout, bn))

    def forward(self, x):
        return self.maxpool_conv(x)


class Up(nn.Module):
    def __init__(self, dims, cin, cout, interpolate, bn):
        super().__init__()
        _, _, _, ConvT, mode = layers(dims)
        if interpolate:
            self.up = nn.Upsample(scale_factor=2, mode=mode, align_corners=True)
            self.conv = DoubleConv(dims, cin, cout, cin // 2, bn)
        else:
            self.up = ConvT(cin, cin // 2, kernel_size=2, stride=2)
            self.conv = DoubleConv(dims, cin, cout, cout, bn)

    def forward(self, deep, skip):
        up = self.up(deep)
        amounts = []
        for d in range(skip.dim() - 1, 1, -1):  # F.pad's order: the last dim first
            diff = skip.size(d) - up.size(d)
            amounts += [diff // 2, diff - diff // 2]
        up = F.pad(up, amounts)
        return self.conv(torch.cat([skip, up], dim=1))


class OutConv(nn.Module):
    def __init__(self, dims, cin, cout):
        super().__init__()
        self.conv = layers(dims)[0](cin, cout, kernel_size=1)

    def forward(self, x):
        return self.conv(x)


class UNet(nn.Module):
    def __init__(self, dims=2, in_channels=3, num_classes=2, depth=4, base_width=64,
                 interpolate=False, bn=True):
        super().__init__()
        f = 2 if interpolate else 1
        w = [base_width << i for i in range(depth + 1)]
        self.inc = DoubleConv(dims, in_channels, w[0], w[0], bn)
        for i in range(1, depth + 1):
            setattr(self, f"down{i}", Down(dims, w[i - 1], w[i] // f if i == depth else w[i], bn))
        for j in range(1, depth + 1):
            out = w[0] if j == depth else w[depth - j] // f
            setattr(self, f"up{j}", Up(dims, w[depth - j + 1], out, interpolate, bn))
        self.outc = OutConv(dims, w[0], num_classes)
        self.depth = depth

    def forward(self, x):
        skips = [self.inc(x)]
        for i in range(1, self.depth + 1):
            skips.append(getattr(self, f"down{i}")(skips[-1]))
        y = skips[-1]
        for j in range(1, self.depth + 1):
            y = getattr(self, f"up{j}")(y, skips[-1 - j])
        return self.outc(y)


# name: (UNet kwargs, input shape). The first two are make_model("unet2d") and
# make_model("unet3d"); the rest cover the other options (tests/nn/unet_test.cpp builds the same).
CONFIGS = {
    "unet2d": (dict(dims=2), (1, 3, 32, 32)),
    "unet3d": (dict(dims=3, in_channels=1, num_classes=1, depth=3, base_width=32), (1, 1, 8, 8, 8)),
    "unet2d_interp": (dict(dims=2, in_channels=1, num_classes=3, depth=2, base_width=4,
                           interpolate=True), (2, 1, 19, 13)),
    "unet2d_nobn": (dict(dims=2, in_channels=2, num_classes=4, depth=2, base_width=6, bn=False),
                    (1, 2, 11, 10)),
    "unet3d_interp_nobn": (dict(dims=3, in_channels=2, num_classes=2, depth=2, base_width=4,
                                interpolate=True, bn=False), (1, 2, 5, 6, 7)),
    "unet3d_odd": (dict(dims=3, in_channels=1, num_classes=2, depth=2, base_width=2),
                   (2, 1, 7, 5, 6)),
}


def shape_text(shape):
    return "x".join(str(d) for d in shape)


def describe(name, kwargs, input_shape):
    torch.manual_seed(0)
    model = UNet(**kwargs)
    lines = [f"model {name} {sum(p.numel() for p in model.parameters())}"]
    for key, p in model.named_parameters():
        lines.append(f"  {key} {shape_text(p.shape)}")
    model.eval()  # shapes only; one-voxel maps have no batch statistics
    with torch.no_grad():
        y = model(torch.randn(*input_shape))
    lines.append(f"io {shape_text(input_shape)} {shape_text(y.shape)}")
    return lines


if __name__ == "__main__":
    wanted = sys.argv[1:] or list(CONFIGS)
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures",
                       "unet_parameters.txt")
    lines = ["# made by tools/unet_reference.py: model <name> <parameter count>, each parameter's",
             "# name and shape as PyTorch registers them, then 'io <input shape> <output shape>'"]
    for name in wanted:
        lines += describe(name, *CONFIGS[name])
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {out}")
