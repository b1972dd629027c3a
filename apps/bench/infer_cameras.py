#!/usr/bin/env python3
"""fovea-infer on 1 and on N unpaced cameras, under several environments,
against the PCIe copy floor of the frames: how close batching several
cameras comes to what the bus allows.

Runs the segmentation net (apps/fovea-infer/models/fashion_seg, overlays at
the camera's size brought back to the host) on 1 and on --cameras unpaced
test:// cameras of W x H, once per --env configuration, alternating, for
--rounds rounds. Prints each run, then a table: the single camera's fps, the
slowest of the N cameras' fps, their ratio (issue 16's per-camera target is
>= 0.8), and the slowest camera's fps over the N-camera copy floor's (the
floor from infer_vs_pytorch.copy_floor: N frames up and N overlays down at
once on two streams, PyTorch's pinned copies, CUDA events).

--env NAME or NAME:VAR=VALUE[,VAR=VALUE...] (repeatable); e.g.
  --env default --env threads3:FV_COPY_THREADS=3 --env old:LD_PRELOAD=/tmp/oldcopy.so
Needs a CUDA build of fovea-infer and PyTorch with CUDA (for the floor).
"""
import argparse
import json
import os
import subprocess
import sys
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import infer_vs_pytorch  # noqa: E402  (copy_floor)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def parse_env(spec):
    name, _, rest = spec.partition(":")
    env = {}
    for kv in filter(None, rest.split(",")):
        k, eq, v = kv.partition("=")
        if not eq or not k:
            raise SystemExit("--env %s: want NAME or NAME:VAR=VALUE[,VAR=VALUE...]" % spec)
        env[k] = v
    return name, env


def run(args, env, cams):
    cmd = [args.infer, "--backend", "cuda", "--json", "--quiet", "--model", args.model,
           "--mean", "0.5", "--std", "0.25", "--input-width", str(args.width),
           "--input-height", str(args.height), "--frames", "1000000",
           "--duration", str(args.seconds)]
    cmd += ["--input", "test://?fps=0"] * cams + ["null://"] * cams
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.seconds + 120,
                       env=dict(os.environ, **env))
    for line in p.stdout.splitlines():
        if line.startswith('{"type":"summary"'):
            if p.returncode == 0:
                return json.loads(line)
    raise RuntimeError("fovea-infer exited %d: %s" % (p.returncode, p.stderr[-2000:]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--infer", required=True, help="the fovea-infer program")
    ap.add_argument("--model", default=os.path.join(
        ROOT, "apps/fovea-infer/models/fashion_seg/fashion_seg.onnx"))
    ap.add_argument("--cameras", type=int, default=4)
    ap.add_argument("--width", type=int, default=1920)
    ap.add_argument("--height", type=int, default=1080)
    ap.add_argument("--seconds", type=float, default=4)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--env", action="append", default=[], help="NAME[:VAR=VALUE,...]")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    configs = [parse_env(e) for e in (args.env or ["default"])]
    n = args.cameras
    res = {"runs": []}
    for r in range(args.rounds):
        for name, env in configs:
            one = run(args, env, 1)
            many = run(args, env, n)
            row = {"round": r, "config": name, "env": env,
                   "one_fps": one["cameras"][0]["fps"],
                   "many_fps": [c["fps"] for c in many["cameras"]],
                   "many_ticks": many["fps"], "many_p50": many["latency_ms_p50"],
                   "many_p99": many["latency_ms_p99"],
                   "carve_outs": one["pool_carve_outs_while_running"] +
                   many["pool_carve_outs_while_running"]}
            res["runs"].append(row)
            print("round %d %-10s 1 camera %.0f fps; %d cameras %s fps (%.0f ticks/s, p50 %.2f, "
                  "p99 %.2f ms); pool carve-outs while running %d" %
                  (r, name, row["one_fps"], n, ["%.0f" % f for f in row["many_fps"]],
                   row["many_ticks"], row["many_p50"], row["many_p99"], row["carve_outs"]),
                  flush=True)
    fa = types.SimpleNamespace(width=args.width, height=args.height)
    f1, fn = infer_vs_pytorch.copy_floor(fa, 1), infer_vs_pytorch.copy_floor(fa, n)
    res["copy_floor_ms"] = {"1": f1, str(n): fn}
    print("\nPCIe copy floor a tick (frames up, overlays down, at once): 1 camera %.3f ms "
          "(%.0f fps), %d cameras %.3f ms (%.0f fps a camera)" % (f1, 1e3 / f1, n, fn, 1e3 / fn))
    print("\n%-10s %5s %11s %13s %8s %15s" %
          ("config", "round", "1 cam fps", "%d cams, min" % n, "ratio", "min / floor fps"))
    for row in res["runs"]:
        lo = min(row["many_fps"])
        print("%-10s %5d %11.0f %13.0f %8.3f %15.3f" %
              (row["config"], row["round"], row["one_fps"], lo, lo / row["one_fps"],
               lo * fn / 1e3))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
