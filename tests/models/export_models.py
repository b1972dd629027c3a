#!/usr/bin/python3
"""Exports the networks test_onnx_models checks fovea's ONNX importer on.

    /usr/bin/python3 tests/models/export_models.py OUTDIR [NAME ...]

Debian's python3-torch (1.13, CPU), python3-torchvision and python3-onnx.
Every network has seeded random weights (no model hub can be reached) and is
exported in eval mode; BatchNorm running statistics and affine parameters
are randomised too, so that folding them is tested. For each NAME:

    OUTDIR/NAME.onnx      the model (torch.onnx.export)
    OUTDIR/NAME.in.f32    the input, float32, NCHW, row-major
    OUTDIR/NAME.out<k>.f32  PyTorch's FP32 output k, row-major (ONNX order)

The input is a real photo from data/ resized (bilinear, PIL) and normalised
with ImageNet's mean and std. Models:

    resnet18     torchvision ResNet-18, 1x3x224x224 (opset 13; BatchNorm folded
                 by the exporter)
    mobilenet_v2 torchvision MobileNetV2, 1x3x224x224 (opset 13; BatchNorm and
                 Dropout nodes kept, as in unet and detector, for fovea to fold)
    unet         a small UNet: encoder, skip concats, ConvTranspose and
                 bilinear Resize up-paths, SiLU, LeakyReLU (opset 11)
    detector     a detector-style head: conv backbone with squeeze-and-
                 excitation (Hardsigmoid, per-channel Mul), Hardswish, two
                 levels of box/objectness/class convs, sigmoid, concat,
                 reshapes; two outputs (opset 17)
Nothing is written to the source tree.
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "data")
MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)


def image(name, h, w):
    img = Image.open(os.path.join(DATA, name)).convert("RGB").resize((w, h), Image.BILINEAR)
    x = (np.asarray(img, np.float32) / 255.0 - MEAN) / STD
    return torch.from_numpy(x.transpose(2, 0, 1)[None].copy())


def randomise_bn(model, seed):
    g = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            c = m.num_features
            m.running_mean.copy_(torch.randn(c, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(c, generator=g) + 0.5)
            m.weight.data.copy_(torch.rand(c, generator=g) + 0.5)
            m.bias.data.copy_(torch.randn(c, generator=g) * 0.1)
    return model


def cbr(cin, cout, act=None):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                         act or nn.ReLU(inplace=True))


class UNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.e1 = nn.Sequential(cbr(3, 16), cbr(16, 16, nn.SiLU()))
        self.e2 = nn.Sequential(cbr(16, 32), cbr(32, 32))
        self.mid = nn.Sequential(cbr(32, 64, nn.LeakyReLU(0.1)), cbr(64, 64))
        self.up2 = nn.ConvTranspose2d(64, 32, 2, stride=2)
        self.d2 = cbr(64, 32)
        self.d1 = cbr(32 + 16, 16)
        self.head = nn.Conv2d(16, 2, 1)

    def forward(self, x):
        s1 = self.e1(x)
        s2 = self.e2(F.max_pool2d(s1, 2))
        m = self.mid(F.max_pool2d(s2, 2))
        u2 = self.d2(torch.cat([self.up2(m), s2], 1))
        u1 = F.interpolate(u2, scale_factor=2, mode="bilinear", align_corners=False)
        u1 = self.d1(torch.cat([u1, s1], 1))
        return torch.sigmoid(self.head(u1))


class SE(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.fc1 = nn.Conv2d(c, c // 4, 1)
        self.fc2 = nn.Conv2d(c // 4, c, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        s = F.hardsigmoid(self.fc2(F.relu(self.fc1(s))))
        return x * s


class Detector(nn.Module):
    A, NC = 3, 4

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.Hardswish())
        self.s4 = nn.Sequential(cbr(16, 32), nn.MaxPool2d(2), SE(32))
        self.s8 = nn.Sequential(nn.Conv2d(32, 48, 3, 2, 1), nn.ReLU6(), SE(48))
        self.s16 = nn.Sequential(nn.Conv2d(48, 64, 3, 2, 1), nn.ReLU())
        k = self.A
        self.heads = nn.ModuleList()
        for c in (48, 64):
            self.heads.append(nn.ModuleDict({"box": nn.Conv2d(c, 4 * k, 1),
                                             "obj": nn.Conv2d(c, k, 1),
                                             "cls": nn.Conv2d(c, self.NC * k, 1)}))

    def forward(self, x):
        f8 = self.s8(self.s4(self.stem(x)))
        f16 = self.s16(f8)
        flat, grid = [], []
        for f, h in zip((f8, f16), self.heads):
            p = torch.cat([h["box"](f), torch.sigmoid(h["obj"](f)),
                           torch.softmax(h["cls"](f), dim=1)], 1)
            n = p.shape[0]
            flat.append(p.reshape(n, -1))
            grid.append(p.view(n, p.shape[1], -1))  # (N, C, H*W): rank 3
        return torch.cat(flat, 1), torch.cat(grid, 2)


def build(name):
    """(model, input, opset, keep_bn): keep_bn exports BatchNormalization
    nodes (TrainingMode.PRESERVE on an eval model) for fovea to fold, instead
    of the exporter folding them into the convolutions."""
    torch.manual_seed(1234)
    if name == "resnet18":
        return (randomise_bn(torchvision.models.resnet18(weights=None), 1),
                image("astronaut.png", 224, 224), 13, False)
    if name == "mobilenet_v2":
        return (randomise_bn(torchvision.models.mobilenet_v2(weights=None), 2),
                image("chelsea.png", 224, 224), 13, True)
    if name == "unet":
        return randomise_bn(UNet(), 3), image("coffee.png", 64, 96), 11, True
    if name == "detector":
        return randomise_bn(Detector(), 4), image("rocket.jpg", 128, 96), 17, True
    raise SystemExit("unknown model " + name)


def export(name, outdir):
    model, x, opset, keep_bn = build(name)
    model.eval()
    with torch.no_grad():
        out = model(x)
    outs = out if isinstance(out, tuple) else (out,)
    path = os.path.join(outdir, name + ".onnx")
    mode = torch.onnx.TrainingMode.PRESERVE if keep_bn else torch.onnx.TrainingMode.EVAL
    torch.onnx.export(model, x, path, opset_version=opset, training=mode, input_names=["input"],
                      output_names=["output%d" % i for i in range(len(outs))])
    x.numpy().astype("<f4").tofile(os.path.join(outdir, name + ".in.f32"))
    for i, o in enumerate(outs):
        o.numpy().astype("<f4").tofile(os.path.join(outdir, "%s.out%d.f32" % (name, i)))
    print("%s: opset %d, input %s, outputs %s" % (name, opset, tuple(x.shape),
                                                   [tuple(o.shape) for o in outs]))


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    for name in sys.argv[2:] or ["resnet18", "mobilenet_v2", "unet", "detector"]:
        export(name, outdir)


if __name__ == "__main__":
    main()
