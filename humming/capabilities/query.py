"""Pure questions of a DeviceCapabilities: which instruction paths serve (activation, weight), and supports().

A *path* is one MMA instruction plus what the kernel does to the weights first:
- native: an instruction takes the activation dtype and the weight dtype as they are (e4m3 x e2m1 on tcgen05);
- converted: the weights are widened in registers, exactly, to a dtype the instruction takes with the
  activations (s4 -> s8, e2m1 -> e4m3, any int of up to 8 bits -> f16/bf16). This is how WnA16 runs.
Activations are never converted: the activation format is what the caller asked the tensor cores to run on.
Either operand order is allowed (a kernel may put the weights in the A operand, "swap AB").

Nothing here names an architecture: every answer comes from the capability table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from humming.capabilities.model import BlockScale, DeviceCapabilities, MmaInstruction, Target
from humming.core import dtypes
from humming.core.dtypes import DType, exactly_representable
from humming.core.formats import Granularity, QuantFormat, WeightFormat
from humming.errors import UnsupportedError

#: Activation dtypes offered as alternatives, in the order a user would try them.
ALTERNATIVE_ACTIVATIONS: tuple[DType, ...] = (dtypes.e4m3, dtypes.s8, dtypes.bf16, dtypes.f16, dtypes.e2m1, dtypes.s4)


@dataclass(frozen=True)
class InstructionPath:
    """One way to run (activation, weight) on a target."""

    instruction: MmaInstruction
    weight_conversion: DType | None = None  # weights widened to this dtype in registers first; None: native
    swapped: bool = False  # weights feed the A operand and activations the B operand
    block_scaled: bool = False  # the instruction applies the weight format's block scales itself

    def describe(self) -> str:
        text = self.instruction.describe()
        if self.weight_conversion is not None:
            text += f" (weights converted to {self.weight_conversion} in registers)"
        if self.swapped:
            text += " (weights as operand A)"
        return text

    def to_json(self) -> dict:
        return {"instruction": self.instruction.to_json(),
                "weight_conversion": None if self.weight_conversion is None else self.weight_conversion.name,
                "swapped": self.swapped, "block_scaled": self.block_scaled}


@dataclass(frozen=True)
class Verdict:
    """The answer to supports(): yes with the paths (best first), or no with what is missing and what would work."""

    target: Target
    activation: DType
    weight: DType
    accumulator: DType
    paths: tuple[InstructionPath, ...] = ()
    missing: tuple[str, ...] = ()
    alternatives: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()  # why the chosen path is the one chosen

    @property
    def ok(self) -> bool:
        return bool(self.paths)

    @property
    def chosen(self) -> InstructionPath | None:
        return self.paths[0] if self.paths else None

    @property
    def combination(self) -> str:
        return combination_name(self.weight, self.activation)

    def message(self) -> str:
        what = f"{self.combination} ({self.weight} weights, {self.activation} activations, {self.accumulator} accumulation)"
        if self.ok:
            return f"{what} on {self.target.arch}: {self.chosen.describe()}"  # type: ignore[union-attr]
        return f"{what} is not supported on {self.target.arch}"

    def raise_if_unsupported(self) -> "Verdict":
        if not self.ok:
            raise UnsupportedError(self.message(), missing=self.missing, alternatives=self.alternatives)
        return self

    def to_json(self) -> dict:
        return {
            "target": self.target.arch, "vendor": self.target.vendor, "combination": self.combination,
            "weights": self.weight.name, "activations": self.activation.name, "accumulator": self.accumulator.name,
            "supported": self.ok, "chosen": None if self.chosen is None else self.chosen.to_json(),
            "paths": [p.to_json() for p in self.paths], "missing": list(self.missing),
            "alternatives": list(self.alternatives), "warnings": list(self.warnings), "reasons": list(self.reasons),
        }


def combination_name(weight: DType, activation: DType) -> str:
    """W4A16, W8A8, W4A8, W4A4 ... from the element widths."""
    return f"W{weight.bits}A{activation.bits}"


def default_accumulator(activation: DType) -> DType:
    """s32 for integer activations, f32 otherwise (f16 accumulation is opt-in, never a default)."""
    return dtypes.s32 if activation.is_int else dtypes.f32


def _operand_types_with(caps: DeviceCapabilities, activation: DType, acc: DType) -> list[tuple[MmaInstruction, DType, bool]]:
    """(instruction, the other operand's dtype, activation-is-operand-B) for every instruction taking ``activation``."""
    out = []
    for instr in caps.mma:
        if instr.acc is not acc:
            continue
        if instr.a is activation:
            out.append((instr, instr.b, False))
        if instr.b is activation and instr.a is not instr.b:
            out.append((instr, instr.a, True))
    return out


def instruction_paths(caps: DeviceCapabilities, activation: DType, weight: DType, *, accumulator: DType | None = None,
                      weight_block_scale: BlockScale | None = None) -> tuple[InstructionPath, ...]:
    """Every path that runs (activation, weight) on ``caps``, best first.

    Best means: a form the tensor cores run (not emulated by the compiler), then the block-scaled form when the
    weights carry matching block scales, then the fastest family, then native over converted, then the
    instruction with the larger K (fewer issues per tile).
    """
    acc = accumulator or default_accumulator(activation)
    paths: list[InstructionPath] = []
    for instr, other, act_is_b in _operand_types_with(caps, activation, acc):
        if instr.block_scale is not None and instr.block_scale != weight_block_scale:
            continue  # a block-scaled form is only usable with weights that carry exactly those scales
        conversion: DType | None
        if other is weight:
            conversion = None
        elif exactly_representable(weight, other) and not instr.block_scale:
            conversion = other
        else:
            continue
        paths.append(InstructionPath(instr, conversion, swapped=act_is_b, block_scaled=instr.block_scale is not None))
    unique = {(p.instruction, p.weight_conversion, p.swapped): p for p in paths}
    return tuple(sorted(unique.values(), key=lambda p: (
        p.instruction.emulated, not p.block_scaled, -p.instruction.family.rank, p.weight_conversion is not None, p.swapped, -p.instruction.k)))


def supports(caps: DeviceCapabilities, *, activation: DType | str, weight: DType | str,
             accumulator: DType | str | None = None, weight_block_scale: BlockScale | None = None,
             catalog: Sequence[DeviceCapabilities] = ()) -> Verdict:
    """Can ``caps`` run a GEMM of ``activation`` x ``weight``? A Verdict either way, never an exception.

    ``catalog``, when given, lets a "no" also name the targets that would run the request natively.
    """
    a = DType.parse(activation)
    w = DType.parse(weight)
    acc = DType.parse(accumulator) if accumulator is not None else default_accumulator(a)
    paths = instruction_paths(caps, a, w, accumulator=acc, weight_block_scale=weight_block_scale)
    if paths:
        return Verdict(caps.target, a, w, acc, paths=paths, warnings=_warnings(caps, paths[0], a, w),
                       reasons=_reasons(caps, paths))
    return Verdict(caps.target, a, w, acc, missing=_missing(caps, a, w, acc),
                   alternatives=_alternatives(caps, a, w, acc, weight_block_scale, catalog))


def block_scale_of(weight: WeightFormat) -> BlockScale | None:
    """The hardware block scale a weight format's scales are, if any: ue8m0 (MX) or e4m3 (NVFP4) per group of K.

    e4m3 scales are positive, so their codes are ue4m3 codes, which is what the block-scaled MMA forms take.
    """
    spec = weight.scale
    if spec.granularity is not Granularity.GROUP or spec.group is None:
        return None
    if spec.dtype is dtypes.ue8m0:
        return BlockScale(dtypes.ue8m0, spec.group)
    if spec.dtype in (dtypes.e4m3, dtypes.ue4m3):
        return BlockScale(dtypes.ue4m3, spec.group)
    return None


def supports_format(caps: DeviceCapabilities, fmt: QuantFormat, *, activation16: DType | str = dtypes.bf16,
                    accumulator: DType | str | None = None, catalog: Sequence[DeviceCapabilities] = ()) -> Verdict:
    """supports() for a whole QuantFormat: its activation dtype (or ``activation16`` when activations stay 16-bit),
    its weight dtype, the block scales its weights carry, and ``accumulator`` (None: the activation's default)."""
    activation = fmt.activation.dtype if fmt.activation.dtype is not None else DType.parse(activation16)
    return supports(caps, activation=activation, weight=fmt.weight.dtype, accumulator=accumulator,
                    weight_block_scale=block_scale_of(fmt.weight), catalog=catalog)


def _warnings(caps: DeviceCapabilities, path: InstructionPath, a: DType, w: DType) -> tuple[str, ...]:
    warnings = []
    primary = caps.primary_family
    fam = path.instruction.family
    if primary is not None and fam != primary:
        operand = path.weight_conversion or w
        warnings.append(
            f"{a} x {operand} runs on {fam} on {caps.target.arch}: {primary}, the fastest MMA family here, has no "
            f"{a} form with {path.instruction.acc} accumulation; expect much lower tensor throughput than {primary} paths")
    if path.instruction.emulated:
        warnings.append(f"{path.instruction.describe()} is emulated on {caps.target.arch}: "
                        f"{path.instruction.emulation}; it computes the right result at a fraction of the rate")
    for dt in (path.instruction.a, path.instruction.b):
        hidden = caps.hidden(dt)
        if hidden is not None:
            warnings.append(f"{dt} is a hidden tensor-core format on {caps.target.arch} (not in the ISA; verified: "
                            f"{hidden.verified_on})")
    return tuple(dict.fromkeys(warnings))


def _reasons(caps: DeviceCapabilities, paths: Sequence[InstructionPath]) -> tuple[str, ...]:
    best = paths[0]
    reasons = [f"{len(paths)} instruction path(s) on {caps.target.arch}; chosen: {best.describe()}"]
    if best.block_scaled:
        reasons.append("the weights' block scales match the instruction's, so the tensor core applies them")
    if best.weight_conversion is None:
        reasons.append("native: the instruction takes the weight dtype as stored")
    else:
        reasons.append(f"weights widened exactly to {best.weight_conversion} in registers (no rounding)")
    if caps.primary_family is not None and best.instruction.family == caps.primary_family:
        reasons.append(f"{best.instruction.family} is the fastest MMA family on {caps.target.arch}")
    return tuple(reasons)


def _missing(caps: DeviceCapabilities, a: DType, w: DType, acc: DType) -> tuple[str, ...]:
    families = ", ".join(f.name for f in caps.families) or "no MMA family"
    if not any(i.a is a or i.b is a for i in caps.mma):
        return (f"a tensor-core MMA on {a} operands ({families} on {caps.target.arch}: none takes {a})",)
    if not _operand_types_with(caps, a, acc):
        accs = sorted({i.acc.name for i in caps.mma if i.a is a or i.b is a})
        return (f"{a} MMA with {acc} accumulation ({caps.target.arch} accumulates {a} into {', '.join(accs)})",)
    partners = sorted({o.name for _, o, _ in _operand_types_with(caps, a, acc)})
    return (f"an MMA pairing {a} with {w}, or an exact conversion of {w} to a type paired with {a} "
            f"(on {caps.target.arch}, {a} pairs with {', '.join(partners)})",)


def _alternatives(caps: DeviceCapabilities, a: DType, w: DType, acc: DType, scale: BlockScale | None,
                  catalog: Iterable[DeviceCapabilities]) -> tuple[str, ...]:
    """Other activation dtypes on this target (each with its default accumulator), then the targets that run the
    request exactly as asked: the same accumulator and the weights' own block scales."""
    out = []
    for alt in ALTERNATIVE_ACTIVATIONS:
        if alt is a:
            continue
        paths = instruction_paths(caps, alt, w, weight_block_scale=scale)
        if paths:
            out.append(f"{combination_name(w, alt)} with {alt} activations on {caps.target.arch}: {paths[0].describe()}")
    native = [c.target.arch for c in catalog if c.target != caps.target
              and instruction_paths(c, a, w, accumulator=acc, weight_block_scale=scale)]
    if native:
        out.append(f"{combination_name(w, a)} with {a} activations and {acc} accumulation runs on: "
                   f"{', '.join(native)}")
    return tuple(out)
