#!/usr/bin/env python3
"""Compares fovea-bench JSON files of two builds case by case (an A/B).

Usage: ab_compare.py --base B1.json [B2.json ...] --new N1.json [N2.json ...]
                     [--json OUT.json]

Each build's time for a case is the best of its runs (the runs alternate
with the other build's, see toolchain/ab-bench.sh); its spread is the
largest over the smallest of its runs. A ratio new/base closer to 1 than
the larger spread of the two builds is marked as noise ("~"). Knows
`fovea-bench filter` (rows: size, kind, input, output -> ms),
`fovea-bench conv` (shapes x engines: name, engine -> median_ms) and
`fovea-bench cpu-conv` (results: name -> median_ms). Prints a
table and the geometric mean of the ratios; exit status 0, or 2 when the
files cannot be compared (unknown format, different benches, no case in
common).
"""
import argparse
import json
import math
import sys


def cases(doc, path):
    """{case tuple: ms} of one fovea-bench JSON document."""
    out = {}
    if isinstance(doc.get("rows"), list) and doc["rows"] and "ms" in doc["rows"][0]:
        for r in doc["rows"]:
            if r.get("ms") is not None:
                out[(r["size"], r["kind"], r["input"], r["output"])] = float(r["ms"])
        return "filter", out
    if isinstance(doc.get("shapes"), list):
        for s in doc["shapes"]:
            for eng, v in s.items():
                if isinstance(v, dict) and v.get("ran") and v.get("ok") and v.get("median_ms"):
                    out[(s["name"], eng)] = float(v["median_ms"])
        return "conv", out
    if isinstance(doc.get("results"), list) and doc["results"] and "median_ms" in doc["results"][0]:
        for r in doc["results"]:
            out[(r["name"],)] = float(r["median_ms"])
        return doc.get("bench", "results"), out
    raise ValueError(f"{path}: no fovea-bench filter rows, conv shapes or cpu-conv results")


def load(paths):
    kind, runs = None, []
    for p in paths:
        with open(p) as f:
            k, c = cases(json.load(f), p)
        if kind and k != kind:
            raise ValueError(f"{p}: a {k} bench among {kind} benches")
        kind = k
        runs.append(c)
    return kind, runs


def best_and_spread(runs, key):
    v = [r[key] for r in runs if key in r]
    return min(v), max(v) / min(v)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", nargs="+", required=True, help="the base build's JSON files")
    ap.add_argument("--new", nargs="+", required=True, help="the new build's JSON files")
    ap.add_argument("--json", help="write the comparison here")
    a = ap.parse_args(argv)
    try:
        kb, base = load(a.base)
        kn, new = load(a.new)
        if kb != kn:
            raise ValueError(f"base is a {kb} bench, new a {kn} bench")
    except (OSError, ValueError, KeyError, json.JSONDecodeError) as e:
        print(f"ab_compare: {e}", file=sys.stderr)
        return 2
    keys = [k for k in base[0] if all(k in r for r in base + new)]
    if not keys:
        print("ab_compare: no case in every file", file=sys.stderr)
        return 2
    rows, logs = [], []
    width = max(len(" ".join(k)) for k in keys)
    print(f"{'case':{width}s} {'base ms':>9s} {'new ms':>9s} {'new/base':>8s} {'spread':>7s}")
    for k in keys:
        b, sb = best_and_spread(base, k)
        n, sn = best_and_spread(new, k)
        ratio, spread = n / b, max(sb, sn)
        noise = abs(math.log(ratio)) < math.log(spread) if spread > 1 else False
        logs.append(math.log(ratio))
        rows.append({"case": list(k), "base_ms": b, "new_ms": n, "ratio": ratio,
                     "spread": spread, "noise": noise})
        print(f"{' '.join(k):{width}s} {b:9.4f} {n:9.4f} {ratio:8.3f} {spread:7.3f}"
              f"{'  ~' if noise else ''}")
    gm = math.exp(sum(logs) / len(logs))
    print(f"{len(keys)} cases ({kb}), runs: base {len(base)}, new {len(new)}; "
          f"geometric mean new/base {gm:.3f}; ~: within the builds' spread")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"bench": kb, "geomean": gm, "cases": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
