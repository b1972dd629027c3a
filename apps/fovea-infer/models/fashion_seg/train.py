#!/usr/bin/python3
"""Trains the small segmentation net that fovea-infer's segmentation demo and
test_fashion_seg run: Fashion-MNIST items pasted at random places and scales
over crops of the bundled photos (data/), so every mask is known.

    /usr/bin/python3 apps/fovea-infer/models/fashion_seg/train.py [OUTDIR]
    /usr/bin/python3 apps/fovea-infer/models/fashion_seg/train.py --heldout OUTDIR

Debian's python3-torch and python3-torchvision (CPU), dataset-fashion-mnist
(/usr/share/datasets/fashion-mnist). Seeded; 3000 steps of 32 composites
(FV_SEG_STEPS) take about 25 minutes on two busy cores. Writes (OUTDIR
defaults to this folder):

    fashion_seg.onnx   opset 13, input "image" (N, 3, 64, 64) with a symbolic
                       batch, output "logits" (N, 11, 64, 64): class 0 is the
                       photo, 1 + k is Fashion-MNIST class k
    fashion_seg.txt    PyTorch's FP32 mean IoU and pixel accuracy on the
                       held-out composites

--heldout writes only the held-out composites (made from the Fashion-MNIST
test split with their own seed, the same every run): heldout.u8, per image
64*64*3 RGB bytes then 64*64 class bytes. The C test reads them.

Input: pixel / 255, then (x - 0.5) / 0.25 on every channel.
"""
import gzip
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
DATA = "/usr/share/datasets/fashion-mnist"
PHOTOS = ["astronaut.png", "chelsea.png", "coffee.png", "rocket.jpg"]
SIZE, CLASSES, MEAN, STD = 64, 11, 0.5, 0.25
HELDOUT = 400


