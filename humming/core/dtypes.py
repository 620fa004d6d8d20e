"""Interned DType value objects: integers of 1..8 bits, small floats eXmY, scale types, f16/bf16/f32.

Names follow PTX spelling (``s4``, ``u8``, ``e4m3``, ``ue8m0``, ``bf16``); ``DType.parse`` also takes the
names users know (``int4``, ``float8_e4m3fn``, ``torch.bfloat16``). Each dtype is created once, so
``dtypes.e4m3 is DType.parse("e4m3")`` holds and tables may be keyed by the object.

Special values follow the OCP Microscaling (MX) v1.0 and OCP 8-bit float (OFP8) specifications:
- ``IEEE``: the all-ones exponent holds inf (mantissa 0) and NaN (mantissa != 0), as e5m2 and e3m4;
- ``FN``: no inf; only the all-ones exponent *and* mantissa pattern is NaN, as e4m3 (max 448);
- ``FINITE``: every bit pattern is a finite number, as the 4- and 6-bit floats e2m1, e2m3, e3m2;
- scale types ``ue8m0`` (0xFF is NaN) and ``ue4m3`` (unsigned e4m3, 0x7F is NaN).
Encoding and decoding live in ``humming.core.codec``; this module only describes.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import ClassVar

from humming.errors import InvalidInputError


class DTypeKind(enum.Enum):
    INT = "int"  # two's complement (signed) or plain binary (unsigned) integer
    FLOAT = "float"  # sign (optional), biased exponent, mantissa with an implicit leading one
    BINARY = "binary"  # b1: a bit for xor/and-popc MMA, not a number


class SpecialValues(enum.Enum):
    IEEE = "ieee"  # all-ones exponent: inf when the mantissa is 0, NaN otherwise
    FN = "fn"  # finite + NaN: only the all-ones exponent and mantissa pattern is NaN, no inf
    FINITE = "finite"  # every pattern is a finite number
    NAN_ONLY_MAX = "nan_max"  # exponent-only scale (ue8m0): the all-ones pattern is NaN


@dataclass(frozen=True, eq=False)
class DType:
    """One element type. Created once per name (interned): compare with ``is`` or ``==`` alike."""

    name: str  # PTX spelling: s4, u8, e4m3, ue8m0, f16 ...
    kind: DTypeKind
    bits: int  # storage width of one element
    signed: bool
    exponent_bits: int = 0  # floats only
    mantissa_bits: int = 0  # floats only (explicit bits; the leading one is implicit for normals)
    bias: int = 0  # exponent bias for floats
    special: SpecialValues = SpecialValues.FINITE
    aliases: tuple[str, ...] = field(default=())

    _registry: ClassVar[dict[str, "DType"]] = {}

    # ---- identity --------------------------------------------------------------------------------
    def __repr__(self) -> str:
        return f"dtypes.{self.name}"

    def __str__(self) -> str:
        return self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __eq__(self, other: object) -> bool:
        return self is other

    def __reduce__(self) -> tuple:
        # Pickling (process pools, caches) yields the interned object again.
        return (DType.parse, (self.name,))

    # ---- classification --------------------------------------------------------------------------
    @property
    def is_int(self) -> bool:
        return self.kind is DTypeKind.INT

    @property
    def is_float(self) -> bool:
        return self.kind is DTypeKind.FLOAT

    @property
    def is_scale_only(self) -> bool:
        """Unsigned exponent-only or unsigned float types meant for scales (ue8m0, ue4m3)."""
        return self.is_float and not self.signed

    # ---- value range ------------------------------------------------------------------------------
    @property
    def int_min(self) -> int:
        self._need(DTypeKind.INT, "int_min")
        return -(1 << (self.bits - 1)) if self.signed else 0

    @property
    def int_max(self) -> int:
        self._need(DTypeKind.INT, "int_max")
        return (1 << (self.bits - 1)) - 1 if self.signed else (1 << self.bits) - 1

    @property
    def max_exponent_field(self) -> int:
        """The exponent field of the largest finite value."""
        self._need(DTypeKind.FLOAT, "max_exponent_field")
        all_ones = (1 << self.exponent_bits) - 1
        if self.special is SpecialValues.IEEE:
            return all_ones - 1
        if self.special in (SpecialValues.FN, SpecialValues.NAN_ONLY_MAX) and self.mantissa_bits == 0:
            return all_ones - 1  # ue8m0: 0xFF is NaN, 0xFE = 2**127 is the largest
        return all_ones

    @property
    def max_finite(self) -> float:
        """The largest finite value (448 for e4m3, 57344 for e5m2, 6 for e2m1, 2**127 for ue8m0)."""
        if self.is_int:
            return float(self.int_max)
        self._need(DTypeKind.FLOAT, "max_finite")
        mant_fields = (1 << self.mantissa_bits) - 1
        all_ones = (1 << self.exponent_bits) - 1
        if self.special in (SpecialValues.FN, SpecialValues.NAN_ONLY_MAX) and self.mantissa_bits > 0 \
                and self.max_exponent_field == all_ones:
            mant_fields -= 1  # the all-ones pattern is NaN (e4m3: 0x7F), so 448 = 1.75 * 2**8
        if self.exponent_bits == 0:
            return mant_fields * self.smallest_subnormal  # no exponent: every value is a multiple of the step
        return (1.0 + mant_fields / (1 << self.mantissa_bits)) * 2.0 ** (self.max_exponent_field - self.bias)

    @property
    def smallest_normal(self) -> float:
        self._need(DTypeKind.FLOAT, "smallest_normal")
        return 2.0 ** (1 - self.bias)

    @property
    def smallest_subnormal(self) -> float:
        self._need(DTypeKind.FLOAT, "smallest_subnormal")
        if self.mantissa_bits == 0:
            return 2.0 ** (0 - self.bias)  # ue8m0: no subnormals, field 0 is 2**-bias
        return 2.0 ** (1 - self.bias - self.mantissa_bits)

    @property
    def has_inf(self) -> bool:
        return self.is_float and self.special is SpecialValues.IEEE

    @property
    def has_nan(self) -> bool:
        return self.is_float and self.special is not SpecialValues.FINITE

    def _need(self, kind: DTypeKind, what: str) -> None:
        if self.kind is not kind:
            raise InvalidInputError(f"{what} is defined for {kind.value} dtypes, not for {self.name}")

    # ---- construction and parsing ----------------------------------------------------------------
    @classmethod
    def _intern(cls, dtype: "DType") -> "DType":
        for key in (dtype.name, *dtype.aliases):
            existing = cls._registry.get(key.lower())
            if existing is not None and existing is not dtype:
                raise InvalidInputError(f"dtype name {key!r} is already taken by {existing!r}")
            cls._registry[key.lower()] = dtype
        return dtype

    @classmethod
    def parse(cls, value: "str | DType | object") -> "DType":
        """Return the interned dtype for a name, an alias, a DType or a torch.dtype.

        Raises InvalidInputError naming the known spellings when the value is not a dtype.
        """
        if isinstance(value, DType):
            return value
        if isinstance(value, str):
            key = value.strip().lower()
            if key.startswith("torch."):
                key = key[len("torch.") :]
            found = cls._registry.get(key)
            if found is not None:
                return found
            small = _parse_small_float(key)
            if small is not None:
                return small
            raise InvalidInputError(
                f"unknown dtype {value!r}; known: {', '.join(d.name for d in all_dtypes())} "
                "(or any eXmY float that fits in 8 bits)"
            )
        torch_name = getattr(value, "__module__", None) == "torch" and str(value)
        if torch_name:
            return cls.parse(torch_name)
        raise InvalidInputError(f"expected a dtype name or a DType, got {type(value).__name__} {value!r}")


def _define_int(bits: int, signed: bool, *aliases: str) -> DType:
    name = f"{'s' if signed else 'u'}{bits}"
    return DType._intern(DType(name, DTypeKind.INT, bits, signed, aliases=aliases))


def small_float(exponent_bits: int, mantissa_bits: int, *, signed: bool = True, special: SpecialValues | None = None,
                bias: int | None = None, aliases: tuple[str, ...] = ()) -> DType:
    """The interned eXmY float (signed) or ueXmY (unsigned). Fits in 8 bits; OCP special-value rules by default.

    The default bias is 2**(E-1) - 1 (1 for e0m3, by the same convention as e2m1's subnormals).
    """
    bits = exponent_bits + mantissa_bits + (1 if signed else 0)
    name = f"{'' if signed else 'u'}e{exponent_bits}m{mantissa_bits}"
    existing = DType._registry.get(name)
    if existing is not None:
        return existing
    if not 1 <= bits <= 8 or exponent_bits < 0 or mantissa_bits < 0:
        raise InvalidInputError(f"{name}: a small float needs 1..8 bits in all, got {bits}")
    if special is None:
        special = SpecialValues.FINITE if bits < 8 else (SpecialValues.IEEE if exponent_bits >= 5 else SpecialValues.FN)
    if bias is None:
        bias = (1 << (exponent_bits - 1)) - 1 if exponent_bits > 0 else 1
    return DType._intern(DType(name, DTypeKind.FLOAT, bits, signed, exponent_bits, mantissa_bits, bias, special, aliases))


def _parse_small_float(key: str) -> DType | None:
    import re

    m = re.fullmatch(r"(u?)e(\d)m(\d)", key)
    if not m:
        return None
    return small_float(int(m.group(2)), int(m.group(3)), signed=not m.group(1))


# ---- the vocabulary --------------------------------------------------------------------------------
b1 = DType._intern(DType("b1", DTypeKind.BINARY, 1, False, aliases=("bit",)))
u1 = _define_int(1, False, "uint1")
s2 = _define_int(2, True, "int2")
u2 = _define_int(2, False, "uint2")
s3 = _define_int(3, True, "int3")
u3 = _define_int(3, False, "uint3")
s4 = _define_int(4, True, "int4")
u4 = _define_int(4, False, "uint4")
s5 = _define_int(5, True, "int5")
u5 = _define_int(5, False, "uint5")
s6 = _define_int(6, True, "int6")
u6 = _define_int(6, False, "uint6")
s7 = _define_int(7, True, "int7")
u7 = _define_int(7, False, "uint7")
s8 = _define_int(8, True, "int8")
u8 = _define_int(8, False, "uint8")
s32 = DType._intern(DType("s32", DTypeKind.INT, 32, True, aliases=("int32",)))

e2m1 = small_float(2, 1, aliases=("fp4", "float4_e2m1fn", "fp4_e2m1"))
e0m3 = small_float(0, 3)  # hidden Blackwell tensor-core format; no exponent, values k/8 (bias 1 convention)
e3m2 = small_float(3, 2, aliases=("float6_e3m2fn", "fp6_e3m2"))
e2m3 = small_float(2, 3, aliases=("float6_e2m3fn", "fp6_e2m3"))
e4m3 = small_float(4, 3, aliases=("float8_e4m3fn", "fp8", "fp8_e4m3", "float8_e4m3"))
e5m2 = small_float(5, 2, aliases=("float8_e5m2", "fp8_e5m2"))
e3m4 = small_float(3, 4, special=SpecialValues.IEEE, aliases=("float8_e3m4",))  # ml_dtypes' IEEE-like e3m4
ue8m0 = small_float(8, 0, signed=False, special=SpecialValues.NAN_ONLY_MAX, bias=127, aliases=("e8m0", "float8_e8m0fnu"))
ue4m3 = small_float(4, 3, signed=False, special=SpecialValues.FN, aliases=())

f16 = DType._intern(DType("f16", DTypeKind.FLOAT, 16, True, 5, 10, 15, SpecialValues.IEEE, ("float16", "half", "fp16")))
bf16 = DType._intern(DType("bf16", DTypeKind.FLOAT, 16, True, 8, 7, 127, SpecialValues.IEEE, ("bfloat16",)))
tf32 = DType._intern(DType("tf32", DTypeKind.FLOAT, 19, True, 8, 10, 127, SpecialValues.IEEE, ("tensorfloat32",)))
f32 = DType._intern(DType("f32", DTypeKind.FLOAT, 32, True, 8, 23, 127, SpecialValues.IEEE, ("float32", "float", "fp32")))
f64 = DType._intern(DType("f64", DTypeKind.FLOAT, 64, True, 11, 52, 1023, SpecialValues.IEEE, ("float64", "double", "fp64")))


def all_dtypes() -> tuple[DType, ...]:
    """Every interned dtype, each once, in definition order."""
    seen: dict[int, DType] = {}
    for d in DType._registry.values():
        seen.setdefault(id(d), d)
    return tuple(seen.values())


def exactly_representable(src: DType, dst: DType) -> bool:
    """True when every finite value of ``src`` is a finite value of ``dst`` (so a conversion is lossless).

    Used by the capability model: s4 weights can feed an s8 MMA, e2m1 weights an e4m3 MMA, any int of up to
    8 bits (or e4m3, e5m2) an f16 or bf16 MMA.
    """
    if src is dst:
        return True
    if src.kind is DTypeKind.BINARY or dst.kind is DTypeKind.BINARY:
        return False
    if src.is_int and dst.is_int:
        return dst.int_min <= src.int_min and src.int_max <= dst.int_max
    if src.is_int and dst.is_float:
        if src.signed and not dst.signed:
            return False
        # Integers up to 2**(mantissa+1) are exact in a float with that many mantissa bits.
        limit = 2 ** (dst.mantissa_bits + 1)
        return max(abs(src.int_min), src.int_max) <= min(limit, dst.max_finite)
    if src.is_float and dst.is_float:
        if src.signed and not dst.signed:
            return False
        if src.max_finite > dst.max_finite:
            return False
        if src.smallest_subnormal < dst.smallest_subnormal:
            return False
        # Every src value has at most mantissa_bits significant bits after the leading one; the finest step of
        # src near the bottom must land on dst's grid, and dst needs as many mantissa bits (or src is subnormal).
        return dst.mantissa_bits >= src.mantissa_bits
    return False
