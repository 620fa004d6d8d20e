"""Repeat the bench's timed-then-verified M = 1 case in one process, with diagnostics on a failure (NOTES-wna16 run 22:
bench_wna16 --verify failed once at 8192 x 28672 M = 1, 19:44).

    PYTHONPATH=. python3 benchmarks/experiments/verify_repro.py [--trials 6]

Each trial: fresh weights (the quantized tensor kept) and x, the tuner's plan timed by the bench's Timer (PDL on in even
trials, off in odd ones), then the timed output verified; the largest |x| before and after timing, an eager launch into
a fresh output compared bit for bit with the timed one, and the decode workspaces' words that are not the sentinel
(there should be none between launches).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_wna16 import FORMATS, bench_weights, verified  # noqa: E402
from timing import Timer  # noqa: E402

from humming import knobs  # noqa: E402
from humming.core import dtypes  # noqa: E402
from humming.core.problem import GemmProblem  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=6)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    import humming.ops as hg

    timer = Timer(args.reps)
    caps, tuner, sms = hg._device(0)
    fmt = FORMATS["w4a16 s4 g128"]
    for trial in range(args.trials):
        for n, k in ((8192, 28672), (28672, 8192)):
            pdl = trial % 2 == 0
            pw, q = bench_weights(fmt, n, k, True)
            x = torch.randn(1, k, device="cuda").to(torch.bfloat16)
            out = torch.full((1, n), float("nan"), device="cuda", dtype=torch.bfloat16)
            plan = tuner.plan(GemmProblem(1, n, k, fmt, dtypes.bf16, dtypes.bf16), caps, sms)
            before = float(x.abs().max())
            with knobs.scope(HUMMING_PDL=pdl):
                us = timer(lambda: hg.launch(out, x, pw.data, pw.scales, pw.zeros, pw.chscale, pw.gscale, None, fmt,
                                             n, k, plan))
                torch.cuda.synchronize()
                after = float(x.abs().max())
                got = verified(out, x, q)
                again = torch.full_like(out, float("nan"))
                hg.launch(again, x, pw.data, pw.scales, pw.zeros, pw.chscale, pw.gscale, None, fmt, n, k, plan)
                torch.cuda.synchronize()
            dirty = []
            for key, (ws, _) in hg._workspaces.items():
                if key[2]:  # the sentinel slots of decode plans: all-ones between launches
                    dirty.append(int((ws.view(torch.int32) != -1).sum()))
            print(f"trial {trial} {n}x{k} {plan.schedule:<13} grid {plan.grid} pdl {int(pdl)} {us:6.2f} us  |x| "
                  f"{before:.3g} -> {after:.3g}  out max {float(out.float().abs().max()):.4g}  eager same "
                  f"{bool(torch.equal(out, again))}  dirty sentinel words {dirty}  verify {got[:140]}", flush=True)
            del pw, q, x, out, again
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