def idx(name):
    with gzip.open(os.path.join(DATA, name), "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * dims).reshape(shape)


def photos():
    from torchvision.io import read_image
    return [read_image(os.path.join(REPO, "data", p)).float() for p in PHOTOS]


def composites(n, items, labels, bgs, g):
    """n images (n, 3, 64, 64) uint8 and masks (n, 64, 64) int64."""
    img = torch.empty(n, 3, SIZE, SIZE)
    mask = torch.zeros(n, SIZE, SIZE, dtype=torch.int64)
    for i in range(n):
        p = bgs[int(torch.randint(len(bgs), (1,), generator=g))]
        h, w = p.shape[1], p.shape[2]
        s = int(torch.randint(96, min(h, w) + 1, (1,), generator=g))
        y = int(torch.randint(h - s + 1, (1,), generator=g))
        x = int(torch.randint(w - s + 1, (1,), generator=g))
        crop = p[:, y:y + s, x:x + s].unsqueeze(0)
        img[i] = F.interpolate(crop, size=(SIZE, SIZE), mode="bilinear", align_corners=False,
                               antialias=True)[0]
        for _ in range(int(torch.randint(1, 4, (1,), generator=g))):
            k = int(torch.randint(len(items), (1,), generator=g))
            sz = int(torch.randint(22, 49, (1,), generator=g))
            it = F.interpolate(items[k].float().view(1, 1, 28, 28), size=(sz, sz),
                               mode="bilinear", align_corners=False)[0, 0]
            yy = int(torch.randint(SIZE - sz + 1, (1,), generator=g))
            xx = int(torch.randint(SIZE - sz + 1, (1,), generator=g))
            tint = 0.4 + 0.6 * torch.rand(3, 1, 1, generator=g)
            a = (it / 255.0).clamp(0, 1)
            region = img[i, :, yy:yy + sz, xx:xx + sz]
            img[i, :, yy:yy + sz, xx:xx + sz] = region * (1 - a) + a * 255.0 * tint
            m = mask[i, yy:yy + sz, xx:xx + sz]
            m[it > 40] = 1 + int(labels[k])
    return img.round().clamp(0, 255).to(torch.uint8), mask


def prep(u8):
    return (u8.float() / 255.0 - MEAN) / STD


def heldout(bgs):
    g = torch.Generator().manual_seed(77)
    items = torch.from_numpy(idx("t10k-images-idx3-ubyte.gz").copy())
    labels = torch.from_numpy(idx("t10k-labels-idx1-ubyte.gz").astype(np.int64))
    return composites(HELDOUT, items, labels, bgs, g)


def cbr(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                         nn.ReLU())


class SegNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.e1 = nn.Sequential(cbr(3, 16), cbr(16, 16))
        self.e2 = nn.Sequential(cbr(16, 32), cbr(32, 32))
        self.e3 = nn.Sequential(cbr(32, 64), cbr(64, 64))
        self.u2 = nn.ConvTranspose2d(64, 32, 2, stride=2)
        self.d2 = nn.Sequential(cbr(64, 32), cbr(32, 32))
        self.u1 = nn.ConvTranspose2d(32, 16, 2, stride=2)
        self.d1 = nn.Sequential(cbr(32, 16), cbr(16, 16))
        self.head = nn.Conv2d(16, CLASSES, 1)

    def forward(self, x):
        a = self.e1(x)
        b = self.e2(F.max_pool2d(a, 2))
        c = self.e3(F.max_pool2d(b, 2))
        d = self.d2(torch.cat([self.u2(c), b], 1))
        e = self.d1(torch.cat([self.u1(d), a], 1))
        return self.head(e)


def miou(pred, mask):
    """Mean IoU over the classes present in mask or pred, and pixel accuracy."""
    ious = []
    for k in range(CLASSES):
        inter = ((pred == k) & (mask == k)).sum().item()
        union = ((pred == k) | (mask == k)).sum().item()
        if union:
            ious.append(inter / union)
    return sum(ious) / len(ious), (pred == mask).float().mean().item()


def write_heldout(out, img, mask):
    with open(os.path.join(out, "heldout.u8"), "wb") as f:
        for i in range(img.shape[0]):
            f.write(img[i].permute(1, 2, 0).contiguous().numpy().tobytes())
            f.write(mask[i].to(torch.uint8).numpy().tobytes())


def main():
    args = sys.argv[1:]
    torch.set_num_threads(2)
    bgs = photos()
    if not os.path.isdir(DATA):
        print("SKIP: Fashion-MNIST not found under %s (Debian: dataset-fashion-mnist)" % DATA)
        sys.exit(77)
    if args and args[0] == "--heldout":
        out = args[1]
        os.makedirs(out, exist_ok=True)
        img, mask = heldout(bgs)
        write_heldout(out, img, mask)
        print("wrote %d held-out composites to %s" % (img.shape[0], out))
        return
    out = args[0] if args else HERE
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(2016)
    g = torch.Generator().manual_seed(16)
    items = torch.from_numpy(idx("train-images-idx3-ubyte.gz").copy())
    labels = torch.from_numpy(idx("train-labels-idx1-ubyte.gz").astype(np.int64))
    himg, hmask = heldout(bgs)
    model = SegNet()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    steps, batch = int(os.environ.get("FV_SEG_STEPS", "3000")), 32
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=steps)
    t0 = time.time()
    for step in range(steps):
        model.train()
        img, mask = composites(batch, items, labels, bgs, g)
        opt.zero_grad()
        loss = F.cross_entropy(model(prep(img)), mask)
        loss.backward()
        opt.step()
        sched.step()
        if step % 100 == 99 or step == steps - 1:
            model.eval()
            with torch.no_grad():
                pred = torch.cat([model(prep(himg[i:i + 100])).argmax(1)
                                  for i in range(0, HELDOUT, 100)])
            m, acc = miou(pred, hmask)
            print("step %d: loss %.4f, held-out mIoU %.4f, pixel accuracy %.4f (%.0f s)" %
                  (step + 1, loss.item(), m, acc, time.time() - t0), flush=True)
    model.eval()
    torch.onnx.export(model, prep(himg[:1]), os.path.join(out, "fashion_seg.onnx"),
                      opset_version=13, input_names=["image"], output_names=["logits"],
                      dynamic_axes={"image": {0: "n"}, "logits": {0: "n"}})
    with open(os.path.join(out, "fashion_seg.txt"), "w") as f:
        f.write("pytorch_miou %.4f\n" % m)
        f.write("pytorch_pixel_accuracy %.4f\n" % acc)
        f.write("heldout %d composites of %dx%d, seed 77, Fashion-MNIST test split\n" %
                (HELDOUT, SIZE, SIZE))
        f.write("normalisation mean %.2f std %.2f\n" % (MEAN, STD))
    print("wrote fashion_seg.onnx, held-out mIoU %.4f" % m)


if __name__ == "__main__":
    main()
