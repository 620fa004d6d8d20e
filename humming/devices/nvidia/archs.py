"""NVIDIA targets sm_75 ... sm_121a (and Rubin, preview) as DeviceCapabilities data, one entry per arch.

Instruction lists are built by small functions, each adding what one architecture brought, so that a later
architecture extends an earlier one instead of repeating it (``_ada_mma()`` is ``_ampere_mma()`` plus FP8).
Every instruction carries the PTX ISA section that defines it and the PTX ISA note that dates it; the tests
compile a probe of every declared instruction with NVRTC for its target (tests/devices/nvidia/test_probes.py),
which is how a wrong row is caught. Limits come from the CUDA C++ Programming Guide's "Technical Specifications
per Compute Capability" table; product facts (SMs, memory, rates) live in skus.py.

Targets use the ``a`` suffix where the architecture has arch-specific instructions (wgmma, tcgen05, block-scaled
mma.sync, setmaxnreg); such a binary runs on that architecture only.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import product
from typing import Iterable, TypedDict

from humming.capabilities.model import (BlockScale, DeviceCapabilities, ExecutionLimits, HiddenFormat, MemoryFeatures,
                                        MmaInstruction, Provenance, Source, Target,
                                        wgmma_like_n_values)
from humming.core import dtypes
from humming.core.dtypes import DType
from humming.devices.nvidia import skus
from humming.devices.nvidia.families import MMA_SYNC, TCGEN05, WGMMA
from humming.errors import InvalidInputError

D, M, R, DER = Provenance.DOCUMENTED, Provenance.MEASURED, Provenance.REPORTED, Provenance.DERIVED
f16, bf16, tf32, f32, f64, s32 = dtypes.f16, dtypes.bf16, dtypes.tf32, dtypes.f32, dtypes.f64, dtypes.s32
s8, u8, s4, u4, b1 = dtypes.s8, dtypes.u8, dtypes.s4, dtypes.u4, dtypes.b1
e4m3, e5m2, e3m2, e2m3, e2m1 = dtypes.e4m3, dtypes.e5m2, dtypes.e3m2, dtypes.e2m3, dtypes.e2m1
ue8m0, ue4m3 = dtypes.ue8m0, dtypes.ue4m3
FP8 = (e4m3, e5m2)
F8F6F4 = (e4m3, e5m2, e3m2, e2m3, e2m1)  # the operand set of kind::f8f6f4 and kind::mxf8f6f4
INT8 = (s8, u8)
INT4 = (s4, u4)
KiB = 1024

PTX_MMA = "PTX ISA 9.x §9.7.14.5.14 'Multiply-and-Accumulate Instruction: mma'"
PTX_WGMMA = ("PTX ISA 9.x §9.7.15.5.2 'wgmma.mma_async' (shapes: §9.7.15.5.1 'Register Fragments and Shared Memory "
             "Matrix Layouts')")
PTX_TCGEN05 = "PTX ISA 9.x §9.7.16.10 'tcgen05.mma' (kinds and shapes: 'Matrix shape', 'Instruction descriptor')"
GUIDE = "CUDA C++ Programming Guide, 'Technical Specifications per Compute Capability'"


# ---- instruction builders --------------------------------------------------------------------------------------
def _mma(shape: tuple[int, int, int], a: DType, b: DType, acc: DType, note: str, *, kind: str = "",
         scale: BlockScale | None = None, scale_vec: str = "", bitop: str = "") -> MmaInstruction:
    """One mma.sync form; ``note`` is the PTX ISA note that introduced it (version and target)."""
    m, n, k = shape
    kind_part = f".kind::{kind}" if kind else ""
    scale_part = f".block_scale.scale_vec::{scale_vec}" if scale else ""
    stype = f".{scale.scale}" if scale else ""
    tail = f".{bitop}.popc" if bitop else ""
    ptx = (f"mma.sync.aligned.m{m}n{n}k{k}.row.col{kind_part}{scale_part}.{acc}.{a}.{b}.{acc}{stype}{tail}")
    return MmaInstruction(MMA_SYNC, shape, a, b, acc, block_scale=scale, ptx=ptx,
                          source=Source(D, f"{PTX_MMA}: {note}"))


def _pairs(types_a: Iterable[DType], types_b: Iterable[DType] | None = None) -> list[tuple[DType, DType]]:
    types_a = tuple(types_a)
    return list(product(types_a, types_a if types_b is None else tuple(types_b)))


def _turing_mma() -> list[MmaInstruction]:
    # m8n8k4 (f16) is left out on purpose: the PTX ISA notes it is optimised for sm_70 and slow on later targets.
    out = [_mma((16, 8, 8), f16, f16, acc, "f16 .m16n8k8 since PTX 6.5, sm_75") for acc in (f16, f32)]
    out += [_mma((8, 8, 16), a, b, s32, "u8/s8 .m8n8k16 since PTX 6.5, sm_75") for a, b in _pairs(INT8)]
    out += [_mma((8, 8, 32), a, b, s32, "u4/s4 .m8n8k32 since PTX 6.5, sm_75") for a, b in _pairs(INT4)]
    out.append(_mma((8, 8, 128), b1, b1, s32, "b1 .m8n8k128 .xor.popc since PTX 6.5, sm_75", bitop="xor"))
    return out


def _ampere_mma() -> list[MmaInstruction]:
    out = _turing_mma()
    out += [_mma((16, 8, 16), f16, f16, acc, "f16 .m16n8k16 since PTX 7.0, sm_80") for acc in (f16, f32)]
    out += [_mma(s, bf16, bf16, f32, "bf16 .m16n8k8/.m16n8k16 since PTX 7.0, sm_80") for s in ((16, 8, 8), (16, 8, 16))]
    out += [_mma(s, tf32, tf32, f32, "tf32 .m16n8k4/.m16n8k8 since PTX 7.0, sm_80") for s in ((16, 8, 4), (16, 8, 8))]
    for k in (16, 32):
        out += [_mma((16, 8, k), a, b, s32, "u8/s8 .m16n8k16/.m16n8k32 since PTX 7.0, sm_80") for a, b in _pairs(INT8)]
    for k in (32, 64):
        out += [_mma((16, 8, k), a, b, s32, "u4/s4 .m16n8k32/.m16n8k64 since PTX 7.0, sm_80") for a, b in _pairs(INT4)]
    for k in (128, 256):
        out.append(_mma((16, 8, k), b1, b1, s32, "b1 .m16n8k128/.m16n8k256 since PTX 7.0; .and since PTX 7.1, sm_80",
                        bitop="and"))
    out.append(_mma((8, 8, 4), f64, f64, f64, "f64 .m8n8k4 since PTX 7.0, sm_80"))
    return out


def _ada_mma() -> list[MmaInstruction]:
    out = _ampere_mma()
    for acc in (f32, f16):
        out += [_mma((16, 8, 32), a, b, acc, "e4m3/e5m2 .m16n8k32 since PTX 8.4 (f16 accumulation since PTX 8.7), "
                     "sm_89") for a, b in _pairs(FP8)]
        out += [_mma((16, 8, 16), a, b, acc, "e4m3/e5m2 .m16n8k16 since PTX 8.7, sm_89") for a, b in _pairs(FP8)]
    return out


def _hopper_mma() -> list[MmaInstruction]:
    shapes = ((16, 8, 4), (16, 8, 8), (16, 8, 16))
    return _ada_mma() + [_mma(s, f64, f64, f64, "f64 .m16n8k4/k8/k16 since PTX 7.8, sm_90") for s in shapes]


def _blackwell_client_mma() -> list[MmaInstruction]:
    """sm_120a/121a: FP6/FP4 through kind::f8f6f4 and the block-scaled kinds, all PTX 8.7 (sm_120a)."""
    out = _hopper_mma()
    for acc in (f32, f16):
        # The e4m3/e5m2 pairs of kind::f8f6f4 compute what the sm_89 forms compute; only the new pairs are added.
        out += [_mma((16, 8, 32), a, b, acc, ".kind::f8f6f4 since PTX 8.7, sm_120a", kind="f8f6f4")
                for a, b in _pairs(F8F6F4) if not (a in FP8 and b in FP8)]
    mx = BlockScale(ue8m0, 32)
    out += [_mma((16, 8, 32), a, b, f32, ".kind::mxf8f6f4 .block_scale .scale_vec::1X since PTX 8.7, sm_120a",
                 kind="mxf8f6f4", scale=mx, scale_vec="1X") for a, b in _pairs(F8F6F4)]
    out.append(_mma((16, 8, 64), e2m1, e2m1, f32, ".kind::mxf4 .block_scale .scale_vec::2X since PTX 8.7, sm_120a",
                    kind="mxf4", scale=mx, scale_vec="2X"))
    # mxf4nvf4 with ue8m0 x 2X computes what mxf4 computes and is not repeated.
    out.append(_mma((16, 8, 64), e2m1, e2m1, f32, ".kind::mxf4nvf4 .scale_vec::4X with .ue4m3 since PTX 8.7, sm_120a",
                    kind="mxf4nvf4", scale=BlockScale(ue4m3, 16), scale_vec="4X"))
    out.append(_mma((16, 8, 64), e2m1, e2m1, f32, ".kind::mxf4nvf4 .scale_vec::4X with .ue8m0 since PTX 9.1, sm_120a",
                    kind="mxf4nvf4", scale=BlockScale(ue8m0, 16), scale_vec="4X"))
    return out


# ---- forms the ISA accepts but the tensor cores lack ---------------------------------------------------------------
# Measured 2026-12-02: the SASS of each probe (NVRTC 13.5, nvdisasm 13.5; conformance/sass.py) shows ptxas lowering
# these mma.sync forms onto another tensor op. Each rule names the operand dtypes it covers and what ptxas emits.
EMU_SOURCE = Source(M, "SASS of humming's probe kernels, NVRTC 13.5 + nvdisasm 13.5, 2026-12-02 (python -m conformance "
                       "--target <arch> --level declare)")
EMU_INT4 = (frozenset({s4, u4}), "no int4 tensor op: ptxas unpacks the operands to 8 bits and issues IMMA .S8/.U8")
EMU_FP8 = (frozenset({e4m3, e5m2}), "no fp8 mma.sync tensor op: ptxas converts to f16 (F2FP.F16.E4M3/E5M2.UNPACK_B) "
                                    "and issues HMMA")
EMU_B1 = (frozenset({b1}), "no BMMA: ptxas issues IMMA.U8.U8")


def _emulated(mma: list[MmaInstruction], *rules: tuple[frozenset[DType], str]) -> list[MmaInstruction]:
    """Mark the plain mma.sync forms (no .kind) whose operands a rule covers as emulated, with the rule's text."""
    out = []
    for i in mma:
        rule = next((r for r in rules if i.family == MMA_SYNC and ".kind::" not in i.ptx and {i.a, i.b} <= r[0]), None)
        out.append(i if rule is None else replace(i, emulated=True, emulation=rule[1], source=EMU_SOURCE))
    return out


