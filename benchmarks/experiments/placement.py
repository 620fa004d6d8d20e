"""Does where the buffers sit move the M = 1024 wide kernel? (NOTES-wna16 run 21, lead 3.)

The bench's 8192 x 28672 M = 1024 cell ran ~587 us when the step freed each shape's quantized tensor before timing
and ~699 us when it kept it (``--verify``). This times the tuner's kernel for one shape with the buffers made both ways,
interleaved in one process, and prints each buffer's address (its offset in a 2 MiB page) beside the time.

    python benchmarks/experiments/placement.py [--n 8192 --k 28672 --m 1024] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from bench_wna16 import FORMATS, bench_weights, verified  # noqa: E402
from timing import Timer  # noqa: E402

from humming.core import dtypes  # noqa: E402
from humming.core.problem import GemmProblem  # noqa: E402


def case(fmt, n: int, k: int, m: int, keep_q: bool, timer: Timer) -> str:
    import humming.ops as hg

    pw, q = bench_weights(fmt, n, k, keep_q)
    caps, tuner, sms = hg._device(0)
    x = torch.randn(m, k, device="cuda").to(torch.bfloat16)
    out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    plan = tuner.plan(GemmProblem(m, n, k, fmt, dtypes.bf16, dtypes.bf16), caps, sms)
    us = timer(lambda: hg.launch(out, x, pw.data, pw.scales, pw.zeros, pw.chscale, pw.gscale, None, fmt, n, k, plan))
    ok = verified(out, x, q) if keep_q else "-"
    where = " ".join(f"{name} {t.data_ptr() % (2 << 20) >> 10:4d}K" for name, t in
                     (("w", pw.data), ("s", pw.scales), ("x", x), ("out", out)))
    line = f"{n}x{k} M={m} keep_q={int(keep_q)} {us:8.1f} us  offsets in 2 MiB: {where}  verify {ok}"
    del pw, x, out
    torch.cuda.empty_cache()
    return line


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=8192)
    ap.add_argument("--k", type=int, default=28672)
    ap.add_argument("--m", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    timer = Timer(args.reps)
    fmt = FORMATS["w4a16 s4 g128"]
    for _ in range(args.rounds):
        for keep in (False, True):
            print(case(fmt, args.n, args.k, args.m, keep, timer), flush=True)


if __name__ == "__main__":
    main()
