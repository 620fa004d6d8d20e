"""Declarative GEMM cases: formats x W/A combinations x shapes (edge shapes included), each with a stable id.

A case is data: a preset name (``humming.core.presets``), the activation dtype the tensor cores take (f16 or
bf16 for a 16-bit-activation format, the format's own dtype otherwise) and a shape. The list does not depend on
the target, so a case id means the same on every device and two reports can be compared line by line; what a
target cannot run ends as ``unsupported`` with the capability's reason, never by leaving the case out.

Two sets:

- ``core``: every preset family once (plus f16 for the formats checkpoints ship in f16), over six shapes of
  which five are edge shapes. Small enough for CI on every catalog target.
- ``extended``: every preset, f16 and bf16 for each 16-bit-activation format, and more shapes, including
  real layer shapes (Llama-3-8B/70B, Qwen3-30B-A3B, gpt-oss-120b projections) and M from 1 to 4096.

A shape is kept for a format only when the format's scale grid tiles it (a group of 128 must divide K): any
other shape is an invalid request, not a conformance case.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from humming.core import dtypes, presets
from humming.core.dtypes import DType
from humming.core.formats import QuantFormat
from humming.capabilities.query import combination_name
from humming.errors import InvalidInputError


@dataclass(frozen=True)
class Shape:
    """A GEMM shape: out[M, N] = x[M, K] @ W[N, K]^T, and why it is an edge case (empty: a typical shape)."""

    m: int
    n: int
    k: int
    edge: str = ""

    @property
    def id(self) -> str:
        return f"m{self.m}n{self.n}k{self.k}"


#: Core shapes: small, so the CPU reference stays fast; all but the first are edges of some tiling.
CORE_SHAPES: tuple[Shape, ...] = (
    Shape(16, 512, 1024),
    Shape(1, 256, 512, "decode: a single row"),
    Shape(13, 320, 640, "odd M; N = 5 x 64 and K = 5 x 128 are not powers of two"),
    Shape(257, 192, 1024, "M one past 256; N = 3 x 64"),
    Shape(1, 64, 128, "the smallest: N one 64-column block, K one group of 128"),
    Shape(7, 200, 384, "N = 200 is not a multiple of 64 (the kernel pads N)"),
)

#: Extended shapes: more M values over small N x K, then real layer shapes.
_LAYERS = ((4096, 4096), (14336, 4096), (4096, 14336), (8192, 8192), (28672, 8192), (1536, 2048), (5760, 2880))
EXTENDED_SHAPES: tuple[Shape, ...] = CORE_SHAPES + tuple(
    Shape(m, 512, 1024, "" if m in (16, 64, 256) else "M not a multiple of the tile")
    for m in (2, 3, 5, 8, 31, 33, 64, 100, 127, 129, 256, 511)
) + (
    Shape(3, 128, 160, "K = 160: not a multiple of 64 (formats whose group divides it)"),
    Shape(9, 96, 4096, "N = 96: one and a half 64-column blocks; long K"),
) + tuple(Shape(m, n, k) for n, k in _LAYERS for m in (1, 16, 64, 1024)) + (
    Shape(4096, 28672, 8192, "prefill of a large layer"),
)

#: Core formats: every family of preset once; 16-bit-activation formats with the dtypes their checkpoints use.
CORE_FORMATS: tuple[tuple[str, tuple[DType, ...]], ...] = (
    ("gptq_int4", (dtypes.f16, dtypes.bf16)),
    ("awq_int4", (dtypes.f16,)),
    ("gptq_int8", (dtypes.bf16,)),
    ("gptq_int4_act_order", (dtypes.f16,)),
    ("mxfp4", (dtypes.bf16,)),
    ("mxint4", (dtypes.bf16,)),
    ("nvfp4_w4a16", (dtypes.bf16,)),
    ("fp8_channel_w8a16", (dtypes.bf16,)),
    ("fp8_channel", ()),  # W8A8 e4m3
    ("fp8_block", ()),
    ("w8a8_int8", ()),
    ("w4a8_fp4", ()),
    ("w4a8_int4", ()),
    ("mxfp8", ()),
    ("nvfp4", ()),  # W4A4 e2m1
    ("w4a4_int4", ()),
)

SIXTEEN_BIT = (dtypes.f16, dtypes.bf16)


@dataclass(frozen=True)
class GemmCase:
    """One dense GEMM request: a preset, the activation dtype the MMA takes, and a shape."""

    preset: str
    activation: DType
    shape: Shape

    @property
    def format(self) -> QuantFormat:
        return presets.get(self.preset)

    @property
    def weight(self) -> DType:
        return self.format.weight.dtype

    @property
    def weight_only(self) -> bool:
        """True for 16-bit activations (WnA16): the activations enter the MMA as given."""
        return not self.format.activation.is_quantized

    @property
    def out(self) -> DType:
        """The output dtype: the activations' for WnA16, bf16 for quantized activations."""
        return self.activation if self.weight_only else dtypes.bf16

    @property
    def combination(self) -> str:
        return combination_name(self.weight, self.activation)

    @property
    def id(self) -> str:
        return f"{self.preset}.{self.activation}/{self.shape.id}"

    def params(self) -> dict[str, Any]:
        return {"preset": self.preset, "format": self.format.to_dict(), "weights": self.weight.name,
                "activations": self.activation.name, "out": self.out.name, "combination": self.combination,
                "m": self.shape.m, "n": self.shape.n, "k": self.shape.k, "edge": self.shape.edge}


