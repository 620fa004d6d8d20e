"""The capability vocabulary: what a device target can do, as data (MMA instructions, memory features, limits, SKUs).

Nothing here knows a vendor. Plugins build these values; the rest of humming only asks questions of them
(``caps.has_mma(a=e4m3, b=e2m1, acc=f32)``). A fact that is not known is ``None`` and is listed in
``DeviceCapabilities.unknown``, never guessed. Every claim can carry a ``Source`` saying where it comes from.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from dataclasses import dataclass, field
from typing import Mapping

from humming.core.dtypes import DType


class Provenance(enum.Enum):
    DOCUMENTED = "documented"  # a primary public document (PTX ISA section, datasheet, programming guide)
    MEASURED = "measured"  # run on the hardware, with a date
    VENDOR_DECLARED = "vendor-declared"  # a vendor statement that is not a technical document (press, product page)
    DERIVED = "derived"  # follows from other facts (e.g. inherited from an older architecture)
    REPORTED = "reported"  # third-party reports (deviceQuery dumps, reviews); single-source facts say so


@dataclass(frozen=True)
class Source:
    """Where a fact comes from: ``Source(DOCUMENTED, "PTX ISA 9.0, 9.7.14.5.14 mma shapes")``."""

    provenance: Provenance
    citation: str

    def __str__(self) -> str:
        return f"{self.provenance.value}: {self.citation}"


@dataclass(frozen=True)
class Target:
    """A compile target, the key every binary is built for: ``Target("nvidia", "sm_90a")``.

    ``family`` groups targets whose binaries or tuning are shared (``sm_100f`` covers sm_100 and sm_103).
    """

    vendor: str  # "nvidia", "thead", or a vendor plugin's own name
    arch: str  # what the vendor's compiler takes: "sm_90a", "ppu-810e"
    family: str = ""  # optional grouping, e.g. "hopper", "blackwell", "ppu"

    def __str__(self) -> str:
        return f"{self.vendor}:{self.arch}"


@dataclass(frozen=True)
class MmaFamily:
    """An MMA instruction family: ``mma.sync``, ``wgmma``, ``tcgen05``, or a vendor's own.

    ``rank`` orders families by expected throughput on the device that has them (higher is faster), so that
    selection prefers the newest path and can warn when a request falls back to an older one.
    """

    name: str  # "mma.sync", "wgmma", "tcgen05", "ppu.mma.sync"
    asynchronous: bool  # issued asynchronously (wgmma, tcgen05) rather than warp-synchronous
    rank: int  # higher is the faster path where several exist on one device
    operand_from_smem: bool = False  # B (and optionally A) read from shared memory descriptors

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class BlockScale:
    """Hardware block scaling inside the MMA: one ``scale`` per ``vector_size`` elements along K."""

    scale: DType  # ue8m0 (MX) or ue4m3 (NVFP4)
    vector_size: int  # elements along K that share one scale: 32 for MX, 16 for NVFP4

    def __str__(self) -> str:
        return f"{self.scale}x{self.vector_size}"


@dataclass(frozen=True)
class MmaInstruction:
    """One tensor-core instruction form: family, shape (m, n, k), operand and accumulator dtypes."""

    family: MmaFamily
    shape: tuple[int, int, int]  # (m, n, k) of one instruction; for wgmma n is the largest allowed
    a: DType
    b: DType
    acc: DType
    block_scale: BlockScale | None = None
    ptx: str = ""  # the mnemonic as the vendor's ISA spells it, for messages and probes
    n_values: tuple[int, ...] = ()  # the N choices when the family allows several (wgmma: 8..256 step 8)
    hidden: bool = False  # runs on the hardware but not documented by the ISA
    # The ISA accepts the form, but the target's tensor cores lack it and the compiler lowers it onto another
    # tensor op (seen in the machine code): correct, but without the throughput the form suggests.
    emulated: bool = False
    emulation: str = ""  # how it is lowered, e.g. "IMMA .S8 after an unpack"
    source: Source | None = None

    @property
    def m(self) -> int:
        return self.shape[0]

    @property
    def n(self) -> int:
        return self.shape[1]

    @property
    def k(self) -> int:
        return self.shape[2]

    @property
    def form(self) -> tuple:
        """What the instruction is, apart from what is said about it (emulated, hidden, source)."""
        return (self.family.name, self.shape, self.a, self.b, self.acc, self.block_scale, self.ptx)

    def describe(self) -> str:
        m, n, k = self.shape
        scale = f" block-scaled {self.block_scale}" if self.block_scale else ""
        emulated = " [emulated]" if self.emulated else ""
        return f"{self.family} m{m}n{n}k{k} {self.a}x{self.b}->{self.acc}{scale}{emulated}"

    def to_json(self) -> dict:
        return {
            "instr": self.family.name,
            "shape": list(self.shape),
            "a": self.a.name,
            "b": self.b.name,
            "acc": self.acc.name,
            "block_scale": None if self.block_scale is None else
            {"scale": self.block_scale.scale.name, "vector_size": self.block_scale.vector_size},
            "ptx": self.ptx,
            "hidden": self.hidden,
            "emulated": self.emulated,
            "emulation": self.emulation,
            "source": None if self.source is None else str(self.source),
        }


@dataclass(frozen=True)
class MemoryFeatures:
    """Data-movement and execution features. ``None`` means not known for this target."""

    ldmatrix: bool | None = None  # ldmatrix.sync (sm_75+)
    stmatrix: bool | None = None  # stmatrix.sync (sm_90+)
    cp_async: bool | None = None  # cp.async / LDGSTS (sm_80+)
    bulk_copy: bool | None = None  # cp.async.bulk: a contiguous global -> shared run completing on an mbarrier
    bulk_tensor_copy: bool | None = None  # TMA: cp.async.bulk.tensor, or a vendor's own bulk tensor copy
    bulk_tensor_copy_name: str = ""  # e.g. "cp.async.bulk.tensor" or "ppu.cp.async.aiu.bulk.tensor"
    tma_multicast: bool | None = None  # .multicast::cluster
    clusters: bool | None = None  # thread-block clusters and distributed shared memory
    max_cluster_size: int | None = None  # portable cluster size limit
    setmaxnreg: bool | None = None  # register reallocation between warpgroups (sm_90a, sm_100a ...)
    programmatic_launch: bool | None = None  # griddepcontrol: a grid starts while the one before it finishes (sm_90+)
    tensor_memory: bool | None = None  # TMEM accumulators (tcgen05)
    tensor_memory_bytes: int | None = None  # TMEM per SM

    def to_json(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class ExecutionLimits:
    """Per-block and per-SM limits. ``None`` means not known for this target."""

    warp_size: int | None = 32
    shared_memory_per_sm: int | None = None  # bytes
    shared_memory_per_block_optin: int | None = None  # bytes a block can have after opting in
    registers_per_sm: int | None = None  # 32-bit registers
    max_registers_per_thread: int | None = None
    max_threads_per_sm: int | None = None
    max_threads_per_block: int | None = 1024

    def to_json(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class HiddenFormat:
    """A tensor-core format that runs but that the ISA does not document (E3M4, E0M3 on Blackwell)."""

    dtype: DType
    verified_on: str  # where and how it was verified, e.g. "sm_100a: cubin patch, run on B200"
    source: Source | None = None

    def to_json(self) -> dict:
        return {"dtype": self.dtype.name, "verified_on": self.verified_on, "source": None if self.source is None else str(self.source)}


@dataclass(frozen=True)
class SkuFacts:
    """Product facts for one part (H200 SXM, B300 ...). Each unknown is ``None``."""

    name: str  # "H200 SXM"
    sm_count: int | None
    memory_bytes: int | None
    memory_bandwidth: float | None  # bytes per second, datasheet
    l2_bytes: int | None
    peak_dense_tflops: Mapping[DType, float] = field(default_factory=dict)  # per operand dtype, dense
    match_names: tuple[str, ...] = ()  # marketing names the driver reports, matched exactly (no substrings)
    source: Source | None = None

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "sm_count": self.sm_count,
            "memory_bytes": self.memory_bytes,
            "memory_bandwidth": self.memory_bandwidth,
            "l2_bytes": self.l2_bytes,
            "peak_dense_tflops": {d.name: v for d, v in self.peak_dense_tflops.items()},
            "source": None if self.source is None else str(self.source),
        }


@dataclass(frozen=True)
class DeviceCapabilities:
    """Everything a target can do. Built by a plugin; read by selection, codegen and conformance."""

    target: Target
    name: str  # readable: "NVIDIA Hopper (sm_90a)"
    mma: tuple[MmaInstruction, ...]
    memory: MemoryFeatures
    limits: ExecutionLimits
    hidden_formats: tuple[HiddenFormat, ...] = ()
    skus: tuple[SkuFacts, ...] = ()
    notes: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()  # names of facts that are not public or not yet known
    preview: bool = False  # a target whose facts are partly unknown (e.g. an announced architecture)
    sources: tuple[Source, ...] = ()

    # ---- queries ----------------------------------------------------------------------------------
    def instructions(self, *, a: DType | None = None, b: DType | None = None, acc: DType | None = None,
                     family: MmaFamily | None = None, block_scaled: bool | None = None) -> tuple[MmaInstruction, ...]:
        """The MMA forms that match every given filter, fastest family first."""
        found = [
            i for i in self.mma
            if (a is None or i.a is a) and (b is None or i.b is b) and (acc is None or i.acc is acc)
            and (family is None or i.family == family)
            and (block_scaled is None or (i.block_scale is not None) == block_scaled)
        ]
        return tuple(sorted(found, key=lambda i: -i.family.rank))

    def has_mma(self, *, a: DType, b: DType, acc: DType | None = None, family: MmaFamily | None = None) -> bool:
        return bool(self.instructions(a=a, b=b, acc=acc, family=family))

    @property
    def families(self) -> tuple[MmaFamily, ...]:
        """The MMA families present, fastest first."""
        return tuple(sorted({i.family for i in self.mma}, key=lambda f: -f.rank))

    @property
    def primary_family(self) -> MmaFamily | None:
        """The fastest MMA family this target has; paths through others are slower fallbacks."""
        fams = self.families
        return fams[0] if fams else None

    @property
    def largest_sm_count(self) -> int | None:
        """The most SMs any listed SKU has (what a plan for the target, not a present device, assumes); None when no
        SKU lists one."""
        return max((s.sm_count for s in self.skus if s.sm_count), default=None)

    def hidden(self, dtype: DType) -> HiddenFormat | None:
        for h in self.hidden_formats:
            if h.dtype is dtype:
                return h
        return None

    def sku(self, name: str) -> SkuFacts | None:
        for s in self.skus:
            if name == s.name or name in s.match_names:
                return s
        return None

    def to_json(self) -> dict:
        return {
            "target": {"vendor": self.target.vendor, "arch": self.target.arch, "family": self.target.family},
            "name": self.name,
            "mma": [i.to_json() for i in self.mma],
            "features": {**self.memory.to_json(), **self.limits.to_json()},
            "hidden_formats": [h.to_json() for h in self.hidden_formats],
            "skus": [s.to_json() for s in self.skus],
            "notes": list(self.notes),
            "unknown": list(self.unknown),
            "preview": self.preview,
        }


def wgmma_like_n_values(step: int = 8, largest: int = 256) -> tuple[int, ...]:
    """N choices of an instruction that takes any multiple of ``step`` up to ``largest``."""
    return tuple(range(step, largest + 1, step))


def check_capabilities(caps: DeviceCapabilities) -> list[str]:
    """Self-consistency problems of a capability table; an empty list means it is consistent.

    Used at plugin registration and by the conformance ``declare`` level. Each entry names the field.
    """
    if not isinstance(caps, DeviceCapabilities):
        return [f"expected DeviceCapabilities, got {type(caps).__name__} {caps!r:.80}"]
    # A plugin's table is data from outside humming: check the types first, as the rules below read the fields.
    problems = _type_problems(caps)
    if problems:
        return problems
    t = caps.target
    if not t.vendor or not t.arch:
        problems.append("target: vendor and arch must be non-empty")
    seen: set[tuple] = set()
    for i in caps.mma:
        key = (i.family.name, i.shape, i.a, i.b, i.acc, i.block_scale)
        if key in seen:
            problems.append(f"mma: {i.describe()} is declared twice")
        seen.add(key)
        if any(x <= 0 for x in i.shape):
            problems.append(f"mma: {i.describe()} has a non-positive shape")
        if not i.acc.is_float and not i.acc.is_int:
            problems.append(f"mma: {i.describe()} accumulates into {i.acc}, which is not a number type")
        if i.block_scale is not None and i.block_scale.vector_size <= 0:
            problems.append(f"mma: {i.describe()} has a block-scale vector size <= 0")
        if i.family.asynchronous and i.family.operand_from_smem and caps.memory.bulk_tensor_copy is False:
            problems.append(f"mma: {i.family} reads operands from shared-memory descriptors, "
                            "which needs the bulk tensor copy (memory.bulk_tensor_copy is False)")
        if i.emulated and not i.emulation:
            problems.append(f"mma: {i.describe()} is marked emulated but does not say how (emulation is empty)")
        if i.hidden and caps.hidden(i.a) is None and caps.hidden(i.b) is None:
            problems.append(f"mma: {i.describe()} is marked hidden but neither operand is in hidden_formats")
    lim = caps.limits
    if lim.shared_memory_per_block_optin and lim.shared_memory_per_sm and \
            lim.shared_memory_per_block_optin > lim.shared_memory_per_sm:
        problems.append(f"limits: shared_memory_per_block_optin {lim.shared_memory_per_block_optin} exceeds "
                        f"shared_memory_per_sm {lim.shared_memory_per_sm}")
    if caps.memory.tensor_memory and not any(f.name == "tcgen05" or f.asynchronous for f in caps.families):
        problems.append("memory: tensor_memory is claimed but no asynchronous MMA family uses it")
    if caps.memory.stmatrix and caps.memory.ldmatrix is False:
        problems.append("memory: stmatrix without ldmatrix")
    for s in caps.skus:
        if s.sm_count is not None and s.sm_count <= 0:
            problems.append(f"skus: {s.name} has sm_count {s.sm_count}")
    if caps.preview and not caps.unknown:
        problems.append("preview: a preview target must list its unknown facts in 'unknown'")
    return problems


_SCALARS = (bool, int, float, str, type(None))


def _wrong_type(where: str, value: object, kinds: tuple[type, ...]) -> list[str]:
    """One problem when ``value`` is none of ``kinds`` (a bool is no int here; an int is a float)."""
    ok = isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)
    if ok or (float in kinds and isinstance(value, int) and not isinstance(value, bool)):
        return []
    want = " or ".join("None" if k is type(None) else k.__name__ for k in kinds)
    return [f"{where}: expected {want}, got {type(value).__name__} {value!r:.60}"]


def _fields_problems(where: str, value: object, cls: type) -> list[str]:
    """``value`` must be a ``cls``; a dataclass's fields of plain scalar types (``int | None``) are checked too."""
    problems = _wrong_type(where, value, (cls,))
    if problems or not dataclasses.is_dataclass(cls):
        return problems
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        union = isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union
        kinds = typing.get_args(hint) if union else (hint,)
        if all(k in _SCALARS for k in kinds):
            problems += _wrong_type(f"{where}.{f.name}", getattr(value, f.name), kinds)
    return problems