WGMMA_FLOAT_N = wgmma_like_n_values(8, 256)
WGMMA_INT_N = (8, 16, 24) + tuple(range(32, 257, 16))  # integer and b1 forms: 8, 16, 24, then steps of 16


def _wg(k: int, a: DType, b: DType, acc: DType, note: str) -> MmaInstruction:
    n_values = WGMMA_INT_N if (a.is_int or a is b1) else WGMMA_FLOAT_N
    tail = ".and.popc" if a is b1 else ""
    ptx = f"wgmma.mma_async.sync.aligned.m64nNk{k}.{acc}.{a}.{b}{tail}"  # N: one of n_values
    return MmaInstruction(WGMMA, (64, 256, k), a, b, acc, ptx=ptx, n_values=n_values,
                          source=Source(D, f"{PTX_WGMMA}: {note}"))


def _hopper_wgmma() -> list[MmaInstruction]:
    """sm_90a: wgmma.mma_async, all forms since PTX 8.0. No s4/u4 form exists (int4 runs on mma.sync only)."""
    out = [_wg(16, f16, f16, acc, ".f16 k16, f16 or f32 accumulation") for acc in (f16, f32)]
    out.append(_wg(16, bf16, bf16, f32, ".bf16 k16"))
    out.append(_wg(8, tf32, tf32, f32, ".tf32 k8"))
    out += [_wg(32, a, b, acc, ".e4m3/.e5m2 k32, f16 or f32 accumulation")
            for acc in (f16, f32) for a, b in _pairs(FP8)]
    out += [_wg(32, a, b, s32, ".s8/.u8 k32") for a, b in _pairs(INT8)]
    out.append(_wg(256, b1, b1, s32, ".b1 k256 .and.popc"))
    return out


