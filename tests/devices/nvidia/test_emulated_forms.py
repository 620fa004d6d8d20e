"""Forms the PTX ISA accepts but ptxas emulates (measured from SASS) are marked so, and never win a selection."""

from __future__ import annotations

import pytest

from humming.capabilities.query import supports
from humming.core import dtypes as dt
from humming.devices.nvidia import archs
from humming.devices.nvidia.families import MMA_SYNC


def emulated(arch: str, a, b) -> set[bool]:
    return {i.emulated for i in archs.capabilities(arch).mma if i.family == MMA_SYNC and i.a is a and i.b is b
            and ".kind::" not in i.ptx}


@pytest.mark.parametrize("arch, a, expected", [
    ("sm_80", dt.s4, {False}), ("sm_89", dt.s4, {False}), ("sm_90a", dt.s4, {True}), ("sm_120a", dt.u4, {True}),
    ("sm_89", dt.e4m3, {False}), ("sm_90a", dt.e4m3, {True}), ("sm_103a", dt.e5m2, {True}), ("sm_120a", dt.e4m3, {False}),
    ("sm_90a", dt.b1, {False}), ("sm_100a", dt.b1, {True}), ("sm_121a", dt.b1, {True}),
])
def test_emulated_flags_follow_the_measured_sass(arch, a, expected):
    assert emulated(arch, a, a) == expected
    for i in archs.capabilities(arch).mma:
        if i.emulated:
            assert i.emulation and i.source.provenance.value == "measured"


def test_w4a4_int4_on_hopper_is_served_but_warned_as_emulated():
    v = supports(archs.capabilities("sm_90a"), activation="s4", weight="s4")
    assert v.ok and v.chosen.instruction.emulated
    assert any("emulated" in w and "IMMA" in w for w in v.warnings)


def test_fp8_on_hopper_prefers_wgmma_and_on_ada_the_native_mma_sync():
    assert supports(archs.capabilities("sm_90a"), activation="e4m3", weight="e4m3").chosen.instruction.family.name == "wgmma"
    v = supports(archs.capabilities("sm_89"), activation="e4m3", weight="e4m3")
    assert not v.chosen.instruction.emulated and not v.warnings
