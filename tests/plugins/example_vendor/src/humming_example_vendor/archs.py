"""The example vendor's capability table: one made-up target, exa-1. EXAMPLE ONLY: no such hardware exists.

A real plugin writes one DeviceCapabilities per compile target, every fact with a Source saying where it comes
from, and every fact it does not know as None (listed in ``unknown``), never guessed.
"""

from __future__ import annotations

from dataclasses import fields

from humming.capabilities.model import (DeviceCapabilities, ExecutionLimits, MemoryFeatures, MmaFamily, MmaInstruction,
                                        Provenance, SkuFacts, Source, Target)
from humming.core import dtypes

#: Where the figures come from. A real vendor cites its ISA manual or datasheet (DOCUMENTED) or a dated
#: measurement (MEASURED); this example says plainly that it is made up.
EXAMPLE = Source(Provenance.VENDOR_DECLARED, "made-up figures for the humming vendor guide; no EXA-1 exists")

TARGET = Target("example", "exa-1", family="example")

#: The vendor's own MMA family: a warp-synchronous instruction, like NVIDIA's mma.sync.
EXA_MMA = MmaFamily("exa.mma.sync", asynchronous=False, rank=1)

MMA = (
    MmaInstruction(EXA_MMA, (16, 8, 16), dtypes.f16, dtypes.f16, dtypes.f32, ptx="exa.mma.sync", source=EXAMPLE),
    MmaInstruction(EXA_MMA, (16, 8, 16), dtypes.bf16, dtypes.bf16, dtypes.f32, ptx="exa.mma.sync", source=EXAMPLE),
    MmaInstruction(EXA_MMA, (16, 8, 32), dtypes.s8, dtypes.s8, dtypes.s32, ptx="exa.mma.sync", source=EXAMPLE),
)

MEMORY = MemoryFeatures(ldmatrix=True, cp_async=True, bulk_tensor_copy=False, clusters=False)
LIMITS = ExecutionLimits(warp_size=32, shared_memory_per_sm=128 * 1024, shared_memory_per_block_optin=96 * 1024,
                         registers_per_sm=64 * 1024, max_threads_per_block=1024)

SKU = SkuFacts(name="EXA-1 Example Card", sm_count=24, memory_bytes=16 * 2**30, memory_bandwidth=None,
               l2_bytes=None, match_names=("EXA-1",), source=EXAMPLE)


def _unknown() -> tuple[str, ...]:
    missing = [f"memory.{f.name}" for f in fields(MEMORY) if getattr(MEMORY, f.name) is None]
    missing += [f"limits.{f.name}" for f in fields(LIMITS) if getattr(LIMITS, f.name) is None]
    return tuple(missing) + ("sku.memory_bandwidth", "sku.l2_bytes")


CAPABILITIES = DeviceCapabilities(
    target=TARGET,
    name="Example EXA-1 (made-up target for the vendor guide)",
    mma=MMA,
    memory=MEMORY,
    limits=LIMITS,
    skus=(SKU,),
    notes=("EXAMPLE ONLY: every figure is made up to show the shape of a plugin",),
    unknown=_unknown(),
    sources=(EXAMPLE,),
)
