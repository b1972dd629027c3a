#!/usr/bin/env python3
"""fovea's tensor-core convolutions against PyTorch, on one GPU, in one run.

Runs `fovea-bench conv --json` (fovea heuristic, fovea autotuned, fovea
autotuned over cuDNN's engines only (FV_CONV2D_NO_DIRECT: without fovea's
own direct kernel), fovea autotuned + bias + ReLU, raw legacy cuDNN best of
Find; every output checked against an FP32 reference first), then, in this process, PyTorch's
F.conv2d on the same shapes: channels_last FP16 tensors, bias None,
torch.backends.cudnn.benchmark = True, timed the same way (CUDA events
around each call after warm-up, median of the same number of calls, the
same L2 treatment: scrubbed before each call, or rotating buffers). PyTorch's
output is checked too (against its own FP32 conv with TF32 off).

Prints the combined table with PASS/MISS against the targets:
  fovea autotuned / PyTorch <= 1.00 on every shape, geometric mean <= 0.95
  fused conv + bias + ReLU <= 1.05 x the bare autotuned conv (the two ops
  timed call for call, alternating, so that clock drift between separate
  timing runs does not land in the ratio)
  heuristic / autotuned, geometric mean <= 1.2
  warm profile (--profile): ops made from it chose nothing ("profile"),
  first forward <= 1.10 x the hundredth, as medians over --profile-repeats
  creations of each op (the worst creation is reported too); the hundredth
  is taken as the slower of the 100th call and the control call that
  fovea-bench makes after letting the GPU idle as long as the creation did
  (an idle GPU runs any next kernel slower; that is not lazy work), and the
  plain first / 100th is reported beside it; measured in
  fovea-bench's process after the benchmark, and again in a fresh process
  (--profile-only), where the first creation of each op (lazy module
  loading) is also reported on its own
and, for information only, the cuDNN-only variant / PyTorch (per shape and
geometric mean). Writes JSON (--json) and a PNG bar chart of the ratios (--png, plot_ratios.py).

Both must use the same cuDNN: build fovea against PyTorch's own cuDNN wheel
(run_conv_bench.sh does). This prints the version and the library files each
side loaded and warns loudly when they differ.

  python3 apps/bench/conv_vs_pytorch.py [--bench PATH] [--iters 100]
      [--warmup 10] [--shapes all] [--cache flush|rotate] [--profile PATH]
      [--profile-repeats 5] [--json FILE] [--png FILE] [--fovea-json FILE]

Exit status: 0 when everything ran and was checked (targets may be missed),
1 when a run or a check failed, 2 on usage errors.
"""
import argparse
import json
import math
import os
import sys
import tempfile
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_common import median, require_bench, run_child, write_json  # noqa: E402

TOL = 2e-3
TARGETS = {"auto_vs_torch_each": 1.00, "auto_vs_torch_geomean": 0.95, "fused_vs_bare": 1.05,
           "heur_vs_auto_geomean": 1.2, "profile_first_vs_100th": 1.10}


