"""Quantization formats as data: ScaleSpec, ZeroPointSpec, WeightFormat, ActivationFormat and QuantFormat.

Frozen value objects that say what a checkpoint holds, with no behaviour beyond validation and a strict
dict/JSON form (``to_dict`` / ``from_dict``; unknown keys raise). The numbers live in
``humming.core.quantized``; the named formats (GPTQ, NVFP4 ...) in ``humming.core.presets``.

Weights are [N, K] (out_features x in_features); scales are laid out as ``ScaleSpec.shape(n, k)`` says.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Mapping

from humming.core import dtypes
from humming.core.dtypes import DType
from humming.errors import InternalError, InvalidInputError

#: Dtypes a scale may have: 16/32-bit floats are stored as such, the 8-bit ones as raw uint8 codes.
SCALE_DTYPES: tuple[DType, ...] = (dtypes.f16, dtypes.bf16, dtypes.f32, dtypes.e4m3, dtypes.ue8m0, dtypes.ue4m3)
#: Dtypes an on-the-fly quantized activation may have.
ACTIVATION_DTYPES: tuple[DType, ...] = (dtypes.s8, dtypes.e4m3, dtypes.s4, dtypes.e2m1)
_WIDE_SCALES = (dtypes.f16, dtypes.bf16, dtypes.f32)
#: Scale dtypes that a second-level f32 global scale brings into range (NVFP4): the 8-bit floats with a mantissa.
GLOBAL_SCALED: tuple[DType, ...] = (dtypes.e4m3, dtypes.ue4m3)


def _names(values: tuple[DType, ...]) -> str:
    return ", ".join(d.name for d in values)


def _dtype(value: object, where: str, allowed: tuple[DType, ...] | None = None) -> DType:
    try:
        d = DType.parse(value)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{where}: {exc}") from None
    if allowed is not None and d not in allowed:
        raise InvalidInputError(f"{where}={d}: allowed: {_names(allowed)}")
    return d


def _enum(cls: type[enum.Enum], value: object, where: str) -> Any:
    if isinstance(value, cls):
        return value
    for member in cls:
        if isinstance(value, str) and value.strip().lower() == member.value:
            return member
    raise InvalidInputError(f"{where}={value!r}: allowed: {', '.join(m.value for m in cls)}")


def _positive_int(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InvalidInputError(f"{where}={value!r}: expected a positive integer")
    return value


def _bool(value: object, where: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidInputError(f"{where}={value!r}: expected true or false")
    return value


def _keys(data: object, where: str, required: tuple[str, ...], optional: tuple[str, ...]) -> Mapping[str, Any]:
    """Check a dict's keys: every required one present, nothing unknown; errors name the allowed keys."""
    if not isinstance(data, Mapping):
        raise InvalidInputError(f"{where}: expected a dict, got {type(data).__name__} {data!r}")
    allowed = required + optional
    unknown = sorted(str(k) for k in data if k not in allowed)
    if unknown:
        raise InvalidInputError(f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; allowed keys: {', '.join(allowed)}")
    missing = [k for k in required if k not in data]
    if missing:
        raise InvalidInputError(f"{where}: missing key(s) {', '.join(map(repr, missing))}; required keys: {', '.join(required)}")
    return data


class Granularity(enum.Enum):
    """Which weights share one scale."""

    TENSOR = "tensor"  # one scale: shape [1, 1]
    CHANNEL = "channel"  # one per output channel (row n): [N, 1]
    GROUP = "group"  # one per `group` consecutive k of a row (or per g_idx group): [N, K / group]
    BLOCK = "block"  # one per bn x bk tile: [ceil(N / bn), ceil(K / bk)]


class ZeroPointSpec(enum.Enum):
    """Zero points: w = (code - zero) * scale. Integer zeros are uint8 codes, float zeros use the scale's dtype."""

    NONE = "none"
    INT = "int"  # unsigned integer elements only (GPTQ, AWQ); zero in [0, 2**bits - 1]
    FLOAT = "float"  # integer elements with a real-valued zero in the scale's 16/32-bit dtype


@dataclass(frozen=True)
class ScaleSpec:
    """The scale grid: granularity, dtype, and the group size (GROUP) or block shape (BLOCK, (bn, bk))."""

    granularity: Granularity
    dtype: DType = dtypes.f32
    group: int | None = None  # GROUP only: consecutive elements along K that share one scale
    block: tuple[int, int] | None = None  # BLOCK only: (rows along N, columns along K) of one tile

    def __post_init__(self) -> None:
        g = _enum(Granularity, self.granularity, "scale.granularity")
        object.__setattr__(self, "granularity", g)
        object.__setattr__(self, "dtype", _dtype(self.dtype, "scale.dtype", SCALE_DTYPES))
        if g is Granularity.GROUP:
            _positive_int(self.group, "scale.group")
        elif self.group is not None:
            raise InvalidInputError(f"scale.group={self.group!r} is set but granularity is {g.value}; only group takes a group size")
        if g is Granularity.BLOCK:
            if not isinstance(self.block, (tuple, list)) or len(self.block) != 2:
                raise InvalidInputError(f"scale.block={self.block!r}: expected (bn, bk), two positive integers")
            object.__setattr__(self, "block", (_positive_int(self.block[0], "scale.block[0]"), _positive_int(self.block[1], "scale.block[1]")))
        elif self.block is not None:
            raise InvalidInputError(f"scale.block={self.block!r} is set but granularity is {g.value}; only block takes a block shape")

    def shape(self, n: int, k: int) -> tuple[int, int]:
        """Shape of the scales of an [n, k] tensor; raises when the group does not divide k."""
        g = self.granularity
        if g is Granularity.TENSOR:
            return (1, 1)
        if g is Granularity.CHANNEL:
            return (n, 1)
        if g is Granularity.GROUP:
            assert self.group is not None, "validated in __post_init__"
            if k % self.group:
                raise InvalidInputError(
                    f"scale.group={self.group} does not divide K={k}; allowed: a divisor of K "
                    f"(or per-block scales, which allow a partial last block)"
                )
            return (n, k // self.group)
        assert self.block is not None, "validated in __post_init__"
        bn, bk = self.block
        return (-(-n // bn), -(-k // bk))

    def k_group(self) -> int:
        """Elements along K that share one scale: the group (GROUP), the block's K extent (BLOCK), else 0."""
        if self.granularity is Granularity.GROUP:
            if self.group is None:
                raise InternalError("a group ScaleSpec without a group size got past __post_init__")
            return self.group
        if self.granularity is Granularity.BLOCK:
            return self.block_shape()[1]
        return 0

    def block_shape(self) -> tuple[int, int]:
        """(rows along N, columns along K) of one scale tile; BLOCK scales only."""
        if self.granularity is not Granularity.BLOCK or self.block is None:
            raise InternalError(f"ScaleSpec.block_shape() on {self.dtype} scales per {self.granularity.value} "
                                f"(block={self.block!r}): only block scales have a block shape")
        return self.block

    def describe(self) -> str:
        if self.granularity is Granularity.GROUP:
            return f"{self.dtype} scales per group of {self.group}"
        if self.granularity is Granularity.BLOCK:
            assert self.block is not None
            return f"{self.dtype} scales per {self.block[0]}x{self.block[1]} block"
        return f"{self.dtype} scales per {self.granularity.value}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"granularity": self.granularity.value, "dtype": self.dtype.name}
        if self.group is not None:
            out["group"] = self.group
        if self.block is not None:
            out["block"] = list(self.block)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "scale") -> "ScaleSpec":
        d = _keys(data, where, ("granularity", "dtype"), ("group", "block"))
        block = d.get("block")
        return cls(d["granularity"], d["dtype"], d.get("group"), tuple(block) if isinstance(block, list) else block)


@dataclass(frozen=True)
class WeightFormat:
    """How one weight matrix is stored: element dtype, scales, zero points, optional f32 global scale, act order.

    ``act_order`` means the checkpoint carries ``g_idx`` (GPTQ desc_act): group of column k is g_idx[k].
    """

    dtype: DType
    scale: ScaleSpec
    zero_point: ZeroPointSpec = ZeroPointSpec.NONE
    global_scale: bool = False  # a second-level f32 scale for the whole tensor (NVFP4)
    act_order: bool = False

    def __post_init__(self) -> None:
        d = _dtype(self.dtype, "weight.dtype")
        if not (d.is_int and d.bits <= 8) and not (d.is_float and d.signed and d.bits <= 8):
            raise InvalidInputError(
                f"weight.dtype={d}: a weight element is an integer of 1..8 bits or a signed float of up to 8 bits "
                f"(e.g. s4, u4, s8, e2m1, e4m3, e5m2); 16-bit weights need no format"
            )
        object.__setattr__(self, "dtype", d)
        if not isinstance(self.scale, ScaleSpec):
            raise InvalidInputError(f"weight.scale: expected a ScaleSpec, got {type(self.scale).__name__}")
        zp = _enum(ZeroPointSpec, self.zero_point, "weight.zero_point")
        object.__setattr__(self, "zero_point", zp)
        _bool(self.global_scale, "weight.global_scale")
        _bool(self.act_order, "weight.act_order")
        if zp is not ZeroPointSpec.NONE and d.is_float:
            raise InvalidInputError(f"weight.zero_point={zp.value} with float elements ({d}): allowed with {d}: none")
        if zp is ZeroPointSpec.INT and d.signed:
            raise InvalidInputError(
                f"weight.zero_point=int with signed elements ({d}): integer zero points need unsigned elements; "
                f"allowed: u{d.bits} with zero_point=int, or {d} with zero_point=none or float"
            )
        if zp is ZeroPointSpec.NONE and d.is_int and not d.signed:
            raise InvalidInputError(
                f"weight.dtype={d} with zero_point=none holds nonnegative weights only; allowed: "
                + (f"s{d.bits} without zero points, or " if d.bits > 1 else "")  # no s1: one bit of two's complement
                + f"{d} with zero_point=int or float"
            )
        if zp is ZeroPointSpec.FLOAT and self.scale.dtype not in _WIDE_SCALES:
            raise InvalidInputError(
                f"weight.zero_point=float stores zeros in the scale dtype, which is {self.scale.dtype}; "
                f"allowed scale dtypes with float zero points: {_names(_WIDE_SCALES)}"
            )
        if zp is not ZeroPointSpec.NONE and self.scale.dtype is dtypes.ue8m0:
            raise InvalidInputError("weight.zero_point: power-of-two (ue8m0) scales take no zero point; allowed: none")
        if self.global_scale and self.scale.granularity is Granularity.TENSOR:
            raise InvalidInputError("weight.global_scale=true with a per-tensor scale: the scale already is global; allowed: false")
        if self.global_scale and self.scale.dtype not in GLOBAL_SCALED:
            raise InvalidInputError(
                f"weight.global_scale=true with {self.scale.dtype} scales: a global scale brings 8-bit float scales into "
                f"range; allowed scale dtypes with a global scale: {_names(GLOBAL_SCALED)}"
            )
        if self.act_order and self.scale.granularity is not Granularity.GROUP:
            raise InvalidInputError(
                f"weight.act_order=true needs per-group scales (g_idx maps columns to groups), "
                f"got granularity {self.scale.granularity.value}; allowed: false"
            )

    def describe(self) -> str:
        parts = [f"{self.dtype} weights", self.scale.describe()]
        if self.zero_point is not ZeroPointSpec.NONE:
            parts.append(f"{self.zero_point.value} zero points")
        if self.global_scale:
            parts.append("f32 global scale")
        if self.act_order:
            parts.append("act order (g_idx)")
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "dtype": self.dtype.name,
            "scale": self.scale.to_dict(),
            "zero_point": self.zero_point.value,
            "global_scale": self.global_scale,
            "act_order": self.act_order,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "weight") -> "WeightFormat":
        d = _keys(data, where, ("dtype", "scale"), ("zero_point", "global_scale", "act_order"))
        return cls(
            _dtype(d["dtype"], f"{where}.dtype"),
            ScaleSpec.from_dict(d["scale"], f"{where}.scale"),
            d.get("zero_point", ZeroPointSpec.NONE.value),
            d.get("global_scale", False),
            d.get("act_order", False),
        )


class ActScaling(enum.Enum):
    """How activations are scaled when a GEMM quantizes them."""

    NONE = "none"  # 16-bit activations as given (f16 or bf16)
    TOKEN = "token"  # dynamic, one scale per row of x [M, K]: scales [M, 1]
    GROUP = "group"  # dynamic, one scale per `group` consecutive k of a row: [M, K / group]
    STATIC = "static"  # one calibrated scale for the tensor, given by the checkpoint: [1, 1]


_ACT_SCALE_DTYPES = {
    ActScaling.TOKEN: _WIDE_SCALES,
    ActScaling.STATIC: (dtypes.f32,),
    ActScaling.GROUP: SCALE_DTYPES,
}


@dataclass(frozen=True)
class ActivationFormat:
    """Activations: 16-bit (the default), or quantized per token, per group of k, or with a static scale."""

    dtype: DType | None = None  # None: activations stay 16-bit; else one of ACTIVATION_DTYPES
    scaling: ActScaling = ActScaling.NONE
    group: int | None = None  # GROUP only
    scale_dtype: DType = dtypes.f32
    global_scale: bool = False  # GROUP only: a second-level f32 scale (NVFP4 activations)

    def __post_init__(self) -> None:
        s = _enum(ActScaling, self.scaling, "activation.scaling")
        object.__setattr__(self, "scaling", s)
        if s is ActScaling.NONE:
            if self.dtype is not None:
                raise InvalidInputError(f"activation.dtype={self.dtype} with scaling=none; allowed: none (16-bit activations)")
            if self.group is not None or self.global_scale or self.scale_dtype is not dtypes.f32:
                raise InvalidInputError("activation: 16-bit activations (scaling=none) take no group, scale_dtype or global_scale")
            return
        if self.dtype is None:
            raise InvalidInputError(f"activation.dtype is none with scaling={s.value}; allowed: {_names(ACTIVATION_DTYPES)}")
        object.__setattr__(self, "dtype", _dtype(self.dtype, "activation.dtype", ACTIVATION_DTYPES))
        object.__setattr__(self, "scale_dtype", _dtype(self.scale_dtype, "activation.scale_dtype", _ACT_SCALE_DTYPES[s]))
        if s is ActScaling.GROUP:
            _positive_int(self.group, "activation.group")
        elif self.group is not None:
            raise InvalidInputError(f"activation.group={self.group!r} with scaling={s.value}; only scaling=group takes a group")
        _bool(self.global_scale, "activation.global_scale")
        if self.global_scale and s is not ActScaling.GROUP:
            raise InvalidInputError(f"activation.global_scale=true with scaling={s.value}; allowed only with scaling=group")
        if self.global_scale and self.scale_dtype not in GLOBAL_SCALED:
            raise InvalidInputError(
                f"activation.global_scale=true with {self.scale_dtype} scales; allowed scale dtypes with a global "
                f"scale: {_names(GLOBAL_SCALED)}"
            )

    @property
    def is_quantized(self) -> bool:
        return self.scaling is not ActScaling.NONE

    def scale_spec(self) -> ScaleSpec:
        """The same grid in weight terms, for x [M, K]: per token is per row (CHANNEL), static is TENSOR."""
        g = {ActScaling.TOKEN: Granularity.CHANNEL, ActScaling.GROUP: Granularity.GROUP, ActScaling.STATIC: Granularity.TENSOR}
        if self.scaling is ActScaling.NONE:
            raise InvalidInputError("activation: 16-bit activations have no scales")
        return ScaleSpec(g[self.scaling], self.scale_dtype, self.group)

    def describe(self) -> str:
        if self.scaling is ActScaling.NONE:
            return "16-bit activations"
        how = {ActScaling.TOKEN: "per token", ActScaling.GROUP: f"per group of {self.group}", ActScaling.STATIC: "static per tensor"}
        extra = " + f32 global scale" if self.global_scale else ""
        return f"{self.dtype} activations, {self.scale_dtype} scales {how[self.scaling]}{extra}"

    def to_dict(self) -> dict[str, Any]:
        if self.scaling is ActScaling.NONE:
            return {"dtype": None, "scaling": "none"}
        assert self.dtype is not None
        out: dict[str, Any] = {"dtype": self.dtype.name, "scaling": self.scaling.value, "scale_dtype": self.scale_dtype.name}
        if self.group is not None:
            out["group"] = self.group
        if self.global_scale:
            out["global_scale"] = True
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "activation") -> "ActivationFormat":
        d = _keys(data, where, ("dtype", "scaling"), ("group", "scale_dtype", "global_scale"))
        dt = None if d["dtype"] is None else _dtype(d["dtype"], f"{where}.dtype")
        scale_dtype = _dtype(d.get("scale_dtype", "f32"), f"{where}.scale_dtype")
        return cls(dt, d["scaling"], d.get("group"), scale_dtype, d.get("global_scale", False))


@dataclass(frozen=True)
class QuantFormat:
    """A GEMM's whole format: how the weights are stored and how activations enter. ``name`` is a label only."""

    weight: WeightFormat
    activation: ActivationFormat = field(default_factory=ActivationFormat)
    name: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.weight, WeightFormat):
            raise InvalidInputError(f"format.weight: expected a WeightFormat, got {type(self.weight).__name__}")
        if not isinstance(self.activation, ActivationFormat):
            raise InvalidInputError(f"format.activation: expected an ActivationFormat, got {type(self.activation).__name__}")

    def describe(self) -> str:
        label = f"{self.name}: " if self.name else ""
        return f"{label}{self.weight.describe()}; {self.activation.describe()}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"weight": self.weight.to_dict(), "activation": self.activation.to_dict()}
        if self.name:
            out["name"] = self.name
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "QuantFormat":
        """The inverse of ``to_dict``; unknown or missing keys raise InvalidInputError naming them."""
        d = _keys(data, "format", ("weight",), ("activation", "name"))
        act = d.get("activation")
        name = d.get("name")
        if name is not None and not isinstance(name, str):
            raise InvalidInputError(f"format.name={name!r}: expected a string")
        return cls(
            WeightFormat.from_dict(d["weight"]),
            ActivationFormat() if act is None else ActivationFormat.from_dict(act),
            name,
        )
