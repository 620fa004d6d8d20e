"""GemmProblem.weight_bytes / bytes_moved (the roofline's numerator, no GPU): codes rounded up to whole bytes per row
of W, integer zero points at the code width whatever grid they sit on, scales at their dtype's width."""

from __future__ import annotations

from humming.core import dtypes, presets
from humming.core.formats import Granularity, ScaleSpec, WeightFormat, ZeroPointSpec
from humming.core.problem import GemmProblem

S4_G128 = WeightFormat(dtypes.s4, ScaleSpec(Granularity.GROUP, dtypes.bf16, 128))


def test_codes_are_counted_per_row_not_seven_eighths_of_a_byte_per_row_over() -> None:
    # 28672 x 8192 s4 g128: 4 bits a code, a bf16 scale per 128 codes; nothing else
    n, k = 28672, 8192
    assert GemmProblem(1, n, k, S4_G128).weight_bytes() == n * k // 2 + n * (k // 128) * 2
    # a row of 3 four-bit codes takes 2 bytes (12 bits rounded up per row): 5 rows take 10 (the precedence slip
    # counted (5 * (12 + 7)) // 8 = 11, 7/8 of a byte a row over)
    ch = WeightFormat(dtypes.s4, ScaleSpec(Granularity.CHANNEL, dtypes.f32))
    assert GemmProblem(1, 5, 3, ch).weight_bytes() == 5 * 2 + 5 * 4


def test_integer_zero_points_cost_their_code_width_on_every_grid() -> None:
    # one u4 zero a row, by channel or by a group as long as the row: the same bytes (4 bits each)
    n, k = 4096, 4096
    channel = WeightFormat(dtypes.u4, ScaleSpec(Granularity.CHANNEL, dtypes.f16), ZeroPointSpec.INT)
    group = WeightFormat(dtypes.u4, ScaleSpec(Granularity.GROUP, dtypes.f16, k), ZeroPointSpec.INT)
    codes, scales = n * k // 2, n * 2
    assert GemmProblem(1, n, k, group).weight_bytes() == codes + scales + n // 2
    assert GemmProblem(1, n, k, channel).weight_bytes() == codes + scales + n // 2
    # AWQ (u4, zero points per group of 128) keeps its count: 28672 x 64 zeros of 4 bits
    awq = presets.get("awq_int4").weight
    n, k = 28672, 8192
    assert GemmProblem(1, n, k, awq).weight_bytes() == n * k // 2 + n * 64 * 2 + n * 64 // 2
    # 8-bit codes: a byte a zero on either grid
    u8 = WeightFormat(dtypes.u8, ScaleSpec(Granularity.CHANNEL, dtypes.f32), ZeroPointSpec.INT)
    assert GemmProblem(1, n, k, u8).weight_bytes() == n * k + n * 4 + n


def test_bytes_moved_adds_activations_output_and_bias_once() -> None:
    p = GemmProblem(16, 28672, 8192, S4_G128, dtypes.bf16, dtypes.f16, has_bias=True)
    assert p.bytes_moved() == p.weight_bytes() + 16 * 8192 * 2 + 16 * 28672 * 2 + 28672 * 2
