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


def _ptx(spec, hm_arch: int | None) -> str:
    """The PTX of ``spec``'s unit (NVRTC to PTX only), with HM_ARCH set first when given."""
    from cuda.bindings import nvrtc

    from humming.core.build import toolchain_for

    chain = toolchain_for(spec.target)
    options = [o.replace("=sm_", "=compute_") for o in chain.options(spec.target) if not o.startswith("-Xptxas")]
    options += [f"-I{d}" for d in (*chain.include_dirs(spec.target), *spec.include_dirs())]
    source = (f"#define HM_ARCH {hm_arch}\n" if hm_arch else "") + spec.render()
    _err, prog = nvrtc.nvrtcCreateProgram(source.encode(), spec.unit_name().encode(), 0, [], [])
    try:
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(options), [o.encode() for o in options])
        assert int(err) == 0, err
        _err, size = nvrtc.nvrtcGetPTXSize(prog)
        buf = b" " * size
        nvrtc.nvrtcGetPTX(prog, buf)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    return buf.decode()


def test_every_arch_gate_takes_the_older_paths() -> None:
    # The PTX of one spec (sm_75's f16 decode plan on sm_90a) under each HM_ARCH: every gated instruction is there
    # exactly from its architecture on (the machine code cannot show some: ptxas fuses sm_75's two cvt.rn.f16.f32).
    _target, plan = _moved("sm_75", "gptq_int4", dtypes.f16, 16)
    turing, ampere, own = (_ptx(plan.spec, a) for a in (750, 800, None))
    for gated in ("cp.async.cg", "cp.async.commit_group", "cp.async.wait_group", "createpolicy", "cvt.rn.f16x2.f32",
                  "mma.sync.aligned.m16n8k16"):
        assert gated not in turing and gated in ampere and gated in own, gated
    assert "mma.sync.aligned.m16n8k8" in turing and "mma.sync.aligned.m16n8k8" not in ampere
    assert "griddepcontrol" not in ampere and "griddepcontrol.wait" in own


def test_a_plan_the_older_target_cannot_run_is_not_emulated() -> None:
    turing = humming.devices.target("sm_75")
    tuner = get_manager().tuner(turing.target)
    fmt = presets.get("gptq_int4").weight
    f16 = tuner.plan(GemmProblem(16, 4096, 4096, fmt, dtypes.f16, dtypes.f16), turing, 132)
    bf16 = tuner.plan(GemmProblem(16, 4096, 4096, fmt, dtypes.bf16, dtypes.bf16), turing, 132, tile=f16.spec.tile)
    with pytest.raises(UnsupportedError, match="bf16"):
        emulation.moved_to(bf16, H200)
    # The tuner refuses this on its own (review 8, F5); a caller's tile still plans it, for emulation to refuse.
    bf16_out = tuner.plan(GemmProblem(16, 4096, 4096, fmt, dtypes.f16, dtypes.bf16), turing, 132, tile=f16.spec.tile)
    with pytest.raises(UnsupportedError, match="an f16 output"):
        emulation.moved_to(bf16_out, H200)


def test_the_kernel_refuses_bf16_under_turing_paths_and_exports_the_paths_it_took() -> None:
    ampere, plan = _moved("sm_80", "gptq_int4", dtypes.bf16, 16)
    with emulation.code_paths_of(humming.devices.target("sm_75").target), pytest.raises(CompileError) as info:
        compile_spec(plan.spec)
    assert "bf16 operands and outputs need sm_80" in info.value.log
    with emulation.code_paths_of(ampere):
        assert compile_spec(plan.spec).exports["code_paths"] == 800
    assert compile_spec(plan.spec).exports["code_paths"] == 900


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
    assert "sm_75, sm_80, sm_86, sm_87, sm_89" in str(info.value)
    assert emulation.emulated_on(humming.devices.target("sm_80").target) == ["sm_75"]


def test_other_vendors_targets_are_refused() -> None:
    with pytest.raises(UnsupportedError, match="only NVIDIA targets"):
        emulation.check_emulates(Target("thead", "ppu-810e", "zhenwu"), H200.target)


def test_a_newer_hm_arch_than_the_compile_target_stops_the_compile() -> None:
    source = "#define HM_ARCH 1000\n#include <humming/arch/types.cuh>\n__global__ void k() {}\n"
    with pytest.raises(CompileError) as info:
        compile_source(source, target=H200.target)
    assert "HM_ARCH names a newer architecture than the compile target" in info.value.log
