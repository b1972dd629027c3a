#!/usr/bin/env python3
"""Bar chart (PNG) of the ratios conv_vs_pytorch.py measured, per shape:
fovea autotuned / PyTorch, fovea autotuned over cuDNN's engines only /
PyTorch, fovea heuristic / PyTorch, legacy cuDNN Find / PyTorch, and fused (conv + bias + ReLU) / bare autotuned conv; lower is
better, the line at 1 is parity.

  python3 apps/bench/plot_ratios.py RESULTS.json OUT.png [--backend auto|matplotlib|cv2|png]

Draws with matplotlib when it is there, else with OpenCV, else writes the
PNG itself (zlib + struct: bars, the parity line and shape numbers, no
other text)."""
import argparse
import json
import struct
import sys
import zlib

SERIES = [("auto_vs_torch", "fovea autotuned / PyTorch", (31, 119, 180)),
          ("cudnn_vs_torch", "fovea cuDNN engines only / PyTorch", (44, 160, 44)),
          ("heur_vs_torch", "fovea heuristic / PyTorch", (174, 199, 232)),
          ("legacy_vs_torch", "legacy cuDNN Find / PyTorch", (127, 127, 127)),
          ("fused_vs_bare", "fovea fused / bare (bias+ReLU cost)", (255, 127, 14))]


def _data(res):
    rows = res["rows"]
    labels = [f"{r['index']}: {r['name']}" for r in rows]
    vals = [[r.get(k) for r in rows] for k, _, _ in SERIES]
    return rows, labels, vals


def _title(res):
    t = res.get("targets", {}).get("auto_vs_torch_geomean", {})
    g = t.get("value")
    gm = f", geomean autotuned/PyTorch {g:.3f}" if g else ""
    return f"fovea vs PyTorch, FP16 NHWC convolutions on {res.get('device', '?')}{gm}"


