"""QuantizedTensor in the canonical layout, quantize() and dequantize(), and on-the-fly activation quantization.

The canonical layout (what checkpoints are converted to and what the kernel packer reads; not a kernel layout),
for a weight W of [N, K] (out_features x in_features, like ``nn.Linear.weight``) with b-bit elements:

- ``data``: torch.uint8 [N, ceil(K*b/8)]; each row is an LSB-first bit stream, element k in bits
  [k*b, (k+1)*b) (so 3-, 5-, 6- and 7-bit elements pack densely). Codes: signed ints in b-bit two's complement,
  unsigned ints as is, floats as their bit pattern (``humming.core.codec``).
- ``scales``: per tensor [1, 1], per channel [N, 1], per group [N, K/group], per block [ceil(N/bn), ceil(K/bk)];
  torch.float16/bfloat16/float32 for f16/bf16/f32 scales, raw uint8 codes for e4m3, ue8m0 and ue4m3 scales.
- ``zeros`` (with zero points): the shape of ``scales``; integer zeros as uint8 codes, float zeros in the
  scale's 16/32-bit dtype.
- ``global_scale`` (optional): float32, one element. ``g_idx`` (act order): int32 [K], the group of each k.

    w[n, k] = (decode(code[n, k]) - zero[n, g(k)]) * scale[n, g(k)] * global_scale

with g(k) = g_idx[k] if present else k // group; per block the cell is scale[n // bn, k // bk], per channel
scale[n, 0], per tensor scale[0, 0]. Activations x [M, K] use the same layout, per token being per row.

The scale choice of ``quantize`` is written down in docs/formats.md; all its arithmetic is float32, each
operation rounded to nearest even, so that a kernel can reproduce it bit for bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Union

import torch

from humming.core import codec, dtypes
from humming.core.dtypes import DType
from humming.core.formats import ActivationFormat, ActScaling, Granularity, QuantFormat, ScaleSpec, WeightFormat, ZeroPointSpec
from humming.errors import InvalidInputError


@dataclass(frozen=True, eq=False)
class QuantizedTensor:
    """A quantized weight [N, K] in the canonical layout (module docstring). Validated on construction."""

    format: QuantFormat
    shape: tuple[int, int]  # (N, K)
    data: torch.Tensor  # uint8 [N, ceil(K * bits / 8)]
    scales: torch.Tensor
    zeros: torch.Tensor | None = None
    global_scale: torch.Tensor | None = None  # float32, one element
    g_idx: torch.Tensor | None = None  # int32 [K]

    def __post_init__(self) -> None:
        if not isinstance(self.format, QuantFormat):
            raise InvalidInputError(f"QuantizedTensor.format: expected a QuantFormat, got {type(self.format).__name__}")
        wf = self.format.weight
        _check_parts("QuantizedTensor", wf.dtype, wf.scale, self.shape, self.data, self.scales, wf.zero_point,
                     self.zeros, wf.global_scale, self.global_scale)
        n, k = self.shape
        if wf.act_order != (self.g_idx is not None):
            raise InvalidInputError(
                f"QuantizedTensor.g_idx: the format {'needs' if wf.act_order else 'takes no'} g_idx "
                f"(act_order={wf.act_order}), got {'none' if self.g_idx is None else 'one'}"
            )
        if self.g_idx is not None:
            groups = self.scales.shape[1]
            g = self.g_idx
            if g.dtype is not torch.int32 or tuple(g.shape) != (k,) or g.device != self.data.device:
                raise InvalidInputError(f"QuantizedTensor.g_idx: expected int32 [{k}] on {self.data.device}, got {g.dtype} {list(g.shape)} on {g.device}")
            if k and (int(g.min()) < 0 or int(g.max()) >= groups):
                raise InvalidInputError(f"QuantizedTensor.g_idx: groups must lie in [0, {groups}), got [{int(g.min())}, {int(g.max())}]")

    @property
    def weight_format(self) -> WeightFormat:
        return self.format.weight

    def codes(self) -> torch.Tensor:
        """The element codes unpacked: uint8 [N, K]."""
        return codec.unpack_codes(self.data, self.format.weight.dtype.bits, self.shape[1])

    def to(self, device: torch.device | str) -> "QuantizedTensor":
        move = lambda t: None if t is None else t.to(device)  # noqa: E731
        return replace(self, data=self.data.to(device), scales=self.scales.to(device), zeros=move(self.zeros),
                       global_scale=move(self.global_scale), g_idx=move(self.g_idx))


@dataclass(frozen=True, eq=False)
class QuantizedActivation:
    """Activations x [M, K] quantized by an ActivationFormat, in the same layout (per token = per row)."""

    format: ActivationFormat
    shape: tuple[int, int]  # (M, K)
    data: torch.Tensor  # uint8 [M, ceil(K * bits / 8)]
    scales: torch.Tensor  # [M, 1] per token, [M, K / group] per group, [1, 1] static
    global_scale: torch.Tensor | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.format, ActivationFormat) or not self.format.is_quantized:
            raise InvalidInputError("QuantizedActivation.format: expected a quantized ActivationFormat")
        assert self.format.dtype is not None
        _check_parts("QuantizedActivation", self.format.dtype, self.format.scale_spec(), self.shape, self.data,
                     self.scales, ZeroPointSpec.NONE, None, self.format.global_scale, self.global_scale)

    def codes(self) -> torch.Tensor:
        assert self.format.dtype is not None
        return codec.unpack_codes(self.data, self.format.dtype.bits, self.shape[1])


def _check_parts(where: str, elem: DType, spec: ScaleSpec, shape: tuple[int, int], data: torch.Tensor,
                 scales: torch.Tensor, zp: ZeroPointSpec, zeros: torch.Tensor | None, wants_global: bool,
                 global_scale: torch.Tensor | None) -> None:
    if len(shape) != 2 or any(isinstance(s, bool) or not isinstance(s, int) or s <= 0 for s in shape):
        raise InvalidInputError(f"{where}.shape={shape!r}: expected (rows, K), two positive integers")
    n, k = shape
    expect = (n, codec.packed_size(k, elem.bits))
    if data.dtype is not torch.uint8 or tuple(data.shape) != expect:
        raise InvalidInputError(f"{where}.data: expected uint8 {list(expect)} ({elem} codes, {elem.bits} bits each), "
                                f"got {data.dtype} {list(data.shape)}")
    cells = spec.shape(n, k)  # raises when the group does not divide K
    storage = codec.storage_dtype(spec.dtype)
    if scales.dtype is not storage or tuple(scales.shape) != cells:
        raise InvalidInputError(f"{where}.scales: expected {storage} {list(cells)} for {spec.describe()}, "
                                f"got {scales.dtype} {list(scales.shape)}")
    tensors = {"scales": scales}
    if (zp is ZeroPointSpec.NONE) != (zeros is None):
        raise InvalidInputError(f"{where}.zeros: zero_point={zp.value} {'takes no zeros' if zeros is not None else 'needs zeros'}")
    if zeros is not None:
        zdtype = torch.uint8 if zp is ZeroPointSpec.INT else storage
        if zeros.dtype is not zdtype or tuple(zeros.shape) != cells:
            raise InvalidInputError(f"{where}.zeros: expected {zdtype} {list(cells)}, got {zeros.dtype} {list(zeros.shape)}")
        if zp is ZeroPointSpec.INT and int(zeros.max()) > elem.int_max:
            raise InvalidInputError(f"{where}.zeros: integer zero points of {elem} lie in [0, {elem.int_max}], got {int(zeros.max())}")
        tensors["zeros"] = zeros
    if wants_global != (global_scale is not None):
        raise InvalidInputError(f"{where}.global_scale: the format {'needs' if wants_global else 'takes no'} global scale")
    if global_scale is not None:
        if global_scale.dtype is not torch.float32 or global_scale.numel() != 1:
            raise InvalidInputError(f"{where}.global_scale: expected one float32 element, got {global_scale.dtype} {list(global_scale.shape)}")
        tensors["global_scale"] = global_scale
    for name, t in tensors.items():
        if t.device != data.device:
            raise InvalidInputError(f"{where}.{name} is on {t.device} but data is on {data.device}; allowed: one device")


# ---- the scale grid ---------------------------------------------------------------------------------
def cell_index(spec: ScaleSpec, n: int, k: int, g_idx: torch.Tensor | None, device: torch.device) -> torch.Tensor:
    """int64 [n, k]: for each element, the flat index of its scale in ``scales.flatten()``."""
    rows, cols = spec.shape(n, k)
    r = torch.arange(n, device=device)[:, None]
    c = torch.arange(k, device=device)[None, :]
    g = spec.granularity
    if g is Granularity.TENSOR:
        return torch.zeros(n, k, dtype=torch.int64, device=device)
    if g is Granularity.CHANNEL:
        return r.expand(n, k)
    if g is Granularity.GROUP:
        assert spec.group is not None
        gk = g_idx.to(torch.int64)[None, :] if g_idx is not None else c // spec.group
        return r * cols + gk
    assert spec.block is not None
    return (r // spec.block[0]) * cols + c // spec.block[1]


class CellMap:
    """Which scale cell each element of an [n, k] tensor takes: contiguous runs along K (per tensor, per channel,
    groups in order), reduced and broadcast by reshapes, or else (blocks, act order) an int64 index per element
    (cell_index). The two give the same results; the runs skip an [n, k] index and a scatter."""

    def __init__(self, spec: ScaleSpec, n: int, k: int, g_idx: torch.Tensor | None, device: torch.device, *,
                 use_index: bool = False) -> None:
        self.rows, self.cols = spec.shape(n, k)
        self.n, self.k = n, k
        g = spec.granularity
        runs = g in (Granularity.TENSOR, Granularity.CHANNEL) or (g is Granularity.GROUP and g_idx is None)
        self.index = cell_index(spec, n, k, g_idx, device) if use_index or not runs else None

    def reduce(self, values: torch.Tensor, op: str) -> torch.Tensor:
        """"amax" or "amin" of ``values`` [n, k] over each cell: [cells]."""
        if self.index is not None:
            return _reduce(values, self.index, self.rows * self.cols, op)
        runs = values.reshape(self.rows, self.cols, -1)
        return (runs.amax(-1) if op == "amax" else runs.amin(-1)).flatten()

    def expand(self, per_cell: torch.Tensor) -> torch.Tensor:
        """Each element's cell value: [cells] (any shape of that many) -> [n, k]."""
        if self.index is not None:
            return per_cell.flatten()[self.index]
        run = self.n * self.k // (self.rows * self.cols)
        return per_cell.reshape(self.rows, self.cols, 1).expand(self.rows, self.cols, run).reshape(self.n, self.k)


