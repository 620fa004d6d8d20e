"""The bench's own --verify run (NOTES-wna16 run 22's failure), watched without touching the allocator: every buffer a
launch wrote (out, the workspace slots and counters, by address and stream) and every kept quantized tensor's
addresses are recorded as they go by. When a verify fails, the failing tensor's all-zero rows are located (codes or
scales), and the recorded buffers that overlapped those bytes earlier in the process are named.

    PYTHONPATH=. python3 benchmarks/experiments/zero_rows_bench.py <bench_wna16 arguments>
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bench_wna16  # noqa: E402

import humming.ops as hg  # noqa: E402
from humming.core import quantized  # noqa: E402

_written: dict[tuple, str] = {}  # (start, end, what) -> first case that wrote it
_case = ["start"]


def _span(t: torch.Tensor) -> tuple[int, int]:
    return t.data_ptr(), t.data_ptr() + t.numel() * t.element_size()


def _zero_spans(q) -> list[tuple[str, int, int, int, int]]:
    """(part, first row, last row, count, byte start, byte end) of the rows whose codes or scales are all zero."""
    out = []
    for part, t in (("codes", q.data), ("scales", q.scales)):
        rows = (t.view(t.shape[0], -1).view(torch.uint8) == 0).all(1).nonzero().flatten()
        if rows.numel():
            row_bytes = t[0].numel() * t.element_size()
            first, last = int(rows[0]), int(rows[-1])
            out.append((part, first, last, rows.numel(), t.data_ptr() + first * row_bytes,
                        t.data_ptr() + (last + 1) * row_bytes))
    return out


def main() -> None:
    make, verify, launch = bench_wna16.bench_weights, bench_wna16.verified, hg.launch

    def watched_make(fmt, n, k, keep_q):
        pw, q = make(fmt, n, k, keep_q)
        if q is not None:
            _case[0] = f"{n}x{k} {fmt.describe()[:12]}"
            print(f"    made {_case[0]}: codes {_span(q.data)[0]:#x}+{q.data.nbytes}, scales "
                  f"{_span(q.scales)[0]:#x}+{q.scales.nbytes}", flush=True)
        return pw, q

    def watched_launch(out, x2, *rest, **kw):
        plan = launch(out, x2, *rest, **kw)
        stream = torch.cuda.current_stream().cuda_stream
        for what, t in [("out", out), *[(f"ws{key}", w) for key, pair in hg._workspaces.items() for w in pair]]:
            _written.setdefault((*_span(t), what, stream), f"{_case[0]} M={x2.shape[0]}")
        return plan

    def watched_verify(out, x, q):
        got = verify(out, x, q)
        print(f"    verify {tuple(q.shape)} M={x.shape[0]}: {got[:90]}", flush=True)
        if got != "ok":
            for part, first, last, count, lo, hi in _zero_spans(q):
                print(f"      zero {part} rows: {count} in [{first}, {last}], bytes {lo:#x}..{hi:#x}", flush=True)
                for (a, b, what, stream), case in _written.items():
                    if a < hi and b > lo:
                        print(f"        overlapped by {what} {a:#x}..{b:#x} (stream {stream:#x}) written in {case}",
                              flush=True)
            deq = quantized.dequantize(q, torch.float32)
            print(f"      dequantized all-zero rows {int((deq.abs().amax(1) == 0).sum())}", flush=True)
        return got

    bench_wna16.bench_weights, bench_wna16.verified, hg.launch = watched_make, watched_verify, watched_launch
    sys.argv = ["bench_wna16.py", *sys.argv[1:]]
    bench_wna16.main()


if __name__ == "__main__":
    main()