# N choices of cta_group::1, M=128 (A and B from shared memory). N sits in the run-time instruction descriptor
# (bits 17-22, N >> 3), not in the mnemonic, so ptxas cannot check it (NVRTC 13.5 compiles an idesc with N = 0 or
# N = 504 without a word): these sets come from documents. PTX ISA 9.x §9.7.16.2.1 Table 'Various combinations of
# .kind and shapes' (read through the mirror ptx.poole.ai): kind::f16, kind::tf32 and kind::f8f6f4 take
# N = 8, 16, 24 ... 256 in steps of 8 (steps of 16 are cta_group::2's). CUTLASS include/cute/arch/mma_sm100_umma.hpp
# agrees: SM100_MMA_F16BF16_SS, _TF32_SS, _MXF8F6F4_SS and _MXF4_SS (mxf4 and mxf4nvf4) assert N % 8 == 0 and
# 8 <= N <= 256 (the M=128 N % 16 rule is the _TS forms', A from TMEM), and SM100_MMA_S8_SS asserts
# N == 8 || N % 16 == 0 for kind::i8. CUTLASS's SM103 FP4 atoms (SM103_MXF4_ULTRA_SS_VS) assert N % 16, so
# sm_103a keeps steps of 16 for mxf4/mxf4nvf4, and so does Rubin (no source). Probes at N=8 compile to the
# UTC*MMA op of each kind on sm_100a/103a/110a (tests/devices/nvidia/test_review7_facts.py).
TCGEN05_N = tuple(range(8, 257, 8))
TCGEN05_I8_N = (8,) + tuple(range(16, 257, 16))
TCGEN05_N16 = tuple(range(16, 257, 16))