def _tuple_problems(where: str, value: object, cls: type) -> list[str]:
    """``value`` must be a tuple (the dataclass is frozen and hashed) whose items are each a ``cls``."""
    if not isinstance(value, tuple):
        return [f"{where}: expected a tuple of {cls.__name__}, got {type(value).__name__} {value!r:.60}"]
    return [p for n, item in enumerate(value) for p in _fields_problems(f"{where}[{n}]", item, cls)]


def _type_problems(caps: DeviceCapabilities) -> list[str]:
    """Fields of the wrong type, each named with the type it needs (``mma[0]: expected MmaInstruction, got str``)."""
    problems = _fields_problems("target", caps.target, Target) + _wrong_type("name", caps.name, (str,))
    problems += _fields_problems("memory", caps.memory, MemoryFeatures)
    problems += _fields_problems("limits", caps.limits, ExecutionLimits)
    problems += _tuple_problems("mma", caps.mma, MmaInstruction)
    for n, i in enumerate(caps.mma if isinstance(caps.mma, tuple) else ()):
        if not isinstance(i, MmaInstruction):
            continue
        where = f"mma[{n}]"
        problems += _fields_problems(f"{where}.family", i.family, MmaFamily)
        for operand in ("a", "b", "acc"):
            problems += _wrong_type(f"{where}.{operand}", getattr(i, operand), (DType,))
        if not (isinstance(i.shape, tuple) and len(i.shape) == 3 and not _tuple_problems("", i.shape, int)):
            problems.append(f"{where}.shape: expected a tuple of three ints (m, n, k), got {i.shape!r:.60}")
        if i.block_scale is not None:
            problems += _fields_problems(f"{where}.block_scale", i.block_scale, BlockScale)
            if isinstance(i.block_scale, BlockScale):
                problems += _wrong_type(f"{where}.block_scale.scale", i.block_scale.scale, (DType,))
        problems += _tuple_problems(f"{where}.n_values", i.n_values, int)
    problems += _tuple_problems("hidden_formats", caps.hidden_formats, HiddenFormat)
    for n, h in enumerate(caps.hidden_formats if isinstance(caps.hidden_formats, tuple) else ()):
        if isinstance(h, HiddenFormat):
            problems += _wrong_type(f"hidden_formats[{n}].dtype", h.dtype, (DType,))
    problems += _tuple_problems("skus", caps.skus, SkuFacts)
    for n, s in enumerate(caps.skus if isinstance(caps.skus, tuple) else ()):
        if isinstance(s, SkuFacts):
            problems += _tuple_problems(f"skus[{n}].match_names", s.match_names, str)
    for name in ("notes", "unknown"):
        problems += _tuple_problems(name, getattr(caps, name), str)
    problems += _wrong_type("preview", caps.preview, (bool,))
    return problems