def geomean(xs):
    xs = [x for x in xs if x is not None and x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def mapped_cudnn():
    """Every libcudnn* file mapped into this process."""
    paths = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                i = line.find("/")
                if i >= 0 and "libcudnn" in line[i:]:
                    p = line[i:].strip()
                    if p not in paths:
                        paths.append(p)
    except OSError:
        pass
    return paths


# ---- PyTorch ------------------------------------------------------------------
def torch_shape(torch, F, s, sets, iters, warmup, flush_bytes, gen, dev="cuda"):
    """Times F.conv2d on shape s (a fovea JSON row); checks it first."""
    n, c, h, w, k, r, q = s["n"], s["c"], s["h"], s["w"], s["k"], s["r"], s["s"]
    stride, pad = s["stride"], s["pad"]

    def rand(*shape, lo=-1.0, hi=1.0):
        x = torch.rand(*shape, generator=gen, device=dev) * (hi - lo) + lo
        x = x.half()
        return torch.where(x == 0, torch.full_like(x, 0.5 * hi), x)  # never zero

    a = math.sqrt(3.0 / (c * r * q))
    xs = [rand(n, c, h, w).contiguous(memory_format=torch.channels_last) for _ in range(sets)]
    wt = rand(k, c, r, q, lo=-a, hi=a).contiguous(memory_format=torch.channels_last)
    flush = torch.empty(flush_bytes, dtype=torch.uint8, device=dev) if flush_bytes else None

    def call(i):
        return F.conv2d(xs[i % sets], wt, None, stride, pad)

    # check: FP16 output against an FP32 conv of the same (FP16) values, TF32 off
    tf32 = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    ref = F.conv2d(xs[0].float(), wt.float(), None, stride, pad)
    torch.backends.cudnn.allow_tf32 = tf32
    y = call(0)
    if not y.is_contiguous(memory_format=torch.channels_last):
        print(f"  warning: PyTorch output for {s['name']} is not channels_last")
    err = (torch.linalg.vector_norm((y.float() - ref).double()) /
           torch.linalg.vector_norm(ref.double())).item()
    del ref, y
    res = {"rel_err": err if math.isfinite(err) else None, "ok": bool(err <= TOL),
           "sets": sets}
    if not res["ok"]:
        res["why"] = f"relative L2 error {err:.3g} > {TOL:g}: not timed"
        return res
    for i in range(warmup):  # the first call runs cudnn.benchmark's search
        if flush is not None:
            flush.zero_()
        call(i)
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
          for _ in range(iters)]
    for i in range(iters):
        if flush is not None:
            flush.zero_()
        ev[i][0].record()
        call(i)
        ev[i][1].record()
    if dev == "cuda":
        torch.cuda.synchronize()
    t = [a.elapsed_time(b) for a, b in ev]
    res.update(median_ms=median(t), min_ms=min(t), mean_ms=sum(t) / len(t))
    return res


def run_torch(fovea, shapes_ok):
    import torch
    import torch.nn.functional as F
    torch.backends.cudnn.benchmark = True
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1)
    flush_bytes = fovea.get("flush_bytes", 0) if fovea.get("cache_mode") == "flush" else 0
    out = {}
    with torch.inference_mode():
        for s in fovea["shapes"]:
            if not shapes_ok(s):
                continue
            try:
                out[s["name"]] = torch_shape(torch, F, s, s.get("sets", 1), fovea["iters"],
                                             fovea["warmup"], flush_bytes, gen)
            except Exception as e:  # an unsupported shape, out of memory...
                traceback.print_exc()
                out[s["name"]] = {"ok": False, "why": f"PyTorch failed: {e}"}
            torch.cuda.empty_cache()
    return out


# ---- report -------------------------------------------------------------------
def ms(v):
    return v.get("median_ms") if v and v.get("ok") else None


def combine(fovea, torch_res):
    rows = []
    for s in fovea["shapes"]:
        pt = torch_res.get(s["name"], {})
        h, a, f, l, p = (ms(s.get("heuristic")), ms(s.get("autotuned")), ms(s.get("fused")),
                         ms(s.get("legacy")), ms(pt))
        c = ms(s.get("cudnn"))  # absent in JSON from before the cudnn variant
        # the bare conv timed call for call with the fused op (older JSON: the
        # autotuned row, timed on its own)
        fb = (s.get("fused") or {}).get("pair_median_ms") or a
        ratio = (lambda x, y: x / y if x and y else None)
        # fused/bare as fovea-bench computed it (the medians by position in
        # the turns, whose order swaps every other turn); older JSON: f / fb
        fvb = (s.get("fused") or {}).get("pair_ratio") if f else None
        rows.append({
            "index": s["index"], "name": s["name"], "gflop": s["gflop"], "sets": s.get("sets"),
            "fovea_ok": s["ok"], "why": s.get("why", ""),
            "heuristic_ms": h, "autotuned_ms": a, "cudnn_ms": c, "fused_ms": f, "legacy_ms": l,
            "pytorch_ms": p,
            "pytorch_err": pt.get("rel_err"), "pytorch_why": pt.get("why", ""),
            "autotuned_err": (s.get("autotuned") or {}).get("rel_err"),
            "autotuned_engine": (s.get("autotuned") or {}).get("engine"),
            "autotuned_layout": (s.get("autotuned") or {}).get("layout"),
            "autotuned_path": (s.get("autotuned") or {}).get("path"),
            "cudnn_engine": (s.get("cudnn") or {}).get("engine"),
            "heuristic_engine": (s.get("heuristic") or {}).get("engine"),
            "legacy_algo": (s.get("legacy") or {}).get("algo_name"),
            "auto_vs_torch": ratio(a, p), "heur_vs_torch": ratio(h, p),
            "cudnn_vs_torch": ratio(c, p), "auto_vs_cudnn": ratio(a, c),
            "legacy_vs_torch": ratio(l, p), "fused_vs_bare": fvb or ratio(f, fb), "bare_paired_ms": fb,
            "heur_vs_auto": ratio(h, a), "auto_vs_legacy": ratio(a, l),
        })
    return rows


