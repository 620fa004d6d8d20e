"""The twin of gemm_dense_wgmma.cuh: the dense WnA16 GEMM on warpgroup MMAs (wgmma), for M past decode sizes.

Two forms share the template file: GemmDenseWgmmaSpec (four m16 fragments per warp, wgmma N = 32 or 64) and
GemmDenseWgmmaWideSpec (one fragment per warp, N = 64..256 activation rows; a quarter of the dequantisation
per MAC, for M large enough to fill it).

The parameters are gemm_dense's (same decoding, same packed layout, same launch arguments), read with the
wgmma kernel's tile rules: warps along N come in warpgroups of four (256 weight columns each), each warpgroup
multiplies its weights by ``16 * frag_m`` activation rows (wgmma's N: 32 or 64), one 64-deep stage at a time,
one n64 block per warp, operands swapped by construction (``swap_n8`` = 0). ``warp_k`` = 2 (the four-fragment
form with a producer): two warpgroups share the tile's columns and take the stages in turn, reduced before the
spread finish.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from humming.capabilities.model import DeviceCapabilities
from humming.core.codegen import Requirement, needs
from humming.core.dtypes import DType
from humming.errors import InternalError, InvalidInputError
from humming.kernels.gemm_dense import GemmDenseSpec, Tile

if TYPE_CHECKING:
    import torch

    from humming.core.launcher import CompiledKernel

#: The kernel aligns its dynamic shared memory to the 128-byte swizzle atom (1024 bytes) at run time.
SMEM_ALIGN = 1024
#: wgmma N choices the arch layer instantiates (humming/arch/wgmma.cuh): activation rows per warpgroup.
TOKENS_PER_WARPGROUP = (16, 32, 64)


def wgmma_tile(warpgroups_n: int, warpgroups_m: int, tokens: int, stages: int, min_blocks: int = 1,
               group_m: int = 8, producer: int = 0) -> Tile:
    """The Tile of a wgmma kernel: ``warpgroups_n`` x 256 weight columns by ``warpgroups_m`` x ``tokens`` rows
    (``producer=1``: plus a producer warpgroup that issues the copies)."""
    return Tile(warpgroups_m, tokens // 16, 4 * warpgroups_n, 1, 1, 64, stages, group_m, min_blocks,
                producer=producer)


def wide_tile(warpgroups_n: int, warpgroups_m: int, tokens: int, stages: int, min_blocks: int = 1,
              group_m: int = 8, producer: int = 0, blocks: int = 1) -> Tile:
    """The Tile of a wide wgmma kernel: ``warpgroups_n`` x ``blocks`` x 64 weight columns by ``warpgroups_m`` x
    ``tokens`` rows (each warp of a group one m16 fragment of each of the group's ``blocks`` 64-column blocks;
    ``producer=1`` as in wgmma_tile)."""
    return Tile(4 * warpgroups_m, tokens // 64, warpgroups_n, blocks, 1, 64, stages, group_m, min_blocks,
                producer=producer)


def _wgmma_requirement(act: DType, n_values: tuple[int, ...]) -> Requirement:
    def check(caps: DeviceCapabilities) -> bool | None:
        return any(i.family.name == "wgmma" and i.a is act and i.b is act and i.acc.name == "f32" and i.k == 16
                   and all(n in i.n_values for n in n_values) for i in caps.mma)

    ns = ", ".join(map(str, n_values))
    return Requirement(f"wgmma m64nNk16 {act} x {act} -> f32 (A from registers, N = {ns})", check,
                       ("the mma.sync kernel (GemmDenseSpec)",))


_STAGES_RULE = ("stages >= 3, or producer = 1 (without a producer the wgmma body's MMAs still read the last stage "
                "after it returns: scheduler/pipeline.cuh needs S - 1 - 1 >= 1)")


def _check_rules(spec: GemmDenseSpec, rules: dict[str, tuple[bool, str]]) -> None:
    """InvalidInputError naming the first parameter whose rule fails: {name: (holds, the rule)}."""
    for name, (ok, rule) in rules.items():
        if not ok:
            raise InvalidInputError(f"{type(spec).__name__}: {name}={getattr(spec, name)}; allowed: {rule}")


@dataclass(frozen=True)
class GemmDenseWgmmaSpec(GemmDenseSpec):
    """One instantiation of ``humming::gemm_dense_wgmma`` (gemm_dense_wgmma.cuh); parameters as GemmDenseSpec."""

    header = "gemm_dense_wgmma.cuh"
    mma_family = "wgmma"
    kernel = "humming::gemm_dense_wgmma"
    #: producer=1 adds a warpgroup: its four warps issue the copies, and setmaxnreg moves its registers to the
    #: compute warpgroups (WgmmaConfig).
    producer_warps = 4
    #: the kernel's configuration template (it fixes the producer warpgroup's registers)
    config_template = "humming::WgmmaConfig"
    kernel_struct = "humming::GemmDenseWgmma"
    finishes_swapped_tiles = True

    def check(self) -> None:
        super().check()
        rules = {
            "bk": (self.bk == 64, "bk = 64 (one 128-byte swizzle atom of activations per stage)"),
            "frag_m": (16 * self.frag_m in TOKENS_PER_WARPGROUP,
                       f"frag_m in {[n // 16 for n in TOKENS_PER_WARPGROUP]} (wgmma N = 16 frag_m)"),
            "warp_n": (self.warp_n in (4, 8), "warp_n = 4 or 8 (whole warpgroups of 64-column blocks)"),
            "frag_n": (self.frag_n == 1, "frag_n = 1 (one n64 block per warp)"),
            "warp_k": (self.warp_k == 1 or (self.warp_k == 2 and self.producer == 1 and self.spreads_split_tiles()),
                       "warp_k = 1, or 2 k-warpgroups taking the stages in turn (with producer = 1 and frag_m >= 2: "
                       "the spread finish reduces them)"),
            "swap_n8": (self.swap_n8 == 0, "swap_n8 = 0 (the wgmma kernel swaps operands by construction)"),
            "one_token": (self.one_token == 0, "one_token = 0 (a decode kernel's specialisation)"),
            "stages": (self.stages >= self.min_stages(), _STAGES_RULE),
        }
        _check_rules(self, rules)

    def min_stages(self) -> int:
        return 2 if self.producer else 3  # without a producer the wgmma body keeps one stage in flight (kLagStages)

    @classmethod
    def mma_requirement(cls, act: DType) -> Requirement:
        return _wgmma_requirement(act, TOKENS_PER_WARPGROUP)

    def smem_bytes(self) -> int:
        # gemm_dense's stage rounded up to the 1024-byte atoms, the output staging, its barriers, and the run-time
        # alignment slack.
        per_stage = self.stage_bytes()
        return (self.stages * (-(-per_stage // SMEM_ALIGN) * SMEM_ALIGN)
                + max(self.store_staging_bytes(), self.reduction_bytes()) + self.barrier_bytes() + SMEM_ALIGN)

    def store_staging_bytes(self) -> int:
        """Shared memory the tile's store goes through (WgmmaConfig::kRedBytes): for each compute warp, 8 rows of a
        16-column group a staged row block, 32 bytes a row (epilogue/store.cuh kStagedGroupBytes)."""
        return self.compute_warps() * 8 * self.staged_blocks() * 32

    def staged_blocks(self) -> int:
        """n8 row blocks a pass of the staged store (WgmmaConfig's STAGED_BLOCKS): 4 where the spread finish stores
        (wgmma N >= 32), none for N = 16 (stored directly)."""
        return 4 if self.spreads_split_tiles() else 0

    def odd_n_changes_code(self) -> bool:
        # only the N = 16 form stores by pairs, with its element stores compiled in for odd_n = 1 alone
        return self.staged_blocks() == 0

    def exports(self) -> dict[str, str]:
        cfg = f"{self.config_template}<humming::GemmDenseConfig<{self.cpp_args()}>>"
        return {**self.common_exports(cfg), "split_registers": f"({cfg}::kSplitRegs ? {cfg}::kLaunchRegs : 0)"}

    def check_compiled(self, kernel: CompiledKernel) -> None:
        super().check_compiled(kernel)
        # setmaxnreg.inc waits until the CTA's pool holds what it asks for; the split is computed from the
        # launch allocation the bounds imply, so a cubin allocating fewer registers would hang, not fail.
        want = kernel.exports.get("split_registers", 0)
        if want and kernel.resources.registers != want:
            raise InternalError(f"{self.describe()}: the producer's register split assumes {want} registers a "
                                f"thread at launch, the cubin allocates {kernel.resources.registers}")


#: wgmma N choices of the wide form: activation rows per warpgroup.
WIDE_TOKENS_PER_WARPGROUP = (64, 128, 256)


@dataclass(frozen=True)
class GemmDenseWgmmaWideSpec(GemmDenseWgmmaSpec):
    """``humming::gemm_dense_wgmma_wide``: one m16 fragment per warp, one wgmma.m64nNk16 per warpgroup and k16
    step with N = 64 ``frag_m`` activation rows; ``warp_m`` = 4 x warpgroups along M, ``warp_n`` = warpgroups
    along N (64 columns each)."""

    kernel = "humming::gemm_dense_wgmma_wide"
    config_template = "humming::WgmmaWideConfig"
    kernel_struct = "humming::GemmDenseWgmmaWide"
    finishes_swapped_tiles = False  # its fragment accumulators go by the last arrival

    def staged_blocks(self) -> int:
        return 1  # one row block a pass (WgmmaWideConfig): the TMA tile's six stages leave 2.8 KiB

    def check(self) -> None:
        GemmDenseSpec.check(self)
        rules = {
            "bk": (self.bk == 64, "bk = 64 (one 128-byte swizzle atom of activations per stage)"),
            "warp_m": (self.warp_m == 4, "warp_m = 4 (one warpgroup of fragment warps along M)"),
            "frag_m": (64 * self.frag_m in WIDE_TOKENS_PER_WARPGROUP,
                       f"frag_m in {[n // 64 for n in WIDE_TOKENS_PER_WARPGROUP]} (wgmma N = 64 frag_m)"),
            "warp_n": (self.warp_n in (1, 2, 4), "warp_n = 1, 2 or 4 (warpgroups along N)"),
            "frag_n": (self.frag_n in (1, 2) and (self.frag_n == 1 or 64 * self.frag_m <= 128),
                       "frag_n = 1, or 2 with frag_m <= 2 (two n64 blocks a warpgroup, 2 x N/2 accumulators)"),
            "warp_k": (self.warp_k == 1, "warp_k = 1"),
            "swap_n8": (self.swap_n8 == 0, "swap_n8 = 0"),
            "one_token": (self.one_token == 0, "one_token = 0"),
            "stages": (self.stages >= self.min_stages(), _STAGES_RULE),
            "wbits": (self.warp_n * self.frag_n > 1 or self.wbits % 2 == 0,
                      "even wbits for a 64-column tile (warp_n x frag_n = 1): an odd width's weight part is 512 bytes "
                      "short of the 1024 the template aligns it to, which smem_bytes() does not mirror"),
        }
        _check_rules(self, rules)

    @classmethod
    def mma_requirement(cls, act: DType) -> Requirement:
        return _wgmma_requirement(act, WIDE_TOKENS_PER_WARPGROUP)


def _tma_requirement() -> Requirement:
    return needs("memory.bulk_tensor_copy", what="TMA (cp.async.bulk.tensor with a tensor map, sm_90+)",
                 alternatives=("GemmDenseWgmmaWideSpec (cp.async activations)",))


@dataclass(frozen=True)
class GemmDenseWgmmaWideTmaSpec(GemmDenseWgmmaWideSpec):
    """``humming::gemm_dense_wgmma_wide_tma``: the wide form whose producer copies each stage's activation tile
    with one TMA instruction (memory/tma.cuh) instead of 16-byte cp.async from all of its lanes; it takes the
    activations' tensor map (humming.devices.nvidia.tensormap) as a 20th parameter. ``producer`` = 1."""

    kernel = "humming::gemm_dense_wgmma_wide_tma"
    config_template = "humming::WgmmaWideTmaConfig"
    signature = GemmDenseWgmmaWideSpec.signature + ("bytes",)

    def check(self) -> None:
        super().check()
        _check_rules(self, {"producer": (self.producer == 1, "producer = 1 (its first thread issues the copy)")})

    @classmethod
    def copy_requirements(cls) -> tuple[Requirement, ...]:
        """What the activation copy needs of the target, beside the wgmma kernel's needs."""
        return (_tma_requirement(),)

    @classmethod
    def target_requirements(cls, act: DType) -> tuple[Requirement, ...]:
        return (*super().target_requirements(act), *cls.copy_requirements())

    def requirements(self) -> tuple[Requirement, ...]:
        return (*super().requirements(), *self.copy_requirements())

    def launch_extras(self, activations: torch.Tensor) -> tuple[Any, ...]:
        from humming.devices.nvidia.tensormap import activation_map

        # each CTA of a cluster copies its share of the tile's rows (memory/tma.cuh)
        return (activation_map(activations, self.tile.block_m // self.cluster_n),)


def _multicast_requirement() -> Requirement:
    return needs("memory.tma_multicast", what="TMA multicast into a thread-block cluster (.multicast::cluster)",
                 alternatives=("GemmDenseWgmmaWideTmaSpec (each CTA copies its own activation tile)",))


@dataclass(frozen=True)
class GemmDenseWgmmaWideTmaPairSpec(GemmDenseWgmmaWideTmaSpec):
    """``humming::gemm_dense_wgmma_wide_tma_pair``: the TMA form launched in clusters of two CTAs on adjacent n tiles
    of one m tile, each copying half of every stage's activation tile into both (memory/tma.cuh). One CTA a tile
    (the data-parallel schedule) and an even number of n tiles; its tensor map's box is ``block_m / 2`` rows.

    Opt-in: no tuner rule takes it. On the H100 (2026-12-06, ABBA, verified) it ran within 2% of one CTA a tile on
    28672 x 8192 at M = 1024 / 4096 and on 8192 x 28672, and 1-5% slower at M = 1000, on the other three of issue 5's
    shapes, for MXFP4, s8 and f16: the activations' L2-to-SM traffic does not bound the wide tile there (NOTES-wna16
    run 43)."""

    kernel = "humming::gemm_dense_wgmma_wide_tma_pair"
    config_template = "humming::WgmmaWideTmaPairConfig"
    cluster_n = 2

    def check(self) -> None:
        super().check()
        half = self.tile.block_m // self.cluster_n
        _check_rules(self, {"frag_m": (half % 8 == 0, "block_m / 2 a multiple of 8 rows (whole swizzle atoms)")})

    @classmethod
    def copy_requirements(cls) -> tuple[Requirement, ...]:
        return (*super().copy_requirements(), _multicast_requirement())