def _div(a: torch.Tensor, b: float) -> torch.Tensor:
    """a / b correctly rounded on every device: CUDA turns a division by a Python scalar into a multiplication
    by its reciprocal (off by one ulp at times), so the divisor goes in as a tensor."""
    return a / torch.tensor(b, dtype=a.dtype, device=a.device)


def _reduce(values: torch.Tensor, index: torch.Tensor, cells: int, op: str) -> torch.Tensor:
    out = torch.zeros(cells, dtype=values.dtype, device=values.device)
    return out.scatter_reduce_(0, index.reshape(-1), values.reshape(-1), op, include_self=False)


def _store_scales(s: torch.Tensor, dtype: DType, clamp: bool, where: str,
                  has_global: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Round positive f32 scales to ``dtype``: (stored form, decoded float32). Out of range raises unless clamp,
    which clamps them into [smallest, largest] of ``dtype``. ``has_global``: they are in units of a global scale."""
    lo, hi = dtype.smallest_subnormal, dtype.max_finite
    stored = codec.encode(s, dtype)
    decoded = codec.decode(stored, dtype)
    under = decoded == 0
    bad = ~torch.isfinite(decoded) | under
    if bool(bad.any()):
        if not clamp:
            span = f"(they span [{float(s.min()):.3g}, {float(s.max()):.3g}])"
            if has_global and torch.equal(bad, under):  # all of them too small
                # The global scale already puts the tensor's amax at the top of the range (NVFP4: 6 * 448), so
                # another one cannot help: these cells lie more than the scale dtype's range below that amax.
                raise InvalidInputError(
                    f"{where}={dtype} cannot hold the scales: {int(bad.sum())} of {s.numel()} fall below its "
                    f"smallest value {lo:.3g} {span}: the global scale maps the tensor's amax to the top of "
                    f"{dtype}'s range, and these cells' amax lie more than that range below it; allowed: clamp=True, "
                    f"which raises such scales to {lo:.3g} (their cells then round on that coarser grid, small "
                    f"elements to 0), or a scale dtype with a wider range (f32)"
                )
            raise InvalidInputError(
                f"{where}={dtype} cannot hold the scales: {int(bad.sum())} of {s.numel()} fall outside [{lo:.3g}, {hi:.3g}] "
                f"{span}; allowed: a scale dtype with that range (f32), "
                f"{'' if has_global else 'a global scale, '}or clamp=True to clamp them"
            )
        stored = codec.encode(s.clamp(lo, hi), dtype)
        decoded = codec.decode(stored, dtype)
    return stored, decoded


def _mx_scales(amax: torch.Tensor, elem: DType, clamp: bool, where: str) -> tuple[torch.Tensor, torch.Tensor]:
    """OCP MX v1.0 section 6.3: X = 2**(floor(log2(amax)) - emax_elem); an all-zero group gets X = 1."""
    emax = math.floor(math.log2(elem.max_finite))  # e2m1: 2, e4m3: 8, s4 (integer 7): 2, s8: 6
    e = torch.where(amax > 0, codec.floor_log2(torch.where(amax > 0, amax, 1.0).double()) - emax, 0)
    out = (e < -127) | (e > 127)
    if bool(out.any()):
        if not clamp:
            raise InvalidInputError(
                f"{where}=ue8m0 cannot hold the scales: {int(out.sum())} of {amax.numel()} need 2**e with e outside "
                f"[-127, 127] (from {int(e.min())} to {int(e.max())}); allowed: clamp=True to clamp them"
            )
        e = e.clamp(-127, 127)
    return (e + 127).to(torch.uint8), codec.pow2(e).float()


def _quantize_cells(x: torch.Tensor, elem: DType, spec: ScaleSpec, zp: ZeroPointSpec, cmap: CellMap,
                    gs: torch.Tensor | None, clamp: bool, where: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """x float32 [n, k] -> (codes uint8 [n, k], stored scales, stored zeros or None), by the rules in the docs."""
    cells_shape = spec.shape(*x.shape)
    amax = cmap.reduce(x.abs(), "amax")
    if zp is ZeroPointSpec.NONE:
        unit = amax / gs if gs is not None else amax  # amax in units of the global scale
        if spec.dtype is dtypes.ue8m0:
            stored, s_dec = _mx_scales(unit, elem, clamp, f"{where}.dtype")
        else:
            s = torch.where(unit > 0, _div(unit, elem.max_finite), 1.0)
            stored, s_dec = _store_scales(s, spec.dtype, clamp, f"{where}.dtype", gs is not None)
        zeros = None
    else:
        qmax = float(elem.int_max)
        lo = torch.clamp(cmap.reduce(x, "amin"), max=0.0)  # the range always holds 0 (GPTQ's rule)
        hi = torch.clamp(cmap.reduce(x, "amax"), min=0.0)
        span = (hi - lo) / gs if gs is not None else hi - lo
        s = torch.where(span > 0, _div(span, qmax), 1.0)
        stored, s_dec = _store_scales(s, spec.dtype, clamp, f"{where}.dtype", gs is not None)
    eff = s_dec * gs if gs is not None else s_dec  # float32 product: the divisor the elements see
    full = cmap.expand(eff)
    if zp is ZeroPointSpec.NONE:
        codes = codec.encode(x / full, elem, saturate=True)
    elif zp is ZeroPointSpec.INT:
        z = torch.round(-lo / eff).clamp(0, qmax)
        zeros = z.to(torch.uint8)
        codes = codec.encode(torch.round(x / full) + cmap.expand(z), elem)  # ints saturate to [0, qmax]
    else:
        zeros = codec.encode(-lo / eff, spec.dtype)
        z_dec = codec.decode(zeros, spec.dtype)
        codes = codec.encode(x / full + cmap.expand(z_dec), elem)
    reshape = lambda t: None if t is None else t.reshape(cells_shape)  # noqa: E731
    return codes, stored.reshape(cells_shape), reshape(zeros)


def _check_input(x: torch.Tensor, name: str) -> torch.Tensor:
    if not isinstance(x, torch.Tensor) or x.dim() != 2 or not x.dtype.is_floating_point:
        raise InvalidInputError(f"{name}: expected a 2-D floating-point tensor, got "
                                f"{type(x).__name__ if not isinstance(x, torch.Tensor) else f'{x.dtype} {list(x.shape)}'}")
    if x.shape[0] == 0 or x.shape[1] == 0:
        raise InvalidInputError(f"{name}: expected a non-empty tensor, got shape {list(x.shape)}")
    xf = x.to(torch.float32)
    # Checked after the cast: a float64 value beyond float32's range passes a check on x and then becomes inf.
    bad = ~torch.isfinite(xf)
    if bool(bad.any()):
        nonfinite = ~torch.isfinite(x)
        if bool(nonfinite.any()):
            first = [int(i) for i in torch.nonzero(nonfinite)[0]]
            raise InvalidInputError(f"{name} holds {int(nonfinite.sum())} NaN or inf values (first at {first}: "
                                    f"{float(x[tuple(first)])}); allowed: finite values only")
        first = [int(i) for i in torch.nonzero(bad)[0]]
        raise InvalidInputError(f"{name} holds {int(bad.sum())} values beyond float32's range (first at {first}: "
                                f"{float(x[tuple(first)]):.6g}); quantization computes in float32, so allowed: "
                                f"|values| <= {torch.finfo(torch.float32).max:.6g}")
    return xf


def _global_scale(x: torch.Tensor, elem: DType, scale_dtype: DType) -> torch.Tensor:
    """The f32 scale that maps the tensor's amax onto elem_max * scale_max (NVFP4: amax / (6 * 448))."""
    amax = x.abs().max()
    return torch.where(amax > 0, _div(amax, elem.max_finite * scale_dtype.max_finite), 1.0).reshape(1)


FormatLike = Union[QuantFormat, WeightFormat, str]
_INDEX_DTYPES = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)  # g_idx: cast to int32 exactly


