"""benchmarks/timing.py's roofline (no GPU): the bytes a GEMM must move and its FLOPs, over the team's measured
H200 figures, give back ../shared/ANCHORS.md's W4A16 roofline column, and the bytes-only form (issue 5's) parts
from it where the FLOPs are the longer term."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))

from bench_wna16 import FORMATS  # noqa: E402
from timing import roofline_us  # noqa: E402

from humming.core import dtypes  # noqa: E402
from humming.core.problem import GemmProblem  # noqa: E402

#: ANCHORS.md's machine figures: copy bandwidth 4.25 TB/s; its bf16 rate "about 705 TFLOP/s" is 708.45 in the rows
#: whose roofline is the FLOPs term (every one of them divides back to it).
BANDWIDTH, RATE = 4.25e12, 708.45e12

#: (N, K, M, ANCHORS' W4A16 g128 roofline in us, as printed there)
ANCHOR_ROWS = [
    (8192, 8192, 1, 8.1), (8192, 8192, 16, 8.3), (8192, 8192, 64, 12.1), (8192, 8192, 1024, 194),
    (28672, 8192, 1, 28.5), (28672, 8192, 16, 28.8), (28672, 8192, 64, 42.4), (28672, 8192, 1024, 679),
    (28672, 8192, 4096, 2716), (8192, 28672, 1, 28.5), (8192, 28672, 16, 28.8),
]


def _problem(n: int, k: int, m: int) -> GemmProblem:
    return GemmProblem(m, n, k, FORMATS["w4a16 s4 g128"], dtypes.bf16, dtypes.bf16)


@pytest.mark.parametrize("n, k, m, printed", ANCHOR_ROWS)
def test_the_roofline_gives_back_the_anchor_column(n: int, k: int, m: int, printed: float) -> None:
    # About half a unit of the last printed digit (one decimal below 100 us, whole us above): 8192 x 8192 M = 1 is
    # 8.151 us here and printed 8.1 there. A term left out would miss by more: that shape's group scales alone are
    # 0.25 us, its activations and output 0.008.
    assert roofline_us(_problem(n, k, m), BANDWIDTH, RATE) == pytest.approx(printed, abs=0.06 if printed < 100 else 0.5)


def test_the_bytes_only_roofline_parts_from_it_where_the_flops_are_longer() -> None:
    decode, m64 = _problem(28672, 8192, 16), _problem(28672, 8192, 64)
    assert roofline_us(decode, BANDWIDTH) == roofline_us(decode, BANDWIDTH, RATE)
    # M = 64: 29.6 us of bytes against 42.4 of FLOPs at the anchors' rate
    assert roofline_us(m64, BANDWIDTH) == pytest.approx(29.6, abs=0.05)
    assert roofline_us(m64, BANDWIDTH, RATE) > 1.4 * roofline_us(m64, BANDWIDTH)