def _tc(kind: str, k: int, a: DType, b: DType, acc: DType, note: str, *, scale: BlockScale | None = None,
        scale_vec: str = "", provenance: Provenance = D, where: str = "",
        n_values: tuple[int, ...] = TCGEN05_N) -> MmaInstruction:
    suffix = f".block_scale.scale_vec::{scale_vec}" if scale else ""
    ptx = f"tcgen05.mma.cta_group::1.kind::{kind}{suffix}"
    cite = f"{PTX_TCGEN05}: {note}" if provenance is D else where
    return MmaInstruction(TCGEN05, (128, 256, k), a, b, acc, block_scale=scale, ptx=ptx, n_values=n_values,
                          source=Source(provenance, cite))


class _Cite(TypedDict):
    """How a _tcgen05() row is sourced: the keyword arguments every _tc() call of one target shares."""

    provenance: Provenance
    where: str


def _tcgen05(*, int8: bool, fp4_n: tuple[int, ...] = TCGEN05_N, provenance: Provenance = D,
             where: str = "") -> list[MmaInstruction]:
    """tcgen05.mma, cta_group::1 with M=128 (since PTX 8.6). ``int8``: whether the target has kind::i8; ``fp4_n``:
    the N choices of kind::mxf4 and kind::mxf4nvf4."""
    kw: _Cite = {"provenance": provenance, "where": where}
    out = [_tc("f16", 16, f16, f16, acc, "kind::f16 (f16 x f16 -> f16|f32)", **kw) for acc in (f16, f32)]
    out.append(_tc("f16", 16, bf16, bf16, f32, "kind::f16 (bf16 x bf16 -> f32)", **kw))
    out.append(_tc("tf32", 8, tf32, tf32, f32, "kind::tf32", **kw))
    # UNCONFIRMED (review 7, A1): the PTX ISA instruction-descriptor table (§9.7.16.4.2, 'Instruction descriptor
    # format for .kind::tf32, .kind::f16, .kind::f8f6f4 and .kind::i8', bits 4-5 'dtype'), read only through the
    # mirror ptx.poole.ai, lists F32 alone for kind::f8f6f4, as does the shapes table; ptxas cannot tell (the D type
    # is in the run-time descriptor). The f16-accumulation rows stay until docs.nvidia.com or a B200 run decides.
    out += [_tc("f8f6f4", 32, a, b, acc, "kind::f8f6f4, any pair of e4m3/e5m2/e3m2/e2m3/e2m1", **kw)
            for acc in (f32, f16) for a, b in _pairs(F8F6F4)]
    if int8:
        out += [_tc("i8", 32, a, b, s32, "kind::i8 (target ISA notes: sm_100a, sm_101a/sm_110a only)",
                    n_values=TCGEN05_I8_N, **kw) for a, b in _pairs(INT8)]
    mx = BlockScale(ue8m0, 32)
    out += [_tc("mxf8f6f4", 32, a, b, f32, "kind::mxf8f6f4 .block_scale", scale=mx, scale_vec="1X", **kw)
            for a, b in _pairs(F8F6F4)]
    out.append(_tc("mxf4", 64, e2m1, e2m1, f32, "kind::mxf4 .block_scale", scale=mx, scale_vec="2X", n_values=fp4_n,
                   **kw))
    out.append(_tc("mxf4nvf4", 64, e2m1, e2m1, f32, "kind::mxf4nvf4 .scale_vec::4X with ue4m3",
                   scale=BlockScale(ue4m3, 16), scale_vec="4X", n_values=fp4_n, **kw))
    return out


