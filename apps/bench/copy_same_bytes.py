#!/usr/bin/env python3
"""Copies of the conv layers' bytes: how close a plain device-to-device copy gets to the DRAM floor.

For each size (one FP16 tensor of 1920x1080x8, 2048x2048x8 and 1920x1080x32)
a copy of that many bytes, timed as `fovea-bench conv` times ops: scrubbed (a
memset of 2 x L2 before each call) and rotated (sets past 4 x L2, no scrub);
and an elementwise kernel over the same bytes, rotated. Each against the floor
of the bytes read plus written at the copy rate of 1 GiB. CUDA events around
each call, after a GPU sleep so that no host launch gap is timed; median of
50 after 10. Not a test; needs PyTorch with CUDA.
Usage: python3 apps/bench/copy_same_bytes.py   (one line a size)
"""
import statistics

import torch

SIZES = [("1920x1080x8 halves", 1920 * 1080 * 8 * 2), ("2048x2048x8 halves", 2048 * 2048 * 8 * 2),
         ("1920x1080x32 halves", 1920 * 1080 * 32 * 2)]


def timed(fn, n, pre=None):
    """Median ms of fn(i) over n calls after 10, each between two events."""
    ev = []
    for i in range(n + 10):
        torch.cuda._sleep(200000)  # the GPU busy while the host enqueues: no launch gap timed
        if pre:
            pre(i)
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn(i)
        b.record()
        if i >= 10:
            ev.append((a, b))
    torch.cuda.synchronize()
    return statistics.median(x.elapsed_time(y) for x, y in ev)


def main():
    p = torch.cuda.get_device_properties(torch.cuda.current_device())
    l2 = p.L2_cache_size
    print(f"{p.name}, L2 {l2 >> 20} MiB, torch {torch.__version__}")
    big = 1 << 30
    s = torch.empty(big, dtype=torch.uint8, device="cuda").random_(0, 255)
    d = torch.empty(big, dtype=torch.uint8, device="cuda")
    bw = 2 * big / (timed(lambda i: d.copy_(s), 20) * 1e-3) / 1e9
    del s, d
    print(f"copy rate (1 GiB, read + written): {bw:.0f} GB/s")
    scrub = torch.empty(2 * l2, dtype=torch.uint8, device="cuda")
    for name, nb in SIZES:
        sets = max(1, -(-4 * l2 // (2 * nb)))
        src = [torch.empty(nb, dtype=torch.uint8, device="cuda").random_(0, 255) for _ in range(sets)]
        dst = [torch.empty(nb, dtype=torch.uint8, device="cuda") for _ in range(sets)]
        floor = 2 * nb / (bw * 1e9) * 1e3
        tf = timed(lambda i: dst[0].copy_(src[0]), 50, pre=lambda i: scrub.fill_(i & 0xff))
        tr = timed(lambda i: dst[i % sets].copy_(src[i % sets]), 50)
        s64, d64 = [x.view(torch.int64) for x in src], [x.view(torch.int64) for x in dst]
        tk = timed(lambda i: torch.add(s64[i % sets], 0, out=d64[i % sets]), 50)
        print(f"{name}: {nb / 1e6:.1f} MB each way, floor {floor:.4f} ms | copy scrubbed {tf:.4f} ms "
              f"({tf / floor:.2f}x), rotated {tr:.4f} ({tr / floor:.2f}x, {sets} sets) | add-0 kernel "
              f"rotated {tk:.4f} ({tk / floor:.2f}x)")
        del src, dst, s64, d64
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
