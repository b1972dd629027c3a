#!/usr/bin/python3
"""Writes the fuzzers' seed corpora under tests/fuzz/corpus/<target>/ (the
files are committed; rerun this only to change them).

    /usr/bin/python3 tests/fuzz/make_corpus.py

Needs Debian's python3-numpy and python3-opencv (images), python3-torch
(the small ONNX models). fuzz_profile's seed is not made here: it is
fv__profile_save's output for the profile tests/fuzz/test_profile_fuzz.c
builds (a few entries, plan blobs). Nor are the regression seeds, inputs
toolchain/fuzz.sh once kept under tests/fuzz/crashes/ (e.g.
fuzz_image/oom-jpeg-claims-huge-size.jpg): keep them when remaking.

  fuzz_image  data/astronaut.png shrunk to 16x12: PNG in every colour type
              and several bit depths (palette, tRNS, 16-bit, Adam7), JPEG
              baseline, greyscale, progressive, optimized, restart markers
  fuzz_mjpeg  32x24 frames as cameras send them: with and without Huffman
              tables (AVI1), greyscale, restart markers, progressive
  fuzz_uri    one selector byte, then a source or sink URI
  fuzz_cli    one selector byte, then an option value or argument list
  fuzz_onnx   small networks with the operators of the exported models
              (conv, batch norm, ReLU/SiLU/LeakyReLU/sigmoid, pooling,
              residual add, concat, resize, flatten, gemm, reshape) at
              opsets 11, 13 and 17, a few KB each
"""
import os
import struct
import sys
import zlib

import cv2
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus")
DATA = os.path.join(HERE, "..", "..", "data")


def put(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + struct.pack(
        ">I", zlib.crc32(kind + body) & 0xffffffff)


def png(w, h, colour, depth, rows, plte=None, trns=None, interlace=False):
    """rows: h rows of packed samples (bytes), without filter bytes."""
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[colour]
    bpp = max(1, channels * depth // 8)
    if interlace:  # Adam7, whole bytes per pixel only
        raw = b""
        for x0, y0, dx, dy in ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4),
                               (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)):
            for y in range(y0, h, dy):
                px = [rows[y][x * bpp:(x + 1) * bpp] for x in range(x0, w, dx)]
                if px:
                    raw += b"\x00" + b"".join(px)
    else:  # alternate filters: none, sub, up, average, paeth (as a plain copy for 0)
        raw = b""
        for y, r in enumerate(rows):
            ft = y % 2  # none or sub
            if ft == 1:
                r = bytes((r[i] - (r[i - bpp] if i >= bpp else 0)) & 0xff for i in range(len(r)))
            raw += bytes([ft]) + r
    out = b"\x89PNG\r\n\x1a\n"
    out += chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, colour, 0, 0, 1 if interlace else 0))
    if plte is not None:
        out += chunk(b"PLTE", plte)
    if trns is not None:
        out += chunk(b"tRNS", trns)
    out += chunk(b"IDAT", zlib.compress(raw, 9))
    return out + chunk(b"IEND", b"")


def pack_bits(values, depth):
    out, acc, n = bytearray(), 0, 0
    for v in values:
        acc = (acc << depth) | v
        n += depth
        if n == 8:
            out.append(acc)
            acc = n = 0
    if n:
        out.append(acc << (8 - n))
    return bytes(out)


def images():
    src = cv2.imread(os.path.join(DATA, "astronaut.png"), cv2.IMREAD_COLOR)
    bgr = cv2.resize(src, (16, 12), interpolation=cv2.INTER_AREA)
    rgb = bgr[:, :, ::-1]
    grey = cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY)
    h, w = grey.shape
    t = "fuzz_image"
    put(t, "rgb8.png", png(w, h, 2, 8, [rgb[y].tobytes() for y in range(h)]))
    put(t, "rgb8_adam7.png", png(w, h, 2, 8, [rgb[y].tobytes() for y in range(h)], interlace=True))
    put(t, "grey8.png", png(w, h, 0, 8, [grey[y].tobytes() for y in range(h)]))
    for d in (1, 2, 4):
        put(t, "grey%d.png" % d, png(w, h, 0, d, [pack_bits(grey[y] >> (8 - d), d) for y in range(h)]))
    put(t, "grey16.png", png(w, h, 0, 16, [grey[y].astype(">u2").tobytes() * 1 for y in range(h)]))
    put(t, "grey_alpha8.png", png(w, h, 4, 8, [np.dstack([grey, 255 - grey])[y].tobytes()
                                                for y in range(h)]))
    rgba = np.dstack([rgb, grey])
    put(t, "rgba8.png", png(w, h, 6, 8, [rgba[y].tobytes() for y in range(h)]))
    put(t, "rgb16.png", png(w, h, 2, 16, [(rgb[y].astype(">u2") * 257).tobytes() for y in range(h)]))
    put(t, "rgb8_trns.png", png(w, h, 2, 8, [rgb[y].tobytes() for y in range(h)],
                                trns=struct.pack(">HHH", *map(int, rgb[0, 0]))))
    # palette: 16 entries (grey levels tinted), 4-bit indices, tRNS on a few
    idx = (grey >> 4).astype(np.uint8)
    plte = b"".join(bytes([i * 17, i * 15, 255 - i * 17]) for i in range(16))
    put(t, "palette4.png", png(w, h, 3, 4, [pack_bits(idx[y], 4) for y in range(h)], plte=plte,
                               trns=bytes([0, 128, 255])))
    put(t, "palette8.png", png(w, h, 3, 8, [idx[y].tobytes() for y in range(h)], plte=plte))

    def jpg(img, *params):
        ok, buf = cv2.imencode(".jpg", img, list(params))
        assert ok
        return buf.tobytes()

    put(t, "rgb.jpg", jpg(bgr, cv2.IMWRITE_JPEG_QUALITY, 80))
    put(t, "grey.jpg", jpg(grey, cv2.IMWRITE_JPEG_QUALITY, 80))
    put(t, "progressive.jpg", jpg(bgr, cv2.IMWRITE_JPEG_PROGRESSIVE, 1))
    put(t, "optimized.jpg", jpg(bgr, cv2.IMWRITE_JPEG_OPTIMIZE, 1))
    put(t, "restart.jpg", jpg(bgr, cv2.IMWRITE_JPEG_RST_INTERVAL, 1))

    # MJPEG frames: 32x24
    f = cv2.resize(src, (32, 24), interpolation=cv2.INTER_AREA)
    t = "fuzz_mjpeg"
    base = jpg(f, cv2.IMWRITE_JPEG_QUALITY, 75)
    put(t, "frame.jpg", base)
    put(t, "frame_avi1.jpg", strip_dht(base))
    put(t, "frame_grey.jpg", jpg(cv2.cvtColor(f, cv2.COLOR_BGR2GRAY)))
    put(t, "frame_restart.jpg", strip_dht(jpg(f, cv2.IMWRITE_JPEG_RST_INTERVAL, 1)))
    put(t, "frame_optimized.jpg", jpg(f, cv2.IMWRITE_JPEG_OPTIMIZE, 1))
    put(t, "frame_progressive.jpg", jpg(f, cv2.IMWRITE_JPEG_PROGRESSIVE, 1))


