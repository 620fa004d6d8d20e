"""QuantizedTensor from the tensors public checkpoints store: GPTQ, AWQ, compressed-tensors, FP8, NVFP4, MXFP4.

Each reader takes one linear layer's tensors as a checkpoint holds them (any device; the result stays there) and
returns the canonical QuantizedTensor of ``humming.core.quantized``, which ``QuantLinear.from_quantized`` packs;
``read_layer`` picks the reader and its arguments from a Hugging Face ``quantization_config``.
The layouts, as their public tools write them:

- GPTQ (AutoGPTQ, GPTQModel): ``qweight`` int32 [K * bits / 32, N], the codes of each column an LSB-first bit
  stream along K in 32-bit words (3 bits: 32 codes in 3 words, fields crossing words); ``qzeros`` int32
  [groups, N * bits / 32], the same along N; ``scales`` [groups, N]; ``g_idx`` int32 [K]. w = (q - z) * s, where
  the "gptq" (v1) format stores z - 1 and "gptq_v2" stores z.
- AWQ (AutoAWQ's GEMM layout): ``qweight`` int32 [K, N / 8], word j holding columns 8j + (0, 2, 4, 6, 1, 3, 5, 7) in
  its nibbles from the lowest; ``qzeros`` int32 [groups, N / 8] likewise; ``scales`` [groups, N]. w = (q - z) * s.
- compressed-tensors "pack-quantized" (llm-compressor; 4 or 8 bits): ``weight_packed`` int32 [N, ceil(K * bits / 32)],
  32 / bits codes a word along K from the lowest bits, each code the signed value + 2^(bits - 1); asymmetric
  layers' ``weight_zero_point`` int32 [ceil(N * bits / 32), groups] likewise along N; ``weight_scale`` [N, groups]
  ([N, 1] per channel); ``weight_shape`` (N, K); ``weight_g_idx`` [K]. w = (q - z) * s.
- FP8 (Hugging Face "fp8", e.g. DeepSeek-V3 / Qwen3 FP8; ModelOpt "FP8"): ``weight`` float8_e4m3fn [N, K] and an f32
  ``weight_scale_inv`` (despite the name, multiplied) per 128 x 128 block [ceil(N/128), ceil(K/128)], or a
  ``weight_scale`` per tensor or channel. w = q * s.
- ModelOpt NVFP4: ``weight`` uint8 [N, K / 2], two e2m1 codes a byte (the even element in the low nibble);
  ``weight_scale`` float8_e4m3fn [N, K / 16]; ``weight_scale_2`` f32, one value. w = q * s * s2.
- gpt-oss MXFP4: ``blocks`` uint8 [N, K / 32, 16], two e2m1 codes a byte (the even element in the low nibble);
  ``scales`` uint8 [N, K / 32], ue8m0 exponents (2^(s - 127)).

GPTQ weights whose zero points are all 2^(bits - 1), and compressed-tensors layers without zero points (symmetric
quantization), come back as signed codes without zero points (``symmetric=None`` decides from the data): the same
weights, on the kernels' constant-zero path. A result may share memory with the tensors given (pack copies).

Only weights are read: a checkpoint made for quantized activations (FP8's activation scheme, NVFP4's input scales)
runs here with 16-bit activations, which humming's dense kernels take (W8A16, W4A16), as vLLM serves such a
checkpoint weight-only where its GPU lacks the kernel.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from typing import Any

import torch

from humming.core import codec, dtypes
from humming.core.formats import Granularity, QuantFormat, ScaleSpec, WeightFormat, ZeroPointSpec
from humming.core.presets import get as preset
from humming.core.quantized import QuantizedTensor
from humming.errors import InvalidInputError

_SCALE_DTYPES = {torch.float16: dtypes.f16, torch.bfloat16: dtypes.bf16, torch.float32: dtypes.f32}
#: AWQ's nibble i of a word holds column AWQ_ORDER[i] of its eight.
AWQ_ORDER = (0, 2, 4, 6, 1, 3, 5, 7)


def _need(t: object, name: str, where: str, dtype: torch.dtype, ndim: int) -> torch.Tensor:
    if not isinstance(t, torch.Tensor) or t.dtype is not dtype or t.dim() != ndim:
        got = f"{t.dtype} of {t.dim()} dims" if isinstance(t, torch.Tensor) else type(t).__name__
        raise InvalidInputError(f"{where}: {name} must be a {ndim}-D {dtype} tensor, got {got}")
    return t


def _words_to_bytes(words: torch.Tensor) -> torch.Tensor:
    """int32 [..., W] -> uint8 [..., 4W], each word's bytes from the lowest: the words' LSB-first bit stream."""
    words = words.contiguous()
    if sys.byteorder == "little":  # the words' own memory (every platform torch ships for)
        return words.view(torch.uint8)
    shifts = torch.arange(0, 32, 8, device=words.device, dtype=torch.int32)
    return ((words.unsqueeze(-1) >> shifts) & 0xFF).to(torch.uint8).reshape(*words.shape[:-1], words.shape[-1] * 4)


def _scales(scales: object, where: str, n: int, *, n_first: bool = False) -> tuple[torch.Tensor, int]:
    """(scales as [N, groups], groups) from a checkpoint's [groups, N] (or [N, groups] where ``n_first``)."""
    name, shape = ("weight_scale", f"[{n}, groups]") if n_first else ("scales", f"[groups, {n}]")
    if not isinstance(scales, torch.Tensor) or scales.dtype not in _SCALE_DTYPES or scales.dim() != 2:
        raise InvalidInputError(f"{where}: {name} must be a 2-D float16, bfloat16 or float32 tensor {shape}")
    per_n = scales if n_first else scales.T
    if per_n.shape[0] != n:
        raise InvalidInputError(f"{where}: {name} has shape {list(scales.shape)}; expected {shape}")
    return per_n.contiguous(), per_n.shape[1]


