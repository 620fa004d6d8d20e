"""The dense WnA16 GEMM's twin: GemmDenseSpec declares gemm_dense.cuh's parameters, ranges and capabilities.

A spec is the full compile-time description of one kernel: the weight decoding (bits, integer or float,
zero points, scale placement), the activation and output dtypes, and the tile (warps along M/N/K, fragments
per warp, the k-depth and count of pipeline stages). The decoding part comes from a quantization format through
``DecodeParams.of(format)`` (dense_decode.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from humming.capabilities.model import DeviceCapabilities, Target
from humming.core import dtypes
from humming.core.codegen import KernelSpec, Requirement, param
from humming.core.dtypes import DType
from humming.errors import InternalError, InvalidInputError
from humming.kernels.dense_decode import (MAX_FLOAT_EXPONENT_BITS, DecodeParams, ScaleMode, ScaleStorage, WeightKind,
                                          ZeroMode)

if TYPE_CHECKING:
    from humming.core.launcher import CompiledKernel

ACTIVATIONS = (dtypes.f16, dtypes.bf16)
_ACT_TAG = {dtypes.f16: "humming::f16_t", dtypes.bf16: "humming::bf16_t"}


@dataclass(frozen=True)
class Tile:
    """The tile part of a spec: warps along M, N, K; fragments per warp; stage depth and count."""

    warp_m: int
    frag_m: int
    warp_n: int
    frag_n: int
    warp_k: int
    bk: int
    stages: int
    group_m: int = 8
    min_blocks: int = 1
    swap_n8: int = 0  # 1 or 2: weights as the MMA's m16 operand, this many n8 fragments of M (M <= 8 or 16)
    bulk_w: int = 0  # 1: weights through the bulk copy engine (needs memory.bulk_copy), 0: per-thread cp.async
    producer: int = 0  # 1: one extra warp issues every copy; stages hand over on mbarriers (needs memory.cp_async)
    one_token: int = 0  # 1: M = 1 only (swap_n8 = 1): group scales onto token column 0's partial sums alone

    @property
    def block_m(self) -> int:
        return 16 * self.warp_m * self.frag_m

    @property
    def block_n(self) -> int:
        return 64 * self.warp_n * self.frag_n

    @property
    def max_m(self) -> int | None:
        """The largest M the tile serves (None: any): 1 for one token, 8 per n8 fragment of swapped operands."""
        return 1 if self.one_token else 8 * self.swap_n8 if self.swap_n8 else None

    def describe(self) -> str:
        return (f"{self.block_m}x{self.block_n}x{self.bk} tile, {self.warp_m * self.warp_n * self.warp_k} compute "
                f"warps ({self.warp_m}x{self.warp_n}x{self.warp_k} along M/N/K), {self.stages} stages"
                + (f", swapped operands (M <= {8 * self.swap_n8})" if self.swap_n8 else "")
                + (", bulk weight copies" if self.bulk_w else "")
                + (", a producer issuing the copies" if self.producer else "")
                + (", one token (M = 1)" if self.one_token else ""))


def group_fits_stage(group: int, bk: int) -> bool:
    """Whether a scale or zero-point group of ``group`` k (0: none) and a bk-deep stage line up, one dividing the
    other: the templates' rule (gemm_dense.cuh's static_assert)."""
    return not group or group % bk == 0 or bk % group == 0


def groups_fit_stage(decode: DecodeParams, bk: int) -> bool:
    """Whether both of ``decode``'s groups (scales, zero points) line up with a bk-deep stage."""
    return group_fits_stage(decode.gs, bk) and group_fits_stage(decode.zgs, bk)


def scales_on_sums(decode: DecodeParams, tile: Tile) -> bool:
    """Whether group scales go onto f32 partial sums once a group instead of onto every operand pair
    (dequant/route.cuh kAccScale): swapped operands, and a warp's k16 steps of a stage hold whole groups or lie
    inside one."""
    span = tile.bk // tile.warp_k
    return bool(tile.swap_n8 and decode.smode is ScaleMode.GROUP and decode.gs
                and (span % decode.gs == 0 or decode.gs % span == 0))


