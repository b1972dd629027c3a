#!/usr/bin/env python3
"""fovea's whole nets (fv_net) against PyTorch, on one GPU, in one run.

For each case (model, batch, size; by default resnet18 and mobilenet_v2 at
batch 1 and 8, 224x224, and the UNet at batch 1 and 8, 256x256):
  1. the weights (seeded, apps/common/net_models.py), an input and
     PyTorch's FP32 output on the CPU, written as FVW1 files (no GPU yet);
  2. `fovea-bench net` on them: fovea's output checked against that FP32
     reference (relative L2 <= 1e-2) before anything is timed, then
     fv_net_forward as a CUDA-graph replay and eager;
  3. PyTorch in this process: FP16, channels_last, cudnn.benchmark, the
     same weights; its FP16 output checked against the FP32 reference
     first; then timed eager and as a CUDA-graph replay (torch.cuda.CUDAGraph);
  4. with --compile (or FV_NET_COMPILE=1): torch.compile(mode=
     "max-autotune-no-cudagraphs"), checked, then captured in a CUDA graph
     and replayed; it compiles for minutes, so it runs in a child process
     per case within --compile-budget seconds in all (FV_NET_COMPILE_BUDGET),
     and cases left when the budget is spent are reported as skipped.
Every time is a median over --iters calls after --warmup, each call between
two CUDA events on the stream. Prints a table of ms and the ratios
fovea / PyTorch with PASS/MISS against the net runtime's targets (both sides as
CUDA-graph replays):
  resnet18 b1: <= 0.60 x PyTorch graph and <= 0.80 x torch.compile + graph
  mobilenet_v2 b1 <= 0.60, unet b1 <= 0.70, every batch 8 <= 0.80 x PyTorch graph
  every fovea output within 1e-2 of PyTorch FP32
and writes JSON (--json) and a PNG chart (--png; matplotlib, else skipped
with a message).

  python3 apps/bench/net_vs_pytorch.py [--bench PATH] [--cases resnet18:1:224,...]
      [--iters 200] [--warmup 20] [--autotune] [--profile PATH] [--layers RUNS]
      [--compile] [--compile-budget 900] [--work DIR] [--json FILE] [--png FILE]

Exit status: 0 when every case ran and every output passed its check
(targets may be missed), 1 otherwise, 2 on usage errors.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "common"))
from peer_common import median, require_bench, run_child, write_json  # noqa: E402

DEFAULT_CASES = "resnet18:1:224,resnet18:8:224,mobilenet_v2:1:224,mobilenet_v2:8:224," \
                "unet:1:256,unet:8:256"
TOL = 1e-2
# fovea graph / PyTorch graph, and / torch.compile graph (None: no target)
TARGETS = {("resnet18", 1): (0.60, 0.80), ("mobilenet_v2", 1): (0.60, None),
           ("unet", 1): (0.70, None)}
TARGET_BATCH8 = 0.80


def target_for(model, batch):
    if (model, batch) in TARGETS:
        return TARGETS[(model, batch)]
    return (TARGET_BATCH8, None) if batch >= 8 else (None, None)


def case_name(c):
    return f"{c[0]} b{c[1]} {c[2]}x{c[2]}"


def parse_cases(s):
    import net_models as nm
    return [nm.parse_case(x.strip()) for x in s.split(",") if x.strip()]


# ---- PyTorch ----------------------------------------------------------------------
def rel_l2(torch, y, ref):
    y, ref = y.detach().float().cpu().double(), ref.double()
    if not torch.isfinite(y).all():
        return float("inf")
    return (torch.linalg.vector_norm(y - ref) / torch.linalg.vector_norm(ref)).item()


def time_calls(torch, fn, iters, warmup):
    """Median, min and mean ms of fn(), each call between two CUDA events."""
    for _ in range(warmup):
        fn()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
          for _ in range(iters)]
    for a, b in ev:
        a.record()
        fn()
        b.record()
    torch.cuda.synchronize()
    t = [a.elapsed_time(b) for a, b in ev]
    return {"median_ms": median(t), "min_ms": min(t), "mean_ms": sum(t) / len(t), "iters": iters}


def graph_of(torch, fn, x):
    """fn(x) captured in a CUDA graph (after warm-up on a side stream): (graph, output)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn(x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = fn(x)
    torch.cuda.synchronize()
    return g, y


def load_model(nm, torch, model, weights_file, unet_base=32, unet_classes=4):
    """The model with the weights of weights_file (the very values fovea read)."""
    t = nm.read_fvw(weights_file)
    if model == "unet":
        unet_base, unet_classes = t["enc1.0.weight"].shape[0], t["head.weight"].shape[0]
    m, origin = nm.make_model(model, True, unet_base, unet_classes)
    missing, unexpected = m.load_state_dict(t, strict=False)
    missing = [k for k in missing if not k.endswith("num_batches_tracked")]
    if missing or unexpected:
        raise RuntimeError(f"{weights_file}: missing {missing[:5]}, unexpected {unexpected[:5]}")
    return m.eval(), origin


def torch_prepare(torch, m, io_file, nm):
    io = nm.read_fvw(io_file)
    x = io["input"].cuda().half().contiguous(memory_format=torch.channels_last)
    m = m.cuda().half().to(memory_format=torch.channels_last)
    return m, x, io["output"]


def run_torch_case(torch, nm, case, files, iters, warmup):
    """PyTorch eager and CUDA-graph replay on one case; output checked first."""
    model, n, size = case
    res = {"ok": False}
    m, origin = load_model(nm, torch, model, files["weights"])
    m, x, ref = torch_prepare(torch, m, files["io"], nm)
    res["model_origin"] = origin
    with torch.inference_mode():
        y = m(x)
        res["rel_l2"] = rel_l2(torch, y, ref)
        res["channels_last_out"] = bool(y.dim() == 4 and
                                        y.is_contiguous(memory_format=torch.channels_last))
        if not res["rel_l2"] <= TOL:
            res["why"] = f"PyTorch FP16 vs FP32: relative L2 {res['rel_l2']:.3g} > {TOL}"
            return res
        res["eager"] = time_calls(torch, lambda: m(x), iters, warmup)
        g, yg = graph_of(torch, m, x)
        g.replay()
        torch.cuda.synchronize()
        res["graph_rel_l2"] = rel_l2(torch, yg, ref)
        if not res["graph_rel_l2"] <= TOL:
            res["why"] = f"PyTorch graph replay: relative L2 {res['graph_rel_l2']:.3g} > {TOL}"
            return res
        res["graph"] = time_calls(torch, g.replay, iters, warmup)
    res["ok"] = True
    del g
    return res


def compile_child(args):
    """--compile-child: torch.compile (max-autotune-no-cudagraphs) + CUDA graph on one case."""
    import torch
    import net_models as nm
    torch.backends.cudnn.benchmark = True
    case = nm.parse_case(args.compile_child)
    res = {"ok": False, "torch": torch.__version__}
    try:
        m, origin = load_model(nm, torch, case[0], args.child_weights)
        m, x, ref = torch_prepare(torch, m, args.child_io, nm)
        t0 = time.time()
        cm = torch.compile(m, mode="max-autotune-no-cudagraphs")
        with torch.no_grad():
            y = cm(x)
            torch.cuda.synchronize()
            res["compile_s"] = time.time() - t0
            res["rel_l2"] = rel_l2(torch, y, ref)
            if not res["rel_l2"] <= TOL:
                res["why"] = f"compiled FP16 vs FP32: relative L2 {res['rel_l2']:.3g} > {TOL}"
            else:
                g, yg = graph_of(torch, cm, x)
                g.replay()
                torch.cuda.synchronize()
                res["graph_rel_l2"] = rel_l2(torch, yg, ref)
                if not res["graph_rel_l2"] <= TOL:
                    res["why"] = f"compiled graph: relative L2 {res['graph_rel_l2']:.3g} > {TOL}"
                else:
                    res["graph"] = time_calls(torch, g.replay, args.iters, args.warmup)
                    res["eager"] = time_calls(torch, lambda: cm(x), args.iters, args.warmup)
                    res["ok"] = True
    except Exception as e:
        traceback.print_exc()
        res["why"] = f"torch.compile failed: {type(e).__name__}: {e}"[:500]
    write_json(args.child_out, res, 1)
    return 0


def run_compile(case, files, args, left_s):
    """The compile child for one case, within left_s seconds."""
    out = os.path.join(args.work, f"compile_{case[0]}_n{case[1]}_s{case[2]}.json")
    cmd = [sys.executable, os.path.abspath(__file__), "--compile-child", ":".join(map(str, case)),
           "--child-weights", files["weights"], "--child-io", files["io"], "--child-out", out,
           "--iters", str(args.iters), "--warmup", str(args.warmup)]
    print("$ " + " ".join(cmd), flush=True)
    t0 = time.time()
    try:
        rc = subprocess.run(cmd, timeout=left_s).returncode
    except subprocess.TimeoutExpired:
        return {"ok": False, "why": f"not done within the budget ({left_s:.0f} s left)",
                "wall_s": time.time() - t0}
    if rc != 0 or not os.path.exists(out):
        return {"ok": False, "why": f"child exited with {rc}", "wall_s": time.time() - t0}
    with open(out) as f:
        res = json.load(f)
    res["wall_s"] = time.time() - t0
    return res


# ---- report ---------------------------------------------------------------------------
def ms(d, key):
    v = (d or {}).get(key) or {}
    return v.get("median_ms") if (d or {}).get("ok") else None


def ratio(a, b):
    return a / b if a and b else None


def rows_of(cases, fov, pt, comp):
    rows = []
    for c in cases:
        k = case_name(c)
        f = fov.get(k) or {}
        fv = f.get("variants", {})
        fg = fv.get("graph", {}).get("median_ms") if fv.get("graph", {}).get("ok") else None
        fe = fv.get("eager", {}).get("median_ms") if fv.get("eager", {}).get("ok") else None
        tg, te = ms(pt.get(k), "graph"), ms(pt.get(k), "eager")
        cg = ms(comp.get(k), "graph")
        t_graph, t_comp = target_for(c[0], c[1])
        lp = f.get("layer_profile") or {}
        row = {
            "case": k, "model": c[0], "batch": c[1], "size": c[2], "gmacs": f.get("gmacs"),
            "fovea_graph_ms": fg, "fovea_eager_ms": fe, "torch_eager_ms": te,
            "torch_graph_ms": tg, "compile_graph_ms": cg,
            "fovea_rel_l2": fv.get("graph", {}).get("rel_l2"),
            "fovea_eager_rel_l2": fv.get("eager", {}).get("rel_l2"),
            "torch_rel_l2": (pt.get(k) or {}).get("rel_l2"),
            "compile_rel_l2": (comp.get(k) or {}).get("rel_l2"),
            "graph_vs_torch_graph": ratio(fg, tg), "graph_vs_compile": ratio(fg, cg),
            "eager_vs_torch_eager": ratio(fe, te),
            "target_vs_torch_graph": t_graph, "target_vs_compile": t_comp,
            "fovea_tflops": 2 * f["gmacs"] / fg if fg and f.get("gmacs") else None,
            "launch_ms": fe - fg if fe and fg else None,
            "layers": fv.get("graph", {}).get("layers"),
            "arena_mib": (fv.get("graph", {}).get("arena_bytes") or 0) / 2**20,
            "arena_vs_bound": ratio(fv.get("graph", {}).get("arena_bytes"),
                                    fv.get("graph", {}).get("arena_lower_bound")),
            "layer_sum_ms": sum(x["ms"] for x in lp.get("layers", [])) or None,
            "fovea_why": f.get("why", ""), "torch_why": (pt.get(k) or {}).get("why", ""),
            "compile_why": (comp.get(k) or {}).get("why", ""),
        }
        checks = [row["fovea_rel_l2"], row["fovea_eager_rel_l2"]]
        tol = f.get("tol", TOL)  # fovea-bench's own: 1e-2, or 1e-4 on its CPU backend
        row["fovea_ok"] = all(x is not None and x <= tol for x in checks) and not f.get("why")
        v1 = row["graph_vs_torch_graph"]
        row["pass_torch_graph"] = None if t_graph is None else bool(v1 and v1 <= t_graph)
        v2 = row["graph_vs_compile"]
        row["pass_compile"] = None if t_comp is None or v2 is None else bool(v2 <= t_comp)
        rows.append(row)
    return rows


def fmt(v, f="{:.4f}"):
    return f.format(v) if v is not None else "-"


def verdict(p):
    return "" if p is None else ("PASS" if p else "MISS")


def print_report(rows, device, torch_info):
    print(f"\nfovea vs PyTorch {torch_info.get('torch')}, whole nets, FP16, on {device} "
          "(ms: medians of CUDA-event-timed calls; ratios fovea / PyTorch)")
    hdr = (f"{'case':<24} {'fv graph':>9} {'fv eager':>9} {'pt eager':>9} {'pt graph':>9} "
           f"{'compile':>9} {'fv/ptG':>7} {'target':>7} {'':4} {'fv/cmpG':>7} {'target':>7} "
           f"{'':4} {'fvE/ptE':>7} {'fv relL2':>9}")
    print(hdr)
    for r in rows:
        print(f"{r['case']:<24} {fmt(r['fovea_graph_ms']):>9} {fmt(r['fovea_eager_ms']):>9} "
              f"{fmt(r['torch_eager_ms']):>9} {fmt(r['torch_graph_ms']):>9} "
              f"{fmt(r['compile_graph_ms']):>9} {fmt(r['graph_vs_torch_graph'], '{:.3f}'):>7} "
              f"{fmt(r['target_vs_torch_graph'], '{:.2f}'):>7} "
              f"{verdict(r['pass_torch_graph']):4} {fmt(r['graph_vs_compile'], '{:.3f}'):>7} "
              f"{fmt(r['target_vs_compile'], '{:.2f}'):>7} {verdict(r['pass_compile']):4} "
              f"{fmt(r['eager_vs_torch_eager'], '{:.3f}'):>7} "
              f"{fmt(r['fovea_rel_l2'], '{:.2e}'):>9}")
    print("\nwhat bounds fovea (graph replay): TFLOP/s achieved, eager - graph (launch cost), "
          "sum of per-layer times vs the replay (gaps between kernels)")
    for r in rows:
        ls = r["layer_sum_ms"]
        print(f"  {r['case']:<24} {fmt(r['fovea_tflops'], '{:.1f}')} TFLOP/s, eager - graph "
              f"{fmt(r['launch_ms'], '{:.3f}')} ms, layers {r['layers']}, layer sum "
              f"{fmt(ls, '{:.3f}')} ms, arena {r['arena_mib']:.1f} MiB "
              f"({fmt(r['arena_vs_bound'], '{:.3f}')} x bound)")
    for r in rows:
        for who in ("fovea", "torch", "compile"):
            if r[f"{who}_why"]:
                print(f"  {r['case']}: {who}: {r[f'{who}_why']}")


def plot(res, path):
    """Bar chart of the ratios; returns a note. matplotlib only."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "skipped: no matplotlib"
    rows = res["rows"]
    series = [("graph_vs_torch_graph", "fovea graph / PyTorch graph", "#1f77b4"),
              ("graph_vs_compile", "fovea graph / torch.compile graph", "#2ca02c"),
              ("eager_vs_torch_eager", "fovea eager / PyTorch eager", "#aec7e8")]
    n, m = len(rows), len(series)
    w = 0.8 / m
    fig, ax = plt.subplots(figsize=(max(8, 1.3 * n + 3), 5.5))
    for j, (key, label, color) in enumerate(series):
        xs = [i + (j - (m - 1) / 2) * w for i in range(n)]
        ys = [r.get(key) or 0 for r in rows]
        ax.bar(xs, ys, w, label=label, color=color)
        for x, r in zip(xs, rows):
            if r.get(key) is None:
                ax.text(x, 0.02, "n/a", rotation=90, ha="center", va="bottom", fontsize=7)
    for i, r in enumerate(rows):
        t, tc = r.get("target_vs_torch_graph"), r.get("target_vs_compile")
        if t:
            ax.plot([i - 0.45, i + 0.45], [t, t], color="red", linewidth=1.2,
                    label="target vs PyTorch graph")
        if tc:
            ax.plot([i - 0.45, i + 0.45], [tc, tc], color="green", linewidth=1.0,
                    linestyle="--", label="target vs torch.compile graph")
    ax.axhline(1.0, color="black", linewidth=1)
    ax.set_xticks(range(n))
    ax.set_xticklabels([r["case"] for r in rows], rotation=25, ha="right", fontsize=8)
    ax.set_ylabel("time ratio (lower is better)")
    ax.set_title(f"fovea fv_net vs PyTorch {res['pytorch'].get('torch')}, FP16, "
                 f"{res.get('device', '?')}", fontsize=10)
    handles, labels = ax.get_legend_handles_labels()
    uniq = dict(zip(labels, handles))
    ax.legend(uniq.values(), uniq.keys(), fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return "matplotlib"


# ---- main -------------------------------------------------------------------------------
def make_files(cases, work, seed):
    """Weights, inputs and FP32 references on the CPU (nothing touches the GPU)."""
    import net_models as nm
    files = {}
    names = list(dict.fromkeys(c[0] for c in cases))
    models = nm.build_models(names, seed, True, 32, 4)
    for name in names:
        nm.write_fvw(nm.weights_path(work, name), models[name].state_dict().items())
    for c in cases:
        t0 = time.time()
        x = nm.case_input(c[1], c[2], seed)
        y = nm.reference(models[c[0]], x)
        p = nm.io_path(work, *c)
        nm.write_fvw(p, [("input", x), ("output", y)])
        files[case_name(c)] = {"weights": nm.weights_path(work, c[0]), "io": p}
        print(f"{case_name(c)}: FP32 reference on the CPU in {time.time() - t0:.1f} s, "
              f"|y| max {y.abs().max().item():.3g}")
    return files


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench", help="fovea-bench (default: $FOVEA_BENCH, the newest build*/)")
    ap.add_argument("--cases", default=os.environ.get("FV_NET_CASES", DEFAULT_CASES),
                    help="MODEL:BATCH:SIZE,... (FV_NET_CASES)")
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--autotune", action="store_true", help="fovea-bench --autotune")
    ap.add_argument("--profile", help="fovea-bench --profile PATH (one file for every case)")
    ap.add_argument("--layers", type=int, default=0, help="fovea-bench --layers RUNS")
    ap.add_argument("--compile", action="store_true",
                    default=os.environ.get("FV_NET_COMPILE", "0") not in ("", "0"),
                    help="also torch.compile (FV_NET_COMPILE=1)")
    ap.add_argument("--compile-budget", type=float,
                    default=float(os.environ.get("FV_NET_COMPILE_BUDGET", "900")),
                    help="seconds for all compiles (FV_NET_COMPILE_BUDGET)")
    ap.add_argument("--work", help="folder for the weights and fovea's JSON (default: a temp)")
    ap.add_argument("--fovea-backend", choices=["cuda", "cpu"], default="cuda",
                    help="cpu: a dry run without a GPU (fovea on its CPU backend, tolerance "
                    "1e-4; PyTorch skipped)")
    ap.add_argument("--json")
    ap.add_argument("--png")
    ap.add_argument("--compile-child", help=argparse.SUPPRESS)
    ap.add_argument("--child-weights", help=argparse.SUPPRESS)
    ap.add_argument("--child-io", help=argparse.SUPPRESS)
    ap.add_argument("--child-out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.compile_child:
        return compile_child(args)
    try:
        cases = parse_cases(args.cases)
    except argparse.ArgumentTypeError as e:
        print(f"net_vs_pytorch: {e}", file=sys.stderr)
        return 2
    bench = require_bench(args.bench, "net_vs_pytorch")
    if not bench:
        return 2
    args.work = args.work or tempfile.mkdtemp(prefix="fv_net_bench_")
    os.makedirs(args.work, exist_ok=True)

    files = make_files(cases, args.work, args.seed)

    fov = {}  # fovea first, before this process touches the GPU
    for c in cases:
        k = case_name(c)
        fj = os.path.join(args.work, f"fovea_{c[0]}_n{c[1]}_s{c[2]}.json")
        if os.path.exists(fj):
            os.remove(fj)
        cmd = [bench, "net", "--model", c[0], "--batch", str(c[1]), "--size", str(c[2]),
               "--weights", files[k]["weights"], "--io", files[k]["io"], "--iters",
               str(args.iters), "--warmup", str(args.warmup), "--json", fj,
               "--backend", args.fovea_backend]
        if args.autotune:
            cmd.append("--autotune")
        if args.profile:
            cmd += ["--profile", args.profile]
        if args.layers:
            cmd += ["--layers", str(args.layers)]
        rc = run_child(cmd)
        if os.path.exists(fj):
            with open(fj) as f:
                fov[k] = json.load(f)
        else:
            fov[k] = {"variants": {}}
        if rc != 0:
            fov[k]["why"] = f"fovea-bench net exited with {rc}"

    import torch
    import net_models as nm
    dry = args.fovea_backend == "cpu"
    if not torch.cuda.is_available() and not dry:
        print("net_vs_pytorch: PyTorch sees no GPU", file=sys.stderr)
        return 1
    torch.backends.cudnn.benchmark = True
    torch_info = {"torch": torch.__version__, "cuda": torch.version.cuda,
                  "cudnn_version": torch.backends.cudnn.version(),
                  "device": torch.cuda.get_device_name(0) if not dry else "cpu (dry run)"}
    pt = {}
    for c in ([] if dry else cases):
        k = case_name(c)
        try:
            pt[k] = run_torch_case(torch, nm, c, files[k], args.iters, args.warmup)
        except Exception as e:
            traceback.print_exc()
            pt[k] = {"ok": False, "why": f"PyTorch failed: {type(e).__name__}: {e}"[:500]}
        torch.cuda.empty_cache()
        r = pt[k]
        print(f"PyTorch {k}: rel L2 {r.get('rel_l2', float('nan')):.3g}, eager "
              f"{fmt(ms(r, 'eager'))} ms, graph {fmt(ms(r, 'graph'))} ms {r.get('why', '')}",
              flush=True)

    comp = {}
    if args.compile and not dry:
        t_end = time.time() + args.compile_budget
        for c in cases:
            k = case_name(c)
            left = t_end - time.time()
            if left < 30:
                comp[k] = {"ok": False, "why": "skipped: the compile budget is spent"}
                continue
            comp[k] = run_compile(c, files[k], args, left)
            print(f"torch.compile {k}: {fmt(ms(comp[k], 'graph'))} ms graph, "
                  f"{comp[k].get('wall_s', 0):.0f} s {comp[k].get('why', '')}", flush=True)

    rows = rows_of(cases, fov, pt, comp)
    device = next((f.get("device") for f in fov.values() if f.get("device")),
                  torch_info["device"])
    print_report(rows, device, torch_info)
    out = {"bench": "net_vs_pytorch", "device": device, "pytorch": torch_info,
           "iters": args.iters, "warmup": args.warmup, "autotune": args.autotune,
           "compile": args.compile, "compile_budget_s": args.compile_budget,
           "tol": TOL, "rows": rows, "fovea": fov, "pytorch_results": pt, "compile_results": comp}
    if args.json:
        write_json(args.json, out, 1)
        print(f"\nwrote {args.json}")
    if args.png:
        print(f"chart {args.png}: {plot(out, args.png)}")
    bad = any(not r["fovea_ok"] or not (dry or (pt.get(r["case"]) or {}).get("ok"))
              for r in rows)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
