"""T-Head PPU capability tables as data: ppu-810e and ppu-m890, each fact with its source, unknowns listed.

The PPU is CUDA-compatible at the source level and reports compute capability 8.0, but its capability is its
own, not sm_80's: its MMA is ``ppu.mma.sync`` with fragments N=16 wide (no half-M form for f16/bf16), f16 and
bf16 accumulate into f32 or f16, INT8 exists and INT4 does not; shared memory is larger; it has its own bulk
tensor copy. Public sources are thin, so most facts are ``REPORTED`` (read from public code that runs on the
part) or ``VENDOR_DECLARED``; every ``None`` below is a fact no public source gives, and it is listed in the
table's ``unknown``. The M890 table is a preview: its facts are assumed from the 810E until measured.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Mapping

from humming.capabilities.model import (DeviceCapabilities, ExecutionLimits, MemoryFeatures, MmaFamily, MmaInstruction,
                                        Provenance, Source, Target)
from humming.core import dtypes
from humming.core.dtypes import DType
from humming.devices.thead_ppu import skus
from humming.errors import InvalidInputError

# ---- sources -------------------------------------------------------------------------------------------
ALIYUN_FAQ = Source(Provenance.VENDOR_DECLARED,
                    "Alibaba Cloud PPU SDK documentation, FAQ: binaries built by NVIDIA's CUDA SDK do not run on PPU; "
                    "whatever nvcc --arch says the target is treated as sm_80; develop as on an A100")
VLLM_FL = Source(Provenance.REPORTED, "vllm-plugin-FL thead backend: the PPU is a 'CC 8.0 device'")
HK_ISA = Source(Provenance.REPORTED,
                "humming-kernels 0.1.19 PPU path, read for facts (single source): PTX ppu.mma.sync with an N=16 "
                "tile and f16 accumulation for bf16, ppu.ldmatrix (swizzled), ppu.cp.async.aiu.bulk.tensor; "
                "no int4 MMA on PPU")
HK_SMEM = Source(Provenance.REPORTED,
                 "humming-kernels 0.1.19 PPU tuner: a 256 KB shared-memory budget per SM (single source; a tuning "
                 "budget, not a datasheet figure)")
HK_ELF = Source(Provenance.REPORTED,
                "humming-kernels 0.1.19 cubin tooling: PPU ELF e_machine 0x10E, kernel symbols st_other 0x20")
FLAGGEMS = Source(Provenance.REPORTED, "FlagGems _thead backend notes: FP16, BF16, FP32 and INT8 supported")
CUDA_SOURCE_COMPAT = Source(Provenance.DERIVED,
                            "follows from CUDA source compatibility (warp-synchronous sm_80 code runs as written)")
M890_FROM_810E = Source(Provenance.DERIVED,
                        "assumed from the 810E (same PPU ISA family); nothing published; unverified on an M890")

PPU_MMA = MmaFamily("ppu.mma.sync", asynchronous=False, rank=1)
BULK_TENSOR_COPY = "ppu.cp.async.aiu.bulk.tensor"
FRAGMENT_N = 16  # the PPU MMA tile is N=16 wide where NVIDIA's mma.sync is N=8


def _mma(a: DType, acc: DType, k: int, source: Source) -> MmaInstruction:
    # M=16 (no m8 form for f16/bf16) and N=16 are reported; K follows the sm_80 forms the SDK accepts
    # (k16 for 16-bit operands, k32 for 8-bit), unverified beyond that.
    return MmaInstruction(PPU_MMA, (16, FRAGMENT_N, k), a, a, acc, ptx="ppu.mma.sync", source=source)


def _mma_table(source: Source) -> tuple[MmaInstruction, ...]:
    return (
        _mma(dtypes.f16, dtypes.f32, 16, source),
        _mma(dtypes.f16, dtypes.f16, 16, source),
        _mma(dtypes.bf16, dtypes.f32, 16, source),
        _mma(dtypes.bf16, dtypes.f16, 16, source),  # f16 accumulation is allowed for bf16 too (reported)
        _mma(dtypes.s8, dtypes.s32, 32, source),
        # No s4/u4 form: no INT4 MMA on PPU (reported); s4 weights go through the s8 or f16 path.
    )


#: Facts that are not fields of MemoryFeatures or ExecutionLimits and that no public source gives.
_UNKNOWN_BEYOND_FIELDS: tuple[str, ...] = (
    "mma.ptx_spelling (only the ppu.mma.sync prefix is public)",
    "mma.shape_k (assumed from the sm_80 forms)",
    "mma.u8 (INT8 is reported, its unsigned form is not)",
    "mma.tf32",
    "mma.e4m3",
    "mma.e5m2",
    "mma.sparse",
    "mma.fragment_layout (accumulators enumerate N before M; the full layout is not public)",
    "peak_dense_tflops",
    "memory_bandwidth",
)


def _unknown(memory: MemoryFeatures, limits: ExecutionLimits, extra: tuple[str, ...]) -> tuple[str, ...]:
    """Every None field of ``memory`` and ``limits`` (as ``memory.<field>``), then the extra unknown facts."""
    missing = [f"memory.{f.name}" for f in fields(memory) if getattr(memory, f.name) is None]
    missing += [f"limits.{f.name}" for f in fields(limits) if getattr(limits, f.name) is None]
    return tuple(missing) + extra


def _notes(fact_sources: Mapping[str, Source], sku: skus.PpuSku, extra: tuple[str, ...]) -> tuple[str, ...]:
    lines = [f"{fact}: {src}" for fact, src in fact_sources.items()]
    lines += [f"{sku.facts.name} {text}: {src}" for text, src in sku.notes]
    return tuple(lines) + extra


def _build(target: Target, name: str, memory: MemoryFeatures, limits: ExecutionLimits, mma_source: Source,
           fact_sources: Mapping[str, Source], sku: skus.PpuSku, extra_unknown: tuple[str, ...],
           extra_notes: tuple[str, ...], preview: bool) -> DeviceCapabilities:
    mma = _mma_table(mma_source)
    all_sources = {mma_source, *fact_sources.values(), *(s for _, s in sku.notes)}
    if sku.facts.source is not None:
        all_sources.add(sku.facts.source)
    return DeviceCapabilities(
        target=target,
        name=name,
        mma=mma,
        memory=memory,
        limits=limits,
        skus=(sku.facts,),
        notes=_notes(fact_sources, sku, extra_notes),
        unknown=_unknown(memory, limits, extra_unknown),
        preview=preview,
        sources=tuple(sorted(all_sources, key=str)),
    )


# ---- Zhenwu 810E -------------------------------------------------------------------------------------
PPU_810E = Target("thead", "ppu-810e", family="ppu")

_810E_MEMORY = MemoryFeatures(
    ldmatrix=True,  # as ppu.ldmatrix, with swizzled forms
    stmatrix=None,
    cp_async=None,  # sm_80 source compiles, but which hardware path cp.async maps to is not public
    bulk_tensor_copy=True,  # a TMA-like bulk tensor copy of its own
    bulk_tensor_copy_name=BULK_TENSOR_COPY,
    tma_multicast=None,
    clusters=None,
    max_cluster_size=None,
    setmaxnreg=None,
    tensor_memory=None,
    tensor_memory_bytes=None,
)
_810E_LIMITS = ExecutionLimits(
    warp_size=32,
    shared_memory_per_sm=256 * 1024,  # the budget public PPU code tunes for; sm_80 has 164 KB
    shared_memory_per_block_optin=None,
    registers_per_sm=None,
    max_registers_per_thread=None,
    max_threads_per_sm=None,
    max_threads_per_block=None,
)
#: Which source backs each known non-MMA fact of the 810E table.
FACT_SOURCES_810E: dict[str, Source] = {
    "mma (ppu.mma.sync, N=16; no s4)": HK_ISA,
    "mma (f16, bf16, s8)": FLAGGEMS,
    "memory.ldmatrix": HK_ISA,
    "memory.bulk_tensor_copy": HK_ISA,
    "memory.bulk_tensor_copy_name": HK_ISA,
    "limits.warp_size": CUDA_SOURCE_COMPAT,
    "limits.shared_memory_per_sm": HK_SMEM,
    "compute capability reported by the driver: 8.0": VLLM_FL,
    "compile target: treated as sm_80 by the PPU SDK": ALIYUN_FAQ,
    "binary format: PPU ELF, not NVIDIA's (e_machine 0x10E, kernel symbols st_other 0x20)": HK_ELF,
}

CAPS_810E = _build(
    PPU_810E, "T-Head Zhenwu 810E PPU (ppu-810e)", _810E_MEMORY, _810E_LIMITS, HK_ISA, FACT_SOURCES_810E,
    skus.ZW810E, _UNKNOWN_BEYOND_FIELDS,
    ("binaries come from the PPU SDK's CUDA-compatible nvcc, never from NVIDIA's NVRTC",),
    preview=False,
)

# ---- Zhenwu M890 -------------------------------------------------------------------------------------
PPU_M890 = Target("thead", "ppu-m890", family="ppu")

# Only the bulk tensor copy and the warp size are carried over; every other 810E figure stays unknown until
# it is measured on an M890.
_M890_MEMORY = MemoryFeatures(bulk_tensor_copy=True, bulk_tensor_copy_name=BULK_TENSOR_COPY)
_M890_LIMITS = ExecutionLimits(warp_size=32, max_threads_per_block=None)
FACT_SOURCES_M890: dict[str, Source] = {
    "mma (ppu.mma.sync forms of the 810E)": M890_FROM_810E,
    "memory.bulk_tensor_copy": M890_FROM_810E,
    "memory.bulk_tensor_copy_name": M890_FROM_810E,
    "limits.warp_size": CUDA_SOURCE_COMPAT,
}

CAPS_M890 = _build(
    PPU_M890, "T-Head Zhenwu M890 PPU (ppu-m890, preview)", _M890_MEMORY, _M890_LIMITS, M890_FROM_810E,
    FACT_SOURCES_M890, skus.M890,
    _UNKNOWN_BEYOND_FIELDS + ("mma.e2m1 (FP8/FP4 support is claimed in one report only)",
                              "compute capability reported by the driver"),
    ("preview: every M890 fact is assumed from the 810E or reported once; run the conformance suite on one",
     "binaries come from the PPU SDK's CUDA-compatible nvcc, never from NVIDIA's NVRTC"),
    preview=True,
)

ALL: tuple[DeviceCapabilities, ...] = (CAPS_810E, CAPS_M890)
BY_ARCH: dict[str, DeviceCapabilities] = {c.target.arch: c for c in ALL}


def capabilities_for(arch: str) -> DeviceCapabilities:
    """The table of one PPU arch (``"ppu-810e"``, ``"ppu-m890"``); an unknown arch raises, naming the known ones."""
    caps = BY_ARCH.get(arch)
    if caps is None:
        raise InvalidInputError(f"unknown PPU arch {arch!r}; known: {', '.join(BY_ARCH)}")
    return caps