def as_quant_format(fmt: FormatLike) -> QuantFormat:
    """A QuantFormat from a QuantFormat, a WeightFormat (16-bit activations) or a preset name."""
    if isinstance(fmt, QuantFormat):
        return fmt
    if isinstance(fmt, WeightFormat):
        return QuantFormat(fmt)
    if isinstance(fmt, str):
        from humming.core import presets

        return presets.get(fmt)
    raise InvalidInputError(f"format: expected a QuantFormat, WeightFormat or preset name, got {type(fmt).__name__}")


def quantize(w: torch.Tensor, fmt: FormatLike, *, g_idx: torch.Tensor | None = None, clamp: bool = False) -> QuantizedTensor:
    """Round-to-nearest quantization of float weights [N, K] into ``fmt``, in the canonical layout.

    :param g_idx: int32 [K] (act-order formats only): the group of each column; each group may hold any columns.
    :param clamp: clamp scales that the scale dtype cannot hold into its range instead of raising (a cell whose
        scale is below the smallest value gets that value and rounds on its coarser grid).
    Raises InvalidInputError for NaN/inf weights or ones beyond float32's range, a group that does not divide K, or
    scales out of range.
    """
    qf = as_quant_format(fmt)
    wf = qf.weight
    x = _check_input(w, "quantize: w")
    n, k = x.shape
    wf.scale.shape(n, k)
    if wf.act_order != (g_idx is not None):
        raise InvalidInputError(f"quantize: g_idx is {'required' if wf.act_order else 'not taken'} by this format "
                                f"(act_order={wf.act_order})")
    if g_idx is not None:
        if not isinstance(g_idx, torch.Tensor) or g_idx.dtype not in _INDEX_DTYPES:
            got = g_idx.dtype if isinstance(g_idx, torch.Tensor) else type(g_idx).__name__
            raise InvalidInputError(f"quantize: g_idx is {got}; expected an integer tensor (torch.int32 [{k}], the "
                                    "group of each column), since a cast would truncate other values")
        groups = wf.scale.shape(n, k)[1]
        if tuple(g_idx.shape) != (k,):
            raise InvalidInputError(f"quantize: g_idx must be [{k}] with groups in [0, {groups}), got {list(g_idx.shape)}")
        lo, hi = int(g_idx.min()), int(g_idx.max())  # before the int32 cast, which would wrap int64 values
        if lo < 0 or hi >= groups:
            raise InvalidInputError(f"quantize: g_idx must be [{k}] with groups in [0, {groups}), got [{lo}, {hi}]")
        g_idx = g_idx.to(device=x.device, dtype=torch.int32)
    gs = _global_scale(x, wf.dtype, wf.scale.dtype) if wf.global_scale else None
    cmap = CellMap(wf.scale, n, k, g_idx, x.device)
    codes, scales, zeros = _quantize_cells(x, wf.dtype, wf.scale, wf.zero_point, cmap, gs, clamp, "weight.scale")
    return QuantizedTensor(qf, (n, k), codec.pack_codes(codes, wf.dtype.bits), scales, zeros, gs, g_idx)


