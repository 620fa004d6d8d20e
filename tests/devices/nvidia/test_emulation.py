"""Without a GPU: an older target's plan, moved onto an sm_90a GPU and compiled inside code_paths_of, holds that
target's code paths (its machine code says so), and what cannot be emulated is refused with a reason."""

from __future__ import annotations

import pytest

import humming.devices
from humming import knobs
from humming.capabilities.model import Target
from humming.core import dtypes, presets
from humming.core.build import compile_source, compile_spec
from humming.core.problem import GemmProblem
from humming.devices.manager import get_manager
from humming.devices.nvidia import emulation
from humming.errors import CompileError, UnsupportedError

sass = pytest.importorskip("conformance.sass")

H200 = humming.devices.target("sm_90a")


def _moved(arch: str, preset: str, act: dtypes.DType, m: int):
    caps = humming.devices.target(arch)
    problem = GemmProblem(m, 4096, 4096, presets.get(preset).weight, act, act)
    return caps.target, emulation.moved_to(get_manager().tuner(caps.target).plan(problem, caps, 132), H200)


def _opcodes(kernel) -> dict[str, int]:
    return dict(sass.opcodes(sass.disassemble(kernel.binary)))


@pytest.mark.parametrize("m", [16, 128])
def test_turing_paths_issue_k8_mmas_and_synchronous_copies(m: int) -> None:
    target, plan = _moved("sm_75", "gptq_int4", dtypes.f16, m)
    assert plan.spec.target == H200.target and "sm_75's code paths (HM_ARCH=750)" in plan.explain()
    with emulation.code_paths_of(target):
        turing = _opcodes(compile_spec(plan.spec))
        waits = compile_spec(plan.spec).exports["waits_for_prior_grids"]
    own = _opcodes(compile_spec(plan.spec))  # the same spec with the GPU's own paths
    assert turing.get("HMMA.1688.F32") and not turing.get("HMMA.16816.F32"), turing
    assert not any(op.startswith("LDGSTS") for op in turing), turing  # no cp.async before sm_80
    assert own.get("HMMA.16816.F32") and any(op.startswith("LDGSTS") for op in own), own
    assert waits == 0  # no programmatic dependent launch before sm_90: launched as an ordinary kernel


def test_e4m3_scales_convert_in_software_before_sm89() -> None:
    ampere, plan = _moved("sm_80", "nvfp4_w4a16", dtypes.bf16, 1)
    with emulation.code_paths_of(ampere):
        software = _opcodes(compile_spec(plan.spec))
    hopper = _opcodes(compile_spec(plan.spec))
    assert not any("E4M3" in op for op in software), software
    assert hopper.get("F2FP.F16.E4M3.UNPACK_B"), hopper


def test_code_paths_of_replaces_an_earlier_hm_arch_and_keeps_other_defines() -> None:
    with knobs.scope(HUMMING_KERNEL_DEFINES="HM_ABLATE=0,HM_ARCH=800"):
        with emulation.code_paths_of(humming.devices.target("sm_75").target):
            assert knobs.kernel_defines.get() == ("HM_ABLATE=0", "HM_ARCH=750")
        assert knobs.kernel_defines.get() == ("HM_ABLATE=0", "HM_ARCH=800")


@pytest.mark.parametrize("arch", ["sm_100a", "sm_120a", "sm_103a"])
def test_newer_or_arch_specific_targets_are_refused(arch: str) -> None:
    with pytest.raises(UnsupportedError, match=f"{arch}'s code paths cannot run on a sm_90a GPU") as info:
        emulation.check_emulates(humming.devices.target(arch).target, H200.target)
    assert "sm_75, sm_80" in str(info.value)


def test_other_vendors_targets_are_refused() -> None:
    with pytest.raises(UnsupportedError, match="only NVIDIA targets"):
        emulation.check_emulates(Target("thead", "ppu-810e", "zhenwu"), H200.target)


def test_a_newer_hm_arch_than_the_compile_target_stops_the_compile() -> None:
    source = "#define HM_ARCH 1000\n#include <humming/arch/types.cuh>\n__global__ void k() {}\n"
    with pytest.raises(CompileError) as info:
        compile_source(source, target=H200.target)
    assert "HM_ARCH names a newer architecture than the compile target" in info.value.log