def _group_size(k: int, groups: int, group_size: int | None, where: str) -> int:
    if groups < 1 or k % groups:
        raise InvalidInputError(f"{where}: {groups} scale rows do not divide K={k} into groups")
    if group_size is not None and group_size not in (-1, k // groups):
        raise InvalidInputError(f"{where}: group_size={group_size}, but {groups} scale rows over K={k} make groups "
                                f"of {k // groups}")
    return k // groups


def _act_order(g_idx: torch.Tensor | None, k: int, group: int, where: str) -> torch.Tensor | None:
    """g_idx as a QuantizedTensor takes it: None where absent or in plain group order (no act order)."""
    if g_idx is None:
        return None
    _need(g_idx, "g_idx", where, torch.int32, 1)
    if g_idx.shape[0] != k:
        raise InvalidInputError(f"{where}: g_idx has {g_idx.shape[0]} entries; expected K={k}")
    plain = torch.arange(k, device=g_idx.device, dtype=torch.int32) // group
    return None if torch.equal(g_idx, plain) else g_idx.contiguous()


def _signed(data: torch.Tensor, bits: int, shape: tuple[int, int], scale: ScaleSpec, scales: torch.Tensor,
            g_idx: torch.Tensor | None) -> QuantizedTensor:
    """Codes stored as value + 2^(bits - 1) as the canonical signed codes (two's complement: the top bit flipped)."""
    flip = codec.pack_codes(torch.full((1, shape[1]), 1 << (bits - 1), dtype=torch.uint8, device=data.device), bits)
    fmt = WeightFormat(dtypes.DType.parse(f"s{bits}"), scale, act_order=g_idx is not None)
    return QuantizedTensor(QuantFormat(fmt), shape, (data ^ flip).contiguous(), scales, g_idx=g_idx)


def from_gptq(qweight: torch.Tensor, qzeros: torch.Tensor, scales: torch.Tensor, g_idx: torch.Tensor | None = None,
              *, bits: int, group_size: int | None = None, checkpoint_format: str = "gptq",
              symmetric: bool | None = None) -> QuantizedTensor:
    """One GPTQ layer (module docstring) as a QuantizedTensor. ``checkpoint_format`` is the quantization config's
    ("gptq": zero points stored less one; "gptq_v2": as they are). ``g_idx`` in plain group order is dropped (no
    act order); any other makes an act-order format. ``symmetric`` None: signed codes without zero points when every
    zero point is 2^(bits - 1), else unsigned codes with them; True insists on the first (and reads zero points
    stored as 2^(bits - 1) under a "gptq" label as the v2 ones they are), False keeps zero points.
    """
    where = "from_gptq"
    if bits not in (2, 3, 4, 8):
        raise InvalidInputError(f"{where}: bits={bits}; GPTQ checkpoints hold 2, 3, 4 or 8")
    if checkpoint_format not in ("gptq", "gptq_v2"):
        raise InvalidInputError(f"{where}: checkpoint_format={checkpoint_format!r}; allowed: 'gptq', 'gptq_v2'")
    _need(qweight, "qweight", where, torch.int32, 2)
    _need(qzeros, "qzeros", where, torch.int32, 2)
    if qweight.shape[0] * 32 % bits:
        raise InvalidInputError(f"{where}: qweight has {qweight.shape[0]} rows; {bits}-bit codes fill whole int32 rows "
                                f"in multiples of {bits // math.gcd(bits, 32)}")
    n, k = qweight.shape[1], qweight.shape[0] * 32 // bits
    per_n, groups = _scales(scales, where, n)
    group = _group_size(k, groups, group_size, where)
    if n * bits % 32:
        raise InvalidInputError(f"{where}: N={n} zero points of {bits} bits do not fill whole int32 words in qzeros; "
                                f"GPTQ layers have N a multiple of {32 // math.gcd(bits, 32)}")
    if tuple(qzeros.shape) != (groups, n * bits // 32):
        raise InvalidInputError(f"{where}: qzeros has shape {list(qzeros.shape)}; expected "
                                f"[{groups}, {n * bits // 32}] (N={n} columns of {bits} bits in int32 words)")
    data = _words_to_bytes(qweight.T.contiguous())  # [N, K * bits / 8]: already the canonical bit stream
    stored = codec.unpack_codes(_words_to_bytes(qzeros), bits, n).T.to(torch.int16)  # [N, groups]
    mid = 1 << (bits - 1)
    if checkpoint_format == "gptq" and symmetric and bool((stored == mid).all()):
        # A symmetric v1 layer stores mid - 1. mid everywhere is v2's symmetric zero under a v1 label (tools that
        # write v2 zeros without saying so exist); read as v1 it would shift every weight by one step.
        checkpoint_format = "gptq_v2"
    zeros = stored + 1 if checkpoint_format == "gptq" else stored
    if bool((zeros >= 1 << bits).any()):
        raise InvalidInputError(f"{where}: a stored zero point of {(1 << bits) - 1} is {1 << bits} in the v1 "
                                f"('gptq') format, past {bits} bits; if the checkpoint is v2, pass "
                                "checkpoint_format='gptq_v2'")
    is_symmetric = bool((zeros == mid).all())
    if symmetric and not is_symmetric:
        raise InvalidInputError(f"{where}: symmetric=True, but the zero points are not all {mid} (stored as "
                                f"{mid - 1} in v1, {mid} in v2)")
    order = _act_order(g_idx, k, group, where)
    scale = ScaleSpec(Granularity.GROUP, _SCALE_DTYPES[per_n.dtype], group)
    if is_symmetric and symmetric is not False:
        return _signed(data, bits, (n, k), scale, per_n, order)
    fmt = WeightFormat(dtypes.DType.parse(f"u{bits}"), scale, ZeroPointSpec.INT, act_order=order is not None)
    return QuantizedTensor(QuantFormat(fmt), (n, k), data, per_n, zeros.to(torch.uint8).contiguous(), g_idx=order)


def from_compressed_tensors(weight_packed: torch.Tensor, weight_scale: torch.Tensor,
                            weight_zero_point: torch.Tensor | None = None, weight_g_idx: torch.Tensor | None = None, *,
                            num_bits: int = 4,
                            weight_shape: torch.Tensor | tuple[int, int] | list[int] | None = None) -> QuantizedTensor:
    """One compressed-tensors "pack-quantized" layer (module docstring) as a QuantizedTensor: signed codes without
    zero points for a symmetric layer (no zero point, or an all-zero unpacked one), unsigned codes with integer zero
    points for an asymmetric one (the int32 zero points packed along N)."""
    where = "from_compressed_tensors"
    if num_bits not in (4, 8):
        raise InvalidInputError(f"{where}: num_bits={num_bits}; pack-quantized layers hold 4 or 8")
    _need(weight_packed, "weight_packed", where, torch.int32, 2)
    per_word = 32 // num_bits
    n = weight_packed.shape[0]
    k = weight_packed.shape[1] * per_word
    if weight_shape is not None:
        n_k = [int(v) for v in (weight_shape.tolist() if isinstance(weight_shape, torch.Tensor) else weight_shape)]
        if len(n_k) != 2 or n_k[0] != n or not 0 < n_k[1] <= k or -(-n_k[1] // per_word) != weight_packed.shape[1]:
            raise InvalidInputError(f"{where}: weight_shape {n_k} does not fit weight_packed "
                                    f"{list(weight_packed.shape)} "
                                    f"({per_word} codes a word along K)")
        k = n_k[1]
    if k * num_bits % 8:
        raise InvalidInputError(f"{where}: K={k} codes of {num_bits} bits do not fill whole bytes")
    scales, groups = _scales(weight_scale, where, n, n_first=True)
    group = _group_size(k, groups, None, where)
    data = _words_to_bytes(weight_packed)[:, : codec.packed_size(k, num_bits)].contiguous()
    granularity = Granularity.CHANNEL if groups == 1 else Granularity.GROUP
    scale = ScaleSpec(granularity, _SCALE_DTYPES[scales.dtype], None if groups == 1 else group)
    order = _act_order(weight_g_idx, k, group, where) if groups > 1 else None
    zp = weight_zero_point
    if zp is None or (zp.dtype is torch.int8 and not bool(zp.any())):
        return _signed(data, num_bits, (n, k), scale, scales, order)
    if isinstance(zp, torch.Tensor) and zp.dtype is torch.int8 and tuple(zp.shape) == (n, groups):
        # unpacked signed zero points, as compressed-tensors kept them before it packed them along N
        lo, hi = -(1 << (num_bits - 1)), (1 << (num_bits - 1)) - 1
        if int(zp.min()) < lo or int(zp.max()) > hi:
            raise InvalidInputError(f"{where}: int8 zero points span [{int(zp.min())}, {int(zp.max())}], outside "
                                    f"{num_bits} bits' signed range [{lo}, {hi}]")
        zeros = (zp.to(torch.int16) + (1 << (num_bits - 1))).to(torch.uint8)
    else:
        _need(zp, "weight_zero_point", where, torch.int32, 2)
        if tuple(zp.shape) != (-(-n // per_word), groups):
            raise InvalidInputError(f"{where}: weight_zero_point has shape {list(zp.shape)}; expected int32 "
                                    f"[{-(-n // per_word)}, {groups}] (N={n} zero points packed {per_word} a word) "
                                    f"or int8 [{n}, {groups}] (unpacked)")
        words = _words_to_bytes(zp.T.contiguous())[:, : codec.packed_size(n, num_bits)]
        zeros = codec.unpack_codes(words, num_bits, n).T
    fmt = WeightFormat(dtypes.DType.parse(f"u{num_bits}"), scale, ZeroPointSpec.INT, act_order=order is not None)
    return QuantizedTensor(QuantFormat(fmt), (n, k), data, scales, zeros.contiguous(), g_idx=order)


def _awq_columns(words: torch.Tensor, rows_at_once: int = 2048) -> torch.Tensor:
    """int32 [R, N / 8] in AWQ's order -> uint8 codes [R, N] in column order (a slab of rows at a time, so that a
    large layer's int32 intermediate stays small)."""
    shifts = torch.arange(0, 32, 4, device=words.device, dtype=torch.int32)
    where = torch.tensor(AWQ_ORDER, device=words.device).argsort()  # column c is nibble where[c]
    out = torch.empty(words.shape[0], words.shape[1] * 8, dtype=torch.uint8, device=words.device)
    for r in range(0, words.shape[0], rows_at_once):
        nibbles = ((words[r:r + rows_at_once].unsqueeze(-1) >> shifts) & 0xF).to(torch.uint8)  # [rows, N/8, i]
        out[r:r + rows_at_once] = nibbles[..., where].reshape(nibbles.shape[0], -1)
    return out


def from_awq(qweight: torch.Tensor, qzeros: torch.Tensor, scales: torch.Tensor, *,
             group_size: int | None = None) -> QuantizedTensor:
    """One AWQ layer (AutoAWQ's GEMM layout, 4 bits; module docstring) as a QuantizedTensor of the awq_int4 kind."""
    where = "from_awq"
    _need(qweight, "qweight", where, torch.int32, 2)
    _need(qzeros, "qzeros", where, torch.int32, 2)
    k, n = qweight.shape[0], qweight.shape[1] * 8
    per_n, groups = _scales(scales, where, n)
    group = _group_size(k, groups, group_size, where)
    if k % 2:
        raise InvalidInputError(f"{where}: qweight has K={k} rows; AWQ layers have an even K")
    if tuple(qzeros.shape) != (groups, n // 8):
        raise InvalidInputError(f"{where}: qzeros has shape {list(qzeros.shape)}; expected [{groups}, {n // 8}]")
    codes = _awq_columns(qweight).T  # [N, K]
    data = (codes[:, 0::2] | (codes[:, 1::2] << 4)).contiguous()  # two codes a byte, the even one low
    zeros = _awq_columns(qzeros).T.contiguous()
    fmt = WeightFormat(dtypes.u4, ScaleSpec(Granularity.GROUP, _SCALE_DTYPES[per_n.dtype], group), ZeroPointSpec.INT)
    return QuantizedTensor(QuantFormat(fmt), (n, k), data, per_n, zeros)


def _codes_of_8_bit(t: object, name: str, where: str) -> torch.Tensor:
    """float8_e4m3fn (or its uint8 bits) as uint8 codes."""
    if isinstance(t, torch.Tensor) and t.dtype is torch.float8_e4m3fn:
        return t.view(torch.uint8)
    if not isinstance(t, torch.Tensor) or t.dtype is not torch.uint8:
        raise InvalidInputError(f"{where}: {name} must be a torch.float8_e4m3fn (or uint8) tensor, got "
                                f"{t.dtype if isinstance(t, torch.Tensor) else type(t).__name__}")
    return t


def from_fp8(weight: torch.Tensor, scale: torch.Tensor, *, block: tuple[int, int] | None = None) -> QuantizedTensor:
    """One FP8 layer (module docstring): e4m3 ``weight`` [N, K] times ``scale``, which is one value (per tensor),
    [N, 1] (per channel) or, with ``block`` (bn, bk), [ceil(N / bn), ceil(K / bk)] (per block)."""
    where = "from_fp8"
    codes = _codes_of_8_bit(weight, "weight", where)
    if codes.dim() != 2:
        raise InvalidInputError(f"{where}: weight must be 2-D [N, K], got {list(codes.shape)}")
    n, k = codes.shape
    if not isinstance(scale, torch.Tensor) or scale.dtype not in _SCALE_DTYPES:
        raise InvalidInputError(f"{where}: scale must be a float16, bfloat16 or float32 tensor")
    s = scale.to(torch.float32)
    if block is not None:
        bn, bk = block
        cells = (-(-n // bn), -(-k // bk))
        if tuple(s.shape) != cells:
            raise InvalidInputError(f"{where}: scale has shape {list(s.shape)}; blocks of {bn} x {bk} over "
                                    f"{n} x {k} need {list(cells)}")
        spec = ScaleSpec(Granularity.BLOCK, dtypes.f32, block=(bn, bk))
    elif s.numel() == 1:
        s, spec = s.reshape(1, 1), ScaleSpec(Granularity.TENSOR, dtypes.f32)
    elif tuple(s.shape) in ((n,), (n, 1)):  # the shape, not the count: a block grid can hold n values too
        s, spec = s.reshape(n, 1), ScaleSpec(Granularity.CHANNEL, dtypes.f32)
    else:
        raise InvalidInputError(f"{where}: scale has shape {list(s.shape)}; expected one value, [{n}, 1], or per-block "
                                "scales with block=(bn, bk)")
    return QuantizedTensor(QuantFormat(WeightFormat(dtypes.e4m3, spec)), (n, k), codes.contiguous(), s.contiguous())


def from_nvfp4(weight: torch.Tensor, weight_scale: torch.Tensor, weight_scale_2: torch.Tensor) -> QuantizedTensor:
    """One ModelOpt NVFP4 layer (module docstring) as an nvfp4_w4a16 tensor (its input_scale is for FP4
    activations, which 16-bit activations do not take)."""
    where = "from_nvfp4"
    _need(weight, "weight", where, torch.uint8, 2)
    n, k = weight.shape[0], weight.shape[1] * 2
    scales = _codes_of_8_bit(weight_scale, "weight_scale", where)
    if k % 16:  # first: the shape check below would expect the very shape it was given
        raise InvalidInputError(f"{where}: K = {k} (weight rows of {k // 2} bytes, two elements each) is not a "
                                "multiple of NVFP4's 16-element block; allowed: K a multiple of 16")
    if tuple(scales.shape) != (n, k // 16):
        raise InvalidInputError(f"{where}: weight_scale has shape {list(scales.shape)}; a weight of {n} x {k} "
                                f"elements needs [{n}, {k // 16}]")
    if not isinstance(weight_scale_2, torch.Tensor) or weight_scale_2.numel() != 1:
        raise InvalidInputError(f"{where}: weight_scale_2 must be a tensor of one value")
    gscale = weight_scale_2.to(device=weight.device, dtype=torch.float32).reshape(1)
    return QuantizedTensor(preset("nvfp4_w4a16"), (n, k), weight.contiguous(), scales.contiguous(), global_scale=gscale)


def from_mxfp4(blocks: torch.Tensor, scales: torch.Tensor) -> QuantizedTensor:
    """One gpt-oss MXFP4 weight (module docstring; one expert's slice for MoE checkpoints) as an mxfp4 tensor."""
    where = "from_mxfp4"
    if not isinstance(blocks, torch.Tensor) or blocks.dtype is not torch.uint8 or blocks.dim() not in (2, 3):
        raise InvalidInputError(f"{where}: blocks must be a uint8 tensor [N, K / 32, 16] or [N, K / 2]")
    _need(scales, "scales", where, torch.uint8, 2)
    n = blocks.shape[0]
    data = blocks.reshape(n, -1)
    k = data.shape[1] * 2
    if k % 32:  # first: the shape check below would expect the very shape it was given
        raise InvalidInputError(f"{where}: K = {k} (blocks of {k // 2} bytes a row, two elements each) is not a "
                                "multiple of MXFP4's 32-element block; allowed: K a multiple of 32 (blocks "
                                "[N, K / 32, 16])")
    if tuple(scales.shape) != (n, k // 32):
        raise InvalidInputError(f"{where}: scales has shape {list(scales.shape)}; blocks of {n} x {k} elements "
                                f"need [{n}, {k // 32}]")
    return QuantizedTensor(preset("mxfp4"), (n, k), data.contiguous(), scales.contiguous())


def _reading(quantization_config: Mapping[str, Any], where: str) -> tuple[str, dict[str, Any]]:
    """(quant_method, the reader's settings) of a Hugging Face quantization_config, or InvalidInputError naming
    what no reader here takes."""
    config = dict(quantization_config)
    method = str(config.get("quant_method", "")).lower()
    if not method and isinstance(config.get("quantization"), Mapping) and "quant_algo" in config["quantization"]:
        method = "modelopt"  # ModelOpt's own hf_quant_config.json: no quant_method, the algorithm nested
    if method == "gptq":
        # GPTQModel writes "format" (its canonical key; "checkpoint_format" is its older alias); neither means v1.
        layout = str(config.get("format") or config.get("checkpoint_format") or "gptq").lower()
        if layout not in ("gptq", "gptq_v2"):
            raise InvalidInputError(f"{where}: a GPTQ checkpoint in the {layout!r} layout; readable: 'gptq' (v1), "
                                    "'gptq_v2'")
        return method, {"bits": int(config.get("bits", 4)), "group_size": config.get("group_size"),
                        "checkpoint_format": layout, "symmetric": True if config.get("sym") is True else None}
    if method == "awq":
        version = str(config.get("version", "gemm")).lower()
        if version != "gemm" or int(config.get("bits", 4)) != 4 or not config.get("zero_point", True):
            raise InvalidInputError(f"{where}: AWQ version={version!r}, bits={config.get('bits')}, zero_point="
                                    f"{config.get('zero_point')}; readable: the 4-bit GEMM version with zero points")
        return method, {"group_size": config.get("group_size")}
    if method == "compressed-tensors":
        schemes = [group.get("weights") or {} for group in (config.get("config_groups") or {}).values()]
        fmt = str(config.get("format", ""))
        if fmt != "pack-quantized" or len(schemes) != 1 or schemes[0].get("type") != "int":
            raise InvalidInputError(f"{where}: compressed-tensors format={fmt!r} with {len(schemes)} weight schemes; "
                                    "readable: 'pack-quantized' with one int weight scheme")
        return method, {"num_bits": int(schemes[0].get("num_bits", 4)),
                        "symmetric": bool(schemes[0].get("symmetric", True))}
    if method == "fp8":
        block = config.get("weight_block_size")
        return method, {"block": None if block is None else (int(block[0]), int(block[1]))}
    if method == "modelopt":
        algo = str(config.get("quant_algo") or (config.get("quantization") or {}).get("quant_algo", "")).upper()
        if algo not in ("NVFP4", "W4A16_NVFP4", "FP8", "FP8_PER_CHANNEL_PER_TOKEN"):
            raise InvalidInputError(f"{where}: ModelOpt quant_algo={algo or None!r}; readable: 'NVFP4', "
                                    "'W4A16_NVFP4', 'FP8', 'FP8_PER_CHANNEL_PER_TOKEN'")
        return method, {"nvfp4": "NVFP4" in algo}
    raise InvalidInputError(f"{where}: quant_method={method or None!r}; readable: 'gptq', 'awq', 'compressed-tensors', "
                            "'fp8', 'modelopt' (MXFP4 experts: from_mxfp4 on one expert's blocks and scales)")


#: The tensor only a quantized layer of each kind stores, after the layer's name and a dot.
_QUANTIZED_MARKS = {"gptq": ("qweight",), "awq": ("qweight",), "compressed-tensors": ("weight_packed",),
                    "fp8": ("weight_scale_inv", "weight_scale"), "modelopt": ("weight_scale",)}


def quantized_tensor_names(quantization_config: Mapping[str, Any]) -> tuple[str, ...]:
    """The tensor names (after "<layer>.") that mark a layer as quantized in checkpoints of this config; raises,
    naming what is readable, for a config no reader here takes."""
    return _QUANTIZED_MARKS[_reading(quantization_config, "quantized_tensor_names")[0]]


def read_layer(tensors: Mapping[str, torch.Tensor], prefix: str,
               quantization_config: Mapping[str, Any]) -> QuantizedTensor:
    """The QuantizedTensor of linear layer ``prefix`` (e.g. "model.layers.0.mlp.down_proj") from a checkpoint's
    tensors (a state dict, or safetensors' tensors by name) and its Hugging Face ``quantization_config``, by its
    ``quant_method``: "gptq" (bits, group_size, format / checkpoint_format, sym), "awq" (GEMM version),
    "compressed-tensors" (the "pack-quantized" format with one int weight scheme), "fp8" (weight_block_size;
    128 x 128 where the scales have that grid and the config says none, as transformers defaults) or "modelopt"
    (quant_algo NVFP4 or FP8). The layer's bias, if any, is ``prefix + ".bias"``."""
    where = "read_layer"
    method, settings = _reading(quantization_config, where)

    def get(name: str, required: bool = True) -> Any:
        key = f"{prefix}.{name}"
        if key not in tensors and required:
            raise InvalidInputError(f"{where}: the checkpoint has no {key!r} (a {method} layer stores {name})")
        return tensors.get(key)

    if method == "gptq":
        return from_gptq(get("qweight"), get("qzeros"), get("scales"), get("g_idx", required=False), **settings)
    if method == "awq":
        return from_awq(get("qweight"), get("qzeros"), get("scales"), **settings)
    if method == "compressed-tensors":
        return from_compressed_tensors(get("weight_packed"), get("weight_scale"),
                                       get("weight_zero_point", required=not settings["symmetric"]),
                                       get("weight_g_idx", required=False), num_bits=settings["num_bits"],
                                       weight_shape=get("weight_shape", required=False))
    if method == "fp8":
        weight, scale = get("weight"), get("weight_scale_inv", required=False)
        scale = scale if scale is not None else get("weight_scale")
        block = settings["block"]
        if block is None and isinstance(weight, torch.Tensor) and isinstance(scale, torch.Tensor) and scale.dim() == 2:
            n, k = weight.shape[-2], weight.shape[-1]
            if tuple(scale.shape) == (-(-n // 128), -(-k // 128)) and tuple(scale.shape) != (n, 1):
                block = (128, 128)
        return from_fp8(weight, scale, block=block)
    if settings["nvfp4"]:
        return from_nvfp4(get("weight"), get("weight_scale"), get("weight_scale_2"))
    return from_fp8(get("weight"), get("weight_scale"))