def quantize_activation(x: torch.Tensor, fmt: ActivationFormat | QuantFormat, *, scale: torch.Tensor | float | None = None,
                        global_scale: torch.Tensor | float | None = None, clamp: bool = False) -> QuantizedActivation:
    """Quantize activations [M, K] as a GEMM does on the fly (dynamic) or with a calibrated ``scale`` (static).

    Dynamic scales are chosen like weight scales (amax / elem_max, or the MX rule for ue8m0). A static scale
    (STATIC) saturates what lies beyond it, by that format's definition. ``global_scale`` (formats with one)
    defaults to the dynamic amax / (elem_max * scale_max); a given (calibrated) one may be too small for new
    input, and then the block scales saturate at the scale dtype's largest value, as a static scale does.
    ``clamp`` is quantize's: e.g. NVFP4 blocks far below an outlier's amax, whose e4m3 scales would round to 0.
    """
    af = fmt.activation if isinstance(fmt, QuantFormat) else fmt
    if not isinstance(af, ActivationFormat) or not af.is_quantized:
        raise InvalidInputError(f"quantize_activation: the activation format is 16-bit ({af!r}); nothing to quantize")
    assert af.dtype is not None
    xf = _check_input(x, "quantize_activation: x")
    m, k = xf.shape
    spec = af.scale_spec()
    spec.shape(m, k)
    gs = None
    if af.global_scale:
        if global_scale is None:
            gs = _global_scale(xf, af.dtype, af.scale_dtype)
        else:
            gs, clamp = _positive_scalar(global_scale, "global_scale").to(xf.device), True
    elif global_scale is not None:
        raise InvalidInputError("quantize_activation: global_scale given but the activation format has none")
    if af.scaling is ActScaling.STATIC:
        if scale is None:
            raise InvalidInputError("quantize_activation: a static activation format needs scale= (the checkpoint's input scale)")
        s = _positive_scalar(scale, "scale").reshape(1, 1).to(xf.device)
        codes = codec.encode(xf / s, af.dtype, saturate=True)
        return QuantizedActivation(af, (m, k), codec.pack_codes(codes, af.dtype.bits), s, None)
    if scale is not None:
        raise InvalidInputError(f"quantize_activation: scale= is for static formats; this one is {af.scaling.value}")
    cmap = CellMap(spec, m, k, None, xf.device)
    codes, scales, _ = _quantize_cells(xf, af.dtype, spec, ZeroPointSpec.NONE, cmap, gs, clamp, "activation.scale")
    return QuantizedActivation(af, (m, k), codec.pack_codes(codes, af.dtype.bits), scales, gs)