def _activations(preset: str, given: tuple[DType, ...]) -> tuple[DType, ...]:
    fmt = presets.get(preset)
    if fmt.activation.is_quantized:
        assert fmt.activation.dtype is not None, "a quantized activation format has a dtype"
        return (fmt.activation.dtype,)
    return given or SIXTEEN_BIT


def tiles(fmt: QuantFormat, shape: Shape) -> bool:
    """Whether the format's weight (and activation) scale grids tile an [N, K] weight and [M, K] input."""
    try:
        fmt.weight.scale.shape(shape.n, shape.k)
        if fmt.activation.is_quantized:
            fmt.activation.scale_spec().shape(shape.m, shape.k)
    except InvalidInputError:
        return False
    return True


def gemm_cases(case_set: str = "core") -> list[GemmCase]:
    """Every GEMM case of ``case_set`` ("core" or "extended"), in a fixed order."""
    if case_set == "core":
        formats: Iterable[tuple[str, tuple[DType, ...]]] = CORE_FORMATS
        shapes = CORE_SHAPES
    elif case_set == "extended":
        formats = [(name, SIXTEEN_BIT) for name in presets.names()]
        shapes = EXTENDED_SHAPES
    else:
        raise InvalidInputError(f"unknown case set {case_set!r}; allowed: core, extended")
    out = []
    for preset, acts in formats:
        fmt = presets.get(preset)
        for act in _activations(preset, acts):
            out += [GemmCase(preset, act, s) for s in shapes if tiles(fmt, s)]
    ids = [c.id for c in out]
    if len(set(ids)) != len(ids):
        raise InvalidInputError("conformance: duplicate case ids in the case list (a humming bug, please report)")
    return out


def find(case_id: str, case_set: str = "extended") -> GemmCase:
    """The case with this id (without the level prefix), searching ``case_set``."""
    for c in gemm_cases(case_set):
        if c.id == case_id:
            return c
    raise InvalidInputError(f"no conformance case {case_id!r} in the {case_set} set")


#: Perf-level GEMM table (ANCHORS.md: the figures to beat on one H200): W4A16 g128 over layer shapes.
PERF_GEMMS: tuple[GemmCase, ...] = tuple(
    GemmCase("gptq_int4", dtypes.bf16, Shape(m, n, k))
    for (n, k), ms in (((8192, 8192), (1, 16, 64, 1024)), ((28672, 8192), (1, 16, 64, 1024, 4096)),
                       ((8192, 28672), (1, 16)))
    for m in ms
)