def is_arch_specific(instruction: MmaInstruction) -> bool:
    """True for forms that need an ``a`` target (wgmma, tcgen05, mma.sync .kind::*): such binaries run on one arch."""
    return instruction.family in (WGMMA, TCGEN05) or ".kind::" in instruction.ptx


# ---- features and limits ----------------------------------------------------------------------------------
TURING_MEM = MemoryFeatures(ldmatrix=True, stmatrix=False, cp_async=False, bulk_copy=False, bulk_tensor_copy=False,
                            tma_multicast=False, clusters=False, setmaxnreg=False, tensor_memory=False,
                            tensor_memory_bytes=0, programmatic_launch=False)
AMPERE_MEM = replace(TURING_MEM, cp_async=True)
HOPPER_MEM = replace(AMPERE_MEM, stmatrix=True, bulk_copy=True, bulk_tensor_copy=True,
                     bulk_tensor_copy_name="cp.async.bulk.tensor", tma_multicast=True, clusters=True, max_cluster_size=8,
                     setmaxnreg=True, programmatic_launch=True)
# TMEM: 128 lanes x 512 columns x 4 bytes per SM (PTX ISA "Tensor Memory").
BLACKWELL_MEM = replace(HOPPER_MEM, tensor_memory=True, tensor_memory_bytes=128 * 512 * 4)
# sm_120a/121a: TMA and clusters, no TMEM, and no hardware TMA multicast. The SASS (NVRTC 13.5, nvdisasm 13.5) of a
# .multicast::cluster copy is CALL.ABS.NOINC to __cuda_syscall_cp_async_bulk_tensor_2d_tile_multicast; the unicast
# .shared::cluster copy is UTMALDG for the CTA's own shared memory and that syscall for a peer CTA's (sm_90a and
# sm_100a: UTMALDG.2D.MULTICAST and UTMALDG.2D only). Review 7, A2; CUTLASS/quack's sm_120 kernels use 1x1 clusters.
CLIENT_BLACKWELL_MEM = replace(HOPPER_MEM, tma_multicast=False)
CLIENT_TMA = ("TMA into another CTA of the cluster (.multicast::cluster, or a .shared::cluster destination in a peer "
              "CTA) runs through a driver syscall (__cuda_syscall_cp_async_bulk_tensor_*), not the TMA unit: "
              "memory.tma_multicast is False and peer-CTA TMA is slow")


