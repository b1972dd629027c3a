"""What conv_vs_pytorch.py and edge_vs_peers.py share: finding and running
fovea-bench, the median, and writing the results' JSON. Both import it from
their own folder (they put it first on sys.path), so they run from any cwd."""
import glob
import json
import os
import shutil
import signal
import subprocess
import sys


def find_bench(given):
    """fovea-bench: given, else $FOVEA_BENCH, else the newest build*/ one, else PATH's."""
    if given:
        return given
    if os.environ.get("FOVEA_BENCH"):
        return os.environ["FOVEA_BENCH"]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    found = glob.glob(os.path.join(root, "build*", "apps", "bench", "fovea-bench"))
    if found:
        return max(found, key=os.path.getmtime)
    return shutil.which("fovea-bench")


def require_bench(given, prog):
    """find_bench's answer when it is executable; else None, after saying so as prog."""
    bench = find_bench(given)
    if not bench or not os.access(bench, os.X_OK):
        print(f"{prog}: fovea-bench not found (build it, or pass --bench)", file=sys.stderr)
        return None
    return bench


def run_child(cmd):
    """Runs cmd, its output passed through; a SIGTERM to us (timeout) ends it too."""
    print("$ " + " ".join(cmd), flush=True)
    child = subprocess.Popen(cmd)

    def stop(signum, frame):
        child.terminate()
        sys.exit(128 + signum)
    old = signal.signal(signal.SIGTERM, stop)
    try:
        return child.wait()
    finally:
        signal.signal(signal.SIGTERM, old)


def median(xs):
    xs = sorted(xs)
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else 0.5 * (xs[m - 1] + xs[m])


def write_json(path, obj, indent):
    """obj as JSON at path, with a final newline."""
    with open(path, "w") as f:
        json.dump(obj, f, indent=indent)
        f.write("\n")
