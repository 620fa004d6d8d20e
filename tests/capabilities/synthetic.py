"""Small made-up capability tables, so capability logic is tested apart from any vendor's real facts."""

from __future__ import annotations

from humming.capabilities.model import (BlockScale, DeviceCapabilities, ExecutionLimits, MemoryFeatures, MmaFamily,
                                        MmaInstruction, Target)
from humming.core import dtypes as dt

SLOW = MmaFamily("slow.sync", asynchronous=False, rank=1)
FAST = MmaFamily("fast.async", asynchronous=True, rank=3, operand_from_smem=True)


def instr(fam: MmaFamily, a, b, acc, k: int = 16, scale: BlockScale | None = None) -> MmaInstruction:
    return MmaInstruction(fam, (16, 8, k), a, b, acc, block_scale=scale)


def caps(arch: str, mma: tuple[MmaInstruction, ...], **kw) -> DeviceCapabilities:
    return DeviceCapabilities(
        target=Target("synthetic", arch), name=f"synthetic {arch}", mma=mma,
        memory=kw.pop("memory", MemoryFeatures(ldmatrix=True, cp_async=True, bulk_tensor_copy=True)),
        limits=kw.pop("limits", ExecutionLimits(shared_memory_per_sm=228 * 1024, shared_memory_per_block_optin=227 * 1024)),
        **kw)


#: An older chip: 16-bit and int8/int4 through a synchronous family only.
OLD = caps("old", (instr(SLOW, dt.f16, dt.f16, dt.f32), instr(SLOW, dt.bf16, dt.bf16, dt.f32),
                   instr(SLOW, dt.s8, dt.s8, dt.s32, k=32), instr(SLOW, dt.s4, dt.s4, dt.s32, k=64)))

#: A newer chip: a fast family with fp8/fp4 (mixed) and block scaling, but no int8 there (int8 only on SLOW).
NEW = caps("new", (instr(SLOW, dt.f16, dt.f16, dt.f32), instr(SLOW, dt.s8, dt.s8, dt.s32, k=32),
                   instr(FAST, dt.f16, dt.f16, dt.f32), instr(FAST, dt.bf16, dt.bf16, dt.f32),
                   instr(FAST, dt.e4m3, dt.e4m3, dt.f32, k=32), instr(FAST, dt.e4m3, dt.e2m1, dt.f32, k=32),
                   instr(FAST, dt.e2m1, dt.e2m1, dt.f32, k=64, scale=BlockScale(dt.ue8m0, 32))))
