"""Weight packing: the canonical QuantizedTensor -> the dense GEMM's fragment-ordered layout, and its inverse.

Torch ops only, so the same code packs on the CPU (tests) and on the GPU (loading a checkpoint). The layout
(docs/kernels.md has pictures), for W [N, K] with b-bit codes, N padded to N_pad (a multiple of 64) and K to
K_pad (a multiple of 128 and of the group size):

- ``data``: uint8 [K_pad/16, N_pad/64, 128*b]: one block per 16 (k) x 64 (n) weights. Lane l of a warp
  (g = l // 4, t = l % 4) owns 16 pairs p = 2j + r: the two b-bit codes of (k = 2t + 8r + h, n = g + 8j),
  h = 0, 1, i.e. the B fragments of eight m16n8k16 MMAs. Codes are split into bit planes of power-of-two
  widths (binary digits of b, widest first, low code bits first); a plane of width w gives the lane w words,
  pair p in word p // (16/w) at bits 16h + w * (p % (16/w)). The lane words are stored as chunks of 16
  (then 8, then 4) bytes per lane, each chunk 32 lanes side by side, so a lane reads its block with
  conflict-free 16/8/4-byte loads: 4-bit weights are one 16-byte load per 32 values.
- signed integer codes are stored biased (code + 2^(b-1)), so the kernel decodes unsigned codes only;
- e2m1 codes have their bits moved inside each lane word (``e2m1_swizzle``, per activation dtype) so that the
  kernel turns a pair into the activation type with one shift and one LOP3 for most pairs (9 instructions a
  word for bf16 instead of 16, 11 for f16);
- group scales (and integer zero points, as activation-type values): [K_pad/group, N_pad], each 64-column
  block permuted so that column g + 8j sits at g*8 + j (a lane's eight scales are adjacent); 16-bit and f32
  scales are stored in the activation dtype (rounded where it has fewer mantissa bits: f16 scales for bf16
  activations lose 3 bits, as the peers' bf16 kernels do), shifted by a power of two that goes to the global
  scale where they would leave its normal range (``fit_scales``); ue8m0/e4m3/ue4m3 as their 8-bit codes
  (ue8m0 codes less such a power of two where the weights they scale would leave it: ``fit_scale_codes``);
- channel scales: f32 [N_pad]; tensor and global scales: one f32 (their product);
- act order (GPTQ g_idx): K is permuted so that groups are contiguous (``perm``; the GEMM gathers x[:, perm]).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import Any

import torch

from humming.core import codec, dtypes
from humming.core.dtypes import DType
from humming.core.formats import Granularity, ScaleSpec, WeightFormat, ZeroPointSpec
from humming.core.quantized import QuantizedTensor
from humming.core.scale_range import fit_scale_codes, fit_scales, shift_codes
from humming.errors import InternalError, InvalidInputError, UnsupportedError

#: The layout name a packed weight carries; a kernel refuses weights of any other layout.
LAYOUT = "mma16x64.v2"  # v2: e2m1 codes bit-swizzled inside each lane word
BLOCK_K, BLOCK_N = 16, 64
#: K is padded to a multiple of this (the largest k-tile a dense kernel stage uses).
K_ALIGN = 128
_TORCH_ACT = {dtypes.f16: torch.float16, dtypes.bf16: torch.bfloat16}
BYTE_SCALES = (dtypes.ue8m0, dtypes.e4m3, dtypes.ue4m3)  # scale dtypes packed as their 8-bit codes


@dataclass(frozen=True, eq=False)
class PackedWeight:
    """A weight in the dense kernel layout (module docstring), with what the kernel needs to decode it."""

    format: WeightFormat
    activation: DType  # f16 | bf16: the activation (MMA operand) dtype the scales were stored for
    shape: tuple[int, int]  # logical (N, K)
    n_pad: int
    k_pad: int
    data: torch.Tensor  # uint8 [k_pad/16, n_pad/64, 128*bits]
    scales: torch.Tensor | None  # group scales [k_pad/group, n_pad] (activation dtype or uint8 codes)
    zeros: torch.Tensor | None  # integer zero points [rows, n_pad] in the activation dtype
    chscale: torch.Tensor | None  # f32 [n_pad]
    gscale: torch.Tensor | None  # f32 [1]
    perm: torch.Tensor | None  # int64 [K]: x[:, perm] is what the packed K order multiplies
    group: int  # k per scale row (group scales), 0 otherwise
    #: Group scales are stored times 2^-scale_shift (and gscale carries 2^scale_shift) where they would otherwise
    #: overflow or fall under the activation dtype's smallest normal (16-bit: fit_scales; ue8m0 codes minus the
    #: shift: fit_scale_codes); 0 almost always.
    scale_shift: int = 0
    layout: str = LAYOUT
    #: The weight format as the op's string argument (computed once, so torch.compile sees a constant).
    format_key: str = ""

    def __post_init__(self) -> None:
        if not self.format_key:
            import json

            object.__setattr__(self, "format_key", json.dumps(self.format.to_dict(), sort_keys=True))

    @property
    def device(self) -> torch.device:
        return self.data.device

    @property
    def bits(self) -> int:
        return self.format.dtype.bits

    def nbytes(self) -> int:
        """Bytes the kernel reads for the weight: codes, scales, zero points, channel and global scales."""
        return sum(t.numel() * t.element_size() for t in (self.data, self.scales, self.zeros, self.chscale, self.gscale)
                   if t is not None)

    def to(self, device: torch.device | str) -> "PackedWeight":
        """This weight on ``device``. A dtype is refused: the parts are codes and scales in the dtypes the kernel
        reads (a cast would turn the codes into their values)."""
        if isinstance(device, torch.dtype):
            raise InvalidInputError(f"PackedWeight.to({device}): a packed weight keeps its dtypes; pass a device (for "
                                    f"other activations pack the weight again with activation=...)")
        move = lambda t: None if t is None else t.to(device)  # noqa: E731
        return replace(self, data=self.data.to(device), scales=move(self.scales), zeros=move(self.zeros),
                       chscale=move(self.chscale), gscale=move(self.gscale), perm=move(self.perm))


# ---- the block layout of codes ------------------------------------------------------------------------------
def planes(bits: int) -> tuple[tuple[int, int], ...]:
    """(width, first code bit) of each bit plane of a ``bits``-bit code, widest first: 7 -> (4,0),(2,4),(1,6)."""
    out, offset = [], 0
    for w in (8, 4, 2, 1):
        if bits & w:
            out.append((w, offset))
            offset += w
    return tuple(out)


def chunk_words(bits: int) -> tuple[int, ...]:
    """Words per lane of each chunk of a block: 16-byte chunks (4 words), then 8 and 4 bytes."""
    return (4,) * (bits // 4) + ((2,) if bits & 2 else ()) + ((1,) if bits & 1 else ())


def _fragment_index(device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """(k, n) inside a 16 x 64 block for [lane 32, pair 16, half 2] (the mma.m16n8k16 B fragment layout)."""
    lane = torch.arange(32, device=device)[:, None, None]
    p = torch.arange(16, device=device)[None, :, None]
    h = torch.arange(2, device=device)[None, None, :]
    g, t, j, r = lane // 4, lane % 4, p // 2, p % 2
    k = 2 * t + h + 8 * r
    n = g + 8 * j + 0 * h
    return k.expand(32, 16, 2), n.expand(32, 16, 2)


BitOp = tuple[Any, ...]  # ("rotr", s) | ("shl", s) | ("prmt", (b0, b1, b2, b3)) | ("id",)

#: e2m1 pairs from one lane word, as the kernel extracts them (dequant/values.cuh, e2m1_pair): per slot
#: i = pair % 4 of the word, the operation that moves the three magnitude bits (m, e0, e1) of both codes of the
#: pair onto the activation type's (bits 6..8 for bf16, 9..11 for f16, plus 16 for the high code), and the one
#: that moves both signs onto bits 15 and 31. ("rotr", s): rotate right by s; ("shl", s): shift left by s;
#: ("prmt", sel): byte k of the result is byte sel[k] of the word; ("id",): the word itself. A slot whose two
#: operations are one costs a shift and a LOP3; bf16 pays 9 instructions a word, f16 11 (an exhaustive search
#: over rotations, shifts and byte permutations found no cheaper tiling of the 32 bits).
E2M1_SLOTS: dict[DType, tuple[tuple[BitOp, BitOp], ...]] = {
    dtypes.bf16: ((("prmt", (0, 0, 2, 2)), ("id",)), (("rotr", 2),) * 2, (("shl", 4),) * 2, (("rotr", 6),) * 2),
    dtypes.f16: ((("rotr", 1),) * 2, (("rotr", 8), ("id",)), (("shl", 5), ("shl", 1)), (("shl", 2),) * 2),
}


def _source_bit(op: BitOp, t: int) -> int:
    """The word bit that ``op`` moves onto result bit t."""
    if op[0] == "rotr":
        return (t + op[1]) % 32
    if op[0] == "shl":
        return t - op[1]
    if op[0] == "prmt":
        return 8 * op[1][t // 8] + t % 8
    return t


@functools.cache
def e2m1_swizzle(activation: DType) -> tuple[int, ...]:
    """Where bit c of a canonical lane word (half c // 16, pair slot (c % 16) // 4, code bit c % 4: m, e0, e1,
    sign) is stored for the kernel of ``activation``: a permutation of 0..31."""
    low = 6 if activation is dtypes.bf16 else 9  # the top mantissa bit: bf16 bit 6, f16 bit 9
    out = [0] * 32
    for c in range(32):
        h, slot, b = c // 16, (c % 16) // 4, c % 4
        em_op, sign_op = E2M1_SLOTS[activation][slot]
        out[c] = _source_bit(sign_op, 16 * h + 15) if b == 3 else _source_bit(em_op, 16 * h + low + b)
    if sorted(out) != list(range(32)):
        raise InternalError(f"e2m1 swizzle for {activation} is not a permutation: {out} (humming bug, please report)")
    return tuple(out)


def code_swizzle(elem: DType, activation: DType) -> tuple[int, ...] | None:
    """The bit permutation of lane words for ``elem`` codes packed for ``activation``; None: canonical."""
    return e2m1_swizzle(activation) if elem is dtypes.e2m1 else None


@functools.cache
def _byte_tables(perm: tuple[int, ...], inverse: bool, device: torch.device) -> torch.Tensor:
    """int64 [4, 256]: row j, column v: where the bits of value v in byte j of a word go under the permutation
    (built on the CPU, not the ambient default device, which may be meta; cached per device, as codec's tables)."""
    moves = [(d, c) if inverse else (c, d) for c, d in enumerate(perm)]
    table = torch.zeros(4, 256, dtype=torch.int64, device="cpu")
    v = torch.arange(256, dtype=torch.int64, device="cpu")
    for src, dst in moves:
        table[src // 8] |= ((v >> (src % 8)) & 1) << dst
    return table.to(device)


def _permute_bits(words: torch.Tensor, perm: tuple[int, ...], inverse: bool = False) -> torch.Tensor:
    """Move bit c of every int64-held 32-bit word to bit perm[c] (or back, ``inverse``): a table lookup a byte."""
    table = _byte_tables(perm, inverse, words.device)
    out = table[0][words & 0xFF]
    for j in range(1, 4):
        out |= table[j][(words >> (8 * j)) & 0xFF]
    return out


def pack_blocks(codes: torch.Tensor, bits: int, swizzle: tuple[int, ...] | None = None) -> torch.Tensor:
    """Unsigned ``bits``-bit codes uint8 [N_pad, K_pad] (multiples of 64 and 16) -> uint8 [K_pad/16, N_pad/64, 128*bits];
    ``swizzle`` (code_swizzle) moves the bits of each lane word."""
    n_pad, k_pad = codes.shape
    if n_pad % BLOCK_N or k_pad % BLOCK_K:
        raise InvalidInputError(f"pack_blocks: shape {list(codes.shape)} must be multiples of ({BLOCK_N}, {BLOCK_K})")
    kb, nb = k_pad // BLOCK_K, n_pad // BLOCK_N
    blk = codes.reshape(nb, BLOCK_N, kb, BLOCK_K).permute(2, 0, 3, 1)  # [kb, nb, k16, n64]
    k_idx, n_idx = _fragment_index(codes.device)
    vals = blk[:, :, k_idx, n_idx].to(torch.int64)  # [kb, nb, 32, 16, 2]
    p = torch.arange(16, device=codes.device)[:, None]
    h = torch.arange(2, device=codes.device)[None, :]
    words = []
    for width, offset in planes(bits):
        per_word = 16 // width
        plane = (vals >> offset) & ((1 << width) - 1)
        shifted = plane << (16 * h + width * (p % per_word))
        words.append(shifted.reshape(kb, nb, 32, width, per_word * 2).sum(-1))  # bits never overlap: sum == or
    lane_words = torch.cat(words, dim=-1)  # [kb, nb, 32, bits]
    if swizzle is not None:
        lane_words = _permute_bits(lane_words, swizzle)
    out, start = [], 0
    for cw in chunk_words(bits):
        out.append(lane_words[..., start:start + cw].reshape(kb, nb, 32 * cw))
        start += cw
    flat = torch.cat(out, dim=-1)  # [kb, nb, 32 * bits] uint32 values in int64
    signed = torch.where(flat >= 2**31, flat - 2**32, flat).to(torch.int32)
    return signed.contiguous().view(torch.uint8).reshape(kb, nb, 128 * bits)


def unpack_blocks(data: torch.Tensor, bits: int, swizzle: tuple[int, ...] | None = None) -> torch.Tensor:
    """The inverse of pack_blocks: uint8 [K_pad/16, N_pad/64, 128*bits] -> codes uint8 [N_pad, K_pad]."""
    kb, nb, size = data.shape
    if size != 128 * bits:
        raise InvalidInputError(f"unpack_blocks: blocks of {size} bytes do not hold {bits}-bit codes (expected {128 * bits})")
    flat = data.contiguous().view(torch.int32).to(torch.int64) & 0xFFFFFFFF  # [kb, nb, 32 * bits]
    parts, start = [], 0
    for cw in chunk_words(bits):
        parts.append(flat[..., 32 * start:32 * (start + cw)].reshape(kb, nb, 32, cw))
        start += cw
    lane_words = torch.cat(parts, dim=-1)  # [kb, nb, 32, bits]
    if swizzle is not None:
        lane_words = _permute_bits(lane_words, swizzle, inverse=True)
    p = torch.arange(16, device=data.device)[:, None]
    h = torch.arange(2, device=data.device)[None, :]
    vals = torch.zeros(kb, nb, 32, 16, 2, dtype=torch.int64, device=data.device)
    w0 = 0
    for width, offset in planes(bits):
        per_word = 16 // width
        word = lane_words[..., w0 + p // per_word + 0 * h]  # [kb, nb, 32, 16, 2]
        vals |= ((word >> (16 * h + width * (p % per_word))) & ((1 << width) - 1)) << offset
        w0 += width
    k_idx, n_idx = _fragment_index(data.device)
    blk = torch.zeros(kb, nb, BLOCK_K, BLOCK_N, dtype=torch.int64, device=data.device)
    blk[:, :, k_idx, n_idx] = vals
    return blk.permute(1, 3, 0, 2).reshape(nb * BLOCK_N, kb * BLOCK_K).to(torch.uint8)


def permute_columns(rows: torch.Tensor) -> torch.Tensor:
    """[R, N_pad] -> the same with each 64-column block reordered so column g + 8j sits at g*8 + j."""
    r, n_pad = rows.shape
    return rows.reshape(r, n_pad // 64, 8, 8).transpose(2, 3).reshape(r, n_pad).contiguous()


def unpermute_columns(rows: torch.Tensor) -> torch.Tensor:
    r, n_pad = rows.shape
    return rows.reshape(r, n_pad // 64, 8, 8).transpose(2, 3).reshape(r, n_pad).contiguous()


# ---- whole weights ---------------------------------------------------------------------------------------------
def _round_up(x: int, m: int) -> int:
    return (x + m - 1) // m * m


def _pad2(t: torch.Tensor, rows: int, cols: int, value: float = 0) -> torch.Tensor:
    out = torch.full((rows, cols), value, dtype=t.dtype, device=t.device)
    out[: t.shape[0], : t.shape[1]] = t
    return out


def _act_order_perm(g_idx: torch.Tensor, group: int, k: int) -> torch.Tensor:
    perm = torch.argsort(g_idx.to(torch.int64), stable=True)
    counts = torch.bincount(g_idx.to(torch.int64), minlength=math.ceil(k / group))
    if bool((counts != group).any()):
        raise UnsupportedError(
            f"act-order weights whose groups hold other than {group} columns each (sizes "
            f"{int(counts.min())}..{int(counts.max())}) cannot be packed for the dense kernel",
            missing=["groups of exactly `group` columns after sorting by g_idx"],
            alternatives=["re-quantize with GPTQ's standard act order (every group holds `group` columns)"])
    return perm


def padded_shape(n: int, k: int, fmt: WeightFormat) -> tuple[int, int]:
    """(N_pad, K_pad) of an [n, k] weight in ``fmt`` once packed."""
    group = fmt.scale.k_group()
    return _round_up(n, BLOCK_N), _round_up(k, K_ALIGN * group // math.gcd(K_ALIGN, group) if group else K_ALIGN)


def pack(q: QuantizedTensor, activation: DType | str) -> PackedWeight:
    """Pack a canonical weight for the dense kernel, on q's device; scales stored for ``activation`` (f16/bf16)."""
    if not isinstance(q, QuantizedTensor):
        raise InvalidInputError(f"pack: expected a QuantizedTensor, got {type(q).__name__}")
    act = DType.parse(activation)
    if act not in _TORCH_ACT:
        raise InvalidInputError(f"pack: activation={act}; allowed: f16, bf16")
    wf = q.format.weight
    elem, spec = wf.dtype, wf.scale
    if wf.zero_point is ZeroPointSpec.FLOAT:
        raise UnsupportedError(f"pack: {elem} weights with float zero points are not supported by the dense kernel yet",
                               missing=["float zero points"], alternatives=["integer zero points (zero_point=int)"])
    if elem.is_float and elem.exponent_bits == 0:
        raise UnsupportedError(f"pack: {elem} weights (no exponent) are not supported by the dense kernel",
                               missing=[f"{elem} dequantization"])
    n, k = q.shape
    bits = elem.bits
    g = spec.granularity
    group = spec.k_group()
    if group and group % 16:
        raise UnsupportedError(f"pack: a scale group of {group} along K; the dense kernel needs a multiple of 16",
                               missing=[f"group size {group}"], alternatives=["group sizes 16, 32, 64, 128, 256 ..."])
    n_pad, k_pad = padded_shape(n, k, wf)
    dev = q.data.device

    codes = q.codes()
    if elem.is_int and elem.signed:
        codes = codes ^ (1 << (bits - 1))  # two's complement -> biased unsigned (code + 2^(b-1) mod 2^b)
    perm = None
    if q.g_idx is not None:
        perm = _act_order_perm(q.g_idx, group, k)
        codes = codes[:, perm]
    data = pack_blocks(_pad2(codes, n_pad, k_pad), bits, code_swizzle(elem, act))

    torch_act = _TORCH_ACT[act]
    scales = zeros = chscale = None
    shift = 0
    gscale = q.global_scale.to(torch.float32).reshape(1) if q.global_scale is not None else None
    if gscale is not None:
        _check_finite_scales(gscale, "the global scale")
    decoded = codec.decode(q.scales, spec.dtype, out_dtype=torch.float32)
    if g in (Granularity.GROUP, Granularity.BLOCK):
        cells = decoded if g is Granularity.GROUP else decoded.repeat_interleave(spec.block_shape()[0], 0)[:n]
        if spec.dtype in BYTE_SCALES:
            raw = q.scales if g is Granularity.GROUP else q.scales.repeat_interleave(spec.block_shape()[0], 0)[:n]
            shift = fit_scale_codes(raw, cells, act, spec.dtype, elem)
            stored = shift_codes(raw, -shift) if shift else raw
        else:
            shift = fit_scales(cells, act, spec.dtype, elem)
            stored = (_times_pow2(cells, -shift) if shift else cells).to(torch_act)
        if shift:  # the power of two the stored scales left, carried by the global scale
            factor = torch.tensor([2.0**shift], dtype=torch.float32, device=cells.device)
            gscale = factor if gscale is None else gscale * factor
        rows = k_pad // group
        scales = permute_columns(_pad2(stored.T.contiguous(), rows, n_pad))
    elif g is Granularity.CHANNEL:
        _check_finite_scales(decoded, "channel scales")
        chscale = _pad2(decoded.reshape(n, 1), n_pad, 1, 1.0).reshape(n_pad).contiguous()
    else:  # one scale for the tensor: folded into the global scale
        _check_finite_scales(decoded, "the tensor scale")
        t = decoded.reshape(1)
        gscale = t if gscale is None else (gscale * t)
    if q.zeros is not None:
        z = q.zeros.to(torch_act)
        if g is Granularity.CHANNEL:
            zeros = permute_columns(_pad2(z.T.contiguous(), 1, n_pad))
        elif g is Granularity.GROUP:
            zeros = permute_columns(_pad2(z.T.contiguous(), k_pad // group, n_pad))
        else:
            raise UnsupportedError(f"pack: zero points with {g.value} scales are not supported by the dense kernel",
                                   missing=[f"zero points per {g.value}"])
    return PackedWeight(wf, act, (n, k), n_pad, k_pad, data.to(dev), scales, zeros, chscale,
                        None if gscale is None else gscale.to(dev).contiguous(), perm, group if scales is not None else 0,
                        scale_shift=shift)


def _check_finite_scales(values: torch.Tensor, what: str) -> None:
    """Channel, tensor and global scales go to the kernel as f32 values: refuse NaN and inf as the group scales'
    check (scale_range) does, rather than pack them into a weight whose every output would be NaN."""
    bad = int((~torch.isfinite(values)).sum())
    if bad:
        raise InvalidInputError(f"pack: {what} must be finite; {bad} value(s) are NaN or inf")


def _times_pow2(t: torch.Tensor, e: int) -> torch.Tensor:
    """t x 2^e in float64: exact for the shifts scale_range chooses (|e| <= 126), whatever t's own range."""
    return t.double() * 2.0**e


def _part(p: PackedWeight, name: str, t: torch.Tensor | None) -> torch.Tensor:
    """A part that pack() always stores for p's scale granularity; absent, the PackedWeight was not made by pack."""
    if t is None:
        raise InvalidInputError(f"unpack: {p.format.scale.describe()} but PackedWeight.{name} is None; "
                                f"a PackedWeight from pack() always carries it")
    return t


def unpack(p: PackedWeight, q_format: object = None) -> QuantizedTensor:
    """The inverse of pack (tests): codes, scales (cast back to the format's scale dtype), zeros, g_idx."""
    from humming.core.formats import QuantFormat

    wf = p.format
    elem, spec = wf.dtype, wf.scale
    n, k = p.shape
    bits = elem.bits
    codes = unpack_blocks(p.data, bits, code_swizzle(elem, p.activation))[:n, :]
    if p.perm is not None:
        unperm = torch.empty_like(codes[:, :k])
        unperm[:, p.perm] = codes[:, :k]
        codes = unperm
    codes = codes[:, :k]
    if elem.is_int and elem.signed:
        codes = codes ^ (1 << (bits - 1))
    storage = codec.storage_dtype(spec.dtype)

    def stored_scales(s: torch.Tensor) -> torch.Tensor:
        # pack's shift undone, in the format's dtype: exact for every scale pack stored exactly (not those it had to
        # round into the activation dtype or, in scale_range's fallback, flush under its normal range)
        if s.dtype is torch.uint8:
            return shift_codes(s, p.scale_shift) if p.scale_shift else s
        return _times_pow2(s, p.scale_shift).to(storage)

    def as_format(values: torch.Tensor) -> torch.Tensor:
        # channel and tensor scales, which pack keeps as f32 values: back to the format's codes (byte dtypes are
        # encoded, exactly: pack decoded them from codes), or cast to its wider float
        return codec.encode(values, spec.dtype) if storage is torch.uint8 else values.to(storage)

    g = spec.granularity
    zeros = None
    if g is Granularity.GROUP:
        scales = stored_scales(unpermute_columns(_part(p, "scales", p.scales))[: -(-k // p.group), :n].T)
        if p.zeros is not None:
            zeros = unpermute_columns(p.zeros)[: -(-k // p.group), :n].T.to(torch.uint8)
    elif g is Granularity.BLOCK:
        s = unpermute_columns(_part(p, "scales", p.scales))[: -(-k // p.group), :n].T[:: spec.block_shape()[0]]
        scales = stored_scales(s)
    elif g is Granularity.CHANNEL:
        scales = as_format(_part(p, "chscale", p.chscale)[:n].reshape(n, 1))
        if p.zeros is not None:
            zeros = unpermute_columns(p.zeros)[:1, :n].T.to(torch.uint8)
    else:
        scales = as_format(_part(p, "gscale", p.gscale).reshape(1, 1))
    gscale = p.gscale if (wf.global_scale and g is not Granularity.TENSOR) else None
    if gscale is not None and p.scale_shift:  # the format's own global scale, without the shift pack put in it
        gscale = _times_pow2(gscale, -p.scale_shift).float()
    g_idx = None
    if p.perm is not None:
        g_idx = torch.empty(k, dtype=torch.int32, device=codes.device)
        g_idx[p.perm] = torch.arange(k, device=codes.device, dtype=torch.int32) // p.group
    fmt = q_format if isinstance(q_format, QuantFormat) else QuantFormat(wf)
    return QuantizedTensor(fmt, (n, k), codec.pack_codes(codes.contiguous(), bits), scales.contiguous(),
                           None if zeros is None else zeros.contiguous(), gscale, g_idx)


def scale_spec_of(p: PackedWeight) -> ScaleSpec:
    return p.format.scale