def verdict(ok):
    return "PASS" if ok else "MISS"


def targets(rows, fovea, fresh=None):
    t = {}
    each = [r["auto_vs_torch"] for r in rows]
    t["auto_vs_torch_each"] = {
        "target": f"<= {TARGETS['auto_vs_torch_each']:.2f} on every shape",
        "worst": max([x for x in each if x] or [None], key=lambda x: x or 0),
        "misses": [r["name"] for r in rows if not r["auto_vs_torch"] or
                   r["auto_vs_torch"] > TARGETS["auto_vs_torch_each"]]}
    t["auto_vs_torch_each"]["pass"] = not t["auto_vs_torch_each"]["misses"]
    g = geomean(each)
    t["auto_vs_torch_geomean"] = {"target": f"<= {TARGETS['auto_vs_torch_geomean']:.2f}",
                                  "value": g, "complete": all(each),
                                  "pass": bool(g and all(each) and
                                               g <= TARGETS["auto_vs_torch_geomean"])}
    fb = [r["fused_vs_bare"] for r in rows]
    t["fused_vs_bare"] = {
        "target": f"<= {TARGETS['fused_vs_bare']:.2f} on every shape", "geomean": geomean(fb),
        "worst": max([x for x in fb if x] or [None], key=lambda x: x or 0),
        "misses": [r["name"] for r in rows if not r["fused_vs_bare"] or
                   r["fused_vs_bare"] > TARGETS["fused_vs_bare"]]}
    t["fused_vs_bare"]["pass"] = not t["fused_vs_bare"]["misses"]
    ha = [r["heur_vs_auto"] for r in rows]
    g = geomean(ha)
    t["heur_vs_auto_geomean"] = {"target": f"<= {TARGETS['heur_vs_auto_geomean']:.2f}",
                                 "value": g, "complete": all(ha),
                                 "pass": bool(g and all(ha) and
                                              g <= TARGETS["heur_vs_auto_geomean"])}
    for key, prof in (("profile", fovea.get("profile")), ("profile_fresh", fresh)):
        if prof:
            profile_targets(t, key, prof)
    return t


def profile_ratio(r):
    """Median first call / the slower of the median 100th call and the median idle
    control (the same op's call after as long an idle GPU as its creation left),
    over the creations of one op (one run row)."""
    ref = max(r.get("hundredth_ms") or 0, r.get("idle_control_ms") or 0)
    return r["first_ms"] / ref if r.get("ok") and ref else None


def profile_ratio_plain(r):
    """Median first call / median 100th call (no idle control)."""
    return r["first_ms"] / r["hundredth_ms"] if r.get("ok") and r.get("hundredth_ms") else None


