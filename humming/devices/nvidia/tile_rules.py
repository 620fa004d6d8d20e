"""The NVIDIA dense tuner's tile tables: which tile serves which M, format and target, with what each row measured.

Data for ``humming.devices.nvidia.tuning`` (DenseTuner): one table a shared-memory class of target (table_for), read
top down; the first row whose ``max_m`` covers M, whose ``when`` takes the format and activation type, and whose
kernel's MMA instruction the target has wins. Also the grid rule's thresholds (one CTA a tile, Stream-K, short
splits). The figures in the comments were measured on the device each names (benchmarks/RESULTS.md, NOTES-wna16.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from humming.capabilities.model import DeviceCapabilities
from humming.core.dtypes import DType
from humming.kernels.dense_decode import DecodeParams, ScaleMode, ZeroMode
from humming.kernels.gemm_dense import GemmDenseSpec, Tile, zero_on_sums
from humming.kernels.gemm_dense_wgmma import (GemmDenseWgmmaSpec, GemmDenseWgmmaWideSpec, GemmDenseWgmmaWideTmaSpec,
                                              wgmma_tile, wide_tile)

KiB = 1024


@dataclass(frozen=True)
class TileRule:
    max_m: int  # the rule serves M <= max_m
    tile: Tile
    why: str
    when: Callable[[DecodeParams, DType], bool] | None = None  # formats and activation dtypes it serves (None: all)
    kernel: type[GemmDenseSpec] = GemmDenseSpec  # the twin; a target without its MMA instruction skips the rule
    min_nvrtc: tuple[int, int] | None = None  # the oldest NVRTC known to compile the twin correctly
    schedule: str | None = None  # the schedule measured best for the tile up to one wave of tiles (None: the rule below)
    dp_tail_fill: float | None = None  # past one wave: one CTA a tile when the last wave is at least this full
    stream_k_from: int | None = None  # within one wave: Stream-K from this many weight bytes an SM on (None: never)


def _narrow(d: DecodeParams, act: DType) -> bool:
    """Codes of at most 4 bits: two 4-stage CTAs of the 128-column decode tile fit one SM's shared memory."""
    return d.wbits <= 4


#: The wgmma four-fragment tile as two k-warpgroups (256 columns x 64 rows, the stages in turn, a producer warpgroup).
KSPLIT_TILE = Tile(1, 4, 4, 1, 2, 64, 8, 8, 1, producer=1)


def _eight_bit(d: DecodeParams, act: DType) -> bool:
    """8-bit codes: KSPLIT_TILE measured faster at M = 33..64 (LARGE_SMEM says by how much)."""
    return d.wbits == 8


def _eight_bit_no_zero_rows(d: DecodeParams, act: DType) -> bool:
    """The same without zero-point rows, which KSPLIT_TILE did not speed up at M = 65..128."""
    return _eight_bit(d, act) and d.zmode is not ZeroMode.ROWS


#: The one-token decode tile (M = 1): swapped operands, one n8 fragment, 128 columns, 128 k a warp, 2 CTAs an SM.
ONE_TOKEN_TILE = Tile(1, 1, 2, 1, 2, 256, 4, 8, 2, swap_n8=1, one_token=1)


def _one_token_pays(d: DecodeParams, act: DType) -> bool:
    """Formats whose M = 1 decode runs faster on the one-token tile: codes of at most 4 bits with group scales every 32
    k or fewer (MXFP4 g32, NVFP4 g16), whose scale multiplies on the seven unstored token columns go; and, under bf16
    activations, 4-bit integer codes with a constant zero and groups of 64 k or a multiple of 128 (s4 g64 / g128: a
    group holds or lies inside the tile's 128 k a warp), whose zero then goes onto the partial sums instead of every
    operand pair (dequant/route.cuh kZeroOnSums; f16's magic 1024 makes the sums cancel too deeply for that)."""
    small_groups = _narrow(d, act) and d.smode is ScaleMode.GROUP and 0 < d.gs <= 32
    return small_groups or zero_on_sums(act, d, ONE_TOKEN_TILE)


