"""Packing for the dense kernel, on the CPU: pack/unpack round trips for every format family, the documented
position of single elements in the fragment layout, padding, the scale permutation, and the errors."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from humming.core import codec, dtypes, packing, presets, quantized
from humming.core.formats import Granularity, QuantFormat, ScaleSpec, WeightFormat, ZeroPointSpec
from humming.errors import InvalidInputError, UnsupportedError


def _wf(elem: str, gran: str = "group", sdt: str = "f16", group: int | None = 128, zp: str = "none") -> WeightFormat:
    return WeightFormat(dtypes.DType.parse(elem), ScaleSpec(Granularity(gran), dtypes.DType.parse(sdt),
                                                            group if gran == "group" else None), ZeroPointSpec(zp))


ROUND_TRIP = {
    **{f"s{b}": _wf(f"s{b}") for b in range(2, 9)},
    "u1_zp": _wf("u1", zp="int", group=64),
    "u4_zp": _wf("u4", zp="int"),
    "u3_zp_channel": _wf("u3", "channel", zp="int"),
    "s4_channel_f32": _wf("s4", "channel", "f32"),
    "s2_tensor": _wf("s2", "tensor", "f32"),
    "mxfp4": presets.get("mxfp4").weight,
    "nvfp4": presets.get("nvfp4_w4a16").weight,
    "e4m3_channel": presets.get("fp8_channel_w8a16").weight,
    "e3m2_bf16_g64": _wf("e3m2", sdt="bf16", group=64),
    "e5m2_g32_ue8m0": _wf("e5m2", sdt="ue8m0", group=32),
    # byte scales per channel and per tensor, which pack keeps as f32 values (unpack re-encodes them)
    "e4m3_channel_e4m3": _wf("e4m3", "channel", "e4m3"),
    "s4_channel_ue8m0": _wf("s4", "channel", "ue8m0"),
    "s4_tensor_ue8m0": _wf("s4", "tensor", "ue8m0"),
}


@pytest.mark.parametrize("name", list(ROUND_TRIP))
def test_pack_then_unpack_gives_back_the_canonical_tensor(name: str) -> None:
    fmt = ROUND_TRIP[name]
    n, k = 130, 448 if (fmt.scale.group or 64) <= 64 else 384  # N pads to 192, K to 512
    w = torch.randn(n, k) * (1 + torch.rand(n, 1))
    q = quantized.quantize(w, QuantFormat(fmt))
    act = dtypes.bf16 if fmt.scale.dtype is dtypes.bf16 else dtypes.f16
    p = packing.pack(q, act)
    assert p.n_pad % 64 == 0 and p.k_pad % 128 == 0 and p.n_pad >= n and p.k_pad >= k
    assert tuple(p.data.shape) == (p.k_pad // 16, p.n_pad // 64, 128 * fmt.dtype.bits)
    u = packing.unpack(p, q.format)
    assert torch.equal(u.data, q.data), "codes differ after the round trip"
    assert torch.equal(u.scales, q.scales), "scales differ after the round trip"
    assert (q.zeros is None) == (u.zeros is None)
    if q.zeros is not None:
        assert torch.equal(u.zeros, q.zeros)


def test_act_order_is_packed_as_contiguous_groups_and_round_trips() -> None:
    fmt = presets.get("gptq_int4_act_order")
    k = 512
    g_idx = (torch.randperm(k) // 128).to(torch.int32)
    q = quantized.quantize(torch.randn(96, k), fmt, g_idx=g_idx)
    p = packing.pack(q, dtypes.f16)
    assert p.perm is not None and torch.equal(torch.sort(g_idx[p.perm]).values, g_idx[p.perm]), \
        "after the permutation, groups must be contiguous"
    u = packing.unpack(p, q.format)
    assert torch.equal(u.data, q.data) and torch.equal(u.g_idx, q.g_idx)


@pytest.mark.parametrize("bits", [1, 2, 3, 4, 5, 6, 7, 8])
def test_one_element_lands_in_the_documented_lane_word_and_bits(bits: int) -> None:
    # (k, n) = (2t + h + 8r, g + 8j) for lane l = 4g + t, pair p = 2j + r; plane widths from planes(bits).
    codes = torch.zeros(64, 16, dtype=torch.uint8)
    g, t, j, r, h = 5, 2, 3, 1, 1
    k, n = 2 * t + h + 8 * r, g + 8 * j
    value = (1 << bits) - 1
    codes[n, k] = value
    data = packing.pack_blocks(codes, bits)[0, 0]
    lane = 4 * g + t
    p = 2 * j + r
    words = data.view(torch.int32).to(torch.int64) & 0xFFFFFFFF
    # the lane's words, chunk by chunk
    lane_words, start = [], 0
    for cw in packing.chunk_words(bits):
        lane_words += [int(words[32 * start + lane * cw + i]) for i in range(cw)]
        start += cw
    set_bits = {(wi, b) for wi, wv in enumerate(lane_words) for b in range(32) if wv >> b & 1}
    expect, w0 = set(), 0
    for width, _offset in packing.planes(bits):
        per_word = 16 // width
        for b in range(width):
            expect.add((w0 + p // per_word, 16 * h + width * (p % per_word) + b))
        w0 += width
    assert set_bits == expect
    assert int(words.count_nonzero()) == len({w for w, _ in expect})


def _kernel_op(op: tuple, x: int) -> int:
    """dequant/values.cuh's operations on one 32-bit lane word, written as the kernel does them."""
    if op[0] == "rotr":
        return ((x >> op[1]) | (x << (32 - op[1]))) & 0xFFFFFFFF
    if op[0] == "shl":
        return (x << op[1]) & 0xFFFFFFFF
    if op[0] == "prmt":
        return sum(((x >> (8 * src)) & 0xFF) << (8 * k) for k, src in enumerate(op[1]))
    return x


