"""GemmProblem: the request every layer speaks (sizes, dtypes, weight format, dense or MoE), before any kernel choice.

A problem is a value: hashable, so plans are cached by it, and free of tensors, so ``humming explain`` can build
one from command-line flags. ``GemmProblem.bytes_moved`` gives the bytes a kernel must move at the least (the
memory roofline's numerator); ``flops`` the arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass

from humming.core import dtypes
from humming.core.dtypes import DType
from humming.core.formats import WeightFormat, ZeroPointSpec
from humming.errors import InvalidInputError


def check_k(k: int, where: str) -> None:
    """K's rule for the dense kernels (QuantLinear checks it when built, gemm on every call, the tuner per plan)."""
    if k % 8:
        raise InvalidInputError(f"{where}: K={k}; the kernel reads activations in 16-byte chunks, so K must be a "
                                f"multiple of 8: pad x and the weight along K with zeros")


@dataclass(frozen=True)
class GemmProblem:
    """out[M, N] = x[M, K] @ W[N, K]^T (+ bias), with W in ``weight`` format and x in ``activation`` dtype."""

    m: int
    n: int
    k: int
    weight: WeightFormat
    activation: DType = dtypes.bf16
    out: DType = dtypes.bf16
    has_bias: bool = False
    kind: str = "dense"  # "dense" | "moe"

    def __post_init__(self) -> None:
        for name in ("m", "n", "k"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise InvalidInputError(f"GemmProblem.{name}={v!r}: expected a positive integer")
        if not isinstance(self.weight, WeightFormat):
            raise InvalidInputError(f"GemmProblem.weight: expected a WeightFormat, got {type(self.weight).__name__}")
        object.__setattr__(self, "activation", DType.parse(self.activation))
        object.__setattr__(self, "out", DType.parse(self.out))
        if self.kind not in ("dense", "moe"):
            raise InvalidInputError(f"GemmProblem.kind={self.kind!r}; allowed: dense, moe")

    def check_dense_shape(self) -> None:
        """InvalidInputError for a K that pack and gemm refuse: one the weight's groups do not divide (quantize's
        message) or, for the dense kernels, one that is not a multiple of 8 (check_k's)."""
        self.weight.scale.shape(self.n, self.k)
        check_k(self.k, "gemm")

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k

    def weight_bytes(self) -> int:
        """The fewest bytes W's parts take, without padding: codes at their width, each row of W rounded up to whole
        bytes; scales at their dtype's width (sub-byte scale dtypes at a byte each); integer zero points at the code
        width on any grid (channel, group, block: ``count * bits`` rounded up once), float zero points like the
        scales; a global scale as one f32. The dense packed layout (packing.pack) ships integer zero points in the
        activation dtype, 2 bytes each (AWQ u4 g128: 4x the count here), so an integer-zero format's roofline
        percentage is a little conservative beside a format without zero points."""
        wf = self.weight
        codes = self.n * ((self.k * wf.dtype.bits + 7) // 8)  # each row of W rounded up to whole bytes
        cells = wf.scale.shape(self.n, self.k)
        count = cells[0] * cells[1]
        sbits = 8 if wf.scale.dtype.bits <= 8 else wf.scale.dtype.bits
        scales = count * sbits // 8
        zeros = 0
        if wf.zero_point is ZeroPointSpec.INT:
            zeros = (count * wf.dtype.bits + 7) // 8
        elif wf.zero_point is ZeroPointSpec.FLOAT:
            zeros = scales
        return codes + scales + zeros + (4 if wf.global_scale else 0)

    def bytes_moved(self) -> int:
        """The fewest bytes a GEMM must move: W once, x once, out once (and the bias)."""
        act = self.activation.bits // 8
        out = self.out.bits // 8
        return self.weight_bytes() + self.m * self.k * act + self.m * self.n * out + (self.n * out if self.has_bias else 0)

    def describe(self) -> str:
        return (f"{self.kind} GEMM M={self.m} N={self.n} K={self.k}, {self.weight.describe()}, "
                f"{self.activation} activations, {self.out} output{', bias' if self.has_bias else ''}")
