#!/usr/bin/python3
"""Golden references for fv_filter, made by OpenCV.

    /usr/bin/python3 tests/golden/generate.py             # check ref/ against a fresh run
    /usr/bin/python3 tests/golden/generate.py --generate  # remake ref/ (PNG files + cases.txt)

For every bundled image (data/astronaut.png, chelsea.png, coffee.png,
rocket.jpg) a crop of CROP_W x CROP_H pixels at the image's centre
(x0 = (W - CROP_W) // 2, y0 = (H - CROP_H) // 2) goes through the Laplacian
and the Sobel magnitude, grey and colour, with gain 1, exactly as
fovea/filter.h defines them but in float32 without FP16 rounding:

    img = cv2.cvtColor(cv2.imread(path, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
    x   = img[y0:y0+CROP_H, x0:x0+CROP_W].astype(np.float32) / 255
    r   = cv2.filter2D(x, cv2.CV_32F, kernel, anchor=(-1, -1), delta=0,
                       borderType=cv2.BORDER_CONSTANT)   # per channel; zeros outside
    grey:   r = r.sum(axis=2)                             # the kernel on R, G, B summed
    Laplacian: m = np.abs(r)            kernel [[1,1,1],[1,-8,1],[1,1,1]]
    Sobel:     m = np.sqrt(gx*gx + gy*gy)   gx [[-1,0,1],[-2,0,2],[-1,0,1]], gy = gx.T
    byte = np.clip(np.floor(m * 255 * gain + 0.5), 0, 255)   # fovea's unpack rule

Outputs: ref/<image>_<filter>_<gray|color>.png (grey PNG, or RGB PNG) and
ref/cases.txt, one line per case, read by test_golden.c:
    <image file> <x0> <y0> <w> <h> <laplacian|sobel> <gray|color> <gain> <ref png>
The crop keeps the references small (a few hundred KB in all); the crop's
own edges are the frame's border, so the zero-padding rule is checked too.
"""
import os
import sys

import cv2
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "data")
REF = os.path.join(HERE, "ref")
IMAGES = ["astronaut.png", "chelsea.png", "coffee.png", "rocket.jpg"]
CROP_W, CROP_H = 128, 96
GAIN = 1.0

LAPLACIAN = np.array([[1, 1, 1], [1, -8, 1], [1, 1, 1]], np.float32)
SOBEL_X = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], np.float32)


def conv(x, k):
    return cv2.filter2D(x, cv2.CV_32F, k, anchor=(-1, -1), delta=0,
                        borderType=cv2.BORDER_CONSTANT)


def run(x, filt, out):
    if filt == "laplacian":
        r = conv(x, LAPLACIAN)
        if out == "gray":
            r = r.sum(axis=2, dtype=np.float32)
        m = np.abs(r)
    else:
        gx, gy = conv(x, SOBEL_X), conv(x, np.ascontiguousarray(SOBEL_X.T))
        if out == "gray":
            gx, gy = gx.sum(axis=2, dtype=np.float32), gy.sum(axis=2, dtype=np.float32)
        m = np.sqrt(gx * gx + gy * gy)
    return np.clip(np.floor(m * np.float32(255 * GAIN) + np.float32(0.5)), 0, 255).astype(np.uint8)


def cases():
    for name in IMAGES:
        img = cv2.imread(os.path.join(DATA, name), cv2.IMREAD_COLOR)
        if img is None:
            sys.exit("cannot read " + name)
        img = cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
        h, w = img.shape[:2]
        x0, y0 = (w - CROP_W) // 2, (h - CROP_H) // 2
        x = img[y0:y0 + CROP_H, x0:x0 + CROP_W].astype(np.float32) / np.float32(255)
        for filt in ("laplacian", "sobel"):
            for out in ("gray", "color"):
                ref = "%s_%s_%s.png" % (os.path.splitext(name)[0], filt, out)
                line = "%s %d %d %d %d %s %s %g %s" % (name, x0, y0, CROP_W, CROP_H, filt, out,
                                                       GAIN, ref)
                yield line, ref, run(x, filt, out)


def to_file(b):
    return b if b.ndim == 2 else cv2.cvtColor(b, cv2.COLOR_RGB2BGR)


def main():
    generate = "--generate" in sys.argv[1:]
    lines, bad = [], 0
    for line, ref, b in cases():
        lines.append(line)
        path = os.path.join(REF, ref)
        if generate:
            os.makedirs(REF, exist_ok=True)
            cv2.imwrite(path, to_file(b), [cv2.IMWRITE_PNG_COMPRESSION, 9])
            continue
        old = cv2.imread(path, cv2.IMREAD_UNCHANGED)
        if old is None or old.shape != to_file(b).shape or (old != to_file(b)).any():
            print("differs: " + ref)
            bad += 1
    text = "\n".join(lines) + "\n"
    cases_path = os.path.join(REF, "cases.txt")
    if generate:
        with open(cases_path, "w") as f:
            f.write(text)
        total = sum(os.path.getsize(os.path.join(REF, n)) for n in os.listdir(REF))
        print("wrote %d references to %s (%d bytes)" % (len(lines), REF, total))
        return 0
    if not os.path.exists(cases_path) or open(cases_path).read() != text:
        print("differs: cases.txt")
        bad += 1
    print("%d of %d references %s" % (len(lines) - bad, len(lines), "match" if not bad else "match; run with --generate to remake"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