@pytest.mark.parametrize("act", [dtypes.bf16, dtypes.f16], ids=str)
def test_e2m1_pairs_come_out_of_a_lane_word_as_the_true_value_times_a_power_of_two(act: dtypes.DType) -> None:
    # Every code at every (k, n) of a block: one op (two for some slots) and a mask give the activation-type
    # pair whose halves are the e2m1 value times 2^-126 (bf16) or 2^-14 (f16), subnormal 0.5 included.
    codes = torch.randint(0, 16, (64, 16), dtype=torch.uint8, generator=torch.Generator().manual_seed(3))
    data = packing.pack_blocks(codes, 4, packing.code_swizzle(dtypes.e2m1, act))[0, 0]
    words = (data.view(torch.int32).to(torch.int64) & 0xFFFFFFFF).tolist()
    em_mask = (0x01C0 if act is dtypes.bf16 else 0x0E00) * 0x10001
    torch_act, fix = (torch.bfloat16, 2.0**126) if act is dtypes.bf16 else (torch.float16, 2.0**14)
    truth = codec.decode(codes, dtypes.e2m1)
    for lane in range(32):
        g, t = lane // 4, lane % 4
        for p in range(16):
            x = words[4 * lane + p // 4]  # one 16-byte chunk: lane l holds words 4l .. 4l + 3
            em_op, sign_op = packing.E2M1_SLOTS[act][p % 4]
            pair = (_kernel_op(em_op, x) & em_mask) | (_kernel_op(sign_op, x) & 0x80008000)
            halves = torch.tensor([pair & 0xFFFF, pair >> 16], dtype=torch.int32).to(torch.int16).view(torch_act)
            j, r = p // 2, p % 2
            for h in range(2):
                k, n = 2 * t + h + 8 * r, g + 8 * j
                assert float(halves[h]) * fix == float(truth[n, k]), (act, lane, p, h, int(codes[n, k]))


def test_scale_rows_are_permuted_so_a_lane_reads_its_eight_columns_side_by_side() -> None:
    rows = torch.arange(128, dtype=torch.int32).reshape(1, 128)
    perm = packing.permute_columns(rows)
    for g in range(8):
        for j in range(8):
            assert int(perm[0, 64 + g * 8 + j]) == 64 + g + 8 * j
    assert torch.equal(packing.unpermute_columns(perm), rows)


def test_signed_codes_are_stored_with_the_bias_so_the_kernel_reads_unsigned() -> None:
    fmt = _wf("s4", "channel", "f32")
    q = quantized.quantize(torch.randn(64, 128), QuantFormat(fmt))
    p = packing.pack(q, dtypes.f16)
    stored = packing.unpack_blocks(p.data, 4)[:64, :128]
    assert torch.equal(stored, q.codes() ^ 8)


def test_packing_runs_where_the_tensor_lives_and_keeps_dtypes() -> None:
    q = quantized.quantize(torch.randn(64, 256), presets.get("nvfp4_w4a16"))
    p = packing.pack(q, dtypes.bf16)
    assert p.data.dtype is torch.uint8 and p.scales.dtype is torch.uint8  # e4m3 codes stay 8-bit
    assert p.gscale is not None and p.gscale.dtype is torch.float32
    q2 = quantized.quantize(torch.randn(64, 256), presets.get("awq_int4"))
    p2 = packing.pack(q2, dtypes.bf16)
    assert p2.scales.dtype is torch.bfloat16 and p2.zeros.dtype is torch.bfloat16


def test_uneven_act_order_groups_are_refused_with_the_rule() -> None:
    fmt = presets.get("gptq_int4_act_order")
    g_idx = torch.zeros(256, dtype=torch.int32)
    g_idx[200:] = 1
    q = quantized.quantize(torch.randn(64, 256), fmt, g_idx=g_idx)
    with pytest.raises(UnsupportedError, match="groups"):
        packing.pack(q, dtypes.f16)


def test_pack_refuses_other_activation_dtypes_and_non_tensors() -> None:
    q = quantized.quantize(torch.randn(64, 256), presets.get("gptq_int4"))
    with pytest.raises(InvalidInputError, match="allowed: f16, bf16"):
        packing.pack(q, dtypes.f32)
    with pytest.raises(InvalidInputError, match="QuantizedTensor"):
        packing.pack(torch.zeros(3), dtypes.f16)


def test_float_zero_points_are_unsupported_with_an_alternative() -> None:
    fmt = WeightFormat(dtypes.u4, ScaleSpec(Granularity.GROUP, dtypes.f16, 128), ZeroPointSpec.FLOAT)
    q = quantized.quantize(torch.randn(64, 256), QuantFormat(fmt))
    with pytest.raises(UnsupportedError, match="integer zero points"):
        packing.pack(q, dtypes.f16)


def test_padding_holds_zero_codes_and_the_kernel_zero_fills_activations_there() -> None:
    # Padded k multiply activations the kernel loads as zeros (cp.async zero fill), padded n are never stored.
    q = quantized.quantize(torch.randn(70, 200), QuantFormat(_wf("u4", "channel", "f16", zp="int")))
    p = packing.pack(q, dtypes.f16)
    stored = packing.unpack_blocks(p.data, 4)
    assert p.k_pad == 256 and p.n_pad == 128
    assert int(stored[:, 200:].count_nonzero()) == 0 and int(stored[70:].count_nonzero()) == 0
    assert codec.packed_size(200, 4) == q.data.shape[1]


def _s4(scale_dtype: str) -> QuantFormat:
    return QuantFormat(_wf("s4", sdt=scale_dtype, group=128))


@pytest.mark.parametrize("sdt", ["bf16", "f32"])
@pytest.mark.parametrize("magnitude", [1e-9, 1e-6, 1e6, 1e30])
def test_scales_outside_f16s_normal_range_move_a_power_of_two_into_the_global_scale(sdt: str, magnitude: float) -> None:
    # bf16 / f32 group scales packed for f16 activations used to become zeros, subnormals or inf (every output of a
    # layer 0, or inf, with no error). Now they are stored times 2^-e inside f16's normal range and the kernel's
    # epilogue takes 2^e with the global scale: the stored scales times the global scale are the f16 roundings of the
    # format's scales, exactly (bf16 scales: the format's scales themselves).
    q = quantized.quantize(torch.randn(96, 256) * magnitude * (1 + torch.rand(96, 1)), _s4(sdt))
    p = packing.pack(q, dtypes.f16)
    assert p.scale_shift != 0 and p.gscale is not None and float(p.gscale) == 2.0**p.scale_shift
    stored = packing.unpermute_columns(p.scales)[:2, :96].float()
    assert bool(((stored.abs() >= 2.0**-14) & (stored.abs() <= 65504)).all()), "scales outside f16's normal range"
    exact = codec.decode(q.scales, q.format.weight.scale.dtype, out_dtype=torch.float32).T
    assert torch.equal(stored * float(p.gscale), (exact * 2.0**-p.scale_shift).half().float() * 2.0**p.scale_shift)
    u = packing.unpack(p, q.format)
    assert torch.equal(u.data, q.data) and u.global_scale is None
    if sdt == "bf16":
        assert torch.equal(u.scales, q.scales)
    kept = packing.pack(q, dtypes.bf16)  # bf16's range holds them: nothing moves
    assert kept.scale_shift == 0 and kept.gscale is None


def test_scales_inside_the_range_are_packed_as_before() -> None:
    for sdt, act in (("f16", dtypes.f16), ("f16", dtypes.bf16), ("bf16", dtypes.f16), ("f32", dtypes.f16)):
        q = quantized.quantize(torch.randn(64, 256), _s4(sdt))
        p = packing.pack(q, act)
        assert p.scale_shift == 0 and p.gscale is None
        stored = packing.unpermute_columns(p.scales)[:2, :64]
        assert torch.equal(stored, codec.decode(q.scales, q.format.weight.scale.dtype, out_dtype=torch.float32).T.to(
            stored.dtype))


def test_scales_too_wide_for_f16_or_not_finite_are_refused() -> None:
    rows = torch.ones(64, 1)
    rows[0], rows[1] = 1e-8, 1e6  # 2^-27 .. 2^20 of scale: wider than f16's 2^-14 .. 2^16 at any offset
    q = quantized.quantize(torch.randn(64, 256) * rows, _s4("f32"))
    with pytest.raises(InvalidInputError,
                       match=r"span .* and some channel's largest is .*: wider than f16 holds[\s\S]*bf16 activations"):
        packing.pack(q, dtypes.f16)
    assert packing.pack(q, dtypes.bf16).scale_shift == 0
    # f16 scales under f16 activations are stored exactly whatever their range (subnormals included): kept as they
    # are where no shift fits, shifted into the normal range where one does.
    spread = torch.ones(64, 1)
    spread[0], spread[1] = 1e-6, 1e4  # scales ~4e-7 (an f16 subnormal) .. ~4e3: wider than 2^30
    f16 = quantized.quantize(torch.randn(64, 256) * spread, _s4("f16"))
    assert float(f16.scales.float().abs().min()) < 2.0**-14
    wide = packing.pack(f16, dtypes.f16)
    assert wide.scale_shift == 0 and wide.gscale is None and torch.equal(packing.unpack(wide, f16.format).scales,
                                                                          f16.scales)
    small = quantized.quantize(torch.randn(64, 256) * 1e-5, _s4("f16"))
    shifted = packing.pack(small, dtypes.f16)
    assert shifted.scale_shift < 0 and torch.equal(packing.unpack(shifted, small.format).scales, small.scales)
    bad = q.scales.clone()
    bad[3, 1] = float("inf")
    with pytest.raises(InvalidInputError, match="not finite"):
        packing.pack(replace(q, scales=bad), dtypes.bf16)


def _operand_weights(p: packing.PackedWeight, q: quantized.QuantizedTensor) -> torch.Tensor:
    """The weights an f16 kernel that scales its operands materialises (element x stored ue8m0 scale, each rounded
    to f16, as dequant/scales.cuh does), times the global scale in f32: a CPU model of that path."""
    n, k = q.shape
    group = q.format.weight.scale.k_group()
    codes = packing.unpermute_columns(p.scales)[: k // group, :n].T
    scale = codec.decode(codes, dtypes.ue8m0, out_dtype=torch.float32).half()
    elems = codec.decode(q.codes(), q.format.weight.dtype, out_dtype=torch.float32).half()
    w = (elems * scale.repeat_interleave(group, 1)).float()
    return w * (float(p.gscale) if p.gscale is not None else 1.0)


@pytest.mark.parametrize("preset", ["mxfp4", "mxint4"])
@pytest.mark.parametrize("magnitude", [1e-12, 1e-7, 3e6, 1e9])
def test_ue8m0_codes_whose_weights_leave_f16_move_a_power_of_two_into_the_global_scale(preset: str,
                                                                                      magnitude: float) -> None:
    # ue8m0 codes were packed as they came: an f16 kernel that scales its operands read 2^-40 as 0 (every output 0)
    # and 2^25 as inf, while the kernels that scale f32 sums got them right: one layer, two answers by M.
    q = quantized.quantize(torch.randn(96, 256) * magnitude * (1 + torch.rand(96, 1)), preset)
    p = packing.pack(q, dtypes.f16)
    assert p.scale_shift != 0 and p.gscale is not None and float(p.gscale) == 2.0**p.scale_shift
    stored = codec.decode(packing.unpermute_columns(p.scales)[:, :96], dtypes.ue8m0, out_dtype=torch.float32)
    largest = float(codec.representable_values(q.format.weight.dtype).abs().max())
    assert float(stored.min()) >= 2.0**-14 and float(stored.max()) * largest <= 65504
    want = quantized.dequantize(q, torch.float64)
    got = _operand_weights(p, q).double()
    assert bool(torch.isfinite(got).all())
    assert torch.allclose(got, want, rtol=2.0**-10, atol=0), float(((got - want).abs() / want.abs()).nan_to_num().max())
    u = packing.unpack(p, q.format)
    assert torch.equal(u.scales, q.scales) and torch.equal(u.data, q.data) and u.global_scale is None
    kept = packing.pack(q, dtypes.bf16)  # bf16's range holds them: nothing moves
    assert kept.scale_shift == 0 and kept.gscale is None


def test_ue8m0_codes_in_range_pack_as_before_and_zero_codes_stay_zero() -> None:
    for act in (dtypes.f16, dtypes.bf16):
        q = quantized.quantize(torch.randn(64, 256), "mxfp4")
        p = packing.pack(q, act)
        assert p.scale_shift == 0 and p.gscale is None
        assert torch.equal(packing.unpermute_columns(p.scales)[:, :64], q.scales.T)
    # an all-zero block's code 0 (2^-127, zero in every kernel) neither forces a shift nor moves with one
    rows = torch.randn(64, 256)
    rows[5, 32:64] = 0
    q = quantized.quantize(rows, "mxfp4")
    scales = q.scales.clone()
    scales[5, 1] = 0
    assert packing.pack(replace(q, scales=scales), dtypes.f16).scale_shift == 0
    tiny = quantized.quantize(rows * 1e-9, "mxfp4")
    scales = tiny.scales.clone()
    scales[5, 1] = 0
    p = packing.pack(replace(tiny, scales=scales), dtypes.f16)
    stored = packing.unpermute_columns(p.scales)[:, :64].T
    assert p.scale_shift < 0 and int(stored[5, 1]) == 0 and int((stored == 0).sum()) == 1
    assert torch.equal(packing.unpack(p, tiny.format).scales, scales)


def test_ue8m0_codes_too_wide_for_f16_keep_each_channels_largest_or_are_refused() -> None:
    rows = torch.ones(64, 1)
    rows[0], rows[1] = 1e-9, 1e3  # channel maxima 2^-32 .. 2^8: wider than f16 holds around e2m1's 6
    q = quantized.quantize(torch.randn(64, 256) * rows, "mxfp4")
    with pytest.raises(InvalidInputError, match=r"ue8m0 scales span 2\^-\d+ \.\. 2\^\d+ and some channel's largest is "
                                                r"2\^-\d+: wider than f16[\s\S]*bf16"):
        packing.pack(q, dtypes.f16)
    assert packing.pack(q, dtypes.bf16).scale_shift == 0
    # one tiny block inside channels of ordinary ones: the largest scale goes to the top of f16's range and that
    # block (2^-30 under its channel's largest) falls under it, as it would in any f16 product
    w = torch.randn(64, 256) * 1e3
    w[7, 64:96] *= 1e-9
    wide = quantized.quantize(w, "mxfp4")
    p = packing.pack(wide, dtypes.f16)
    hi = int(wide.scales.max()) - 127
    assert p.scale_shift == hi - 13 and torch.equal(packing.unpack(p, wide.format).scales, wide.scales)
    got, want = _operand_weights(p, wide).double(), quantized.dequantize(wide, torch.float64)
    assert bool(torch.isfinite(got).all())
    assert bool(((got - want).abs() <= 2.0**-10 * want.abs().amax(dim=1, keepdim=True)).all())
    bad = q.scales.clone()
    bad[3, 1] = 255  # ue8m0's NaN
    with pytest.raises(InvalidInputError, match="NaN"):
        packing.pack(replace(q, scales=bad), dtypes.bf16)


def test_a_shifted_scale_range_keeps_the_largest_element_finite() -> None:
    # bf16 scales 2^-30 .. 2^-10 under f16 must move; centred on 1 they reach 2^10, and e4m3's 448 x 2^10 is inf in
    # an f16 kernel that scales its operands. The shift now stops where the largest element stays finite.
    rows = torch.full((64, 1), 1e-3)
    rows[0], rows[1] = 448 * 2.0**-30, 448 * 2.0**-10
    q = quantized.quantize(torch.randn(64, 256).clamp(-1, 1) * rows, QuantFormat(_wf("e4m3", sdt="bf16")))
    p = packing.pack(q, dtypes.f16)
    stored = packing.unpermute_columns(p.scales)[:2, :64].T.float()
    assert p.scale_shift != 0 and float(stored.max()) * 448 <= 65504 and float(stored.min()) >= 2.0**-14
    elems = codec.decode(q.codes(), dtypes.e4m3, out_dtype=torch.float32).half()
    w = (elems * stored.half().repeat_interleave(128, 1)).float() * float(p.gscale)
    want = quantized.dequantize(q, torch.float64)
    assert bool(torch.isfinite(w).all())
    assert bool(((w.double() - want).abs() <= 2.0**-10 * want.abs().amax(dim=1, keepdim=True)).all())
    wider = rows.clone()
    wider[0] = 448 * 2.0**-40  # 2^-40 .. 2^-10: no offset holds both ends with e4m3 elements
    with pytest.raises(InvalidInputError, match=r"wider than f16 holds with e4m3 elements \(up to 448"):
        packing.pack(quantized.quantize(torch.randn(64, 256).clamp(-1, 1) * wider, q.format), dtypes.f16)


def test_bit_permutation_by_byte_tables_moves_each_bit_as_the_definition() -> None:
    def bit_by_bit(words: torch.Tensor, perm: tuple[int, ...], inverse: bool) -> torch.Tensor:
        out = torch.zeros_like(words)
        for c, d in enumerate(perm):
            src, dst = (d, c) if inverse else (c, d)
            out |= ((words >> src) & 1) << dst
        return out

    words = torch.randint(0, 2**32, (4096,), dtype=torch.int64, generator=torch.Generator().manual_seed(3))
    perms = [packing.e2m1_swizzle(dtypes.f16), packing.e2m1_swizzle(dtypes.bf16),
             tuple(torch.randperm(32, generator=torch.Generator().manual_seed(5)).tolist())]
    for perm in perms:
        for inverse in (False, True):
            assert torch.equal(packing._permute_bits(words, perm, inverse), bit_by_bit(words, perm, inverse))


@pytest.mark.gpu
def test_cuda_packs_exactly_as_cpu() -> None:
    # pack runs on the weight's device: its byte-at-a-time streams, byte-table swizzle and scale shifts must give
    # the same bytes on a GPU as here
    for name, g_idx in (("gptq_int4", None), ("gptq_int3_act_order", torch.randperm(256) // 128), ("mxfp4", None),
                        ("nvfp4_w4a16", None), ("fp8_block", None), ("awq_int4", None), ("mxint4", None)):
        idx = None if g_idx is None else g_idx.to(torch.int32)
        q = quantized.quantize(torch.randn(96, 256) * 1e-5, name, g_idx=idx)  # small: the scale shifts take part
        for act in (dtypes.f16, dtypes.bf16):
            cpu, gpu = packing.pack(q, act), packing.pack(q.to("cuda"), act)
            assert cpu.scale_shift == gpu.scale_shift, name
            for part in ("data", "scales", "zeros", "chscale", "gscale", "perm"):
                a, b = getattr(cpu, part), getattr(gpu, part)
                assert (a is None and b is None) or torch.equal(b.cpu(), a), (name, str(act), part)


def test_products_stay_finite_after_rounding_and_for_scales_already_of_the_activation_dtype() -> None:
    # f32 scale 146.2 rounds to f16 146.25, and e4m3's 448 x 146.25 = 65520 is inf in f16: the bound is taken on
    # the rounded scale
    w = torch.full((64, 256), 1.0)
    w[:, ::32] = 146.2 * 448
    q = quantized.quantize(w, QuantFormat(_wf("e4m3", sdt="f32", group=32)))
    p = packing.pack(q, dtypes.f16)
    stored = packing.unpermute_columns(p.scales)[:8, :64].half()
    assert bool(torch.isfinite(stored * torch.tensor(448.0, dtype=torch.float16)).all()) and p.scale_shift > 0
    # f16 scales under f16 were kept as stored even where 15 x scale overflows (u4 with zero points): now shifted
    rows = torch.ones(64, 1)
    rows[0] = 2e-4
    big = quantized.quantize(torch.randn(64, 256) * 12000 * rows + 3000, QuantFormat(_wf("u4", sdt="f16", zp="int")))
    assert float(big.scales.float().max()) * 15 > 65504
    shifted = packing.pack(big, dtypes.f16)
    stored = packing.unpermute_columns(shifted.scales)[:2, :64].half()
    assert shifted.scale_shift > 0 and bool(torch.isfinite(stored * torch.tensor(15.0, dtype=torch.float16)).all())
    assert torch.equal(packing.unpack(shifted, big.format).scales, big.scales)


def test_e4m3_scales_whose_products_pass_f16_are_refused_under_f16_only() -> None:
    fmt = QuantFormat(_wf("e4m3", sdt="e4m3", group=32))
    q = quantized.quantize(torch.randn(64, 256) * 3e4, fmt)  # weights past f16's range: scales ~ 270, x 448 > 65504
    with pytest.raises(InvalidInputError, match=r"e4m3 scales reach .*e4m3 elements up to 448 times them pass f16"):
        packing.pack(q, dtypes.f16)
    assert packing.pack(q, dtypes.bf16).scale_shift == 0
    small = quantized.quantize(torch.randn(64, 256), fmt)
    assert packing.pack(small, dtypes.f16).scale_shift == 0


def test_shifts_stay_within_a_normal_float32_power_of_two_and_bounds_use_the_exact_rounding() -> None:
    from humming.core import scale_range

    # scales near float32's subnormals: a shift past 2^+-126 made the stored scales inf (ldexp in float32) and the
    # global scale a subnormal
    for name, mag, act in (("fp8_block", 1e-37, dtypes.f16), ("fp8_block", 1e-37, dtypes.bf16)):
        q = quantized.quantize(torch.randn(128, 256) * mag, name)
        p = packing.pack(q, act)
        assert abs(p.scale_shift) <= 126 and bool(torch.isfinite(p.scales.float()).all()), (name, str(act))
        assert bool((p.scales.float() != 0).all()) and float(p.gscale) > 0
        back = packing.unpack(p, q.format).scales  # f32 scales rounded into the activation dtype: its precision
        assert torch.allclose(back, q.scales, rtol=2.0**-8, atol=0)
    # 8188 is exact in f16, and 8 x 8188 = 65504: e = 0 fits; a margin of half an ulp refused it
    fits = torch.tensor([[2.0**-14], [8188.0]])
    assert scale_range.fit_scales(fits, dtypes.f16, dtypes.f32, dtypes.s4) == 0
    assert scale_range.fit_scales(torch.tensor([[2.0**-13], [8190.5]]), dtypes.f16, dtypes.f32, dtypes.s4) == 1  # -> 8192
    # codes that would fall under 1 after a shift become 0, as every kernel reads them
    codes = torch.tensor([[0, 3, 200]], dtype=torch.uint8)
    assert scale_range.shift_codes(codes, -5).tolist() == [[0, 0, 195]]


def test_pack_refuses_channel_tensor_and_global_scales_that_are_not_finite() -> None:
    # They go to the kernel as f32 values (group scales were already checked): a NaN or inf there made every output of
    # its column, or of the whole weight, NaN without a word (e.g. a checkpoint's NaN weight_scale_2).
    q = quantized.quantize(torch.randn(64, 128), QuantFormat(_wf("s4", "channel", "f32")))
    bad = q.scales.clone()
    bad[3] = float("nan")
    with pytest.raises(InvalidInputError, match=r"channel scales must be finite; 1 value\(s\) are NaN or inf"):
        packing.pack(replace(q, scales=bad), dtypes.f16)
    q = quantized.quantize(torch.randn(64, 128), QuantFormat(_wf("s2", "tensor", "f32")))
    with pytest.raises(InvalidInputError, match="the tensor scale must be finite"):
        packing.pack(replace(q, scales=torch.full_like(q.scales, float("inf"))), dtypes.f16)
    q = quantized.quantize(torch.randn(64, 128), "nvfp4_w4a16")
    with pytest.raises(InvalidInputError, match="the global scale must be finite"):
        packing.pack(replace(q, global_scale=torch.tensor(float("nan"))), dtypes.bf16)
