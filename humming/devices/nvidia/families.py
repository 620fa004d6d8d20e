"""The NVIDIA MMA instruction families (mma.sync, wgmma, tcgen05) and their ranks.

``rank`` orders the families by throughput on a device that has several: a Hopper runs mma.sync at roughly half
of wgmma's rate, and CUTLASS's Blackwell notes give tcgen05 2x to 4x Hopper's wgmma rate per SM. Selection takes
the highest-ranked family that serves a request and warns when it has to fall back to a lower one (INT8 on
sm_103a runs on mma.sync because that target's tcgen05 has no ``kind::i8``).
"""

from __future__ import annotations

from humming.capabilities.model import MmaFamily
from humming.errors import InvalidInputError

#: Warp-synchronous MMA, operands in registers (PTX ISA "Warp Level Matrix Multiply-Accumulate Instructions").
MMA_SYNC = MmaFamily("mma.sync", asynchronous=False, rank=1)

#: Warpgroup MMA, B (and optionally A) from shared-memory descriptors; sm_90a only
#: (PTX ISA "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions").
WGMMA = MmaFamily("wgmma", asynchronous=True, rank=2, operand_from_smem=True)

#: 5th-generation tensor-core MMA: one thread issues, operands from shared-memory descriptors, accumulators in
#: tensor memory (PTX ISA "TensorCore 5th Generation Family Instructions").
TCGEN05 = MmaFamily("tcgen05", asynchronous=True, rank=3, operand_from_smem=True)

ALL: tuple[MmaFamily, ...] = (MMA_SYNC, WGMMA, TCGEN05)


def by_name(name: str) -> MmaFamily:
    """The family spelled ``name`` ("mma.sync", "wgmma", "tcgen05")."""
    for family in ALL:
        if family.name == name:
            return family
    raise InvalidInputError(f"unknown NVIDIA MMA family {name!r}; known: {', '.join(f.name for f in ALL)}")
