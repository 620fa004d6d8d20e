"""How a quantization format is decoded by the dense kernels: DecodeParams, the format-dependent template arguments.

``DecodeParams.of(format)`` derives them from a WeightFormat (bits, integer or float codes, zero points, scale
placement and storage), so that a format is data and never a branch in the kernels' callers; it refuses what no dense
kernel decodes before any plan. The enums mirror the C++ ones of dequant/route.cuh.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from humming.core import dtypes
from humming.core.formats import Granularity, WeightFormat, ZeroPointSpec
from humming.errors import UnsupportedError


# WeightKind, ZeroMode and ScaleMode mirror the C++ enums of dequant/route.cuh, which also holds the routes the
# kernel derives from them (scales on partial sums, where a float exponent fix goes, the zero on the sums).
class WeightKind(enum.IntEnum):
    INT = 0  # unsigned code minus a zero point (signed codes are stored biased by 2^(b-1))
    FLOAT = 1  # sign, exponent, mantissa (eXmY)


class ZeroMode(enum.IntEnum):
    CONST = 0  # subtract the constant zconst
    ROWS = 1  # zero points from the packed zero rows (per group, or one row per channel)


class ScaleMode(enum.IntEnum):
    NONE = 0  # no per-element scale (a tensor/global scale goes to the epilogue)
    CHANNEL = 1  # f32 per output column, in the epilogue
    GROUP = 2  # per group of k, multiplied into the operands


class ScaleStorage(enum.IntEnum):
    ACT = 0  # 16-bit, in the activation dtype
    UE8M0 = 1  # 8-bit power-of-two codes (MX)
    E4M3 = 2  # 8-bit e4m3 / ue4m3 codes (NVFP4)


_STORAGE = {dtypes.ue8m0: ScaleStorage.UE8M0, dtypes.e4m3: ScaleStorage.E4M3, dtypes.ue4m3: ScaleStorage.E4M3}


#: The widest float-weight exponent the kernels decode (the twin's `we` bound): wider ones never ran on a GPU, and
#: DecodeParams refuses them before any plan.
MAX_FLOAT_EXPONENT_BITS = 5


@dataclass(frozen=True)
class DecodeParams:
    """How the kernel decodes one weight format (the format-dependent template arguments)."""

    wbits: int
    wkind: WeightKind
    we: int
    wm: int
    wbias: int
    zmode: ZeroMode
    zconst: int
    zgs: int
    smode: ScaleMode
    sdt: ScaleStorage
    gs: int

    @staticmethod
    def of(fmt: WeightFormat) -> "DecodeParams":
        """The decoding of ``fmt``; UnsupportedError for what the dense kernel cannot decode."""
        elem, spec = fmt.dtype, fmt.scale
        g = spec.granularity
        if fmt.zero_point is ZeroPointSpec.FLOAT:
            raise UnsupportedError(f"{fmt.describe()}: float zero points are not supported by the dense kernel yet",
                                   missing=["float zero points"], alternatives=["integer zero points"])
        if elem.is_float:
            if elem.exponent_bits == 0:
                raise UnsupportedError(f"{elem} weights are not supported by the dense kernel",
                                       missing=[f"{elem} decoding"])
            if elem.exponent_bits > MAX_FLOAT_EXPONENT_BITS:
                raise UnsupportedError(f"{elem} weights: the dense kernels decode floats with at most "
                                       f"{MAX_FLOAT_EXPONENT_BITS} exponent bits",
                                       missing=[f"e{elem.exponent_bits} float decoding"],
                                       alternatives=[f"e5m2, e4m3, e3m4, e2m1 or another eXmY with E <= "
                                                     f"{MAX_FLOAT_EXPONENT_BITS}",
                                                     "integer codes (u8 / s8) with scales"])
            kind, we, wm, wbias, zconst = WeightKind.FLOAT, elem.exponent_bits, elem.mantissa_bits, elem.bias, 0
        else:
            kind, we, wm, wbias = WeightKind.INT, 0, 0, 0
            zconst = (1 << (elem.bits - 1)) if elem.signed else 0
        zmode = ZeroMode.ROWS if fmt.zero_point is ZeroPointSpec.INT else ZeroMode.CONST
        if g in (Granularity.GROUP, Granularity.BLOCK):
            smode = ScaleMode.GROUP
            gs = spec.k_group()
        elif g is Granularity.CHANNEL:
            smode, gs = ScaleMode.CHANNEL, 0
        else:
            smode, gs = ScaleMode.NONE, 0
        zgs = gs if (zmode is ZeroMode.ROWS and smode is ScaleMode.GROUP) else 0
        sdt = _STORAGE.get(spec.dtype, ScaleStorage.ACT) if smode is ScaleMode.GROUP else ScaleStorage.ACT
        return DecodeParams(elem.bits, kind, we, wm, wbias, zmode, zconst, zgs, smode, sdt, gs)