def _limits(smem_sm_kib: int | None, smem_block_kib: int | None, threads: int | None) -> ExecutionLimits:
    # 64K 32-bit registers per SM and 255 per thread on every target here (Programming Guide table).
    return ExecutionLimits(warp_size=32, shared_memory_per_sm=None if smem_sm_kib is None else smem_sm_kib * KiB,
                           shared_memory_per_block_optin=None if smem_block_kib is None else smem_block_kib * KiB,
                           registers_per_sm=65536, max_registers_per_thread=255, max_threads_per_sm=threads,
                           max_threads_per_block=1024)


# ---- hidden formats ---------------------------------------------------------------------------------------------
_HIDDEN_CITE = ("no NVIDIA document; humming-kernels 0.1.19's verified list of hidden tensor-core formats (an f8f6f4 "
                "MMA with the operand-format field patched in the cubin, run and checked on the hardware), as "
                "recorded in DEVICE-FACTS.md")


def _hidden(where: str) -> tuple[HiddenFormat, ...]:
    return tuple(HiddenFormat(d, verified_on=f"{where}: cubin patch, run on hardware (reported)",
                              source=Source(R, _HIDDEN_CITE)) for d in (dtypes.e3m4, dtypes.e0m3))


# ---- the targets --------------------------------------------------------------------------------------------------
def _target(arch: str, family: str, name: str, mma: list[MmaInstruction], memory: MemoryFeatures,
            limits: ExecutionLimits, *, notes: tuple[str, ...] = (), hidden: tuple[HiddenFormat, ...] = (),
            unknown: tuple[str, ...] = (), preview: bool = False, extra: tuple[Source, ...] = ()) -> DeviceCapabilities:
    return DeviceCapabilities(target=Target("nvidia", arch, family), name=name, mma=tuple(mma), memory=memory,
                              limits=limits, hidden_formats=hidden, skus=skus.BY_ARCH[arch], notes=notes,
                              unknown=unknown, preview=preview,
                              sources=(Source(D, PTX_MMA), Source(D, f"{GUIDE} (limits)")) + extra)


INT8_MMA_SYNC_ONLY = ("INT8 (s8/u8) runs only on mma.sync here: this target's tcgen05 has no kind::i8 (ptxas: "
                      "\"Feature '.kind::i8' not supported on .target\"; LLVM NVPTX hasTcgen05MMAI8Kind() accepts "
                      "sm_100a and sm_110a only), so INT8 GEMM is far slower than FP8")
CTA_PAIR = "tcgen05.mma also has cta_group::2 (M=256 over a CTA pair) and M=64 forms; the declared forms are M=128"
INT4_NOTE = "s4/u4 MMA is mma.sync only; the datasheets give int4 no tensor rate from Hopper on: treat it as slow"

SM75 = _target("sm_75", "turing", "NVIDIA Turing (sm_75)", _turing_mma(), TURING_MEM, _limits(64, 64, 1024),
               notes=("no bf16 or tf32 MMA (PTX ISA: .bf16/.tf32 mma require sm_80)",))