#: Weight bytes an SM from which a decode tile's one-wave launch runs Stream-K rather than one CTA a tile (224 tiles on
#: 264 slots leave 40 SMs one tile where the others have two). Since the split tiles' fix-up no longer meets at a
#: counter (456165d: the tile's first CTA adds the sharers' partials as they land), Stream-K wins for every code of
#: at most 4 bits there. H200, 2026-12-03 21:55, interleaved, verified (RESULTS.md), one CTA a tile / Stream-K:
#: 28672 x 8192 (890 KiB an SM) s4 M = 1 39.7-40.0 / 38.4-38.9 us, MXFP4 / NVFP4 M = 1 / 16 5-8% faster under Stream-K;
#: 28672 x 4096 (445 KiB) s4 M = 1 24.1-24.2 / 24.6-24.7, M = 16 tied (H100 SXM 2026-12-05: one CTA a tile ahead).
DECODE_STREAM_K_FROM = 640 * KiB


_INF = 1 << 62
#: NVRTC 13.0's ptxas miscompiles the wgmma kernels: on the H200 (2026-12-02) a cp.async of gemm_dense_wgmma_wide (s4
#: per channel, f16, 256 x 128 tile) took its shared-memory offset and memory descriptor from uniform registers that
#: nothing in the kernel writes (UR0/UR1, compute-sanitizer: illegal instruction at that LDGSTS); it trapped in one
#: run of the correctness matrix and passed in the next. NVRTC 13.5 compiles the same source with them defined.
WGMMA_MIN_NVRTC = (13, 5)
#: One CTA a tile when the tiles fill at least this share of one wave (and at most all of it).
DP_WAVE_FILL = 0.8
#: A K split over every resident CTA that leaves each fewer k-steps than this splits over one CTA an SM instead,
#: where the tile's first CTA adds the sharers' partials itself (GemmDenseSpec.waits_for_sharers): with two short
#: CTAs an SM and splits of 8-16, the slowest CTA ran 5-9 us past the median; one CTA an SM halves the sharers and
#: that gap. (Not the serial reads of the sharers' slots: loading four at once gained nothing, RESULTS 12:07.)
#: H200, 2026-12-04 11:56, s4 g128 bf16 decode tile, one process a shape, verified, us (two CTAs an SM -> one):
#: 2048 x 8192 (2 k-steps a CTA) M = 1 18.9 -> 14.1, M = 16 19.5 -> 14.6; 4096 x 4096 (2) 14.9 -> 12.4,
#: 16.0 -> 13.0; 4096 x 14336 (7) 20.6 -> 19.3, 22.0 -> 21.0. At 8 k-steps it no longer pays: 8192 x 8192 M = 1
#: 19.4 -> 19.4, M = 16 21.7 -> 22.1; 14336 x 4096 (a split of 2 against one CTA a tile) 18.6 -> 18.4, 20.5 -> 20.6.
#: Confirmed at 12:00 with this rule in the tuner, for s4 and MXFP4 (RESULTS.md, 2026-12-04 11:23 section).
SHORT_SPLIT_STEPS = 8
#: The same for Stream-K over the resident CTAs, where more than this many CTAs share a tile on average (a
#: Stream-K tile's sharers): H200, 2026-12-04 13:33, the tuner's decode tile, verified (RESULTS.md's 13:27 section),
#: 264 -> 132 CTAs, s4 g128 and MXFP4 at M = 1 / 16: 3072 x 4096 (11 CTAs a tile, 1.5 k-steps a CTA) 15.4 -> 12.8
#: us (s4 M = 1; 17-20% in all four), 3-6% faster on 4096 x 11008 (8.3, 5.2), 5120 x 5120 (6.6, 3.0), 6144 x 4096. With
#: fewer sharers it lost: 11008 x 4096 (3.1 CTAs a tile, 5.2 k-steps) 16.6 -> 17.1 (s4 M = 1), 3% slower throughout.
SHORT_STREAM_K_SHARERS = 4
#: From this many waves of tiles on, one CTA a tile again: the tail wave is a small share and Stream-K's
#: partial tiles cost more (28672 x 8192 s4 M=4096, wide producer tile, 27 waves: 3391 us against 3582, H200,
#: 2026-12-03; at 6.8 waves, M=1024, Stream-K still won: 808 against 825).
DP_MANY_WAVES = 16