def strip_dht(j):
    """The frame without its DHT segments, as AVI1 MJPEG cameras send it."""
    out, i = bytearray(j[:2]), 2
    while i + 4 <= len(j):
        mk = j[i + 1]
        if mk == 0xda:  # SOS: the rest as it is
            out += j[i:]
            break
        n = 2 + (j[i + 2] << 8 | j[i + 3])
        if mk != 0xc4:
            out += j[i:i + n]
        i += n
    return bytes(out)


def uris():
    src = ["v4l2:///dev/video0", "/dev/video2", "csi://0", "gst://videotestsrc ! appsink",
           "file://clip.mp4", "frames_%04d.png", "file://img%d.jpg", "photo.png",
           "test://", "test://?fps=0", "test://?image=a.png&fps=15&frames=10&items=3&fashion=f.gz",
           "test://?frames=1", "x.MKV", "unknown://x"]
    for i, u in enumerate(src):
        put("fuzz_uri", "source%02d" % i, bytes([(i * 2) & 0x7e]) + u.encode())
    sink = ["display://0", "rtp://127.0.0.1:5000", "rtp://[::1]:5004", "null://", "out.mp4",
            "file://edges_%03d.png", "edges.jpg", "file://", "ftp://x"]
    for i, u in enumerate(sink):
        put("fuzz_uri", "sink%02d" % i, bytes([(i * 2 + 1) & 0xff]) + u.encode())


def cli():
    seeds = [(0, "3,3:0,1,0,1,-4,1,0,1,0"), (0, "1,5:1,2,3,2,1"), (0, "5,5:" + ",".join(["1e-3"] * 25)),
             (1, "12.5"), (1, "-1e3"), (1, "nan"), (2, "42"), (2, "-5"), (3, "cuda"), (3, "sobel"),
             (4, "--input\nphoto.png\n--output=edges.png\n--backend"), (5, "-n\n3\n--kernel\n1,1:2")]
    for i, (k, v) in enumerate(seeds):
        put("fuzz_cli", "seed%02d" % i, bytes([k]) + v.encode())


def onnx_models():
    import torch
    import torch.nn as nn

    class Tiny(nn.Module):
        def __init__(self, act):
            super().__init__()
            self.c1 = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), act)
            self.c2 = nn.Conv2d(4, 4, 3, padding=1, groups=2)
            self.pool = nn.MaxPool2d(2)
            self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
            self.fc = nn.Linear(8 * 4 * 4, 3)

        def forward(self, x):
            y = self.c1(x)
            y = torch.relu(y + self.c2(y))
            z = self.pool(y)
            u = torch.cat([self.up(z), y], 1)
            v = nn.functional.adaptive_avg_pool2d(u, 4)
            return torch.sigmoid(self.fc(torch.flatten(v, 1))), u.reshape(1, 8, -1).transpose(1, 2)

    torch.manual_seed(0)
    for name, act, opset in (("tiny_relu_op13", nn.ReLU(), 13), ("tiny_silu_op11", nn.SiLU(), 11),
                             ("tiny_leaky_op17", nn.LeakyReLU(0.1), 17)):
        m = Tiny(act).eval()
        path = os.path.join(OUT, "fuzz_onnx", name + ".onnx")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        torch.onnx.export(m, torch.randn(1, 3, 8, 8), path, opset_version=opset,
                          input_names=["input"], do_constant_folding=True)


if __name__ == "__main__":
    images()
    uris()
    cli()
    if "--no-onnx" not in sys.argv:
        onnx_models()