def zero_on_sums(act: DType, decode: DecodeParams, tile: Tile) -> bool:
    """Whether the constant zero goes onto the partial sums instead of every operand pair (route.cuh kZeroOnSums):
    one token, bf16, 4-bit integer codes with a constant zero, scales on the sums, parts of 4 or 8 k16 steps. The
    tuner's one-token rule asks it; GemmDenseSpec.check_compiled holds it to each cubin's own answer."""
    part_steps = min(decode.gs // 16, tile.bk // 16 // tile.warp_k)
    return bool(tile.one_token and scales_on_sums(decode, tile) and act is dtypes.bf16 and decode.wbits == 4
                and decode.wkind is WeightKind.INT and decode.zmode is ZeroMode.CONST and part_steps in (4, 8))


def _act_cpp(d: DType) -> str:
    return _ACT_TAG[d]


def _mma_requirement(act: DType) -> Requirement:
    def check(caps: DeviceCapabilities) -> bool | None:
        return any(i.family.name == "mma.sync" and i.a is act and i.acc is dtypes.f32 and i.k in (8, 16)
                   and i.m == 16 for i in caps.mma)

    alternatives = ("f16 activations",) if act is dtypes.bf16 else ()
    return Requirement(f"mma.sync m16n8k16 (or m16n8k8) {act} x {act} -> f32", check, alternatives)


def _producer_requirement() -> Requirement:
    def check(caps: DeviceCapabilities) -> bool | None:
        return caps.memory.cp_async

    return Requirement("cp.async completing on an mbarrier, for a producer warp (memory.cp_async)", check,
                       ("producer=0 (every thread copies, one barrier per stage)",))


def _bulk_copy_requirement() -> Requirement:
    def check(caps: DeviceCapabilities) -> bool | None:
        return caps.memory.bulk_copy

    return Requirement("bulk global-to-shared copies completing on an mbarrier (memory.bulk_copy)", check,
                       ("bulk_w=0 (every thread copies 16 bytes with cp.async)",))


@dataclass(frozen=True)
class GemmDenseSpec(KernelSpec):
    """One instantiation of ``humming::gemm_dense`` (gemm_dense.cuh): template arguments in this order."""

    header = "gemm_dense.cuh"
    mma_family = "mma.sync"
    kernel = "humming::gemm_dense"
    # a, w, scales, zeros, chscale, gscale, bias, c, ws, counters; m, n, k, lda, ldc, nb64, k_pad, m_tiles, n_tiles
    signature: ClassVar[tuple[str, ...]] = ("ptr",) * 10 + ("s32",) * 9
    #: the C++ struct whose run() the kernel calls (it declares kSpreadsSplitTiles)
    kernel_struct: ClassVar[str] = "humming::GemmDense"
    #: whether split tiles reach the fix-up in the swapped accumulator layout (the wgmma form): larger ones are then
    #: finished by finish_spread (epilogue/finish.cuh); this kernel unswaps them first
    finishes_swapped_tiles: ClassVar[bool] = False
    #: experiment switches ("NAME=V,...") a timing variant's class is built with (benchmarks/profile_wna16.py
    #: with_defines), besides HUMMING_KERNEL_DEFINES; none of them changes the sizes below
    defines: ClassVar[str] = ""

    act: DType = param(allowed=ACTIVATIONS, cpp=_act_cpp, doc="activation and MMA operand dtype")
    out: DType = param(allowed=ACTIVATIONS, cpp=_act_cpp, doc="output dtype")
    wbits: int = param(bounds=(1, 8), doc="bits per weight code")
    wkind: WeightKind = param(doc="integer codes or eXmY floats")
    we: int = param(bounds=(0, MAX_FLOAT_EXPONENT_BITS), doc="exponent bits of float weights (0 for ints)")
    wm: int = param(bounds=(0, 7), doc="mantissa bits of float weights (0 for ints)")
    wbias: int = param(bounds=(0, 31), doc="exponent bias of float weights (0 for ints)")
    zmode: ZeroMode = param(doc="constant zero or zero-point rows")
    zconst: int = param(bounds=(0, 128), doc="the constant zero (2^(b-1) for signed codes)")
    zgs: int = param(bounds=(0, 1 << 20), multiple_of=16, doc="k per zero-point row (0: one row)")
    smode: ScaleMode = param(doc="no scale, channel scales in the epilogue, or group scales")
    sdt: ScaleStorage = param(doc="group scale storage")
    gs: int = param(bounds=(0, 1 << 20), multiple_of=16, doc="k per group-scale row")
    warp_m: int = param(allowed=(1, 2, 4), doc="warps along M")
    frag_m: int = param(allowed=(1, 2, 3, 4), doc="m16 fragments per warp")
    warp_n: int = param(allowed=(1, 2, 4, 8), doc="warps along N")
    frag_n: int = param(allowed=(1, 2), doc="n64 blocks per warp")
    warp_k: int = param(allowed=(1, 2, 4), doc="warps splitting a stage's k16 steps")
    bk: int = param(allowed=(64, 128, 256), doc="k per pipeline stage")
    stages: int = param(bounds=(2, 8), doc="cp.async pipeline depth")
    group_m: int = param(bounds=(1, 64), doc="m tiles that walk N together (L2 reuse)")
    min_blocks: int = param(bounds=(1, 4), doc="CTAs per SM the register budget is made for")
    swap_n8: int = param(default=0, allowed=(0, 1, 2),
                         doc="0: plain operands; 1 or 2: weights as the m16 MMA operand and this many n8 fragments "
                             "of activations (M <= 8 or 16)")
    bulk_w: int = param(default=0, allowed=(0, 1),
                        doc="1: weight rows through the bulk copy engine (one copy per k16 row of a stage, completing "
                            "on an mbarrier); 0: 16-byte cp.async by every thread")
    producer: int = param(default=0, allowed=(0, 1),
                          doc="1: one extra warp issues every copy and the compute warps wait only for the stage "
                              "they read (two mbarriers a stage); 0: every thread copies, one CTA barrier a stage")
    one_token: int = param(default=0, allowed=(0, 1),
                           doc="1: M = 1 only (with swap_n8 = 1): group scales go onto token column 0's partial sums "
                               "alone, the only column stored; 0: every column the tile holds")
    odd_n: int = param(default=1, allowed=(0, 1),
                       doc="1: N or the output's row stride may be odd (such rows are stored element by element); "
                           "0: both even, and the wgmma N = 16 form's element stores are not compiled (every other "
                           "form takes any row either way: odd_n_changes_code); check_output refuses an odd row then")

    @classmethod
    def build(cls, target: Target, act: DType, out: DType, decode: DecodeParams, tile: Tile, *,
              odd_n: bool = True) -> "GemmDenseSpec":
        """The spec of ``decode`` and ``tile`` on ``target`` (every value checked on construction); ``odd_n=False``
        for outputs whose N and row stride are even."""
        return cls(target=target, act=act, out=out, wbits=decode.wbits, wkind=decode.wkind, we=decode.we,
                   wm=decode.wm, wbias=decode.wbias, zmode=decode.zmode, zconst=decode.zconst,
                   zgs=decode.zgs, smode=decode.smode, sdt=decode.sdt, gs=decode.gs,
                   warp_m=tile.warp_m, frag_m=tile.frag_m, warp_n=tile.warp_n, frag_n=tile.frag_n,
                   warp_k=tile.warp_k, bk=tile.bk, stages=tile.stages, group_m=tile.group_m,
                   min_blocks=tile.min_blocks, swap_n8=tile.swap_n8, bulk_w=tile.bulk_w, producer=tile.producer,
                   one_token=tile.one_token, odd_n=int(odd_n))

    @property
    def tile(self) -> Tile:
        return Tile(self.warp_m, self.frag_m, self.warp_n, self.frag_n, self.warp_k, self.bk, self.stages,
                    self.group_m, self.min_blocks, self.swap_n8, self.bulk_w, self.producer, self.one_token)

    @property
    def decode(self) -> DecodeParams:
        return DecodeParams(self.wbits, self.wkind, self.we, self.wm, self.wbias, self.zmode, self.zconst, self.zgs,
                            self.smode, self.sdt, self.gs)

    def check(self) -> None:
        steps = self.bk // 16
        if steps % self.warp_k:
            raise InvalidInputError(f"GemmDenseSpec: bk={self.bk} has {steps} k16 steps, which warp_k={self.warp_k} "
                                    "does not divide; allowed: warp_k dividing bk/16")
        if self.swap_n8 and (self.warp_m, self.frag_m) != (1, 1):
            raise InvalidInputError(f"GemmDenseSpec: swap_n8={self.swap_n8} with warp_m={self.warp_m}, "
                                    f"frag_m={self.frag_m}; allowed: warp_m = frag_m = 1 (one block of 16 rows)")
        if self.one_token and self.swap_n8 != 1:
            raise InvalidInputError(f"GemmDenseSpec: one_token=1 with swap_n8={self.swap_n8}; allowed: swap_n8 = 1 "
                                    "(swapped operands, one n8 fragment of M)")
        if self.producer and self.bulk_w:
            raise InvalidInputError("GemmDenseSpec: producer=1 with bulk_w=1; allowed: one of them (the producer warp "
                                    "copies the weights itself)")
        if self.cta_threads() > 1024:
            raise InvalidInputError(f"GemmDenseSpec: {self.cta_threads()} threads per CTA; allowed: at most 1024")
        if self.smode is ScaleMode.GROUP and (self.gs == 0 or not group_fits_stage(self.gs, self.bk)):
            raise InvalidInputError(f"GemmDenseSpec: group size gs={self.gs} and bk={self.bk}: one must divide the other")
        if self.smode is not ScaleMode.GROUP and self.gs:
            raise InvalidInputError(f"GemmDenseSpec: gs={self.gs} without group scales; allowed: gs=0")
        if not group_fits_stage(self.zgs, self.bk):
            raise InvalidInputError(f"GemmDenseSpec: zero-point group zgs={self.zgs} and bk={self.bk} must divide")
        if self.wkind is WeightKind.FLOAT:
            if self.we < 1 or 1 + self.we + self.wm != self.wbits:
                raise InvalidInputError(f"GemmDenseSpec: float weights e{self.we}m{self.wm} are not {self.wbits} bits "
                                        "with a sign and at least one exponent bit")
            target_m = 10 if self.act is dtypes.f16 else 7
            if self.wm > target_m or (self.act is dtypes.f16 and self.we > 5):
                raise InvalidInputError(f"GemmDenseSpec: e{self.we}m{self.wm} weights do not fit {self.act} operands")
            if self.zmode is not ZeroMode.CONST or self.zconst:
                raise InvalidInputError("GemmDenseSpec: float weights take no zero point")
        elif self.we or self.wm or self.wbias:
            raise InvalidInputError("GemmDenseSpec: integer weights take we = wm = wbias = 0")

    @classmethod
    def mma_requirement(cls, act: DType) -> Requirement:
        """The tensor-core instruction this kernel is built on, for ``act`` operands (a tuner asks it first)."""
        return _mma_requirement(act)

    @classmethod
    def target_requirements(cls, act: DType) -> tuple[Requirement, ...]:
        """What a target needs for any tile of this kernel (a tuner skips a rule whose kernel it lacks): the MMA
        instruction, plus what a subclass's copies need."""
        return (cls.mma_requirement(act),)

    def min_stages(self) -> int:
        """The fewest stages the pipeline runs (scheduler/pipeline.cuh: all-threads form, S - 1 - kLagStages >= 1)."""
        return 2

    def requirements(self) -> tuple[Requirement, ...]:
        smem = self.total_smem_bytes()

        def fits(caps: DeviceCapabilities) -> bool | None:
            limit = caps.limits.shared_memory_per_block_optin
            return None if limit is None else smem <= limit

        reqs = [self.mma_requirement(self.act)]
        if self.bulk_w:
            reqs.append(_bulk_copy_requirement())
        if self.producer:
            reqs.append(_producer_requirement())
        if self.out is dtypes.bf16 and self.act is not dtypes.bf16:  # bf16 conversions come with bf16 MMA (sm_80)
            bf16 = _mma_requirement(dtypes.bf16)
            reqs.append(Requirement(f"{bf16.what}, whose target converts to a bf16 output", bf16.check,
                                    ("an f16 output (out_dtype=torch.float16)",)))
        return (*reqs,
                Requirement(f"{smem} bytes of shared memory per block ({self.tile.describe()})", fits,
                            ("a tile with fewer stages or a smaller block",),
                            ("the live device's capabilities (humming.devices.nvidia.detect probes the per-block "
                             "opt-in limit; the catalog does not know it for this target)",)))

    # ---- sizes (the cubin exports the authoritative values; these mirror them for planning before a compile) --
    def stage_bytes(self) -> int:
        """One pipeline stage: weights, activations, scale and zero-point rows (memory/stage.cuh StageLayout)."""
        t = self.tile
        r = lambda x: (x + 127) // 128 * 128  # noqa: E731
        w = (t.bk // 16) * (t.block_n // 64) * 128 * self.wbits
        a = t.block_m * t.bk * 2
        srows = (1 if self.gs >= t.bk else t.bk // self.gs) if self.smode is ScaleMode.GROUP else 0
        sbytes = 2 if self.sdt is ScaleStorage.ACT else 1
        zrows = (1 if self.zgs == 0 or self.zgs >= t.bk else t.bk // self.zgs) if self.zmode is ZeroMode.ROWS else 0
        return r(r(r(r(w) + a) + srows * t.block_n * sbytes) + zrows * t.block_n * 2)

    def smem_bytes(self) -> int:
        """Dynamic shared memory (the launch's value; the cubin exports it as smem_bytes)."""
        return self.stages * self.stage_bytes() + self.reduction_bytes() + self.barrier_bytes()

    #: An upper bound on the template's static ``__shared__`` bytes (the by-last fix-up's flag, epilogue/finish.cuh,
    #: which ptxas allocates as 128 bytes); check_compiled holds every cubin to it.
    STATIC_SMEM_BOUND = 128

    def total_smem_bytes(self) -> int:
        """Dynamic plus static shared memory: what the target's opt-in limit caps (the driver counts both)."""
        return self.smem_bytes() + self.STATIC_SMEM_BOUND

    def reduction_bytes(self) -> int:
        """The k-warp reduction's buffer: (warp_k - 1) f32 tiles."""
        t = self.tile
        return (t.warp_k - 1) * t.block_m * t.block_n * 4

    #: Warps a producer takes (``producer=1``): one here; the wgmma kernels take a warpgroup.
    producer_warps = 1

    def cta_threads(self) -> int:
        """Threads per CTA: the compute warps, plus the producer's warps if any (the cubin exports the same)."""
        return 32 * (self.compute_warps() + self.producer * self.producer_warps)

    def compute_warps(self) -> int:
        """Warps that compute and store (the producer's, if any, not counted)."""
        t = self.tile
        return t.warp_m * t.warp_n * t.warp_k

    def odd_n_changes_code(self) -> bool:
        """Whether ``odd_n`` changes this kernel's machine code: not here (the mma.sync store chooses pairs or
        elements at run time, and odd_n = 0 / 1 compile to the same SASS). The tuner then builds odd_n = 1, so that
        one kernel takes any row."""
        return False

    def waits_for_sharers(self) -> bool:
        """Whether a tile split over CTAs is finished by its first CTA waiting for the others' partials (a lane's
        accumulator quads fit registers twice: epilogue/finish.cuh's decode form; its launch must hold every CTA at
        once) rather than by the last to arrive."""
        return self.tile.frag_m * self.tile.frag_n * 8 <= 8

    def spreads_split_tiles(self) -> bool:
        """Whether a tile split over CTAs is reduced by all sharers whose CTA ends on it, each a share of its columns
        (epilogue/finish.cuh finish_spread), rather than by the last to arrive: those sharers wait for the others, so
        the launch must hold every CTA at once. The cubin exports the same (checked by check_compiled)."""
        return self.finishes_swapped_tiles and not self.waits_for_sharers()

    def scales_on_sums(self) -> bool:
        """route.cuh's kAccScale for this kernel (scales_on_sums below); check_compiled holds it to the cubin's."""
        return scales_on_sums(self.decode, self.tile)

    def zero_on_sums(self) -> bool:
        """route.cuh's kZeroOnSums for this kernel (zero_on_sums below); check_compiled holds it to the cubin's."""
        return zero_on_sums(self.act, self.decode, self.tile)

    def barrier_bytes(self) -> int:
        """Shared memory of the mbarriers, after everything else: one a stage for bulk weight copies, two a stage
        (full, empty) for a producer warp."""
        return 8 * self.stages * (1 if self.bulk_w else 2 if self.producer else 0)

    def common_exports(self, cfg: str) -> dict[str, str]:
        """What every dense kernel's cubin exports, for its configuration type ``cfg`` (a C++ type name)."""
        return {"smem_bytes": f"{cfg}::kSmemBytes", "threads": f"{cfg}::kCtaThreads", "block_m": f"{cfg}::kBM",
                "block_n": f"{cfg}::kBN", "block_k": f"{cfg}::kBK",
                "spreads_split_tiles": f"({self.kernel_struct}<{cfg}>::kSpreadsSplitTiles ? 1 : 0)",
                # 1 where the kernel waits for the previous grid before touching memory it may share
                # (arch/grid_dependency.cuh): only such a kernel may be launched programmatically (ops.launch)
                "waits_for_prior_grids": "HM_GRID_DEPENDENCY",
                # the architecture whose code paths the arch layer took (arch/types.cuh HM_ARCH: the compile
                # target's, or an older one's under devices/nvidia/emulation.py)
                "code_paths": "HM_ARCH"}

    def exports(self) -> dict[str, str]:
        cfg = (f"humming::GemmDenseConfig<{self.cpp_args()}>")
        return {**self.common_exports(cfg),
                "scales_on_sums": f"(humming::GemmDense<{cfg}>::kAccScale ? 1 : 0)",
                "zero_on_sums": f"(humming::GemmDense<{cfg}>::kZeroOnSums ? 1 : 0)",
                "group_columns": f"(humming::GemmDense<{cfg}>::kGroupColumns ? 1 : 0)",
                "routes_default": "(HM_ROUTES_DEFAULT ? 1 : 0)"}

    def check_output(self, n: int, row_stride: int) -> None:
        if not self.odd_n and (n | row_stride) & 1:
            raise InvalidInputError(f"{self.describe()} is built for outputs whose N and row stride are even (odd_n=0); "
                                    f"this one has N={n}, row stride {row_stride}: plan this problem again "
                                    "(humming.ops.plan_for) or build the spec with odd_n=True")

    def check_compiled(self, kernel: CompiledKernel) -> None:
        # ops.launch sizes the launch from the twin's plan (smem_bytes, cta_threads): a cubin that wants more shared
        # memory would read past its allocation, one with other threads would leave work undone.
        for name, mine in (("smem_bytes", self.smem_bytes()), ("threads", self.cta_threads())):
            got = kernel.exports.get(name)
            if got is not None and got != mine:
                raise InternalError(f"{self.describe()}: the cubin's {name} is {got}, the twin plans {mine} "
                                    f"({type(self).__name__} mirrors the template's sizes)")
        static = kernel.resources.static_smem
        if static is not None and static > self.STATIC_SMEM_BOUND:  # plans would not leave room for it
            raise InternalError(f"{self.describe()}: the cubin declares {static} bytes of static shared memory; "
                                f"the twin plans tiles with room for {self.STATIC_SMEM_BOUND} (STATIC_SMEM_BOUND)")
        # The tuner plans with these mirrors of the cubin's routes (a drift would pick tiles for a route not taken);
        # a timing build may switch a route off on purpose (route.cuh HM_ROUTES_DEFAULT, exported).
        for name in ("scales_on_sums", "zero_on_sums") if kernel.exports.get("routes_default", 1) else ():
            got = kernel.exports.get(name)
            if got is not None and bool(got) != getattr(self, name)():
                raise InternalError(f"{self.describe()}: the cubin's {name} is {got}, {name}() says "
                                    f"{getattr(self, name)()} (gemm_dense.py mirrors dequant/route.cuh)")
        # A plan launches cooperatively by spreads_split_tiles(); a kernel that spread without it could hang.
        spreads = kernel.exports.get("spreads_split_tiles")
        if spreads is not None and bool(spreads) != self.spreads_split_tiles():
            raise InternalError(f"{self.describe()}: the cubin {'spreads' if spreads else 'does not spread'} split "
                                f"tiles over their sharers, spreads_split_tiles() says {self.spreads_split_tiles()}")
