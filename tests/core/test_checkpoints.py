"""Checkpoint readers: the public layouts written here from their definitions, read back, and known words."""

from __future__ import annotations

import pytest
import torch

from humming.core import checkpoints, codec, dtypes, packing, quantized
from humming.core.formats import Granularity, QuantFormat, ScaleSpec, WeightFormat, ZeroPointSpec
from humming.errors import InvalidInputError


def _i32(values: list[int]) -> list[int]:
    return [v - (1 << 32) if v >= 1 << 31 else v for v in values]


def _stream_words(codes: list[int], bits: int) -> list[int]:
    """Codes as one LSB-first bit stream cut into 32-bit words (GPTQ's packing, by its definition)."""
    stream = sum(int(c) << (bits * i) for i, c in enumerate(codes))
    return _i32([(stream >> (32 * w)) & 0xFFFFFFFF for w in range(len(codes) * bits // 32)])


def _gptq_tensors(q: quantized.QuantizedTensor, bits: int, v1: bool) -> tuple[torch.Tensor, torch.Tensor]:
    codes, (n, k) = q.codes(), q.shape
    qweight = torch.tensor([_stream_words(codes[c].tolist(), bits) for c in range(n)], dtype=torch.int32).T
    stored = q.zeros.T.to(torch.int64) - (1 if v1 else 0)  # [groups, N]
    qzeros = torch.tensor([_stream_words((row & ((1 << bits) - 1)).tolist(), bits) for row in stored],
                          dtype=torch.int32)
    return qweight.contiguous(), qzeros


def _gptq_checkpoint(q: quantized.QuantizedTensor, prefix: str, v1: bool) -> dict[str, torch.Tensor]:
    """A 4-bit GPTQ layer's tensors by name, as a state dict holds them."""
    qweight, qzeros = _gptq_tensors(q, 4, v1)
    return {f"{prefix}.qweight": qweight, f"{prefix}.qzeros": qzeros, f"{prefix}.scales": q.scales.T.contiguous()}


def _awq_words(codes: torch.Tensor) -> torch.Tensor:
    """[R, N] codes -> [R, N / 8] words, nibble i of word j holding column 8j + AWQ_ORDER[i] (AutoAWQ's packing)."""
    rows = []
    for r in codes.tolist():
        rows.append(_i32([sum(r[8 * j + checkpoints.AWQ_ORDER[i]] << (4 * i) for i in range(8))
                          for j in range(len(r) // 8)]))
    return torch.tensor(rows, dtype=torch.int32)


def test_known_words_decode_as_their_layouts_say() -> None:
    word = 0x76543210
    awq = checkpoints.from_awq(torch.full((16, 1), word, dtype=torch.int32), torch.zeros(1, 1, dtype=torch.int32),
                               torch.ones(1, 8, dtype=torch.float16))
    # codes [N = 8, K = 16]: output column n holds nibble i where AWQ_ORDER[i] = n, at every k
    assert awq.codes().tolist() == [[v] * 16 for v in (0, 4, 1, 5, 2, 6, 3, 7)]
    gptq = checkpoints.from_gptq(torch.full((4, 32), word, dtype=torch.int32), torch.zeros(1, 4, dtype=torch.int32),
                                 torch.ones(1, 32, dtype=torch.float16), bits=4, checkpoint_format="gptq_v2",
                                 symmetric=False)
    assert gptq.codes()[5].tolist() == [0, 1, 2, 3, 4, 5, 6, 7] * 4
    # 3 bits: codes 0..7 repeated over 32 k, fields crossing the words at k = 10 and 21
    values = [i % 8 for i in range(32)]
    words = torch.tensor(_stream_words(values, 3), dtype=torch.int32).reshape(3, 1).repeat(1, 32)
    g3 = checkpoints.from_gptq(words, torch.zeros(1, 3, dtype=torch.int32), torch.ones(1, 32, dtype=torch.float16),
                               bits=3, checkpoint_format="gptq_v2")
    assert g3.codes()[0].tolist() == values and g3.format.weight.zero_point.value == "int"
    # gpt-oss: the even element in the low nibble
    mx = checkpoints.from_mxfp4(torch.full((2, 1, 16), 0x21, dtype=torch.uint8), torch.full((2, 1), 127,
                                                                                            dtype=torch.uint8))
    assert quantized.dequantize(mx)[0, :4].tolist() == [0.5, 1.0, 0.5, 1.0]


@pytest.mark.parametrize("bits", [2, 3, 4, 8])
@pytest.mark.parametrize("v1", [True, False])
def test_gptq_layers_read_back_to_the_same_weights(bits: int, v1: bool) -> None:
    q = quantized.quantize(torch.randn(64, 256) + 0.3, f"gptq_int{bits}")
    if v1:  # v1 cannot hold a zero point of 0 (stored as -1)
        q = quantized.QuantizedTensor(q.format, q.shape, q.data, q.scales, q.zeros.clamp(min=1), None, None)
    qweight, qzeros = _gptq_tensors(q, bits, v1)
    got = checkpoints.from_gptq(qweight, qzeros, q.scales.T.contiguous(), bits=bits,
                                checkpoint_format="gptq" if v1 else "gptq_v2", group_size=128)
    assert got.format.weight.dtype is dtypes.DType.parse(f"u{bits}") and got.zeros is not None
    assert torch.equal(quantized.dequantize(got), quantized.dequantize(q))
    packing.pack(got, dtypes.f16)


@pytest.mark.parametrize("bits", [3, 4])
def test_symmetric_gptq_becomes_signed_codes_and_act_order_keeps_its_g_idx(bits: int) -> None:
    k = 256
    g_idx = (torch.randperm(k) // 128).to(torch.int32)
    q = quantized.quantize(torch.randn(64, k), f"gptq_int{bits}_act_order", g_idx=g_idx)
    mid = 1 << (bits - 1)
    q = quantized.QuantizedTensor(q.format, q.shape, q.data, q.scales, torch.full_like(q.zeros, mid), None, g_idx)
    qweight, qzeros = _gptq_tensors(q, bits, v1=True)
    got = checkpoints.from_gptq(qweight, qzeros, q.scales.T.contiguous(), g_idx, bits=bits)
    wf = got.format.weight
    assert wf.dtype is dtypes.DType.parse(f"s{bits}") and got.zeros is None and wf.act_order
    assert torch.equal(quantized.dequantize(got), quantized.dequantize(q))
    kept = checkpoints.from_gptq(qweight, qzeros, q.scales.T.contiguous(), g_idx, bits=bits, symmetric=False)
    assert kept.zeros is not None and torch.equal(quantized.dequantize(kept), quantized.dequantize(q))
    plain = checkpoints.from_gptq(qweight, qzeros, q.scales.T.contiguous(), torch.arange(k, dtype=torch.int32) // 128,
                                  bits=bits)
    assert plain.g_idx is None and not plain.format.weight.act_order
    packing.pack(got, dtypes.bf16)


def test_awq_and_mxfp4_layers_read_back_to_the_same_weights() -> None:
    q = quantized.quantize(torch.randn(96, 256), "awq_int4")
    got = checkpoints.from_awq(_awq_words(q.codes().T.contiguous()), _awq_words(q.zeros.T.contiguous()),
                               q.scales.T.contiguous())
    assert torch.equal(quantized.dequantize(got), quantized.dequantize(q))
    assert got.format.weight == q.format.weight
    mx = quantized.quantize(torch.randn(64, 256), "mxfp4")
    back = checkpoints.from_mxfp4(mx.data.reshape(64, 8, 16), mx.scales)
    assert torch.equal(back.data, mx.data) and torch.equal(quantized.dequantize(back), quantized.dequantize(mx))
    assert back.format.weight == mx.format.weight


def test_malformed_checkpoint_tensors_are_refused_with_what_was_expected() -> None:
    s = torch.ones(2, 32, dtype=torch.float16)
    qw, qz = torch.zeros(32, 32, dtype=torch.int32), torch.zeros(2, 4, dtype=torch.int32)
    with pytest.raises(InvalidInputError, match="qweight must be a 2-D torch.int32"):
        checkpoints.from_gptq(qw.to(torch.int64), qz, s, bits=4)
    with pytest.raises(InvalidInputError, match=r"qzeros has shape \[2, 3\]; expected \[2, 4\]"):
        checkpoints.from_gptq(qw, qz[:, :3], s, bits=4)
    with pytest.raises(InvalidInputError, match="group_size=64, but 2 scale rows over K=256 make groups of 128"):
        checkpoints.from_gptq(qw, qz, s, bits=4, group_size=64)
    with pytest.raises(InvalidInputError, match="zero point of 15 is 16 in the v1 .* checkpoint_format='gptq_v2'"):
        checkpoints.from_gptq(qw, torch.full((2, 4), -1, dtype=torch.int32), s, bits=4)
    with pytest.raises(InvalidInputError, match="symmetric=True, but the zero points are not all 8"):
        checkpoints.from_gptq(qw, qz, s, bits=4, symmetric=True)
    with pytest.raises(InvalidInputError, match="bits=5"):
        checkpoints.from_gptq(qw, qz, s, bits=5)
    with pytest.raises(InvalidInputError, match=r"scales has shape \[2, 16\]; expected \[groups, 32\]"):
        checkpoints.from_awq(torch.zeros(256, 4, dtype=torch.int32), torch.zeros(2, 4, dtype=torch.int32), s[:, :16])
    with pytest.raises(InvalidInputError, match=r"blocks of 4 x 64 elements need \[4, 2\]"):
        checkpoints.from_mxfp4(torch.zeros(4, 2, 16, dtype=torch.uint8), torch.zeros(4, 3, dtype=torch.uint8))


def _ct_words(values: torch.Tensor, bits: int) -> torch.Tensor:
    """[R, C] codes (value + 2^(bits - 1)) -> int32 [R, ceil(C * bits / 32)], 32 / bits a word from the lowest bits
    (compressed-tensors' pack_to_int32 along the last dim, zero-padded)."""
    per = 32 // bits
    rows = []
    for r in values.tolist():
        r = r + [0] * (-len(r) % per)
        rows.append(_i32([sum(int(r[w * per + i]) << (bits * i) for i in range(per)) for w in range(len(r) // per)]))
    return torch.tensor(rows, dtype=torch.int32)


@pytest.mark.parametrize("bits", [4, 8])
def test_compressed_tensors_layers_read_back_to_the_same_weights(bits: int) -> None:
    # asymmetric, groups of 128, K padded inside the last word (weight_shape says where it ends), zero points along N
    k = 250  # not a whole number of words at either width
    q = quantized.quantize(torch.randn(60, k) + 0.2, QuantFormat(WeightFormat(
        dtypes.DType.parse(f"u{bits}"), ScaleSpec(Granularity.GROUP, dtypes.bf16, 25), ZeroPointSpec.INT)))
    got = checkpoints.from_compressed_tensors(_ct_words(q.codes(), bits), q.scales, _ct_words(q.zeros.T, bits).T,
                                              num_bits=bits, weight_shape=torch.tensor([60, k]))
    assert got.format.weight == q.format.weight
    assert torch.equal(quantized.dequantize(got), quantized.dequantize(q))
    # symmetric, per channel: signed codes (value + 2^(bits - 1) on disk), no zero point or an all-zero int8 one
    s = quantized.quantize(torch.randn(64, 256), QuantFormat(WeightFormat(
        dtypes.DType.parse(f"s{bits}"), ScaleSpec(Granularity.CHANNEL, dtypes.f16))))
    stored = s.codes() ^ (1 << (bits - 1))
    for zp in (None, torch.zeros(64, 1, dtype=torch.int8)):
        sym = checkpoints.from_compressed_tensors(_ct_words(stored, bits), s.scales, zp, num_bits=bits)
        assert sym.format.weight == s.format.weight and torch.equal(sym.data, s.data)
    with pytest.raises(InvalidInputError, match=r"weight_shape \[64, 200\] does not fit weight_packed"):
        checkpoints.from_compressed_tensors(_ct_words(stored, bits), s.scales, num_bits=bits, weight_shape=(64, 200))


def test_the_words_read_the_same_on_either_byte_order(monkeypatch: pytest.MonkeyPatch) -> None:
    words = torch.randint(-(2**31), 2**31 - 1, (3, 5), dtype=torch.int32)
    native = checkpoints._words_to_bytes(words).clone()
    monkeypatch.setattr(checkpoints.sys, "byteorder", "big" if checkpoints.sys.byteorder == "little" else "little")
    assert torch.equal(checkpoints._words_to_bytes(words), native)
    assert native[0, :4].tolist() == [(int(words[0, 0]) >> s) & 0xFF for s in (0, 8, 16, 24)]


def test_tensors_of_the_wrong_extent_name_the_one_expected() -> None:
    with pytest.raises(InvalidInputError, match="qweight has 4 rows; 3-bit codes fill whole int32 rows in multiples"):
        checkpoints.from_gptq(torch.zeros(4, 32, dtype=torch.int32), torch.zeros(1, 3, dtype=torch.int32),
                              torch.ones(1, 32, dtype=torch.float16), bits=3)
    with pytest.raises(InvalidInputError, match=r"weight_scale has shape \[2, 64\]; expected \[64, groups\]"):
        checkpoints.from_compressed_tensors(torch.zeros(64, 32, dtype=torch.int32), torch.ones(2, 64))


def test_read_layer_takes_the_reader_and_its_arguments_from_the_quantization_config() -> None:
    p = "model.layers.0.mlp.down_proj"
    q = quantized.quantize(torch.randn(64, 256) + 0.2, "gptq_int4")
    gptq = _gptq_checkpoint(q, p, v1=False)
    got = checkpoints.read_layer(gptq, p, {"quant_method": "gptq", "bits": 4, "group_size": 128,
                                           "checkpoint_format": "gptq_v2", "desc_act": False, "sym": False})
    assert torch.equal(quantized.dequantize(got), quantized.dequantize(q))
    q1 = quantized.QuantizedTensor(q.format, q.shape, q.data, q.scales, q.zeros.clamp(min=1), None, None)
    qweight, qzeros = _gptq_tensors(q1, 4, v1=True)  # a config without checkpoint_format means v1
    v1 = {f"{p}.qweight": qweight, f"{p}.qzeros": qzeros, f"{p}.scales": q.scales.T.contiguous()}
    got = checkpoints.read_layer(v1, p, {"quant_method": "gptq", "bits": 4, "group_size": 128})
    assert torch.equal(quantized.dequantize(got), quantized.dequantize(q1))
    a = quantized.quantize(torch.randn(64, 256), "awq_int4")
    awq = {f"{p}.qweight": _awq_words(a.codes().T.contiguous()), f"{p}.qzeros": _awq_words(a.zeros.T.contiguous()),
           f"{p}.scales": a.scales.T.contiguous()}
    got = checkpoints.read_layer(awq, p, {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True,
                                          "version": "gemm"})
    assert torch.equal(quantized.dequantize(got), quantized.dequantize(a))
    with pytest.raises(InvalidInputError, match="AWQ version='gemv'"):
        checkpoints.read_layer(awq, p, {"quant_method": "awq", "version": "gemv"})
    s = quantized.quantize(torch.randn(64, 256), QuantFormat(WeightFormat(
        dtypes.s4, ScaleSpec(Granularity.GROUP, dtypes.bf16, 128))))
    ct = {f"{p}.weight_packed": _ct_words(s.codes() ^ 8, 4), f"{p}.weight_scale": s.scales,
          f"{p}.weight_shape": torch.tensor([64, 256])}
    config = {"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": {"group_0": {
        "targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "symmetric": True, "strategy": "group",
                                           "group_size": 128}}}}
    got = checkpoints.read_layer(ct, p, config)
    assert got.format.weight == s.format.weight and torch.equal(got.data, s.data)
    asym = dict(config, config_groups={"group_0": {"weights": {"num_bits": 4, "type": "int", "symmetric": False}}})
    with pytest.raises(InvalidInputError, match=r"no 'model.layers.0.mlp.down_proj.weight_zero_point'"):
        checkpoints.read_layer(ct, p, asym)
    with pytest.raises(InvalidInputError, match="quant_method='bitsandbytes'; readable: 'gptq', 'awq'"):
        checkpoints.read_layer(ct, p, {"quant_method": "bitsandbytes"})


def test_fp8_and_nvfp4_layers_read_back_to_the_same_weights() -> None:
    p = "layers.3.proj"
    b = quantized.quantize(torch.randn(200, 384), "fp8_block")
    tensors = {f"{p}.weight": b.data.view(torch.float8_e4m3fn), f"{p}.weight_scale_inv": b.scales}
    got = checkpoints.read_layer(tensors, p, {"quant_method": "fp8", "weight_block_size": [128, 128],
                                              "activation_scheme": "dynamic"})
    assert got.format.weight == b.format.weight and torch.equal(quantized.dequantize(got), quantized.dequantize(b))
    c = quantized.quantize(torch.randn(64, 256), "fp8_channel_w8a16")
    per_channel = checkpoints.from_fp8(c.data.view(torch.float8_e4m3fn), c.scales.reshape(64))
    assert torch.equal(quantized.dequantize(per_channel), quantized.dequantize(c))
    per_tensor = checkpoints.read_layer({f"{p}.weight": c.data, f"{p}.weight_scale": torch.tensor(0.5)}, p,
                                        {"quant_method": "modelopt", "quant_algo": "FP8"})
    assert torch.equal(quantized.dequantize(per_tensor), codec.decode(c.data, dtypes.e4m3) * 0.5)
    n4 = quantized.quantize(torch.randn(64, 256), "nvfp4_w4a16")
    assert n4.global_scale is not None
    nv = {f"{p}.weight": n4.data, f"{p}.weight_scale": n4.scales.view(torch.float8_e4m3fn),
          f"{p}.weight_scale_2": n4.global_scale.reshape(()), f"{p}.input_scale": torch.tensor(1.0)}
    got = checkpoints.read_layer(nv, p, {"quant_method": "modelopt", "quantization": {"quant_algo": "NVFP4"}})
    assert got.format.weight == n4.format.weight and torch.equal(quantized.dequantize(got), quantized.dequantize(n4))
    # known values: byte 0x21 holds 0.5 (low nibble, the even element) then 1.0; scale code 0x38 is 1.0 in e4m3
    one = checkpoints.from_nvfp4(torch.full((1, 8), 0x21, dtype=torch.uint8), torch.full((1, 1), 0x38, dtype=torch.uint8),
                                 torch.tensor([2.0]))
    assert quantized.dequantize(one)[0, :2].tolist() == [1.0, 2.0]
    with pytest.raises(InvalidInputError, match=r"scale has shape \[1, 3\]; blocks of 128 x 128 over 200 x 384 need"):
        checkpoints.from_fp8(b.data, b.scales[:1], block=(128, 128))
    with pytest.raises(InvalidInputError, match="ModelOpt quant_algo='W4A8_AWQ'; readable: 'NVFP4', 'W4A16_NVFP4', 'FP8'"):
        checkpoints.read_layer(nv, p, {"quant_method": "modelopt", "quant_algo": "W4A8_AWQ"})


def test_a_symmetric_layer_with_v2_zeros_under_a_v1_label_reads_as_v2() -> None:
    # Some tools write v2 zero points (8 for 4 bits) into checkpoints whose config says "gptq" (v1 stores 7). With
    # sym=True the reader knows: read as v1, every weight would move one step.
    q = quantized.quantize(torch.randn(64, 256), "gptq_int4")
    q = quantized.QuantizedTensor(q.format, q.shape, q.data, q.scales, torch.full_like(q.zeros, 8), None, None)
    p = "layer"
    tensors = _gptq_checkpoint(q, p, v1=False)  # stored 8
    qweight, qzeros = tensors[f"{p}.qweight"], tensors[f"{p}.qzeros"]
    got = checkpoints.read_layer(tensors, p, {"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True})
    assert got.format.weight.dtype is dtypes.s4 and torch.equal(quantized.dequantize(got), quantized.dequantize(q))
    # without sym the v1 label is taken at its word: zero points of 9, kept as such
    plain = checkpoints.read_layer(tensors, p, {"quant_method": "gptq", "bits": 4, "group_size": 128})
    assert plain.zeros is not None and int(plain.zeros.min()) == 9
    _, qzeros_v1 = _gptq_tensors(q, 4, v1=True)  # stored 7: the real v1 symmetric zero
    tensors[f"{p}.qzeros"] = qzeros_v1
    got = checkpoints.read_layer(tensors, p, {"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True})
    assert torch.equal(quantized.dequantize(got), quantized.dequantize(q))
    with pytest.raises(InvalidInputError, match=r"not all 8 \(stored as 7 in v1, 8 in v2\)"):
        checkpoints.from_gptq(qweight, torch.zeros_like(qzeros), q.scales.T.contiguous(), bits=4, symmetric=True)


def test_the_config_spellings_gptqmodel_and_modelopt_write_are_read() -> None:
    p = "layer"
    q = quantized.quantize(torch.randn(64, 256) + 0.2, "gptq_int4")
    tensors = _gptq_checkpoint(q, p, v1=False)
    # GPTQModel's canonical key is "format" ("checkpoint_format" its older alias): v2 zeros read as v2
    got = checkpoints.read_layer(tensors, p, {"quant_method": "gptq", "bits": 4, "group_size": 128,
                                              "format": "gptq_v2"})
    assert torch.equal(quantized.dequantize(got), quantized.dequantize(q))
    with pytest.raises(InvalidInputError, match="GPTQ checkpoint in the 'marlin' layout; readable: 'gptq' \\(v1\\)"):
        checkpoints.read_layer(tensors, p, {"quant_method": "gptq", "format": "marlin"})
    n4 = quantized.quantize(torch.randn(64, 256), "nvfp4_w4a16")
    nv = {f"{p}.weight": n4.data, f"{p}.weight_scale": n4.scales.view(torch.float8_e4m3fn),
          f"{p}.weight_scale_2": n4.global_scale.reshape(())}
    for config in ({"quantization": {"quant_algo": "NVFP4", "group_size": 16}},  # hf_quant_config.json as written
                   {"quant_method": "modelopt", "quant_algo": "W4A16_NVFP4"}):
        assert torch.equal(quantized.dequantize(checkpoints.read_layer(nv, p, config)), quantized.dequantize(n4))


def test_review_findings_on_fp8_shapes_unpacked_zero_points_and_n() -> None:
    # a block grid holding N values is not per-channel scales; without weight_block_size, a 128 x 128 grid of scales
    # is read as blocks (transformers' default) rather than refused or misread
    b = quantized.quantize(torch.randn(256, 16384), "fp8_block")  # scales [2, 128]: 256 values, N = 256
    with pytest.raises(InvalidInputError, match=r"scale has shape \[2, 128\]; expected one value, \[256, 1\]"):
        checkpoints.from_fp8(b.data, b.scales)
    tensors = {"l.weight": b.data.view(torch.float8_e4m3fn), "l.weight_scale_inv": b.scales}
    got = checkpoints.read_layer(tensors, "l", {"quant_method": "fp8"})
    assert got.format.weight == b.format.weight and torch.equal(quantized.dequantize(got), quantized.dequantize(b))
    # compressed-tensors' older unpacked int8 zero points (signed), beside the packed int32 ones
    q = quantized.quantize(torch.randn(64, 256) + 0.2, "awq_int4")
    packed = _ct_words(q.codes(), 4)
    older = checkpoints.from_compressed_tensors(packed, q.scales, (q.zeros.to(torch.int16) - 8).to(torch.int8))
    newer = checkpoints.from_compressed_tensors(packed, q.scales, _ct_words(q.zeros.T, 4).T.contiguous())
    assert torch.equal(quantized.dequantize(older), quantized.dequantize(q))
    assert torch.equal(quantized.dequantize(newer), quantized.dequantize(q))
    with pytest.raises(InvalidInputError, match=r"N=48 zero points of 3 bits do not fill whole int32 words"):
        checkpoints.from_gptq(torch.zeros(3, 48, dtype=torch.int32), torch.zeros(1, 4, dtype=torch.int32),
                              torch.ones(1, 48, dtype=torch.float16), bits=3)


def test_a_k_that_is_not_a_multiple_of_the_block_is_named_as_such() -> None:
    # the shape message alone read "has shape [4, 1]; ... needs [4, 1]"
    with pytest.raises(InvalidInputError, match="from_nvfp4: K = 24 .* is not a multiple of NVFP4's 16-element block"):
        checkpoints.from_nvfp4(torch.zeros(4, 12, dtype=torch.uint8), torch.zeros(4, 1, dtype=torch.uint8), torch.tensor(1.0))
    with pytest.raises(InvalidInputError, match="from_mxfp4: K = 48 .* is not a multiple of MXFP4's 32-element block"):
        checkpoints.from_mxfp4(torch.zeros(4, 24, dtype=torch.uint8), torch.zeros(4, 1, dtype=torch.uint8))
    with pytest.raises(InvalidInputError, match=r"weight_scale has shape \[4, 1\]; a weight of 4 x 32 elements needs \[4, 2\]"):
        checkpoints.from_nvfp4(torch.zeros(4, 16, dtype=torch.uint8), torch.zeros(4, 1, dtype=torch.uint8), torch.tensor(1.0))