def profile_targets(t, key, prof):
    """Ops made from a warm profile: no choosing at creation, first call as fast as the 100th.

    The first-call ratio is median first / median 100th over the creations of each op
    (fovea-bench --profile-repeats); the worst single creation is reported, not judged."""
    runs = prof.get("runs", [])
    reps = prof.get("repeats", 1)  # JSON from before --profile-repeats: one creation
    label = prof.get("label", "")
    chose = [r["name"] for r in runs
             if not (r.get("ok") and str(r.get("choice", "")).startswith("profile") and
                     r.get("candidates", 0) <= 1)]
    fr = [profile_ratio(r) for r in runs]
    slow = [r["name"] for r, x in zip(runs, fr)
            if x is None or x > TARGETS["profile_first_vs_100th"]]
    single = [(r["ratio_max"], r["name"]) for r in runs
              if r.get("ok") and r.get("ratio_max") is not None]
    worst_single = max(single) if single else (None, None)
    t[key + "_no_choosing"] = {
        "label": label, "target": "every op from the warm profile: choice 'profile...', "
        "1 candidate", "misses": chose, "pass": bool(runs) and not chose,
        "max_create_ms": max([r.get("create_ms_max", r["create_ms"]) for r in runs] or [0]),
        "max_median_create_ms": max([r["create_ms"] for r in runs] or [0])}
    t[key + "_first_vs_100th"] = {
        "label": f"{label}, median of {reps} creation{'s' if reps != 1 else ''}",
        "repeats": reps,
        "target": f"median first forward <= {TARGETS['profile_first_vs_100th']:.2f} x the "
        "median 100th (or the idle control, when slower)",
        "worst_plain_first_vs_100th": max([x for x in map(profile_ratio_plain, runs)
                                           if x is not None] or [None], key=lambda x: x or 0),
        "worst": max([x for x in fr if x is not None] or [None], key=lambda x: x or 0),
        "misses": slow, "pass": bool(runs) and not slow,
        # informational: one creation's first / its own 100th, the worst of all
        "worst_single_ratio": worst_single[0], "worst_single_shape": worst_single[1]}


def first_creation(prof):
    """Fresh process: each op's first creation (CUDA's lazy module loading falls in it)."""
    runs = [r for r in prof.get("runs", []) if r.get("ok")]
    per = {r["name"]: r.get("first_creation_ratio",
                            r["first_ms"] / r["hundredth_ms"] if r.get("hundredth_ms") else None)
           for r in runs}
    vals = [(x, n) for n, x in per.items() if x is not None]
    worst = max(vals) if vals else (None, None)
    r0 = runs[0] if runs else None
    return {
        "label": f"{prof.get('label', '')}, the first creation of each op",
        "ratios": per, "worst": worst[0], "worst_shape": worst[1],
        "first_op_of_process": None if r0 is None else {
            "name": r0["name"],
            "first_ms": r0.get("first_creation_first_ms", r0["first_ms"]),
            "hundredth_ms": r0.get("first_creation_hundredth_ms", r0["hundredth_ms"]),
            "ratio": per.get(r0["name"])}}


def informational(rows, fresh=None):
    """Reported, not judged."""
    cp = [r["cudnn_vs_torch"] for r in rows]
    info = {"cudnn_vs_torch_geomean": {
        "what": "fovea autotuned over cuDNN engines only (FV_CONV2D_NO_DIRECT) / PyTorch",
        "value": geomean(cp), "complete": all(cp),
        "shapes": sum(1 for x in cp if x)},
        "auto_vs_cudnn_geomean": {
        "what": "fovea autotuned (direct kernel included) / cuDNN engines only",
        "value": geomean([r["auto_vs_cudnn"] for r in rows]),
        "direct_chosen": [r["name"] for r in rows if r.get("autotuned_path") == "direct"]}}
    if fresh:
        info["profile_fresh_first_creation"] = first_creation(fresh)
    return info


def fmt(v, w=9, p=4):
    return f"{v:{w}.{p}f}" if isinstance(v, (int, float)) and v is not None else f"{'-':>{w}}"