def _positive_scalar(value: torch.Tensor | float, name: str) -> torch.Tensor:
    t = torch.as_tensor(value, dtype=torch.float32).reshape(-1)
    if t.numel() != 1 or not bool(torch.isfinite(t).all()) or float(t) <= 0:
        raise InvalidInputError(f"{name}={value!r}: expected one positive finite number")
    return t


def dequantize(q: QuantizedTensor | QuantizedActivation, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The real values [rows, K] by the formula in the module docstring, computed in float64, then cast once.

    float64 holds every product exactly for the presets: (code - zero) * scale * global_scale.
    """
    if isinstance(q, QuantizedTensor):
        elem, spec, g_idx = q.format.weight.dtype, q.format.weight.scale, q.g_idx
        zeros = q.zeros
    elif isinstance(q, QuantizedActivation):
        assert q.format.dtype is not None
        elem, spec, g_idx, zeros = q.format.dtype, q.format.scale_spec(), None, None
    else:
        raise InvalidInputError(f"dequantize: expected a QuantizedTensor or QuantizedActivation, got {type(q).__name__}")
    n, k = q.shape
    cmap = CellMap(spec, n, k, g_idx, q.data.device)
    v = codec.decode(q.codes(), elem, out_dtype=torch.float64)
    if zeros is not None:
        zdtype = elem if zeros.dtype is torch.uint8 else spec.dtype
        v = v - cmap.expand(codec.decode(zeros, zdtype, out_dtype=torch.float64))
    v = v * cmap.expand(codec.decode(q.scales, spec.dtype, out_dtype=torch.float64))
    if q.global_scale is not None:
        v = v * q.global_scale.to(torch.float64)
    return codec.cast_rounded_once(v, dtype)  # float64 -> 16 bits: torch's cast would round twice
