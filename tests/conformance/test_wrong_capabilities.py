"""Deliberately wrong capability tables are caught by the conformance suite, before any hardware is needed.

Each liar is a real NVIDIA table with one wrong claim added, served by a plugin registered in code that reuses
the NVIDIA plugin's toolchain (NVRTC) and probe renderer, so the only thing wrong is the claim itself:

- wgmma on sm_80: the probe does not compile for that target (ptxas: wgmma needs sm_90a);
- tcgen05 kind::i8 on sm_103a: the probe does not compile (B300 dropped INT8 from tcgen05);
- e4m3 mma.sync "natively" on sm_90a, and s4 mma.sync on sm_100a: the probes compile, but ptxas emulates them
  (F2FP unpacks + HMMA; an s8 IMMA), which the SASS check reports.
"""

from __future__ import annotations

import dataclasses

import pytest

from humming.capabilities.model import DeviceCapabilities, MmaInstruction, Target
from humming.core import dtypes as dt
from humming.devices.hookspecs import API_VERSION, hookimpl
from humming.devices.manager import DeviceManager
from humming.devices.nvidia import archs, probes
from humming.devices.nvidia.families import MMA_SYNC, TCGEN05, WGMMA
from humming.devices.nvidia.target import toolchain_for

from conformance import sass
from conformance.runner import Status, Suite, run_suite


class Liar:
    """A plugin that declares one NVIDIA table (wrong on purpose) and serves NVIDIA's compiler and probes for it."""

    def __init__(self, caps: DeviceCapabilities) -> None:
        self.caps = caps

    @hookimpl
    def humming_api_version(self) -> int:
        return API_VERSION

    @hookimpl
    def humming_declare_targets(self, register) -> None:  # noqa: ANN001 - the hook's callback
        register(self.caps)

    @hookimpl
    def humming_toolchain(self, target: Target):  # noqa: ANN201
        return toolchain_for(target) if target == self.caps.target else None

    @hookimpl
    def humming_instruction_probe(self, instruction: MmaInstruction, target: Target) -> str | None:
        return probes.probe_source(instruction) if target == self.caps.target else None


def run_level(caps: DeviceCapabilities, level: str, pattern: str | None = None) -> dict[str, object]:
    manager = DeviceManager(autoload=False, plugins=[("liar", Liar(caps))], raw_devices=[], strict=True)
    suite = Suite(manager, manager.capabilities(caps.target.arch), pattern=pattern, jobs=2, progress=False)
    return {r.id: r for r in run_suite(suite, [level]).results}


def with_extra(base: DeviceCapabilities, extra: list[MmaInstruction], **changes: object) -> DeviceCapabilities:
    return dataclasses.replace(base, mma=base.mma + tuple(extra), **changes)


def test_wgmma_claimed_for_sm80_fails_declare_because_the_probe_does_not_compile() -> None:
    wgmma = [i for i in archs.SM90A.mma if i.family == WGMMA and i.a is dt.bf16]
    liar = with_extra(archs.SM80, wgmma, memory=archs.HOPPER_MEM)  # the memory claims keep the table consistent
    results = run_level(liar, "declare", "declare/probe/wgmma.*")
    assert results, "the wgmma probes were not generated"
    for r in results.values():
        assert r.status is Status.FAIL, r
        assert "does not compile for sm_80" in r.reason
        assert "wgmma" in r.details["error"] and "sm_80" in r.details["error"]  # ptxas names the instruction


def test_int8_tcgen05_claimed_for_sm103a_fails_declare_naming_kind_i8() -> None:
    i8 = [i for i in archs.SM100A.mma if i.family == TCGEN05 and i.a is dt.s8 and i.b is dt.s8]
    assert i8, "sm_100a declares tcgen05 kind::i8"
    results = run_level(with_extra(archs.SM103A, i8), "declare", "declare/probe/tcgen05.*.s8.s8.s32")
    (r,) = results.values()
    assert r.status is Status.FAIL
    assert ".kind::i8" in r.details["error"] and "sm_103a" in r.details["error"]