def print_report(rows, t, fovea, torch_info, info):
    print()
    print(f"fovea vs PyTorch: {fovea['device']}, FP16 NHWC, median of {fovea['iters']} calls "
          f"after {fovea['warmup']} warm-up, CUDA events, L2 "
          f"{'scrubbed before each call' if fovea.get('cache_mode') == 'flush' else 'rotated'}")
    print(f"cuDNN: fovea {fovea['cudnn_loaded']} ({fovea.get('cudnn_library')}), PyTorch "
          f"{torch_info['cudnn_version']} ({torch_info['torch']}, "
          f"{', '.join(torch_info['cudnn_mapped'][:1]) or '?'})")
    hdr = (f"{'#':>2} {'shape':34} {'heur':>9} {'auto':>9} {'cudnn':>9} {'fused':>9} "
           f"{'legacy':>9} {'pytorch':>9} | {'a/pt':>6} {'f/a':>6} {'h/a':>6} {'cud/pt':>6} "
           f"{'leg/pt':>6}  target a/pt<=1")
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        if not r["fovea_ok"]:
            print(f"{r['index']:2d} {r['name']:34} no timings: {r['why']}")
            continue
        a = r["auto_vs_torch"]
        print(f"{r['index']:2d} {r['name']:34} {fmt(r['heuristic_ms'])} {fmt(r['autotuned_ms'])} "
              f"{fmt(r['cudnn_ms'])} {fmt(r['fused_ms'])} {fmt(r['legacy_ms'])} "
              f"{fmt(r['pytorch_ms'])} | "
              f"{fmt(a, 6, 3)} {fmt(r['fused_vs_bare'], 6, 3)} {fmt(r['heur_vs_auto'], 6, 3)} "
              f"{fmt(r['cudnn_vs_torch'], 6, 3)} {fmt(r['legacy_vs_torch'], 6, 3)}  "
              f"{verdict(a is not None and a <= TARGETS['auto_vs_torch_each'])}"
              f"{'  (pytorch: ' + r['pytorch_why'] + ')' if r['pytorch_why'] else ''}")
    print("\nengines (autotuned [path, layout] / cuDNN-only autotuned / heuristic / legacy Find):")
    for r in rows:
        print(f"{r['index']:2d} {r['name']:34} {r['autotuned_engine']} [{r['autotuned_path']}, "
              f"{r['autotuned_layout']}] / {r['cudnn_engine']} / {r['heuristic_engine']} / "
              f"{r['legacy_algo']}")
    print("\ntargets:")
    x = t["auto_vs_torch_each"]
    print(f"  {verdict(x['pass'])}  fovea autotuned / PyTorch {x['target']}: worst "
          f"{fmt(x['worst'], 0, 3)}; misses: {', '.join(x['misses']) or 'none'}")
    x = t["auto_vs_torch_geomean"]
    print(f"  {verdict(x['pass'])}  fovea autotuned / PyTorch geometric mean {x['target']}: "
          f"{fmt(x['value'], 0, 3)}{'' if x['complete'] else ' (not every shape has both)'}")
    x = t["fused_vs_bare"]
    print(f"  {verdict(x['pass'])}  fused conv+bias+ReLU / bare conv {x['target']}: worst "
          f"{fmt(x['worst'], 0, 3)}, geomean {fmt(x['geomean'], 0, 3)}; misses: "
          f"{', '.join(x['misses']) or 'none'}")
    x = t["heur_vs_auto_geomean"]
    print(f"  {verdict(x['pass'])}  heuristic / autotuned geometric mean {x['target']}: "
          f"{fmt(x['value'], 0, 3)}")
    for key in ("profile", "profile_fresh"):
        if key + "_no_choosing" not in t:
            continue
        x = t[key + "_no_choosing"]
        print(f"  {verdict(x['pass'])}  warm profile ({x['label']}): {x['target']}; slowest "
              f"create {x['max_create_ms']:.3f} ms; misses: {', '.join(x['misses']) or 'none'}")
        x = t[key + "_first_vs_100th"]
        print(f"  {verdict(x['pass'])}  warm profile ({x['label']}): {x['target']}: worst "
              f"{fmt(x['worst'], 0, 3)}; misses: {', '.join(x['misses']) or 'none'}")
        if x.get("worst_plain_first_vs_100th") is not None:
            print(f"        (informational: worst median first / median 100th without the idle "
                  f"control {fmt(x['worst_plain_first_vs_100th'], 0, 3)})")
        if x.get("worst_single_ratio") is not None:
            print(f"        (informational: worst single creation's first / its 100th "
                  f"{fmt(x['worst_single_ratio'], 0, 3)}, {x['worst_single_shape']})")
    if "profile_no_choosing" not in t:
        print("  (no --profile: the warm-profile target was not measured)")
    print("\ninformational (not targets):")
    x = info["cudnn_vs_torch_geomean"]
    print(f"  fovea cuDNN-only autotuned / PyTorch geometric mean: {fmt(x['value'], 0, 3)}"
          f"{'' if x['complete'] else ' (not every shape has both)'}")
    x = info["auto_vs_cudnn_geomean"]
    print(f"  fovea autotuned / cuDNN-only autotuned geometric mean: {fmt(x['value'], 0, 3)}; "
          f"direct kernel chosen on: {', '.join(x['direct_chosen']) or 'none'}")
    x = info.get("profile_fresh_first_creation")
    if x:
        print(f"  warm profile ({x['label']}, CUDA's lazy module loading included): worst "
              f"first / 100th {fmt(x['worst'], 0, 3)} ({x['worst_shape']})")
        p = x["first_op_of_process"]
        if p:
            print(f"  first op of the process ({p['name']}): first {fmt(p['first_ms'], 0, 4)} ms, "
                  f"100th {fmt(p['hundredth_ms'], 0, 4)} ms, ratio {fmt(p['ratio'], 0, 3)}")


