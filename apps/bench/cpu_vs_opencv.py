#!/usr/bin/python3
"""fovea's CPU backend against OpenCV: a 3x3 single-channel float32 filter.

Runs `fovea-bench cpu-conv` (its 3x3 C1->K1 F32 conv, zero padding 1) and
cv2.filter2D on the same float32 image in the same run, both single-threaded
(cv2.setNumThreads(1)), each the median of the same number of runs after a
warm-up. Checks first that the outputs agree (fovea-bench reads the input
from and writes its output to raw float32 files): relative L2 error < 1e-5
against filter2D with BORDER_CONSTANT (zero padding, as fovea). Prints a table
with the ratio fovea/OpenCV (lower is better) and writes JSON with --json.

  /usr/bin/python3 apps/bench/cpu_vs_opencv.py [--bench PATH] [--width 1920]
      [--height 1080] [--iters 50] [--warmup 3] [--json FILE]

Exit status: 0 when the outputs agree, 1 when they do not, 2 on usage errors.
Needs numpy and OpenCV's Python bindings (Debian: python3-opencv).
"""
import argparse
import glob
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

import cv2
import numpy as np

REL_TOL = 1e-5


def find_bench(given):
    if given:
        return given
    env = os.environ.get("FOVEA_BENCH")
    if env:
        return env
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    found = glob.glob(os.path.join(root, "build*", "apps", "bench", "fovea-bench"))
    if found:
        return max(found, key=os.path.getmtime)  # the most recent build
    return shutil.which("fovea-bench")


def median_ms(fn, iters, warmup):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    mid = len(times) // 2
    med = times[mid] if len(times) % 2 else 0.5 * (times[mid - 1] + times[mid])
    return med, times[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench", help="fovea-bench executable (default: newest build*/ or PATH)")
    ap.add_argument("--width", type=int, default=1920)
    ap.add_argument("--height", type=int, default=1080)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    bench = find_bench(args.bench)
    if not bench or not os.access(bench, os.X_OK):
        print("cpu_vs_opencv: fovea-bench not found (build it, or pass --bench)", file=sys.stderr)
        return 2

    cv2.setNumThreads(1)
    h, w = args.height, args.width
    img = np.random.default_rng(1).random((h, w), dtype=np.float32) * 2.0 - 1.0

    with tempfile.TemporaryDirectory() as tmp:
        raw_in, raw_out = os.path.join(tmp, "in.f32"), os.path.join(tmp, "out.f32")
        res_json = os.path.join(tmp, "fovea.json")
        img.tofile(raw_in)
        cmd = [bench, "cpu-conv", "--width", str(w), "--height", str(h), "--iters",
               str(args.iters), "--warmup", str(args.warmup), "--json", res_json,
               "--input-raw", raw_in, "--output-raw", raw_out]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            print(run.stdout + run.stderr, file=sys.stderr)
            print("cpu_vs_opencv: fovea-bench failed", file=sys.stderr)
            return 1
        with open(res_json) as f:
            fovea = json.load(f)
        ours = np.fromfile(raw_out, dtype=np.float32).reshape(h, w)

    kernel = np.array(fovea["kernel"], dtype=np.float32).reshape(3, 3)
    # filter2D correlates (no flip) around the centre anchor, as fovea's conv.
    ref = cv2.filter2D(img, -1, kernel, borderType=cv2.BORDER_CONSTANT)
    rel = float(np.linalg.norm((ours - ref).astype(np.float64)) /
                np.linalg.norm(ref.astype(np.float64)))
    agree = bool(np.isfinite(rel) and rel < REL_TOL)

    cv_const = median_ms(lambda: cv2.filter2D(img, -1, kernel, borderType=cv2.BORDER_CONSTANT),
                         args.iters, args.warmup)
    cv_default = median_ms(lambda: cv2.filter2D(img, -1, kernel), args.iters, args.warmup)
    f1 = next(r for r in fovea["results"] if r["c"] == 1 and r["k"] == 1)
    rows = [
        ("fovea CPU conv2d 3x3 C1->K1 F32 (zero pad)", f1["median_ms"], f1["min_ms"]),
        ("cv2.filter2D BORDER_CONSTANT", cv_const[0], cv_const[1]),
        ("cv2.filter2D BORDER_DEFAULT (reflect 101)", cv_default[0], cv_default[1]),
    ]
    ratio_const = f1["median_ms"] / cv_const[0]
    ratio_default = f1["median_ms"] / cv_default[0]

    print(f"3x3 single-channel float32 filter, {w}x{h}, 1 thread, median of {args.iters} runs "
          f"after {args.warmup} warm-up")
    print(f"CPU: {fovea['device']}; OpenCV {cv2.__version__}, numpy {np.__version__}")
    print(f"{'':46} {'median ms':>10} {'min ms':>10} {'fovea/this':>11}")
    for name, med, mn in rows:
        print(f"{name:46} {med:10.3f} {mn:10.3f} {f1['median_ms'] / med:11.2f}")
    others = [r for r in fovea["results"] if r is not f1]
    for r in others:
        print(f"(fovea {r['name']} {r['dtype']}: {r['median_ms']:.3f} ms)")
    print(f"output vs filter2D BORDER_CONSTANT: rel L2 err {rel:.3g} "
          f"({'OK' if agree else 'MISMATCH'}, limit {REL_TOL:g})")
    print(f"ratio fovea/OpenCV: {ratio_const:.2f} (BORDER_CONSTANT), "
          f"{ratio_default:.2f} (BORDER_DEFAULT); target <= 2.0")

    if args.json:
        out = {
            "bench": "cpu_vs_opencv",
            "width": w, "height": h, "iters": args.iters, "warmup": args.warmup,
            "threads": 1, "cpu": fovea["device"], "machine": platform.machine(),
            "opencv_version": cv2.__version__, "fovea_version": fovea.get("fovea_version"),
            "fovea_ms": f1["median_ms"], "fovea_min_ms": f1["min_ms"],
            "opencv_constant_ms": cv_const[0], "opencv_constant_min_ms": cv_const[1],
            "opencv_default_ms": cv_default[0], "opencv_default_min_ms": cv_default[1],
            "ratio_constant": ratio_const, "ratio_default": ratio_default,
            "rel_l2_err": rel, "outputs_agree": agree, "target_ratio": 2.0,
            "fovea_results": fovea["results"],
        }
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
            f.write("\n")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