#: Targets with >= 160 KiB of shared memory per block (sm_80, sm_87, sm_90a, sm_100a ...).
LARGE_SMEM: tuple[TileRule, ...] = (
    # Decode (H200, NOTES-wna16.md, 2026-12-02): the MMA + dequant instruction stream bound it (a build without MMAs
    # ran 37.7 us against 56.1, 28672 x 8192 M=1), so decode takes swapped operands: four MMAs per 8 rows of M and
    # 16 x 64 weight block, integer group scales on the f32 partial sums. Codes of up to 4 bits: 128-column tiles, two
    # CTAs an SM (46.3 us, 57.5 before).
    # M = 1 with small scale groups: the group scales go onto token column 0's sums alone (7 of 8 columns of the n8
    # fragment are never stored). H200, 2026-12-04 15:27, verified, us (every column scaled -> column 0), one-CTA-a-
    # tile / split-K schedules: MXFP4 28672 x 8192 45.3 -> 44.2, 8192 x 28672 43.5 -> 42.2, 28672 x 4096 26.7 -> 26.1;
    # NVFP4 52.4 -> 49.6, 49.2 -> 46.7, 30.2 -> 28.9. s4 g128 (a quarter of MXFP4's scale multiplies) lost 0.5-1.2%.
    # Under the tuner's own schedules (15:48): MXFP4 2-3%, NVFP4 4% faster (RESULTS.md, 2026-12-04 15:25 section).
    # s4 with groups of 64 k or more (their scale multiplies are too few to pay for the tile alone) take it with the
    # zero on the partial sums (dequant/route.cuh kZeroOnSums): 1.5-3.5% faster on four shapes (H200, 2026-12-04 17:32,
    # RESULTS.md's 17:07 section).
    TileRule(1, ONE_TOKEN_TILE,
             "decode M = 1, scale groups <= 32 or s4 with groups of 64k: swapped operands, group scales (and a "
             "constant zero) on token column 0's sums alone, 128 columns, 2 CTAs per SM", _one_token_pays,
             stream_k_from=DECODE_STREAM_K_FROM),
    TileRule(8, Tile(1, 1, 2, 1, 2, 256, 4, 8, 2, swap_n8=1),
             "decode M <= 8: swapped operands (weights as the m16 operand), 128 columns, 2 CTAs per SM", _narrow,
             stream_k_from=DECODE_STREAM_K_FROM),
    TileRule(16, Tile(1, 1, 2, 1, 2, 256, 4, 8, 2, swap_n8=2),
             "decode M <= 16: swapped operands, two n8 fragments of M, 128 columns, 2 CTAs per SM", _narrow,
             stream_k_from=DECODE_STREAM_K_FROM),
    # Wider codes: two CTAs do not fit; one 256-column CTA a tile (s8 28672 x 8192 M=1: 69 us, 76 unswapped).
    TileRule(8, Tile(1, 1, 4, 1, 2, 128, 4, 8, 1, swap_n8=1),
             "decode M <= 8: swapped operands, 256 columns, 128-deep stages (codes wider than 4 bits)"),
    # M = 9..16 with wider codes: swapped operands with two n8 fragments, 128 columns, two CTAs an SM. H200,
    # 2026-12-04 16:08, verified, us (the unswapped 256-column tile it replaced -> this), s8 / e4m3 channel:
    # 28672 x 4096 39.9 -> 37.5 / 38.9 -> 37.0; 28672 x 8192 68.6 -> 63.9 / 66.5 -> 64.4; 8192 x 8192 28.6 -> 27.7 (s8);
    # 4096 x 14336 28.5 -> 27.9 (s8); 8192 x 28672 lost 2-3% (64.8 -> 66.1 / 64.5 -> 66.5). Stream-K lost to the grid
    # rule below on four of the five shapes.
    TileRule(16, Tile(1, 1, 2, 1, 2, 128, 4, 8, 2, swap_n8=2),
             "decode M <= 16: swapped operands, two n8 fragments of M, 128 columns, 2 CTAs per SM (codes wider than 4 "
             "bits)"),
    # Past decode, wgmma where the target has it: dequantised weights as m64nNk16's register A (gemm_dense_wgmma.cuh).
    TileRule(32, wgmma_tile(1, 1, 32, 8, min_blocks=2),
             "wgmma, one warpgroup of 256 columns x 32 rows (m64n32k16), 2 CTAs per SM", kernel=GemmDenseWgmmaSpec,
             min_nvrtc=WGMMA_MIN_NVRTC),
    # 8-bit codes at M = 33..64 (and M <= 128 without zero-point rows): the same two warpgroups
    # on 256 columns, taking the ring's stages in turn (warp_k = 2; k-warpgroups, gemm_dense_wgmma.cuh), with six
    # 24 KiB stages where the 512-column tile fits five of 40 KiB. H100 SXM, 2026-12-06 07:35-07:45, verified, ABBA,
    # us (512 -> 256 x two k-warpgroups), 28672 x 8192 / 8192 x 28672 / 28672 x 4096: M = 64 s8 channel 102.5 / 100.6
    # / 61.6 -> 92.4 / 92.5 / 56.3, e4m3 channel 102.4 / 98.7 / 59.7 -> 95.4 / 93.4 / 55.4, u8 zero points g128
    # 110.3 / 107.7 / 62.9 -> 102.4 / 102.0 / 58.0; M = 33 2-8% faster on all nine; M = 128 s8 / e4m3 2-7%
    # faster, u8 with zero points 1.3% slower to 2.8% faster (so not past 64). Its loads alone stream faster (s8
    # M = 64 a3 build 90.9 -> 87.9). Codes of at most 4 bits lost 2.5-10% on the three large shapes (s4 28672 x 8192
    # M = 64 68.1 -> 74.6; MXFP4 72.3 -> 75.2; NVFP4 85.4 -> 92.0) and won 0.6-3% on 8192 x 8192 and 4096 x 14336:
    # their k-loop ran 6-17% slower (s4 without the finish 57.3-63.4 -> 67.1-68.4, two calls), the warpgroups'
    # dequantisation and wgmmas out of step. f16 activations (07:50, 28672 x 8192 M = 64 only): s8 103.1 -> 94.8,
    # e4m3 105.0 -> 97.7, u8 zero points 111.7 -> 102.3. At M = 32 the same tile with 32 rows against the tuner's
    # one-warpgroup tile lost for s8 / e4m3 (85.8 -> 92.0 / 85.6 -> 94.3) and won for u8 zero points (104.5 ->
    # 97.7): not taken. Not measured on an H200 (none came).
    TileRule(64, KSPLIT_TILE, "wgmma, two k-warpgroups of 256 columns x 64 rows taking the stages in turn (m64n64k16) "
             "and a producer warpgroup (8-bit codes)", _eight_bit, kernel=GemmDenseWgmmaSpec,
             min_nvrtc=WGMMA_MIN_NVRTC, schedule="stream-k"),
    TileRule(128, KSPLIT_TILE, "wgmma, two k-warpgroups of 256 columns x 64 rows taking the stages in turn (m64n64k16) "
             "and a producer warpgroup (8-bit codes without zero-point rows)", _eight_bit_no_zero_rows,
             kernel=GemmDenseWgmmaSpec, min_nvrtc=WGMMA_MIN_NVRTC, schedule="stream-k"),
    # M = 33..128: two warpgroups of 256 columns x 64 rows fed by a producer warpgroup (setmaxnreg): M = 64 / 128
    # 93.1 / 153.4 us against 104.0 / 166.9 for one warpgroup, 2 CTAs an SM, no producer (28672 x 8192 s4 g128 bf16,
    # H200, 2026-12-03); the wide form's 64- and 128-row tiles lost (119, 224 us). Stream-K over every SM instead of
    # 112 split-K CTAs: M = 64 / 33 / 128 83.9 / 82.0 / 146.8 against 91.0 / 90.4 / 151.2 (4, 6, 8 stages alike).
    TileRule(128, wgmma_tile(2, 1, 64, 8, producer=1),
             "wgmma, two warpgroups of 256 columns x 64 rows (m64n64k16) and a producer warpgroup",
             kernel=GemmDenseWgmmaSpec, min_nvrtc=WGMMA_MIN_NVRTC, schedule="stream-k"),
    # Past 128 rows, the wide form: one m16 fragment per warp and one wgmma of N = 256 activation rows per
    # warpgroup and k16 step (a quarter of the dequantisation per MAC of the four-fragment form), its copies
    # issued by a producer warpgroup: M = 1024 815.7 us, M = 4096 3595 (6 stages) against 1038.7 and 4522.8
    # with every warp copying (28672 x 8192 s4 g128 bf16, H200, 2026-12-03; s8 1019 -> 865 us at M = 1024).
    # The same with the activation tile copied by TMA (one instruction a stage from the producer's first thread
    # instead of ~2300 cp.async from its four warps; memory/tma.cuh): 28672 x 8192 M = 1024 795 -> 716 us,
    # M = 4096 3141 -> 2858; 8192 x 28672 M = 1024 809 -> 681; 28672 x 4096 M = 1024 422 -> 388; s8, AWQ, MXFP4
    # -9% (H200, 2026-12-03). One CTA a tile beat Stream-K once the last wave was nearly full (716 against 728,
    # 681 against 748, 388 against 395 at 97%), not at 85% (M = 256: 211 against 203).
    TileRule(_INF, wide_tile(2, 1, 256, 6, producer=1),
             "wgmma wide, activations by TMA: two warpgroups of 64 columns x 256 rows (m64n256k16) and a producer "
             "warpgroup", kernel=GemmDenseWgmmaWideTmaSpec, min_nvrtc=WGMMA_MIN_NVRTC, dp_tail_fill=0.9),
    # A wgmma target whose plugin leaves tensor copies unknown: the producer's warps copy the activations.
    TileRule(_INF, wide_tile(2, 1, 256, 6, producer=1),
             "wgmma wide: two warpgroups of 64 columns x 256 rows (m64n256k16) and a producer warpgroup",
             kernel=GemmDenseWgmmaWideSpec, min_nvrtc=WGMMA_MIN_NVRTC),
    TileRule(32, Tile(1, 2, 4, 1, 2, 128, 4, 8, 2), "two m16 blocks"),
    TileRule(48, Tile(1, 3, 4, 1, 2, 128, 4, 8, 1), "three m16 blocks"),
    TileRule(64, Tile(1, 4, 4, 1, 2, 128, 4, 8, 1), "four m16 blocks"),
    # Codes of up to 4 bits: three 128-deep stages, 2.6-6% faster than four 64-deep for s4 (three shapes, M = 1024 /
    # 4096), AWQ, MXFP4 and NVFP4 (H200, this kernel built for sm_90a, 2026-12-05 11:00, verified; RESULTS.md). Wider
    # codes keep 64-deep stages: three 128-deep stages of 8-bit codes do not fit sm_80.
    TileRule(_INF, Tile(2, 4, 4, 1, 1, 128, 3, 8, 1), "compute-bound: 128 x 256 tiles, 8 warps of 64 x 64, "
             "three 128-deep stages", _narrow),
    TileRule(_INF, Tile(2, 4, 4, 1, 1, 64, 4, 8, 1), "compute-bound: 128 x 256 tiles, 8 warps of 64 x 64"),
)
#: Targets with about 100 KiB per block (sm_86, sm_89, sm_120a, sm_121a).
MID_SMEM: tuple[TileRule, ...] = (
    TileRule(16, Tile(1, 1, 4, 1, 2, 128, 3, 8, 1), "decode"),
    TileRule(64, Tile(1, 4, 4, 1, 1, 64, 3, 8, 1), "small batch"),
    TileRule(_INF, Tile(2, 4, 2, 1, 1, 64, 3, 8, 1), "compute-bound: 128 x 128 tiles"),
)
#: Turing (64 KiB per block, no cp.async: the pipeline runs without overlap).
SMALL_SMEM: tuple[TileRule, ...] = (TileRule(16, Tile(1, 1, 4, 1, 2, 64, 2, 8, 1), "decode"),
                                     TileRule(_INF, Tile(2, 2, 2, 1, 1, 64, 2, 8, 1), "64 x 128 tiles"))


def table_for(caps: DeviceCapabilities) -> tuple[TileRule, ...]:
    smem = caps.limits.shared_memory_per_block_optin or 48 * KiB
    if smem >= 160 * KiB:
        return LARGE_SMEM
    if smem >= 96 * KiB:
        return MID_SMEM
    return SMALL_SMEM