def plot_matplotlib(res, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows, labels, vals = _data(res)
    n, m = len(rows), len(SERIES)
    width = 0.8 / m
    fig, ax = plt.subplots(figsize=(max(10, 0.9 * n + 3), 6.5))
    for j, (_, name, rgb) in enumerate(SERIES):
        xs = [i + (j - (m - 1) / 2) * width for i in range(n)]
        ys = [v if v is not None else 0 for v in vals[j]]
        ax.bar(xs, ys, width, label=name, color="#%02x%02x%02x" % rgb)
        for x, v in zip(xs, vals[j]):
            if v is None:
                ax.text(x, 0.02, "n/a", rotation=90, ha="center", va="bottom", fontsize=6)
    ax.axhline(1.0, color="black", linewidth=1)
    ax.axhline(0.95, color="green", linewidth=0.8, linestyle="--", label="geomean target 0.95")
    ax.set_xticks(range(n))
    ax.set_xticklabels(labels, rotation=40, ha="right", fontsize=7)
    ax.set_yscale("log")  # the legacy API can be 16x off: keep the rest readable
    ax.set_ylabel("time ratio, log scale (lower is better)")
    ax.set_title(_title(res), fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _layout(vals, w, h, top, bottom, left, right):
    ymax = max([v for s in vals for v in s if v is not None] + [1.1]) * 1.08
    n = len(vals[0])
    group = (w - left - right) / max(n, 1)
    bar = group * 0.8 / len(vals)

    def y_of(v):
        return int(round(h - bottom - (h - top - bottom) * min(v, ymax) / ymax))
    return ymax, group, bar, y_of


def plot_cv2(res, path):
    import cv2
    import numpy as np
    rows, labels, vals = _data(res)
    w, h, top, bottom, left, right = 1400, 760, 60, 60, 60, 420
    img = np.full((h, w, 3), 255, np.uint8)
    ymax, group, bar, y_of = _layout(vals, w, h, top, bottom, left, right)
    for t in range(0, int(ymax * 10) + 1, 5):  # grid every 0.5
        y = y_of(t / 10)
        cv2.line(img, (left, y), (w - right, y), (225, 225, 225), 1)
        cv2.putText(img, f"{t / 10:.1f}", (8, y + 4), cv2.FONT_HERSHEY_SIMPLEX, 0.4, (0, 0, 0), 1)
    for i in range(len(rows)):
        for j, (_, _, rgb) in enumerate(SERIES):
            v = vals[j][i]
            x0 = int(left + i * group + group * 0.1 + j * bar)
            if v is None:
                cv2.putText(img, "x", (x0, h - bottom - 4), cv2.FONT_HERSHEY_SIMPLEX, 0.35,
                            (0, 0, 255), 1)
                continue
            cv2.rectangle(img, (x0, y_of(v)), (int(x0 + bar) - 1, h - bottom), rgb[::-1], -1)
        cv2.putText(img, str(rows[i]["index"]), (int(left + i * group + group * 0.35), h - bottom + 18),
                    cv2.FONT_HERSHEY_SIMPLEX, 0.45, (0, 0, 0), 1)
    cv2.line(img, (left, y_of(1.0)), (w - right, y_of(1.0)), (0, 0, 0), 2)
    cv2.line(img, (left, y_of(0.95)), (w - right, y_of(0.95)), (0, 150, 0), 1)
    cv2.putText(img, _title(res)[:110], (left, 30), cv2.FONT_HERSHEY_SIMPLEX, 0.55, (0, 0, 0), 1)
    cv2.putText(img, "time ratio, lower is better; black line 1.0, green 0.95", (left, 50),
                cv2.FONT_HERSHEY_SIMPLEX, 0.42, (60, 60, 60), 1)
    x = w - right + 15
    for j, (_, name, rgb) in enumerate(SERIES):
        cv2.rectangle(img, (x, top + 18 * j), (x + 12, top + 18 * j + 12), rgb[::-1], -1)
        cv2.putText(img, name, (x + 18, top + 18 * j + 11), cv2.FONT_HERSHEY_SIMPLEX, 0.42,
                    (0, 0, 0), 1)
    for i, lab in enumerate(labels):
        cv2.putText(img, lab[:52], (x, top + 18 * len(SERIES) + 20 + 17 * i),
                    cv2.FONT_HERSHEY_SIMPLEX, 0.4, (0, 0, 0), 1)
    if not cv2.imwrite(path, img):
        raise OSError(f"cv2.imwrite({path}) failed")


# ---- no library at all: a PNG by hand ------------------------------------------
_DIGITS = ["111101101101111", "010110010010111", "111001111100111", "111001111001111",
           "101101111001001", "111100111001111", "111100111101111", "111001001001001",
           "111101111101111", "111101111001111"]  # 3x5 glyphs


def _png(path, w, h, px):
    raw = b"".join(b"\x00" + bytes(px[y]) for y in range(h))

    def chunk(tag, data):
        return (struct.pack(">I", len(data)) + tag + data +
                struct.pack(">I", zlib.crc32(tag + data) & 0xffffffff))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def plot_png(res, path):
    rows, _, vals = _data(res)
    w, h, top, bottom, left, right = 1000, 520, 20, 40, 20, 20
    px = [bytearray(b"\xff" * (3 * w)) for _ in range(h)]

    def rect(x0, y0, x1, y1, rgb):
        for y in range(max(0, y0), min(h, y1)):
            for x in range(max(0, x0), min(w, x1)):
                px[y][3 * x:3 * x + 3] = bytes(rgb)
    ymax, group, bar, y_of = _layout(vals, w, h, top, bottom, left, right)
    for i in range(len(rows)):
        for j, (_, _, rgb) in enumerate(SERIES):
            v = vals[j][i]
            x0 = int(left + i * group + group * 0.1 + j * bar)
            if v is not None:
                rect(x0, y_of(v), int(x0 + bar) - 1, h - bottom, rgb)
        for d, ch in enumerate(str(rows[i]["index"])):  # the shape's number, 3x scaled
            g = _DIGITS[int(ch)]
            x0 = int(left + i * group + group * 0.4) + d * 12
            for k, on in enumerate(g):
                if on == "1":
                    rect(x0 + 3 * (k % 3), h - bottom + 8 + 3 * (k // 3),
                         x0 + 3 * (k % 3) + 3, h - bottom + 11 + 3 * (k // 3), (0, 0, 0))
    rect(left, y_of(1.0) - 1, w - right, y_of(1.0) + 1, (0, 0, 0))
    rect(left, y_of(0.95), w - right, y_of(0.95) + 1, (0, 150, 0))
    _png(path, w, h, px)


def plot(res, path, backend="auto"):
    """Writes the chart; returns which backend drew it."""
    order = ["matplotlib", "cv2", "png"] if backend == "auto" else [backend]
    fns = {"matplotlib": plot_matplotlib, "cv2": plot_cv2, "png": plot_png}
    last = None
    for b in order:
        try:
            fns[b](res, path)
            return b
        except ImportError as e:
            last = e
    raise RuntimeError(f"no way to draw the chart: {last}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results", help="conv_vs_pytorch.py --json output")
    ap.add_argument("png")
    ap.add_argument("--backend", choices=["auto", "matplotlib", "cv2", "png"], default="auto")
    args = ap.parse_args()
    with open(args.results) as f:
        res = json.load(f)
    print(f"wrote {args.png} ({plot(res, args.png, args.backend)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