def test_the_honest_tables_probes_around_a_liar_still_pass() -> None:
    """One bad row costs one case: the batch is split so every other probe of the target still passes."""
    wgmma = [i for i in archs.SM90A.mma if i.family == WGMMA and i.a is dt.f16 and i.acc is dt.f32]
    liar = with_extra(archs.SM80, wgmma, memory=archs.HOPPER_MEM)
    results = run_level(liar, "declare", "declare/probe/*")
    bad = {k for k, r in results.items() if r.status is Status.FAIL}
    assert bad == {f"declare/probe/wgmma.m64n256k16.f16.f16.f32"}
    assert sum(r.status is Status.PASS for r in results.values()) == len(archs.SM80.mma)


def test_an_emulated_fp8_mma_sync_on_sm90a_fails_declare_through_the_sass() -> None:
    fp8 = next(i for i in archs.SM89.mma if i.family == MMA_SYNC and i.a is dt.e4m3 and i.b is dt.e4m3
               and i.acc is dt.f32 and i.k == 32)
    base = dataclasses.replace(archs.SM90A, mma=tuple(i for i in archs.SM90A.mma if i.a not in (dt.e4m3, dt.e5m2)
                                                      or i.family != MMA_SYNC))
    results = run_level(with_extra(base, [fp8]), "declare", "declare/probe/mma.sync.m16n8k32.e4m3.e4m3.f32")
    (r,) = results.values()
    assert r.status is Status.FAIL
    assert "emulates" in r.reason and "QMMA" in r.reason and "HMMA" in r.reason
    assert r.details["sass"]["status"] == "emulated"


def test_the_same_fp8_mma_sync_passes_on_sm89_where_the_silicon_has_it() -> None:
    results = run_level(archs.SM89, "declare", "declare/probe/mma.sync.m16n8k32.e4m3.e4m3.f32")
    (r,) = results.values()
    assert r.status is Status.PASS and "QMMA" in r.reason


def test_an_instruction_marked_emulated_is_accepted_when_the_sass_shows_emulation() -> None:
    s4 = next(i for i in archs.SM100A.mma if i.family == MMA_SYNC and i.a is dt.s4 and i.b is dt.s4 and i.k == 64)
    marked = _EmulatedInstruction(**{f.name: getattr(s4, f.name) for f in dataclasses.fields(s4)})
    base = dataclasses.replace(archs.SM100A, mma=tuple(i for i in archs.SM100A.mma if i is not s4))
    results = run_level(with_extra(base, [marked]), "declare", "declare/probe/mma.sync.m16n8k64.s4.s4.s32")
    (r,) = results.values()
    assert r.status is Status.PASS and "declared emulated" in r.reason


@dataclasses.dataclass(frozen=True)
class _EmulatedInstruction(MmaInstruction):
    """An MmaInstruction carrying ``emulated=True`` (the suite honours the flag wherever the model grows it)."""

    emulated: bool = True


def test_sass_expectations_cover_every_declared_nvidia_form() -> None:
    missing = {i.describe() for caps in archs.ALL for i in caps.mma if sass.expectation(i) is None}
    assert not missing, f"no SASS expectation for: {sorted(missing)}"


@pytest.mark.parametrize("opcode, family, a, b, native", [
    ("HMMA.16816.F32.BF16", MMA_SYNC, dt.bf16, dt.bf16, True),
    ("HMMA.16816.F32", MMA_SYNC, dt.bf16, dt.bf16, False),  # an f16 HMMA does not run a bf16 claim
    ("IMMA.16832.S8.S8", MMA_SYNC, dt.s4, dt.s4, False),
    ("IMMA.16864.S4.S4", MMA_SYNC, dt.s4, dt.s4, True),
    ("IGMMA.64x8x32.U8.S8", WGMMA, dt.u8, dt.s8, True),
    ("UTCIMMA", TCGEN05, dt.s8, dt.s8, True),
    ("UTCQMMA", TCGEN05, dt.s8, dt.s8, False),
])
def test_judge_reads_opcode_class_and_operand_types(opcode: str, family, a, b, native: bool) -> None:  # noqa: ANN001
    instr = MmaInstruction(family, (16, 8, 32), a, b, dt.s32 if a.is_int else dt.f32)
    text = f"        /*0100*/                   {opcode} R4, R4, R14, RZ ;\n"
    finding = sass.judge(instr, text)
    assert finding is not None and finding.ok is native, finding