SM80 = _target("sm_80", "ampere", "NVIDIA Ampere GA100 (sm_80)", _ampere_mma(), AMPERE_MEM, _limits(164, 163, 2048))
SM86 = _target("sm_86", "ampere", "NVIDIA Ampere GA10x (sm_86)", _ampere_mma(), AMPERE_MEM, _limits(100, 99, 1536))
SM87 = _target("sm_87", "ampere", "NVIDIA Ampere Orin (sm_87)", _ampere_mma(), AMPERE_MEM, _limits(164, 163, 1536))
SM89 = _target("sm_89", "ada", "NVIDIA Ada (sm_89)", _ada_mma(), AMPERE_MEM, _limits(100, 99, 1536))
SM90A = _target("sm_90a", "hopper", "NVIDIA Hopper (sm_90a)", _emulated(_hopper_mma(), EMU_INT4, EMU_FP8) + _hopper_wgmma(),
                HOPPER_MEM,
                _limits(228, 227, 2048), notes=("wgmma has no s4/u4 form: int4 x int4 runs on mma.sync", INT4_NOTE),
                extra=(Source(D, PTX_WGMMA),
                       Source(M, "H200 SXM, 2026-12-02: every declared mma.sync and wgmma probe ran with D = C + K, "
                                 "and the driver's shared-memory, thread and register limits equal this table's "
                                 "(tests/gpu/test_nvidia_gpu.py)")))
SM100A = _target("sm_100a", "blackwell", "NVIDIA Blackwell B200/GB200 (sm_100a)",
                 _emulated(_hopper_mma(), EMU_INT4, EMU_FP8, EMU_B1) + _tcgen05(int8=True),
                 BLACKWELL_MEM, _limits(228, 227, 2048), notes=(CTA_PAIR, INT4_NOTE),
                 hidden=_hidden("sm_100a (B200)"), extra=(Source(D, PTX_TCGEN05),))
SM103A = _target("sm_103a", "blackwell", "NVIDIA Blackwell Ultra B300/GB300 (sm_103a)",
                 _emulated(_hopper_mma(), EMU_INT4, EMU_FP8, EMU_B1) + _tcgen05(int8=False, fp4_n=TCGEN05_N16),
                 BLACKWELL_MEM, _limits(228, 227, 2048),
                 notes=(INT8_MMA_SYNC_ONLY, CTA_PAIR, INT4_NOTE), hidden=_hidden("sm_103a (B300)"),
                 extra=(Source(D, PTX_TCGEN05),
                        Source(DER, "NVRTC 13.5's ptxas rejects tcgen05.mma .kind::i8 for sm_103a "
                                    "(tests/devices/nvidia/test_probes.py)")))
SM110A = _target("sm_110a", "blackwell", "NVIDIA Thor (sm_110a, sm_101a before PTX ISA 9.0)",
                 _emulated(_hopper_mma(), EMU_INT4, EMU_FP8, EMU_B1) + _tcgen05(int8=True), BLACKWELL_MEM,
                 _limits(228, 227, 1536),
                 notes=(CTA_PAIR, "E3M4/E0M3 are not in the verified hidden-format list for Thor"),
                 extra=(Source(D, PTX_TCGEN05),
                        Source(D, "NVIDIA CCCL libcudacxx cuda/__device/arch_traits.h: arch_traits<sm_110> is "
                                  "sm_100's (228 KiB shared memory per SM) with 1536 threads and 24 blocks per SM"),
                        Source(R, "228 KiB shared memory per SM from the CUDA driver on a Jetson AGX Thor: "
                                  f"{skus.THOR_DRIVER_DUMP}")))
