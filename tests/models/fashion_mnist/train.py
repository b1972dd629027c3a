#!/usr/bin/python3
"""Trains the small CNN that test_onnx_fashion_mnist runs through fovea.

    /usr/bin/python3 tests/models/fashion_mnist/train.py [OUTDIR]

Debian's python3-torch (CPU) and dataset-fashion-mnist (idx files under
/usr/share/datasets/fashion-mnist). Seeded; 3 epochs take a few minutes on
two cores. Writes (OUTDIR defaults to this folder):

    fashion_mnist.onnx   the model, opset 13, input "image" (N, 1, 28, 28)
                         with a symbolic batch, output "logits" (N, 10);
                         BatchNormalization and Dropout nodes kept
                         (TrainingMode.PRESERVE on the eval model)
    fashion_mnist.txt    PyTorch's FP32 accuracy on the 10 000 test images

Input: pixel / 255, then (x - 0.2860) / 0.3530 (the training set's mean and
std), as the C test does. The committed model is this script's output.
"""
import gzip
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn

DATA = "/usr/share/datasets/fashion-mnist"
MEAN, STD = 0.2860, 0.3530


def idx(name):
    with gzip.open(os.path.join(DATA, name), "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * dims).reshape(shape)


def prep(images):
    x = torch.from_numpy(images.astype(np.float32) / 255.0)
    return ((x - MEAN) / STD).unsqueeze(1)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 48, 3, padding=1), nn.ReLU())
        self.classifier = nn.Sequential(nn.Flatten(), nn.Dropout(0.25), nn.Linear(48 * 7 * 7, 64),
                                        nn.ReLU(), nn.Linear(64, 10))

    def forward(self, x):
        return self.classifier(self.features(x))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    torch.manual_seed(2024)
    torch.set_num_threads(2)
    xtr, ytr = prep(idx("train-images-idx3-ubyte.gz")), torch.from_numpy(
        idx("train-labels-idx1-ubyte.gz").astype(np.int64))
    xte, yte = prep(idx("t10k-images-idx3-ubyte.gz")), torch.from_numpy(
        idx("t10k-labels-idx1-ubyte.gz").astype(np.int64))
    model = Net()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    t0 = time.time()
    for epoch in range(3):
        model.train()
        perm = torch.randperm(len(xtr))
        for i in range(0, len(xtr), 128):
            j = perm[i:i + 128]
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(xtr[j]), ytr[j])
            loss.backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            pred = torch.cat([model(xte[i:i + 500]).argmax(1) for i in range(0, len(xte), 500)])
        acc = (pred == yte).float().mean().item()
        print("epoch %d: loss %.4f, test accuracy %.4f (%.0f s)" % (epoch, loss.item(), acc,
                                                                     time.time() - t0))
    torch.onnx.export(model, xte[:1], os.path.join(out, "fashion_mnist.onnx"), opset_version=13,
                      training=torch.onnx.TrainingMode.PRESERVE, input_names=["image"],
                      output_names=["logits"], dynamic_axes={"image": {0: "n"}, "logits": {0: "n"}})
    with open(os.path.join(out, "fashion_mnist.txt"), "w") as f:
        f.write("pytorch_accuracy %.4f\n" % acc)
        f.write("correct %d of %d\n" % (int((pred == yte).sum()), len(yte)))
        f.write("normalisation mean %.4f std %.4f\n" % (MEAN, STD))
    print("wrote fashion_mnist.onnx, accuracy %.4f" % acc)


if __name__ == "__main__":
    main()
