"""Where the bench's 8192 x 28672 weights lose rows (NOTES-wna16 run 22): bench_wna16 --verify's sequence up to that
shape (28672 x 8192 at M = 1 and 64, timed), then the quantized weights made as the bench makes them, checked for
all-zero dequantized rows right away (before any GEMM reads them), and the float weights before quantizing.

    PYTHONPATH=. python3 benchmarks/experiments/zero_rows.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_wna16 import FORMATS, bench_weights  # noqa: E402
from timing import Timer  # noqa: E402

from humming.core import dtypes, quantized  # noqa: E402
from humming.core.formats import QuantFormat  # noqa: E402
from humming.core.problem import GemmProblem  # noqa: E402


def zero_rows(q) -> str:
    w = quantized.dequantize(q, torch.float32)
    rows = (w.abs().amax(1) == 0).nonzero().flatten()
    if rows.numel() == 0:
        return "0"
    zs = int((q.scales.float() == 0).sum())
    return f"{rows.numel()} (first {int(rows[0])}, last {int(rows[-1])}; zero scales {zs} of {q.scales.numel()})"


def main() -> None:
    import humming.ops as hg

    timer = Timer(5)
    caps, tuner, sms = hg._device(0)
    fmt = FORMATS["w4a16 s4 g128"]
    for step in ("fresh", "after 28672x8192 M=1,64"):
        if step != "fresh":
            pw, q = bench_weights(fmt, 28672, 8192, True)
            for m in (1, 64):
                x = torch.randn(m, 8192, device="cuda").to(torch.bfloat16)
                out = torch.empty(m, 28672, device="cuda", dtype=torch.bfloat16)
                plan = tuner.plan(GemmProblem(m, 28672, 8192, fmt, dtypes.bf16, dtypes.bf16), caps, sms)
                timer(lambda: hg.launch(out, x, pw.data, pw.scales, pw.zeros, pw.chscale, pw.gscale, None, fmt, 28672,
                                        8192, plan))
            del pw, q, x, out
            torch.cuda.empty_cache()
        torch.cuda.synchronize()
        w = torch.randn(8192, 28672, device="cuda")
        wz = int((w.abs().amax(1) == 0).sum())
        q = quantized.quantize(w, QuantFormat(fmt))
        torch.cuda.synchronize()
        print(f"{step}: float weights' zero rows {wz}, quantized {zero_rows(q)}", flush=True)
        del w, q
        pw, q = bench_weights(fmt, 8192, 28672, True)
        torch.cuda.synchronize()
        print(f"{step}: bench_weights' quantized zero rows {zero_rows(q)}", flush=True)
        del pw, q
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
