"""Does a compute-bound kernel run faster on weights with all-zero rows? (NOTES-wna16 run 23: the bench's Timer race
left all-zero rows in its weights in some processes; run 21's ~587 us for 8192 x 28672 M = 1024, against ~690-700
everywhere else, came from the plain step, whose weights were never checked.) The tuner's kernel timed on random s4
weights and on the same weights with about half their rows' codes set to zero, interleaved, each output verified.

    PYTHONPATH=. python3 benchmarks/experiments/zero_weights_power.py [--m 1024] [--rounds 2]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_wna16 import FORMATS, verified  # noqa: E402
from timing import Timer  # noqa: E402

from humming.core import dtypes, packing, quantized  # noqa: E402
from humming.core.formats import QuantFormat  # noqa: E402
from humming.core.problem import GemmProblem  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--m", type=int, default=1024)
    ap.add_argument("--n", type=int, default=8192)
    ap.add_argument("--k", type=int, default=28672)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    import humming.ops as hg

    timer = Timer(20)
    caps, tuner, sms = hg._device(0)
    fmt = FORMATS["w4a16 s4 g128"]
    n, k, m = args.n, args.k, args.m
    q = quantized.quantize(torch.randn(n, k, device="cuda"), QuantFormat(fmt))
    data = q.data.clone()
    data[torch.rand(n, device="cuda") < 0.53] = 0  # s4 codes of 0: about the 4337 of 8192 rows of run 22's failure
    cases = {"random": q, "half rows zero": dataclasses.replace(q, data=data)}
    packed = {name: packing.pack(t, dtypes.bf16) for name, t in cases.items()}
    x = torch.randn(m, k, device="cuda").to(torch.bfloat16)
    out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    plan = tuner.plan(GemmProblem(m, n, k, fmt, dtypes.bf16, dtypes.bf16), caps, sms)
    print(f"{n}x{k} M={m} {plan.spec.tile} {plan.schedule} grid {plan.grid}", flush=True)
    for r in range(args.rounds):
        for name, pw in packed.items():
            us = timer(lambda: hg.launch(out, x, pw.data, pw.scales, pw.zeros, pw.chscale, pw.gscale, None, fmt, n, k,
                                         plan))
            print(f"  round {r} {name:<15} {us:8.1f} us  verify {verified(out, x, cases[name])[:80]}", flush=True)


if __name__ == "__main__":
    main()