def same_cudnn(fovea, torch_info):
    """Loud warnings when fovea and PyTorch did not run on the same cuDNN."""
    problems = []
    if fovea.get("cudnn_loaded") != torch_info["cudnn_version"]:
        problems.append(f"versions differ: fovea loaded {fovea.get('cudnn_loaded')}, PyTorch "
                        f"{torch_info['cudnn_version']}")
    if fovea.get("cudnn_compiled") != fovea.get("cudnn_loaded"):
        problems.append(f"fovea was compiled against cuDNN {fovea.get('cudnn_compiled')} but "
                        f"loaded {fovea.get('cudnn_loaded')}")
    fdirs = {os.path.dirname(os.path.realpath(p))
             for p in (fovea.get("cudnn_mapped") or "").split(":") if p}
    tdirs = {os.path.dirname(os.path.realpath(p)) for p in torch_info["cudnn_mapped"]}
    if fdirs and tdirs and fdirs != tdirs:
        problems.append(f"libraries from different folders: fovea {sorted(fdirs)}, PyTorch "
                        f"{sorted(tdirs)}")
    for p in problems:
        bar = "!" * 78
        print(f"\n{bar}\nWARNING: fovea and PyTorch do not use the same cuDNN: {p}\n"
              f"the comparison is not like for like\n{bar}", file=sys.stderr)
        print(f"WARNING: not the same cuDNN: {p}")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench", help="fovea-bench (default: $FOVEA_BENCH, newest build*/, PATH)")
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--shapes", default="all")
    ap.add_argument("--cache", choices=["flush", "rotate"], default="flush")
    ap.add_argument("--workspace-mb", type=int, default=1024)
    ap.add_argument("--profile", help="fovea profile to write and then time ops from")
    ap.add_argument("--profile-repeats", type=int, default=5,
                    help="creations of each op from the profile; the first-call target uses "
                    "medians over them (fovea-bench's --profile-repeats)")
    ap.add_argument("--fovea-json", help="keep fovea-bench's own JSON here; with --reuse, read it "
                    "instead of running fovea-bench")
    ap.add_argument("--fresh-json", help="keep the fresh-process warm-profile JSON here")
    ap.add_argument("--reuse", action="store_true", help="do not run fovea-bench")
    ap.add_argument("--json", help="write the combined results here")
    ap.add_argument("--png", help="write the bar chart of the ratios here")
    args = ap.parse_args()
    if args.reuse and not args.fovea_json:
        ap.error("--reuse needs --fovea-json")

    tmp = tempfile.mkdtemp(prefix="fv-conv-")
    fj = args.fovea_json or os.path.join(tmp, "fovea.json")
    if not args.reuse:
        bench = require_bench(args.bench, "conv_vs_pytorch")
        if not bench:
            return 2
        cmd = [bench, "conv", "--iters", str(args.iters), "--warmup", str(args.warmup),
               "--shapes", args.shapes, "--cache", args.cache, "--workspace-mb",
               str(args.workspace_mb), "--json", fj]
        if args.profile:
            cmd += ["--profile", args.profile, "--profile-repeats", str(args.profile_repeats)]
        rc = run_child(cmd)  # fovea first, before this process touches the GPU
        if rc != 0:
            print(f"conv_vs_pytorch: fovea-bench exited with {rc}", file=sys.stderr)
            if not os.path.exists(fj):
                return 1
    with open(fj) as f:
        fovea = json.load(f)
    fresh = None
    if args.profile and not args.reuse and fovea.get("profile"):
        # the warm profile again, in a process that ran nothing before
        fr = args.fresh_json or os.path.join(tmp, "fresh.json")
        cmd = [bench, "conv", "--profile", args.profile, "--profile-only", "--profile-repeats",
               str(args.profile_repeats), "--shapes", args.shapes, "--cache", args.cache,
               "--workspace-mb", str(args.workspace_mb), "--json", fr]
        rc = run_child(cmd)
        if rc == 0 and os.path.exists(fr):
            with open(fr) as f:
                fresh = json.load(f).get("profile")
        else:
            print(f"conv_vs_pytorch: fovea-bench --profile-only exited with {rc}",
                  file=sys.stderr)
    elif args.reuse and args.fresh_json and os.path.exists(args.fresh_json):
        with open(args.fresh_json) as f:
            fresh = json.load(f).get("profile")

    import torch
    if not torch.cuda.is_available():
        print("conv_vs_pytorch: PyTorch sees no GPU", file=sys.stderr)
        return 1
    torch_res = run_torch(fovea, lambda s: True)  # PyTorch on every shape, for reference
    torch_info = {"torch": torch.__version__, "cuda": torch.version.cuda,
                  "cudnn_version": torch.backends.cudnn.version(),
                  "device": torch.cuda.get_device_name(0), "cudnn_mapped": mapped_cudnn()}
    print(f"\nPyTorch {torch_info['torch']} (CUDA {torch_info['cuda']}), cuDNN "
          f"{torch_info['cudnn_version']}: {', '.join(torch_info['cudnn_mapped']) or '?'}")
    print(f"fovea-bench: cuDNN compiled {fovea.get('cudnn_compiled')}, loaded "
          f"{fovea.get('cudnn_loaded')}: {fovea.get('cudnn_mapped') or fovea.get('cudnn_library')}")
    problems = same_cudnn(fovea, torch_info)
    rows = combine(fovea, torch_res)
    t = targets(rows, fovea, fresh)
    info = informational(rows, fresh)
    print_report(rows, t, fovea, torch_info, info)

    out = {"bench": "conv_vs_pytorch", "device": fovea["device"], "pytorch": torch_info,
           "same_cudnn": not problems, "cudnn_problems": problems, "targets": t,
           "informational": info,
           "rows": rows, "pytorch_results": torch_res, "fovea": fovea, "profile_fresh": fresh}
    if args.json:
        write_json(args.json, out, 1)
        print(f"\nwrote {args.json}")
    if args.png:
        import plot_ratios  # this folder is on sys.path
        how = plot_ratios.plot(out, args.png)
        print(f"wrote {args.png} ({how})")
    bad = any(not s["ok"] for s in fovea["shapes"]) or any(
        not v.get("ok") for v in torch_res.values())
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