SM120A = _target("sm_120a", "blackwell-client", "NVIDIA Blackwell RTX 50 / RTX PRO (sm_120a)",
                 _emulated(_blackwell_client_mma(), EMU_INT4, EMU_B1),
                 CLIENT_BLACKWELL_MEM, _limits(100, 99, 1536),
                 notes=("no wgmma, no tcgen05, no TMEM: FP4/FP6 and block-scaled MMA run on mma.sync",
                        "CUTLASS's sm_120 kernels use 1x1x1 clusters", CLIENT_TMA),
                 hidden=_hidden("sm_120a (RTX 50)"))
SM121A = _target("sm_121a", "blackwell-client", "NVIDIA DGX Spark GB10 (sm_121a)",
                 _emulated(_blackwell_client_mma(), EMU_INT4, EMU_B1),
                 CLIENT_BLACKWELL_MEM, _limits(100, 99, 1536),
                 notes=("no wgmma, no tcgen05, no TMEM: FP4/FP6 and block-scaled MMA run on mma.sync",
                        "unified LPDDR5x memory shared with the CPU", CLIENT_TMA),
                 hidden=_hidden("sm_121a (GB10)"))

_RUBIN_WHERE = ("accepted by NVRTC 13.5 for sm_107a (tests/devices/nvidia/test_probes.py); LLVM NVPTX names SM107f "
                "the Rubin family (hasRubinFamilySupport); no public PTX ISA section yet")
RUBIN = _target("sm_107a", "rubin", "NVIDIA Rubin (sm_107a, preview)",
                _emulated(_hopper_mma(), EMU_INT4, EMU_FP8, EMU_B1)
                + _tcgen05(int8=False, fp4_n=TCGEN05_N16, provenance=DER, where=_RUBIN_WHERE), BLACKWELL_MEM,
                ExecutionLimits(warp_size=32, registers_per_sm=None, max_registers_per_thread=None),
                notes=("preview: the instruction set is what NVRTC 13.5 accepts for sm_107a; no hardware was run",
                       "E3M4/E0M3 raise an illegal instruction on Rubin (reported by humming-kernels); not declared",
                       INT8_MMA_SYNC_ONLY),
                unknown=("skus", "limits.shared_memory_per_sm", "limits.shared_memory_per_block_optin",
                         "limits.registers_per_sm", "limits.max_registers_per_thread", "limits.max_threads_per_sm",
                         "memory.tensor_memory_bytes", "mma throughput per kind", "new tcgen05 forms of PTX ISA 9.4"),
                preview=True, extra=(Source(DER, _RUBIN_WHERE),))

ALL: tuple[DeviceCapabilities, ...] = (SM75, SM80, SM86, SM87, SM89, SM90A, SM100A, SM103A, SM110A, SM120A, SM121A,
                                       RUBIN)
BY_ARCH: dict[str, DeviceCapabilities] = {c.target.arch: c for c in ALL}

#: Compute capability -> target arch. (10, 1) is Thor as drivers before CUDA 13 report it.
BY_CC: dict[tuple[int, int], str] = {
    (7, 5): "sm_75", (8, 0): "sm_80", (8, 6): "sm_86", (8, 7): "sm_87", (8, 9): "sm_89", (9, 0): "sm_90a",
    (10, 0): "sm_100a", (10, 1): "sm_110a", (10, 3): "sm_103a", (10, 7): "sm_107a", (11, 0): "sm_110a",
    (12, 0): "sm_120a", (12, 1): "sm_121a",
}
#: Entries of BY_CC that are another name for a listed target, not an architecture of their own: never the "nearest
#: older" target of an unknown compute capability (10.2 is no Thor). (10, 1): Thor before CUDA 13 renamed it 11.0.
LEGACY_CC: frozenset[tuple[int, int]] = frozenset({(10, 1)})


def capabilities(arch: str) -> DeviceCapabilities:
    """The declared capabilities of ``arch`` ("sm_90a")."""
    try:
        return BY_ARCH[arch]
    except KeyError:
        raise InvalidInputError(f"unknown NVIDIA target {arch!r}; declared: {', '.join(BY_ARCH)}") from None

