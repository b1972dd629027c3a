#!/usr/bin/env python3
"""fovea-infer with frames in device memory (uploads and downloads) against
frames read in place (--memory zero-copy), alternating, on one GPU.

Cases (--backend cuda, --json; 1920x1080 test:// frames):
  latency   the default Fashion-MNIST classifier on a camera paced at 30 fps,
            --low-latency --cuda-graph, 10 s: latency p50 / p99, GPU time a
            tick, upload time;
  segment   the segmentation net (--segmenter) on 1 and on 4 unpaced
            cameras for 4 s: the slowest camera's fps.
Each case runs --rounds times for each memory, alternating.

  python3 apps/bench/infer_memory.py --infer build-gpu/apps/fovea-infer/fovea-infer
      [--segmenter apps/fovea-infer/models/fashion_seg/fashion_seg.onnx]
      [--rounds 2] [--json FILE]

Exit status: 0 when every run succeeded, 1 otherwise, 2 on usage errors.
"""
import argparse
import json
import subprocess
import sys


def run(app, args):
    p = subprocess.run([app, "--backend", "cuda", "--json", "--quiet"] + args,
                       capture_output=True, text=True, timeout=120)
    s = [json.loads(l) for l in p.stdout.splitlines() if l.startswith('{"type":"summary"')]
    if p.returncode or not s:
        print("FAILED: %s (exit %d)\n%s" % (" ".join(args), p.returncode, p.stderr[-2000:]))
        return None
    return s[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--infer", required=True, help="the fovea-infer program")
    ap.add_argument("--segmenter", default="apps/fovea-infer/models/fashion_seg/fashion_seg.onnx")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", help="write the rows here")
    a = ap.parse_args()
    size = ["--input-width", "1920", "--input-height", "1080"]
    rows, ok = [], True
    for rnd in range(a.rounds):
        for mem in ("device", "zero-copy"):
            s = run(a.infer, ["--memory", mem, "--low-latency", "--cuda-graph", "--input",
                              "test://?fps=30", "--duration", "10"] + size + ["null://"])
            ok &= s is not None
            if s:
                r = ("latency30", rnd, mem, s["memory"], s["latency_ms_p50"],
                     s["latency_ms_p99"], s["latency_ms_p99"] / s["latency_ms_p50"],
                     s["gpu_ms_p50"], s["gpu_ms_p99"], s["upload_ms"], s["pre_ms"])
                rows.append(r)
                print("%s r%d %-9s (%s) p50 %.3f p99 %.3f p99/p50 %.2f gpu %.3f/%.3f up %.3f "
                      "pre %.3f" % r, flush=True)
    for rnd in range(a.rounds):
        for mem in ("device", "zero-copy"):
            for n in (1, 4):
                args = ["--memory", mem, "--model", a.segmenter, "--mean", "0.5", "--std",
                        "0.25", "--cuda-graph", "--duration", "4"] + size
                args += ["--input", "test://?fps=0"] * n + ["null://"] * n
                s = run(a.infer, args)
                ok &= s is not None
                if s:
                    fps = min(c["fps"] for c in s["cameras"])
                    r = ("segment", rnd, mem, n, fps, s["latency_ms_p50"], s["latency_ms_p99"])
                    rows.append(r)
                    print("%s r%d %-9s cams %d slowest fps %.0f p50 %.3f p99 %.3f" % r,
                          flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
