"""The dense GEMM twin on the CPU: every tile the tuning tables use compiles for a target that uses it, every
NVIDIA target compiles a kernel (formats spread over the targets so that each decode path is built somewhere),
the SASS holds tensor-core HMMA instructions and no local-memory spills on the main paths, the exported sizes
match the twin's, and bad parameters are refused with their rule."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from conformance.sass import opcodes_in_order, unwritten_uniform_registers
from humming import knobs
from humming.core import dtypes, presets
from humming.core.build import compile_many, compile_spec
from humming.core.formats import Granularity, ScaleSpec, WeightFormat, ZeroPointSpec
from humming.core.plan import KernelPlan
from humming.core.problem import GemmProblem
from humming.devices.nvidia import archs, tile_rules, tuning
from humming.errors import InternalError, InvalidInputError, UnsupportedError
from humming.kernels.dense_decode import DecodeParams
from humming.kernels.gemm_dense import GemmDenseSpec, Tile
from humming.kernels.gemm_dense_wgmma import (GemmDenseWgmmaSpec, GemmDenseWgmmaWideSpec, GemmDenseWgmmaWideTmaSpec,
                                              wgmma_tile, wide_tile)

W4 = WeightFormat(dtypes.s4, ScaleSpec(Granularity.GROUP, dtypes.f16, 128))
#: One decode path each: int4 magic numbers, zero rows, int8 via f32 (bf16), bit planes, small floats, MX, NVFP4.
FORMATS = (
    W4,
    presets.get("awq_int4").weight,
    WeightFormat(dtypes.s8, ScaleSpec(Granularity.CHANNEL, dtypes.f32)),
    presets.get("gptq_int3").weight,
    presets.get("fp8_channel_w8a16").weight,
    presets.get("mxfp4").weight,
    presets.get("nvfp4_w4a16").weight,
    WeightFormat(dtypes.e3m2, ScaleSpec(Granularity.GROUP, dtypes.bf16, 64)),
    WeightFormat(dtypes.u8, ScaleSpec(Granularity.GROUP, dtypes.bf16, 128), ZeroPointSpec.INT),
)
TARGETS = ("sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90a", "sm_100a", "sm_103a", "sm_110a", "sm_120a", "sm_121a")


def _nvdisasm() -> str | None:
    import nvidia

    for root in nvidia.__path__:
        for found in Path(root).glob("*/bin/nvdisasm"):
            return str(found)
    return shutil.which("nvdisasm")


def _sass(tool: str, binary: bytes, cubin: Path) -> str:
    """The disassembly of a cubin (written to ``cubin`` for nvdisasm)."""
    cubin.write_bytes(binary)
    return subprocess.run([tool, str(cubin)], capture_output=True, check=True).stdout.decode()


def _spec(arch: str, fmt: WeightFormat, m: int, act: dtypes.DType) -> GemmDenseSpec:
    caps = archs.capabilities(arch)
    return tuning.TUNER.plan(GemmProblem(m, 1000, 4096, fmt, act, act), caps, 100).spec


def _cases() -> list[GemmDenseSpec]:
    specs = []
    for i, arch in enumerate(TARGETS):
        act = dtypes.f16 if arch == "sm_75" or i % 2 else dtypes.bf16
        fmt = FORMATS[i % len(FORMATS)]
        if arch == "sm_75" and fmt.dtype is dtypes.s8:
            fmt = W4
        specs.append(_spec(arch, fmt, 1 if i % 3 else 4096, act))
    # Every row of the tile table of the H200's target.
    for rule in tile_rules.LARGE_SMEM:
        specs.append(_spec("sm_90a", W4, min(rule.max_m, 4096), dtypes.bf16))
    return list(dict.fromkeys(specs))


def test_the_cases_cover_every_decode_path_and_every_target() -> None:
    specs = _cases()
    assert {s.target.arch for s in specs} == set(TARGETS)
    assert {DecodeParams.of(f) for f in FORMATS} <= {s.decode for s in specs}


@pytest.fixture(scope="module")
def compiled() -> list[tuple[GemmDenseSpec, object]]:
    specs = _cases()
    return list(zip(specs, compile_many(specs)))


def test_every_target_and_every_table_row_compiles_with_the_twins_sizes(compiled) -> None:
    for spec, kernel in compiled:
        ex = kernel.exports
        assert ex["smem_bytes"] == spec.smem_bytes(), spec.describe()
        assert ex["threads"] == spec.cta_threads() and ex["block_n"] == spec.tile.block_n
        assert ex["block_m"] == spec.tile.block_m and ex["block_k"] == spec.bk
        # the fix-up form the cubin took decides whether plans launch cooperatively (check_compiled checks it too)
        assert ex["spreads_split_tiles"] == spec.spreads_split_tiles(), spec.describe()
        caps = archs.capabilities(spec.target.arch)
        # the opt-in limit caps dynamic and static shared memory together (the launcher and the driver check both)
        static = kernel.resources.static_smem
        assert static is not None and spec.smem_bytes() + static <= caps.limits.shared_memory_per_block_optin, (
            spec.describe(), spec.smem_bytes(), static)
    assert {spec.spreads_split_tiles() for spec, _ in compiled} == {False, True}


@pytest.mark.parametrize("preset", ["gptq_int4", "mxfp4"])
def test_the_a100s_m64_plan_leaves_room_for_the_static_shared_memory(preset: str) -> None:
    # Planned to the last byte of the opt-in limit by its dynamic memory alone, this tile once missed the 128 static
    # bytes of the fix-up's flag (review 8): no launch on an A100 or an Orin at M = 49..64 for 4-bit formats.
    caps = archs.capabilities("sm_80")
    plan = tuning.TUNER.plan(GemmProblem(64, 4096, 4096, presets.get(preset).weight, dtypes.bf16, dtypes.bf16),
                             caps, 108)
    kernel = compile_spec(plan.spec)
    static = kernel.resources.static_smem
    assert static is not None and plan.spec.smem_bytes() + static <= caps.limits.shared_memory_per_block_optin
    assert 0 < static <= plan.spec.STATIC_SMEM_BOUND  # the twin's bound holds the cubin's


def _wgmma_loop(sass: str) -> list[str]:
    """The SASS lines from the first HGMMA to the last: the wgmma kernel's main loop."""
    lines = [ln for ln in sass.splitlines() if re.match(r"\s+/\*[0-9a-f]+\*/", ln)]
    at = [i for i, ln in enumerate(lines) if "HGMMA." in ln]
    return lines[at[0]:at[-1] + 1] if at else []


def test_the_sass_holds_hmma_and_the_main_paths_do_not_spill(compiled, tmp_path: Path) -> None:
    tool = _nvdisasm()
    if tool is None:
        pytest.skip("nvdisasm is not installed (pip install nvidia-cuda-nvdisasm)")
    for i, (spec, kernel) in enumerate(compiled):
        sass = _sass(tool, kernel.binary, tmp_path / f"k{i}.cubin")
        if isinstance(spec, GemmDenseWgmmaSpec):
            # wgmma with the weights as register A: HGMMA in the loop, none waited for right after issue (ptxas
            # serialises them when a divergent path touches their registers: one "DEPBAR.LE gsb0, 0x0" each),
            # and no local memory in the loop (the setup may spill a few words at 255 registers).
            loop = _wgmma_loop(sass)
            assert loop, f"{spec.describe()}: no HGMMA in the SASS"
            assert not any("gsb0, 0x0" in ln for ln in loop), f"{spec.describe()}: wgmma serialised"
            assert not any(op in ln for ln in loop for op in ("LDL", "STL")), f"{spec.describe()}: spills in the loop"
            continue
        hmma = len(re.findall(r"\bHMMA\.", sass))
        assert hmma > 0, f"{spec.describe()}: no HMMA in the SASS"
        if spec.wbits in (4, 8):
            res = kernel.resources
            assert res.spill_stores == 0 and res.spill_loads == 0, f"{spec.describe()} spills: {res}"
            assert "LDL" not in sass and "STL" not in sass


def test_every_uniform_register_the_kernels_read_is_written(compiled, tmp_path: Path) -> None:
    # NVRTC 13.0 left the cp.async's UR0 / UR1 unwritten for sm_90a and later (target.CP_ASYNC_MISCOMPILES): an
    # illegal instruction on the H200. Whatever NVRTC runs these tests must not.
    tool = _nvdisasm()
    if tool is None:
        pytest.skip("nvdisasm is not installed (pip install nvidia-cuda-nvdisasm)")
    for i, (spec, kernel) in enumerate(compiled):
        missing = unwritten_uniform_registers(_sass(tool, kernel.binary, tmp_path / f"u{i}.cubin"))
        assert not missing, f"{spec.describe()}: reads UR{sorted(missing)} that nothing writes"


#: SASS opcodes that read or write global memory (or ask the L2 about it), whatever their suffixes.
GLOBAL_MEMORY_OPS = {"LDG", "STG", "LDGSTS", "ATOM", "ATOMG", "RED", "REDG", "LD", "ST", "CCTL", "UTMALDG", "UTMASTG",
                     "UTMAPF", "UBLKCP", "UBLKPF"}


def test_kernels_wait_for_the_grid_before_them_before_touching_global_memory(compiled, tmp_path: Path) -> None:
    # A programmatic launch (ops.launch, HUMMING_PDL) starts a kernel while the one before it in the stream still
    # runs: its first global access must come after griddepcontrol.wait (ACQBULK), and it lets the next grid launch
    # (griddepcontrol.launch_dependents, PREEXIT). Targets without the instructions export 0 and are never launched
    # that way.
    tool = _nvdisasm()
    if tool is None:
        pytest.skip("nvdisasm is not installed (pip install nvidia-cuda-nvdisasm)")
    waiting = set()
    for i, (spec, kernel) in enumerate(compiled):
        has = archs.capabilities(spec.target.arch).memory.programmatic_launch
        assert kernel.exports["waits_for_prior_grids"] == int(bool(has)), spec.describe()
        ops = [op.split(".")[0] for op in opcodes_in_order(_sass(tool, kernel.binary, tmp_path / f"g{i}.cubin"))]
        first = next(j for j, op in enumerate(ops) if op in GLOBAL_MEMORY_OPS)
        if not has:
            assert "ACQBULK" not in ops and "PREEXIT" not in ops, spec.describe()
            continue
        assert "ACQBULK" in ops[:first], f"{spec.describe()}: {ops[first]} before the wait"
        assert "PREEXIT" in ops, spec.describe()
        waiting.add(type(spec))
    assert waiting >= {GemmDenseSpec, GemmDenseWgmmaSpec}


def test_the_toolchain_refuses_such_an_nvrtc_for_a_direct_compile_too(monkeypatch) -> None:
    from humming.core.build import compile_source
    from humming.devices.nvidia import target as nvidia_target

    monkeypatch.setattr(nvidia_target, "nvrtc_version", lambda: (13, 0))
    source = 'extern "C" __global__ void k(int* p) { p[threadIdx.x] = 1; }'
    for arch in ("sm_90a", "sm_120a"):
        with pytest.raises(UnsupportedError, match=r"NVRTC 13\.0 miscompiles cp\.async[\s\S]*pip install -U"):
            compile_source(source, target=archs.capabilities(arch).target, name="refused.cu")
    assert nvidia_target.arch_options(archs.capabilities("sm_89").target) == ("--gpu-architecture=sm_89",)


def test_an_nvrtc_that_miscompiles_cp_async_for_the_target_is_refused_before_anything_compiles(monkeypatch) -> None:
    problem = GemmProblem(1, 28672, 8192, W4, dtypes.bf16, dtypes.bf16)
    monkeypatch.setattr(tuning, "nvrtc_version", lambda: (13, 0))
    for arch in ("sm_90a", "sm_100a", "sm_120a"):
        with pytest.raises(UnsupportedError, match=r"NVRTC 13\.0 miscompiles[\s\S]*pip install -U nvidia-cuda-nvrtc"):
            tuning.TUNER.plan(problem, archs.capabilities(arch), 132)
    assert tuning.TUNER.plan(problem, archs.capabilities("sm_89"), 128).schedule  # its builds are clean
    monkeypatch.setattr(tuning, "nvrtc_version", lambda: (13, 5))
    assert tuning.TUNER.plan(problem, archs.capabilities("sm_90a"), 132).schedule


def test_sm_75_is_refused_bf16_activations_with_the_missing_instruction() -> None:
    from humming.core.build import compile_spec

    spec = GemmDenseSpec.build(archs.capabilities("sm_75").target, dtypes.bf16, dtypes.bf16, DecodeParams.of(W4),
                               Tile(1, 1, 4, 1, 2, 64, 2, 8, 1))
    with pytest.raises(UnsupportedError, match=r"mma.sync .* bf16 x bf16"):
        compile_spec(spec, caps=archs.capabilities("sm_75"))
    # The tuner, which humming.gemm asks first, says the same: it raised StopIteration here until 2026-12-04.
    for m in (1, 16, 4096):
        with pytest.raises(UnsupportedError, match=r"no dense kernel runs it on sm_75[\s\S]*missing: mma.sync "
                                                   r".* bf16 x bf16[\s\S]*would work instead: f16 activations"):
            tuning.TUNER.plan(GemmProblem(m, 4096, 4096, W4, dtypes.bf16, dtypes.bf16), archs.capabilities("sm_75"), 40)
    f16 = GemmProblem(16, 4096, 4096, W4, dtypes.f16, dtypes.f16)
    assert tuning.TUNER.plan(f16, archs.capabilities("sm_75"), 40).grid


def test_the_tuner_refuses_activations_no_dense_kernel_takes_with_the_combination() -> None:
    fp8, h200 = presets.get("fp8_channel").weight, archs.capabilities("sm_90a")
    with pytest.raises(UnsupportedError, match=r"take f16 / bf16 activations \(WnA16\); no kernel for W8A8 yet"
                                               r"[\s\S]*would work instead: f16 or bf16 activations"):
        tuning.TUNER.plan(GemmProblem(33, 1024, 1024, fp8, dtypes.e4m3, dtypes.bf16), h200, 132)
    with pytest.raises(UnsupportedError, match=r"write f16 / bf16 outputs[\s\S]*missing: a dense kernel with e4m3"):
        tuning.TUNER.plan(GemmProblem(33, 1024, 1024, fp8, dtypes.bf16, dtypes.e4m3), h200, 132)


def test_bad_tiles_and_formats_are_refused_with_their_rule() -> None:
    t = archs.capabilities("sm_90a").target
    d = DecodeParams.of(W4)
    with pytest.raises(InvalidInputError, match="warp_k"):
        GemmDenseSpec.build(t, dtypes.f16, dtypes.f16, d, Tile(1, 1, 4, 1, 3, 64, 4))
    with pytest.raises(InvalidInputError, match="bk=96 is not allowed"):
        GemmDenseSpec.build(t, dtypes.f16, dtypes.f16, d, Tile(1, 1, 4, 1, 2, 96, 4))
    with pytest.raises(InvalidInputError, match="f32 is not allowed"):
        GemmDenseSpec.build(t, dtypes.f32, dtypes.f16, d, Tile(1, 1, 4, 1, 2, 64, 4))
    big = GemmDenseSpec.build(archs.capabilities("sm_89").target, dtypes.f16, dtypes.f16, d,
                              Tile(1, 1, 4, 1, 2, 256, 8))
    with pytest.raises(UnsupportedError, match="shared memory"):
        big.check_supported(archs.capabilities("sm_89"))


def test_the_tuner_picks_stream_k_except_when_the_tiles_nearly_fill_one_wave_or_make_many() -> None:
    caps = archs.capabilities("sm_90a")
    small = tuning.TUNER.plan(GemmProblem(1, 8192, 8192, W4, dtypes.bf16, dtypes.bf16), caps, 132)
    # 64 tiles of 32 k-steps on 264 resident CTAs: K split 4 ways, 8 k-steps a CTA
    assert small.schedule == "split-k" and small.grid == 256 and small.workspace_floats > 0
    assert small.counters == 0  # the decode form waits on its slots (finish.cuh), no tile counter
    # 32 tiles of 7 k-steps on 132 CTAs: no even split fits, so Stream-K shares the 224 k-steps
    odd = tuning.TUNER.plan(GemmProblem(16, 8192, 1792, W4, dtypes.bf16, dtypes.bf16), caps, 132,
                            tile=Tile(1, 1, 4, 1, 4, 256, 3, 8, 1))
    assert odd.schedule == "stream-k" and odd.grid == 132 and odd.workspace_floats > 0 and odd.counters == 0
    one_wave = tuning.TUNER.plan(GemmProblem(1, 28672, 4096, W4, dtypes.bf16, dtypes.bf16), caps, 132)
    assert one_wave.schedule == "data-parallel" and one_wave.workspace_floats == 0 and one_wave.grid == 224
    # 896 tiles (6.8 waves): Stream-K, one CTA a resident slot (the cp.async wide tile, given); the rule's TMA
    # tile runs one CTA a tile, its last wave being nearly full (test below)
    problem = GemmProblem(1024, 28672, 8192, W4, dtypes.bf16, dtypes.bf16)
    large = tuning.TUNER.plan(problem, caps, 132, tile=wide_tile(2, 1, 256, 6, producer=1),
                              kernel=GemmDenseWgmmaWideSpec)
    assert large.schedule == "stream-k" and large.grid == 132
    assert tuning.TUNER.plan(problem, caps, 132).schedule == "data-parallel"
    assert "M=1024" in tuning.TUNER.plan(problem, caps, 132).explain() and "why:" in large.explain()
    # 3584 tiles (27 waves): one CTA a tile, no workspace (the table's rule for any tile; the TMA rule's own
    # rule, the last wave 97% full, says so instead)
    problem = GemmProblem(4096, 28672, 8192, W4, dtypes.bf16, dtypes.bf16)
    many = tuning.TUNER.plan(problem, caps, 132, tile=wide_tile(2, 1, 256, 6, producer=1),
                             kernel=GemmDenseWgmmaWideSpec)
    assert many.schedule == "data-parallel" and many.grid == 3584 and many.workspace_floats == 0
    assert "27.2 waves" in many.explain()
    rule = tuning.TUNER.plan(problem, caps, 132)
    assert rule.schedule == "data-parallel" and rule.explain().count("one CTA a tile") == 1
    assert "97% of 28 waves" in rule.explain()


def test_a_rule_s_measured_schedule_holds_up_to_one_wave_of_its_tiles() -> None:
    caps = archs.capabilities("sm_90a")
    # M = 64: 56 tiles of the 512 x 64 producer tile; the general rule would split K twice (112 CTAs)
    mid = tuning.TUNER.plan(GemmProblem(64, 28672, 8192, W4, dtypes.bf16, dtypes.bf16), caps, 132)
    assert mid.schedule == "stream-k" and mid.grid == 132 and "measured best" in mid.explain()
    # the same tile given by the caller keeps the general rule
    given = tuning.TUNER.plan(GemmProblem(64, 28672, 8192, W4, dtypes.bf16, dtypes.bf16), caps, 132,
                              tile=mid.spec.tile, kernel=type(mid.spec))
    assert given.schedule == "split-k" and given.grid == 112
    # past one wave of tiles the rule's preference no longer applies
    many = tuning.TUNER.plan(GemmProblem(128, 28672, 8192, W4, dtypes.bf16, dtypes.bf16), caps, 100)
    assert many.schedule != "stream-k" or "measured best" not in many.explain()


def test_narrow_code_decode_runs_stream_k_from_the_rule_s_weight_bytes_an_sm() -> None:
    caps = archs.capabilities("sm_90a")
    nvfp4, mxfp4, awq = (presets.get(n).weight for n in ("nvfp4_w4a16", "mxfp4", "awq_int4"))
    # 224 tiles on 264 slots, ~0.9 MiB of weights an SM: Stream-K for codes of at most 4 bits at M <= 16
    for fmt in (W4, awq, nvfp4, mxfp4):
        for m in (1, 8, 16):
            plan = tuning.TUNER.plan(GemmProblem(m, 28672, 8192, fmt, dtypes.bf16, dtypes.bf16), caps, 132)
            assert plan.schedule == "stream-k" and plan.grid == 264 and "KiB of weights an SM" in plan.explain()
        # half the bytes an SM: under the rule's threshold
        assert tuning.TUNER.plan(GemmProblem(16, 28672, 4096, fmt, dtypes.bf16, dtypes.bf16), caps, 132).schedule \
            == "data-parallel"
    # 8-bit codes: their own tile, one CTA a tile
    s8 = presets.get("fp8_channel_w8a16").weight
    assert tuning.TUNER.plan(GemmProblem(1, 28672, 8192, s8, dtypes.bf16, dtypes.bf16), caps, 132).schedule \
        == "data-parallel"


def test_plans_with_partial_tiles_are_cooperative_and_fit_one_wave() -> None:
    """A split decode tile's first CTA waits for the other sharers' partials (epilogue/finish.cuh): the launch must
    hold every CTA at once, so the driver is asked to refuse it otherwise, and the tuner never plans more."""
    caps = archs.capabilities("sm_90a")
    problem = GemmProblem(1, 8192, 8192, W4, dtypes.bf16, dtypes.bf16)
    split = tuning.TUNER.plan(problem, caps, 132)
    assert split.schedule == "split-k" and split.cooperative and "(cooperative)" in split.explain()
    assert split.sentinel  # its slots hold the "not written" word between launches (ops._workspace)
    sk = tuning.TUNER.plan(problem, caps, 132, schedule="stream-k")
    assert sk.cooperative and sk.grid == 264
    dp = tuning.TUNER.plan(GemmProblem(1, 28672, 4096, W4, dtypes.bf16, dtypes.bf16), caps, 132)
    assert dp.schedule == "data-parallel" and not dp.cooperative
    # 64 tiles x 8 splits = 512 CTAs on 264 slots: refused before any launch
    with pytest.raises(InvalidInputError, match="run at once"):
        tuning.TUNER.plan(problem, caps, 132, schedule="split-k", splits=8)
    # the wgmma form's split tiles (M = 64) are finished by all sharers whose CTA ends on them, after the tile's
    # count completes: cooperative too, over counters (no sentinel words), and never more CTAs than run at once
    m64_problem = GemmProblem(64, 28672, 8192, W4, dtypes.bf16, dtypes.bf16)
    m64 = tuning.TUNER.plan(m64_problem, caps, 132)
    assert m64.schedule == "stream-k" and m64.cooperative and not m64.spec.waits_for_sharers()
    assert m64.spec.spreads_split_tiles() and not m64.sentinel and m64.counters == 56
    assert "each a share of the columns" in m64.explain()
    with pytest.raises(InvalidInputError, match="run at once"):
        tuning.TUNER.plan(m64_problem, caps, 132, schedule="split-k", splits=4)  # 56 tiles x 4 > 132
    assert not tuning.TUNER.plan(m64_problem, caps, 132, schedule="data-parallel").cooperative
    # larger tiles of the other forms are finished by the last CTA to arrive: an ordinary launch, any number of CTAs
    wide = tuning.TUNER.plan(GemmProblem(64, 28672, 8192, W4, dtypes.bf16, dtypes.bf16), caps, 132,
                             tile=Tile(1, 4, 4, 1, 1, 64, 4, 8, 1), schedule="split-k", splits=8)
    assert wide.grid > 264 and not wide.cooperative


def _h200_plan(m: int, n: int, k: int, fmt: WeightFormat = W4, **kw: Any) -> KernelPlan:
    return tuning.TUNER.plan(GemmProblem(m, n, k, fmt, dtypes.bf16, dtypes.bf16), archs.capabilities("sm_90a"), 132,
                             **kw)


@pytest.mark.parametrize("n, k, schedule, grid", [
    # 32 tiles of 56 k-steps: 8 splits on the 264 resident CTAs would leave 7 k-steps a CTA; 4 on 132 leave 14
    (4096, 14336, "split-k", 128),
    # 48 tiles of 16 k-steps: Stream-K over 264 leaves 2.9 k-steps a CTA and 5.5 CTAs a tile; over 132, 5.8
    (6144, 4096, "stream-k", 132),
])
def test_a_short_split_runs_one_cta_an_sm(n: int, k: int, schedule: str, grid: int) -> None:
    for m in (1, 16):
        plan = _h200_plan(m, n, k)
        assert (plan.schedule, plan.grid, plan.cooperative) == (schedule, grid, True), plan.reasons
        assert "one CTA an SM" in plan.explain()
        # a schedule the caller names keeps every resident CTA
        if schedule == "stream-k":
            assert _h200_plan(m, n, k, schedule=schedule).grid == 264


@pytest.mark.parametrize("n, k, grid", [
    (8192, 28672, 256),  # 4 splits of 28 k-steps
    (28672, 8192, 264),  # Stream-K: 27 k-steps a CTA (224 tiles of 32)
    (11008, 4096, 264),  # Stream-K: 5.2 k-steps a CTA but only 3.1 CTAs a tile (86 tiles of 16)
])
def test_a_long_enough_split_keeps_every_resident_cta(n: int, k: int, grid: int) -> None:
    assert _h200_plan(1, n, k).grid == grid


def test_the_gpu_tests_split_k_shape_is_planned_as_split_k_on_an_h200() -> None:
    caps = archs.capabilities("sm_90a")
    for fmt in (W4, presets.get("awq_int4").weight, presets.get("mxfp4").weight):
        for m in (1, 16):
            plan = tuning.TUNER.plan(GemmProblem(m, 8192, 2048, fmt, dtypes.bf16, dtypes.bf16), caps, 132)
            assert plan.schedule == "split-k", (fmt.describe(), m, plan.reasons)


def test_split_k_divides_every_tile_evenly_or_is_not_chosen() -> None:
    assert tuning.split_count(64, 112, 264) == 4  # 256 CTAs of 28 k-steps
    assert tuning.split_count(32, 56, 264) == 8
    assert tuning.split_count(64, 7, 264) == 1  # 7 k-steps: only 7 splits, 448 > 264
    assert tuning.split_count(100, 64, 264) == 1  # 2 splits fill 76% < 80%


def test_swapped_operands_serve_m_up_to_8_per_n8_fragment() -> None:
    caps = archs.capabilities("sm_90a")

    def swap(m: int) -> int:
        return tuning.TUNER.plan(GemmProblem(m, 28672, 4096, W4, dtypes.bf16, dtypes.bf16), caps, 132).spec.swap_n8

    assert [swap(m) for m in (1, 5, 8, 9, 16, 17)] == [1, 1, 1, 2, 2, 0]
    swapped = tuning.TUNER.plan(GemmProblem(1, 28672, 4096, W4, dtypes.bf16, dtypes.bf16), caps, 132).spec.tile
    with pytest.raises(InvalidInputError, match="M <= 8"):
        tuning.TUNER.plan(GemmProblem(9, 28672, 4096, W4, dtypes.bf16, dtypes.bf16), caps, 132, tile=swapped)
    with pytest.raises(InvalidInputError, match="warp_m = frag_m = 1"):
        GemmDenseSpec.build(caps.target, dtypes.bf16, dtypes.bf16, DecodeParams.of(W4),
                            replace(swapped, frag_m=2))


def test_a_stage_deeper_than_the_packed_k_falls_back_to_128() -> None:
    caps = archs.capabilities("sm_90a")
    plan = tuning.TUNER.plan(GemmProblem(1, 1000, 1152, W4, dtypes.bf16, dtypes.bf16), caps, 132)
    assert plan.spec.bk == 128 and (1152 // 128) * 128 == 1152 and (plan.spec.bk // 16) % plan.spec.warp_k == 0


def test_past_decode_the_tuner_takes_wgmma_where_the_target_has_it_and_mma_sync_elsewhere() -> None:
    def kernel(arch: str, m: int) -> type:
        caps = archs.capabilities(arch)
        return type(tuning.TUNER.plan(GemmProblem(m, 28672, 8192, W4, dtypes.bf16, dtypes.bf16), caps, 132).spec)

    assert [kernel("sm_90a", m) for m in (1, 16, 17, 64, 128, 129, 1024)] == \
        [GemmDenseSpec] * 2 + [GemmDenseWgmmaSpec] * 3 + [GemmDenseWgmmaWideTmaSpec] * 2
    # A wgmma target whose plugin does not say whether it has tensor copies takes the cp.async form.
    hopper = archs.capabilities("sm_90a")
    no_tma = hopper.__class__(**{**hopper.__dict__, "memory": replace(hopper.memory, bulk_tensor_copy=None)})
    plan = tuning.TUNER.plan(GemmProblem(1024, 28672, 8192, W4, dtypes.bf16, dtypes.bf16), no_tma, 132)
    assert type(plan.spec) is GemmDenseWgmmaWideSpec
    # Blackwell and Ampere have no wgmma (the capability table says so): their rows stay on mma.sync.
    for arch in ("sm_80", "sm_100a", "sm_120a"):
        assert {kernel(arch, m) for m in (17, 64, 1024)} == {GemmDenseSpec}, arch
    spec = GemmDenseWgmmaSpec.build(archs.capabilities("sm_90a").target, dtypes.bf16, dtypes.bf16,
                                    DecodeParams.of(W4), wgmma_tile(2, 1, 64, 6))
    with pytest.raises(UnsupportedError, match="wgmma m64nNk16"):
        spec.check_supported(archs.capabilities("sm_90a").__class__(**{**archs.capabilities("sm_90a").__dict__,
                                                                      "mma": archs.capabilities("sm_80").mma}))


def test_mma_sync_past_m_64_stages_128_k_for_codes_of_up_to_4_bits_and_64_for_wider() -> None:
    # LARGE_SMEM's compute-bound rows (H200, 2026-12-05: three 128-deep stages 2.6-6% faster for s4 / AWQ / MXFP4 /
    # NVFP4); 8-bit codes keep four 64-deep stages, which fit sm_80 unshrunk, as the 4-bit tile does.
    def tile(arch: str, fmt: WeightFormat) -> tuple[int, int]:
        spec = tuning.TUNER.plan(GemmProblem(1024, 28672, 8192, fmt, dtypes.bf16, dtypes.bf16),
                                 archs.capabilities(arch), 108).spec
        return spec.bk, spec.stages

    s8 = WeightFormat(dtypes.s8, ScaleSpec(Granularity.CHANNEL, dtypes.f32))
    for arch in ("sm_80", "sm_100a"):
        assert tile(arch, W4) == (128, 3) and tile(arch, presets.get("mxfp4").weight) == (128, 3), arch
        assert tile(arch, s8) == (64, 4), arch


def test_a_group_that_neither_divides_a_stage_nor_is_a_multiple_of_it_gets_shallower_stages(tmp_path: Path) -> None:
    # Groups of 192 k (legal: they divide K) against 256- and 128-deep stages: the tuner halves bk until the group is a
    # multiple of it, instead of refusing the format; a group of 48 fits no stage depth and is refused by its rule.
    g192 = WeightFormat(dtypes.s4, ScaleSpec(Granularity.GROUP, dtypes.bf16, 192))
    zp192 = WeightFormat(dtypes.u4, ScaleSpec(Granularity.GROUP, dtypes.f16, 192), ZeroPointSpec.INT)  # zeros too
    plans = {}
    for fmt in (g192, zp192):
        for arch in ("sm_75", "sm_80", "sm_89", "sm_90a", "sm_120a"):
            for m in (1, 16, 64, 128, 1024):
                act = dtypes.f16 if arch == "sm_75" else dtypes.bf16
                plan = tuning.TUNER.plan(GemmProblem(m, 4096, 6144, fmt, act, act), archs.capabilities(arch), 132)
                assert 192 % plan.spec.bk == 0, (arch, m, plan.spec.describe())
                plans[fmt, arch, m] = plan
    with knobs.scope(HUMMING_CACHE_DIR=str(tmp_path)):
        for key in ((g192, "sm_80", 1), (g192, "sm_80", 1024), (zp192, "sm_90a", 16)):
            spec = plans[key].spec
            assert compile_spec(spec).exports["smem_bytes"] == spec.smem_bytes(), spec.describe()
    g48 = WeightFormat(dtypes.s4, ScaleSpec(Granularity.GROUP, dtypes.bf16, 48))
    with pytest.raises(UnsupportedError, match="groups of 48 k fit no stage depth(.|\n)*a multiple of 64 k"):
        tuning.TUNER.plan(GemmProblem(1, 4096, 6144, g48, dtypes.bf16, dtypes.bf16), archs.capabilities("sm_80"), 132)


def test_the_wgmma_twin_refuses_tiles_its_template_cannot_run() -> None:
    t = archs.capabilities("sm_90a").target
    d = DecodeParams.of(W4)
    good = wgmma_tile(1, 1, 64, 6, min_blocks=2)
    GemmDenseWgmmaSpec.build(t, dtypes.bf16, dtypes.bf16, d, good)
    for bad, rule in ((replace(good, bk=128), "bk=128"), (replace(good, frag_m=3), "frag_m=3"),
                      (replace(good, warp_n=2), "warp_n=2"), (replace(good, warp_k=2), "warp_k=2")):
        with pytest.raises(InvalidInputError, match=rule):
            GemmDenseWgmmaSpec.build(t, dtypes.bf16, dtypes.bf16, d, bad)

    # k-warpgroups need the producer's ring (they take its stages in turn) and the spread finish (frag_m >= 2)
    split = wgmma_tile(1, 1, 64, 8, producer=1)
    ok = GemmDenseWgmmaSpec.build(t, dtypes.bf16, dtypes.bf16, d, replace(split, warp_n=4, warp_k=2))
    kernel = compile_spec(ok)  # check_compiled: the cubin's shared memory, threads and finish are the twin's
    assert kernel.exports["block_n"] == 256 and kernel.exports["smem_bytes"] == ok.smem_bytes()
    assert ok.smem_bytes() > ok.stages * ok.stage_bytes() + ok.reduction_bytes()  # the groups' reduction buffer
    for bad in (replace(split, warp_n=4, warp_k=4), replace(split, warp_n=4, warp_k=2, frag_m=1),
                replace(split, warp_n=4, warp_k=2, producer=0)):
        with pytest.raises(InvalidInputError, match="warp_k="):
            GemmDenseWgmmaSpec.build(t, dtypes.bf16, dtypes.bf16, d, bad)

    wide = wide_tile(2, 1, 256, 5)
    GemmDenseWgmmaWideSpec.build(t, dtypes.bf16, dtypes.bf16, d, wide)
    for bad, rule in ((replace(wide, warp_m=2), "warp_m=2"), (replace(wide, frag_m=3), "frag_m=3"),
                      (replace(wide, warp_n=8), "warp_n=8"), (replace(wide, bk=128), "bk=128"),
                      (replace(wide, frag_n=2), "frag_n=2"), (replace(wide, frag_n=3, frag_m=1), "frag_n=3")):
        with pytest.raises(InvalidInputError, match=rule):
            GemmDenseWgmmaWideSpec.build(t, dtypes.bf16, dtypes.bf16, d, bad)


def test_the_wide_form_takes_two_column_blocks_a_warpgroup_without_spilling_in_its_loop(tmp_path: Path) -> None:
    # two n64 blocks a warpgroup (256 x 128 with two warpgroups and a producer): two wgmma.m64n128k16 a k16 step
    # against the same activations, 2 x 64 accumulator registers
    hopper = archs.capabilities("sm_90a")
    specs = [GemmDenseWgmmaWideSpec.build(hopper.target, act, act, DecodeParams.of(fmt),
                                          wide_tile(2, 1, 128, 6, producer=1, blocks=2))
             for fmt, act in ((W4, dtypes.bf16), (presets.get("awq_int4").weight, dtypes.f16),
                              (presets.get("mxfp4").weight, dtypes.bf16))]
    assert {(s.tile.block_n, s.tile.block_m) for s in specs} == {(256, 128)}
    tool = _nvdisasm()
    for i, (spec, kernel) in enumerate(zip(specs, compile_many(specs))):
        spec.check_compiled(kernel)
        assert kernel.exports["block_n"] == 256 and kernel.exports["smem_bytes"] == spec.smem_bytes()
        if tool is None:
            continue
        loop = _wgmma_loop(_sass(tool, kernel.binary, tmp_path / f"{i}.cubin"))
        assert sum("HGMMA.64x128x16" in ln for ln in loop) == 8, spec.describe()  # 4 k16 steps x 2 blocks
        assert not any(op in ln for ln in loop for op in ("LDL", "STL", "gsb0, 0x0")), spec.describe()
    if tool is None:
        pytest.skip("nvdisasm is not installed (pip install nvidia-cuda-nvdisasm)")


def test_an_nvrtc_older_than_wgmma_needs_falls_back_to_mma_sync_and_says_why(monkeypatch) -> None:
    caps = archs.capabilities("sm_90a")
    problem = GemmProblem(1024, 28672, 8192, W4, dtypes.bf16, dtypes.bf16)
    monkeypatch.setattr(tuning, "nvrtc_version", lambda: (12, 9))
    old = tuning.TUNER.plan(problem, caps, 132)
    assert type(old.spec) is GemmDenseSpec
    assert any("NVRTC 12.9 miscompiles" in r and "pip install -U nvidia-cuda-nvrtc" in r for r in old.reasons)
    monkeypatch.setattr(tuning, "nvrtc_version", lambda: (13, 5))
    assert type(tuning.TUNER.plan(problem, caps, 132).spec) is GemmDenseWgmmaWideTmaSpec
    # A table whose fitting rules all need a newer NVRTC (none of today's: each ends on mma.sync) says which.
    monkeypatch.setattr(tuning, "table_for", lambda caps: tuple(r for r in tile_rules.LARGE_SMEM if r.min_nvrtc))
    monkeypatch.setattr(tuning, "nvrtc_version", lambda: (12, 9))
    with pytest.raises(UnsupportedError, match=r"needs NVRTC >= 13\.\d[\s\S]*pip install -U nvidia-cuda-nvrtc"):
        tuning.TUNER.plan(problem, caps, 132)


def test_bulk_weight_copies_need_the_bulk_copy_engine_and_replace_the_per_thread_weight_copies(tmp_path: Path) -> None:
    d = DecodeParams.of(W4)
    tile = Tile(1, 1, 2, 1, 2, 256, 4, 8, 2, swap_n8=1, bulk_w=1)
    ampere = archs.capabilities("sm_80")
    with pytest.raises(UnsupportedError, match=r"memory\.bulk_copy"):
        GemmDenseSpec.build(ampere.target, dtypes.bf16, dtypes.bf16, d, tile).check_supported(ampere)
    hopper = archs.capabilities("sm_90a")
    plain = GemmDenseSpec.build(hopper.target, dtypes.bf16, dtypes.bf16, d, replace(tile, bulk_w=0))
    bulk = GemmDenseSpec.build(hopper.target, dtypes.bf16, dtypes.bf16, d, tile)
    bulk.check_supported(hopper)
    assert bulk.smem_bytes() == plain.smem_bytes() + 8 * tile.stages  # one mbarrier per stage
    tool = _nvdisasm()
    if tool is None:
        pytest.skip("nvdisasm is not installed (pip install nvidia-cuda-nvdisasm)")
    counts = {}
    for name, spec in (("plain", plain), ("bulk", bulk)):
        (kernel,) = compile_many([spec])
        assert kernel.exports["smem_bytes"] == spec.smem_bytes()
        sass = _sass(tool, kernel.binary, tmp_path / f"{name}.cubin")
        counts[name] = (len(re.findall(r"\bUBLKCP\b", sass)), len(re.findall(r"\bLDGSTS\b", sass)))
    # the bulk kernel issues bulk copies, and the weight chunks' LDGSTS (8 a thread and stage here) are gone
    assert counts["plain"][0] == 0 and counts["bulk"][0] > 0, counts
    assert counts["bulk"][1] < counts["plain"][1], counts


def test_a_producer_warp_needs_cp_async_and_takes_the_copies_and_the_stage_barrier_out_of_the_compute_loop(
        tmp_path: Path) -> None:
    d = DecodeParams.of(W4)
    tile = Tile(1, 1, 2, 1, 2, 256, 4, 8, 2, swap_n8=1, producer=1)
    turing = archs.capabilities("sm_75")
    with pytest.raises(UnsupportedError, match=r"memory\.cp_async"):
        GemmDenseSpec.build(turing.target, dtypes.f16, dtypes.f16, d, tile).check_supported(turing)
    hopper = archs.capabilities("sm_90a")
    with pytest.raises(InvalidInputError, match="producer=1 with bulk_w=1"):
        GemmDenseSpec.build(hopper.target, dtypes.bf16, dtypes.bf16, d, replace(tile, bulk_w=1))
    plain = GemmDenseSpec.build(hopper.target, dtypes.bf16, dtypes.bf16, d, replace(tile, producer=0))
    specs = {"plain": plain}
    for arch in ("sm_80", "sm_90a"):
        caps = archs.capabilities(arch)
        spec = GemmDenseSpec.build(caps.target, dtypes.bf16, dtypes.bf16, d, tile)
        spec.check_supported(caps)
        assert spec.smem_bytes() == plain.smem_bytes() + 16 * tile.stages  # full and empty mbarrier per stage
        specs[arch] = spec
    tool = _nvdisasm()
    for name, spec in specs.items():
        (kernel,) = compile_many([spec])
        assert kernel.exports["smem_bytes"] == spec.smem_bytes()
        # four compute warps and (the producer form) one producer warp
        assert kernel.exports["threads"] == spec.cta_threads() == 32 * 4 + 32 * spec.producer
        # the producer warp's copies are described by a few registers (per-chunk offsets for 32 threads spilled)
        assert kernel.resources.spill_stores == 0, (name, kernel.resources)
        if tool is None or name == "sm_80":
            continue
        sass = _sass(tool, kernel.binary, tmp_path / f"{name}.cubin")
        lines = [ln for ln in sass.splitlines() if ln.strip().endswith(";")]
        mmas = [i for i, ln in enumerate(lines) if "HMMA" in ln]
        # the k-loop: from the stage wait before its first MMA (CTA barrier or mbarrier) to its last MMA
        first = max(i for i in range(mmas[0]) if re.search(r"BAR\.SYNC|SYNCS\.PHASECHK", lines[i]))
        loop = "\n".join(lines[first:mmas[-1] + 1])
        specs[name] = (len(re.findall(r"\bLDGSTS\b", loop)), len(re.findall(r"BAR\.SYNC", loop)),
                       len(re.findall(r"SYNCS\.(PHASECHK|ARRIVE)", sass)))
    if tool is None:
        pytest.skip("nvdisasm is not installed (pip install nvidia-cuda-nvdisasm)")
    # the plain kernel copies and meets at a CTA barrier between its MMAs; the producer form's compute loop does
    # neither, and waits / arrives on mbarriers instead
    assert specs["plain"][0] > 0 and specs["plain"][2] == 0, specs["plain"]
    assert specs["sm_90a"][:2] == (0, 0) and specs["sm_90a"][2] > 0, specs["sm_90a"]


def test_the_wgmma_producer_is_a_warpgroup_that_gives_its_registers_to_the_mma_warpgroups(tmp_path: Path) -> None:
    hopper = archs.capabilities("sm_90a")
    d = DecodeParams.of(W4)
    # two MMA warpgroups and the producer's: 384 threads launch at 168 registers a thread; the wide form's producer
    # drops to 104 and the MMA warps take the rest (200), as much as the pool holds, so setmaxnreg.inc cannot wait
    # forever
    spec = GemmDenseWgmmaWideSpec.build(hopper.target, dtypes.bf16, dtypes.bf16, d,
                                        replace(wide_tile(2, 1, 256, 5), producer=1))
    spec.check_supported(hopper)
    assert spec.cta_threads() == 384
    one_group = GemmDenseWgmmaWideSpec.build(hopper.target, dtypes.bf16, dtypes.bf16, d,
                                             replace(wide_tile(1, 1, 256, 5), producer=1))
    # four MMA warpgroups and the producer's: 640 threads launch at 96, below the wide form's 104 for the producer,
    # which keeps 56 then; the MMA warps take 104
    four_groups = GemmDenseWgmmaWideSpec.build(hopper.target, dtypes.bf16, dtypes.bf16, d,
                                               wide_tile(4, 1, 64, 6, producer=1))
    k, k1, k4 = compile_many([spec, one_group, four_groups])
    assert k.exports["threads"] == 384 and k.resources.registers == k.exports["split_registers"] == 168
    assert k.resources.spill_stores == 0, k.resources
    spec.check_compiled(k)
    assert k4.exports["threads"] == 640 and k4.resources.registers == k4.exports["split_registers"] == 96
    four_groups.check_compiled(k4)
    # 256 threads launch at 255 registers: nothing to move, no setmaxnreg
    assert k1.exports["threads"] == 256 and k1.exports["split_registers"] == 0
    with pytest.raises(InternalError, match="assumes 168 registers"):
        spec.check_compiled(SimpleNamespace(exports=k.exports, resources=replace(k.resources, registers=128)))
    # the launch takes its shared memory and threads from the twin: a cubin that disagrees is refused at load
    for name, wrong in (("smem_bytes", k.exports["smem_bytes"] + 1024), ("threads", 256)):
        with pytest.raises(InternalError, match=f"cubin's {name} is {wrong}, the twin plans"):
            spec.check_compiled(SimpleNamespace(exports={**k.exports, name: wrong}, resources=k.resources))
    tool = _nvdisasm()
    if tool is None:
        pytest.skip("nvdisasm is not installed (pip install nvidia-cuda-nvdisasm)")
    counts = []
    for i, kernel in enumerate((k, k1, k4)):
        sass = _sass(tool, kernel.binary, tmp_path / f"{i}.cubin")
        counts.append((re.findall(r"USETMAXREG\.(\w+)\.CTAPOOL\w* (?:UP\d, )?(0x[0-9a-f]+)", sass)))
    assert sorted(counts[0]) == [("DEALLOC", "0x68"), ("TRY_ALLOC", "0xc8")], counts[0]
    assert counts[1] == [], counts[1]
    assert sorted(counts[2]) == [("DEALLOC", "0x38"), ("TRY_ALLOC", "0x68")], counts[2]


#: A producer's 16-byte copy of one activation row chunk (predicated on the row being inside M, zero-filled past
#: K: the trailing !P operand); the group is the register pair holding its global address.
ACTIVATION_ROW_COPY = r"LDGSTS\.E\.BYPASS\.128 \[R\d+\], desc\[UR\d+\]\[(R\d+)\.64\], !P\d"


def test_the_wide_producer_copies_rows_from_rotating_pointers(tmp_path: Path) -> None:
    # ncu on the H200 put the wide producer's stalls on the one running pointer it bumped after every row's
    # cp.async (the bump waits until the copy has read the register): consecutive activation rows must take their
    # addresses from different registers, as the loader's four pointers give them (with one pointer and a 56-register
    # producer every row's copy read the same pair; checked when this test was written).
    tool = _nvdisasm()
    if tool is None:
        pytest.skip("nvdisasm is not installed (pip install nvidia-cuda-nvdisasm)")
    hopper = archs.capabilities("sm_90a")
    plan = tuning.TUNER.plan(GemmProblem(1024, 28672, 8192, W4, dtypes.bf16, dtypes.bf16), hopper, 132,
                             tile=wide_tile(2, 1, 256, 6, producer=1), kernel=GemmDenseWgmmaWideSpec)
    (kernel,) = compile_many([plan.spec])
    sass = _sass(tool, kernel.binary, tmp_path / "wide.cubin")
    producer = sass[sass.index("USETMAXREG.DEALLOC"):]
    sources = re.findall(ACTIVATION_ROW_COPY, producer)
    assert len(sources) >= 8, producer[:2000]
    repeats = sum(a == b for a, b in zip(sources, sources[1:]))
    assert repeats == 0, sources


def test_the_tma_form_copies_activations_with_one_tensor_copy(tmp_path: Path) -> None:
    from humming.kernels.gemm_dense_wgmma import GemmDenseWgmmaWideTmaSpec

    hopper = archs.capabilities("sm_90a")
    tile = wide_tile(2, 1, 256, 5, producer=1)
    specs = []
    for fmt in (W4, presets.get("awq_int4").weight, presets.get("mxfp4").weight, presets.get("nvfp4_w4a16").weight,
                WeightFormat(dtypes.s8, ScaleSpec(Granularity.CHANNEL, dtypes.f32))):
        for act in (dtypes.bf16, dtypes.f16):
            spec = GemmDenseWgmmaWideTmaSpec.build(hopper.target, act, act, DecodeParams.of(fmt), tile)
            spec.check_supported(hopper)
            specs.append(spec)
    kernels = compile_many(specs)
    for spec, kernel in zip(specs, kernels):
        assert kernel.resources.spill_stores == 0, (spec.describe(), kernel.resources)
        assert len(kernel.resources.params) == 20 and kernel.resources.params[-1].size == 128  # the tensor map
        assert kernel.exports["block_m"] == spec.tile.block_m  # the host's box rows = the bytes the copy credits
        spec.check_compiled(kernel)
    with pytest.raises(InvalidInputError, match="producer = 1"):
        GemmDenseWgmmaWideTmaSpec.build(hopper.target, dtypes.bf16, dtypes.bf16, DecodeParams.of(W4),
                                        wide_tile(2, 1, 256, 5))
    ampere = archs.capabilities("sm_80")
    with pytest.raises(UnsupportedError, match="TMA"):
        GemmDenseWgmmaWideTmaSpec.build(ampere.target, dtypes.bf16, dtypes.bf16, DecodeParams.of(W4),
                                        tile).check_supported(ampere)
    tool = _nvdisasm()
    if tool is None:
        pytest.skip("nvdisasm is not installed (pip install nvidia-cuda-nvdisasm)")
    sass = _sass(tool, kernels[0].binary, tmp_path / "tma.cubin")
    producer = sass[sass.index("USETMAXREG.DEALLOC"):]
    assert "UTMALDG.2D" in producer
    assert not re.findall(ACTIVATION_ROW_COPY, producer)  # no 16-byte copies of activation rows are left to it


def test_a_tensor_map_is_asked_for_two_dimensional_16_bit_activations_only() -> None:
    torch = pytest.importorskip("torch")
    from humming.devices.nvidia.tensormap import activation_map

    with pytest.raises(InvalidInputError, match="2-D f16/bf16"):
        activation_map(torch.zeros(4, 64, dtype=torch.float32), 256)
    with pytest.raises(InvalidInputError, match="unit column stride"):
        activation_map(torch.zeros(64, 4, dtype=torch.bfloat16).t(), 256)
    with pytest.raises(InvalidInputError, match="1..256 rows"):
        activation_map(torch.zeros(4, 64, dtype=torch.bfloat16), 512)


def test_group_scales_go_on_partial_sums_when_a_warp_s_k_range_holds_whole_groups_or_lies_in_one() -> None:
    hopper = archs.capabilities("sm_90a")
    d = DecodeParams.of(W4)  # groups of 128
    tiles = {
        Tile(1, 1, 2, 1, 2, 256, 4, 8, 2, swap_n8=1): 1,  # 8 k16 steps a warp: one whole group
        Tile(1, 1, 2, 1, 4, 256, 3, 8, 2, swap_n8=1): 1,  # 4 steps: half a group, aligned
        Tile(1, 1, 4, 1, 2, 128, 4, 8, 1, swap_n8=2): 1,  # 4 steps
        Tile(1, 1, 2, 1, 2, 256, 4, 8, 2): 0,  # not swapped: scales on the operands
    }
    specs = [GemmDenseSpec.build(hopper.target, dtypes.bf16, dtypes.bf16, d, t) for t in tiles]
    for spec, kernel, want in zip(specs, compile_many(specs), tiles.values()):
        assert kernel.exports["scales_on_sums"] == want, spec.tile.describe()


def test_the_tma_wide_tile_runs_one_cta_a_tile_when_its_last_wave_is_nearly_full() -> None:
    hopper = archs.capabilities("sm_90a")

    def plan(m: int, n: int, k: int):
        return tuning.TUNER.plan(GemmProblem(m, n, k, W4, dtypes.bf16, dtypes.bf16), hopper, 132)

    full = plan(1024, 8192, 28672)  # 256 tiles: 2 waves of 132, the last 94% full
    assert (type(full.spec), full.schedule, full.grid) == (GemmDenseWgmmaWideTmaSpec, "data-parallel", 256)
    assert any("97% of 2 waves" in r for r in full.reasons), full.reasons
    part = plan(256, 28672, 8192)  # 224 tiles: the last wave 70% full, 85% of two
    assert part.schedule == "stream-k" and part.grid == 132


def test_one_warp_tiles_with_sixty_four_chunks_a_thread_compile() -> None:
    # The loaders keep a bit a copy in one word (memory/stage.cuh): 64 of them for one warp streaming two 8-bit
    # column blocks 256 deep, or the activations of 64 rows; such tiles are legal, however slow, and must build.
    caps = archs.capabilities("sm_80")
    s8 = WeightFormat(dtypes.s8, ScaleSpec(Granularity.CHANNEL, dtypes.f32))
    specs = [GemmDenseSpec.build(caps.target, dtypes.f16, dtypes.f16, DecodeParams.of(s8), Tile(1, 1, 1, 2, 1, 256, 2)),
             GemmDenseSpec.build(caps.target, dtypes.f16, dtypes.f16, DecodeParams.of(W4), Tile(1, 4, 1, 1, 1, 256, 2))]
    for spec, kernel in zip(specs, compile_many(specs)):
        assert kernel.exports["smem_bytes"] == spec.smem_bytes(), spec.tile


@pytest.mark.parametrize("defines", ["HM_FINISH_STEPS=-1", "HM_FINISH_STEPS=-2", "HM_SPREAD_STEPS=2",
                                     "HM_UNIFORM_WARP=0", "HM_NO_A_LOADS=1"])
def test_the_device_steps_builds_compile_and_keep_their_wgmmas(defines: str, tmp_path: Path) -> None:
    # benchmarks/device_batch.sh times the M = 64 kernel built with these switches: a build that fails, or whose
    # wgmmas ptxas drops (HM_FINISH_STEPS=1 let it: nothing read the accumulators), would be found on the device.
    tool = _nvdisasm()
    if tool is None:
        pytest.skip("nvdisasm is not installed (pip install nvidia-cuda-nvdisasm)")
    with knobs.scope(HUMMING_CACHE_DIR=str(tmp_path), HUMMING_KERNEL_DEFINES=defines):
        sass = _sass(tool, compile_spec(_h200_plan(64, 8192, 8192).spec).binary, tmp_path / "k.cubin")
    assert len(re.findall(r"HGMMA\.64x64x16", sass)) >= 16, f"{defines}: the wgmmas are gone"


def test_the_one_token_decode_tile_compiles_with_fewer_scale_multiplies(tmp_path: Path) -> None:
    # MXFP4 at M = 1 applies its g32 scales to token column 0 only: the tuner's tile must compile and lose FFMAs
    # against the same tile scaling every column, nothing else
    spec = _h200_plan(1, 28672, 8192, presets.get("mxfp4").weight).spec
    assert spec.one_token == 1
    tool = _nvdisasm()
    if tool is None:
        pytest.skip("nvdisasm is not installed (pip install nvidia-cuda-nvdisasm)")
    counts = []
    for variant in (replace(spec, one_token=0), spec):
        with knobs.scope(HUMMING_CACHE_DIR=str(tmp_path)):
            sass = _sass(tool, compile_spec(variant).binary, tmp_path / "k.cubin")
        counts.append((len(re.findall(r"\bHMMA\.", sass)), len(re.findall(r"\bFFMA\b", sass))))
    (hmma_all, ffma_all), (hmma_one, ffma_one) = counts
    assert hmma_one == hmma_all > 0 and ffma_one < ffma_all, counts


@pytest.mark.parametrize("preset, m, one_token", [
    ("mxfp4", 1, 1), ("nvfp4", 1, 1),  # groups of 32 / 16: measured 2-5% faster at M = 1
    ("mxfp4", 2, 0),  # a second token's column is stored
    (None, 1, 1),  # s4 g128: its zero goes onto the partial sums there (kZeroOnSums), measured 1.5-3.5% faster
    ("awq_int4", 1, 0),  # zero points per group: the zero stays on the pairs, and the tile alone lost 0.5-1.2%
])
def test_the_tuner_takes_the_one_token_tile_at_m_1_where_it_pays(preset: str | None, m: int, one_token: int) -> None:
    fmt = presets.get(preset).weight if preset else W4
    plan = _h200_plan(m, 28672, 8192, fmt)
    assert plan.spec.one_token == one_token, plan.reasons
    assert ("token column 0" in plan.explain()) == bool(one_token)


def test_a_one_token_tile_refuses_more_than_one_row() -> None:
    tile = _h200_plan(1, 8192, 8192, presets.get("mxfp4").weight).spec.tile
    with pytest.raises(InvalidInputError, match="serves M <= 1, not M=2"):
        _h200_plan(2, 8192, 8192, presets.get("mxfp4").weight, tile=tile)
    with pytest.raises(InvalidInputError, match="one_token=1 with swap_n8=2"):
        GemmDenseSpec.build(archs.capabilities("sm_90a").target, dtypes.bf16, dtypes.bf16,
                            DecodeParams.of(W4), replace(tile, swap_n8=2))
    with pytest.raises(InvalidInputError, match="one_token=1"):
        GemmDenseWgmmaSpec.build(archs.capabilities("sm_90a").target, dtypes.bf16, dtypes.bf16,
                                 DecodeParams.of(W4), replace(wgmma_tile(2, 1, 64, 8, producer=1), one_token=1))


def test_a_plan_launched_for_another_problem_is_refused_before_anything_compiles() -> None:
    import torch

    import humming.ops as hg

    fmt = presets.get("mxfp4").weight
    plan = _h200_plan(1, 256, 512, fmt)  # a one-token tile: a second row would come out unscaled
    x = torch.randn(2, 512).to(torch.bfloat16)
    with pytest.raises(InvalidInputError, match="made for dense GEMM M=1 N=256 K=512.*this call is dense GEMM M=2 "):
        hg.launch(torch.empty(2, 256, dtype=torch.bfloat16), x, torch.empty(0), None, None, None, None, None, fmt,
                  256, 512, plan)
    # the same M with another N (or format, or dtypes) is another kernel and grid too
    with pytest.raises(InvalidInputError, match="this call is dense GEMM M=1 N=128 K=512"):
        hg.launch(torch.empty(1, 128, dtype=torch.bfloat16), x[:1], torch.empty(0), None, None, None, None, None, fmt,
                  128, 512, plan)


def _compiled_sass(spec: GemmDenseSpec, tmp_path: Path, defines: str = "") -> str:
    """The disassembly of ``spec`` compiled with ``defines``; skips without nvdisasm (before compiling)."""
    from conformance.sass import disassemble

    if _nvdisasm() is None:
        pytest.skip("nvdisasm is not installed (pip install nvidia-cuda-nvdisasm)")
    with knobs.scope(HUMMING_CACHE_DIR=str(tmp_path), HUMMING_KERNEL_DEFINES=defines):
        return disassemble(compile_spec(spec).binary)


def _hot_loop(spec: GemmDenseSpec, tmp_path: Path, defines: str = "") -> list[str]:
    """The hot loop (conformance.sass.mma_loop) of ``spec`` compiled with ``defines``; skips without nvdisasm."""
    from conformance.sass import mma_loop

    return mma_loop(_compiled_sass(spec, tmp_path, defines))


@pytest.mark.parametrize("m", [64, 1024])
def test_the_wgmma_k_loops_keep_their_descriptors_in_uniform_registers(m: int, tmp_path: Path) -> None:
    # With a warp index ptxas cannot prove warp-uniform, the k-loop moved every wgmma descriptor into uniform
    # registers before each wgmma (32 R2UR a stage at M = 64: 4-7% slower on the H200, RESULTS 2026-12-04 15:25).
    spec = _h200_plan(m, 28672, 8192).spec
    builds = ("", "HM_UNIFORM_WARP=0") if m == 64 else ("",)
    counts = []
    for defines in builds:
        loop = _hot_loop(spec, tmp_path, defines)
        assert any(t.startswith("HGMMA") for t in loop), f"{defines or 'default'}: no wgmma loop found"
        counts.append(sum(t.startswith("R2UR") for t in loop))
    assert counts[0] == 0, f"M={m}: {counts[0]} R2UR in the k-loop"
    if len(counts) > 1:
        assert counts[1] > 0, "the old tid >> 5 form no longer shows the R2UR this test guards against"


def test_the_route_mirrors_the_tuner_plans_with_are_held_to_the_cubin(monkeypatch) -> None:
    # The one-token rule asks gemm_dense.zero_on_sums (a Python statement of route.cuh's kZeroOnSums); every compile
    # checks it, and scales_on_sums, against the constants the cubin exports.
    from humming.kernels import gemm_dense

    hopper = archs.capabilities("sm_90a")
    plan = tuning.TUNER.plan(GemmProblem(1, 28672, 8192, W4, dtypes.bf16, dtypes.bf16), hopper, 132)
    assert plan.spec.tile == tile_rules.ONE_TOKEN_TILE and plan.spec.zero_on_sums()
    f16 = GemmDenseSpec.build(hopper.target, dtypes.f16, dtypes.f16, DecodeParams.of(W4), tile_rules.ONE_TOKEN_TILE)
    kernel, kernel16 = compile_many([plan.spec, f16])
    assert (kernel.exports["zero_on_sums"], kernel.exports["scales_on_sums"]) == (1, 1)
    assert (kernel16.exports["zero_on_sums"], kernel16.exports["scales_on_sums"]) == (0, 1) and not f16.zero_on_sums()
    with knobs.scope(HUMMING_KERNEL_DEFINES=["HM_ZERO_ON_SUMS=0"]):  # a timing build: checked against nothing
        timing = compile_spec(plan.spec)
    assert (timing.exports["zero_on_sums"], timing.exports["routes_default"], kernel.exports["routes_default"]) == (0, 0, 1)
    monkeypatch.setattr(gemm_dense, "zero_on_sums", lambda *args: False)
    with pytest.raises(InternalError, match="the cubin's zero_on_sums is 1, zero_on_sums.. says False"):
        plan.spec.check_compiled(kernel)


def test_one_token_s4_decode_takes_its_zero_on_the_partial_sums(tmp_path: Path) -> None:
    # M = 1, s4 g128, bf16: the tuner takes the one-token tile, whose operands stay the magic read (128 + c) and whose
    # partial sums take -136 x the activations' sum (dequant/route.cuh kZeroOnSums): no paired FMA a weight pair in the
    # loop, where HM_ZERO_ON_SUMS=0 has one for each of the stage's 128 pairs a warp. f16 (magic 1024: the sums cancel
    # too deeply) keeps the M <= 8 tile and the zero on the pairs.
    f16 = tuning.TUNER.plan(GemmProblem(1, 28672, 8192, W4, dtypes.f16, dtypes.f16), archs.capabilities("sm_90a"), 132)
    assert f16.spec.one_token == 0, f16.explain()
    plan = _h200_plan(1, 28672, 8192)
    assert plan.spec.one_token == 1, plan.explain()
    fmas = []
    for defines in ("", "HM_ZERO_ON_SUMS=0"):
        loop = _hot_loop(plan.spec, tmp_path, defines)
        assert sum(t.startswith("HMMA") for t in loop) == 32, f"{defines or 'default'}: not the decode loop"
        fmas.append(sum(t.startswith("HFMA2") for t in loop))
    assert fmas[0] == 0, f"{fmas[0]} paired FMAs in the one-token loop"
    assert fmas[1] >= 128, f"the zero on every pair shows {fmas[1]} paired FMAs, not the 128 this test guards against"


@pytest.mark.parametrize("m, one_token, a_copies", [
    (1, 1, 1),  # the one-token tile: row 0, one chunk for each of the first 32 threads
    (8, 0, 2),  # one n8 fragment: 8 rows x 32 chunks over 128 threads
])
def test_decode_tiles_copy_only_the_activation_rows_they_serve(m: int, one_token: int, a_copies: int,
                                                               tmp_path: Path) -> None:
    # gemm_dense.cuh kLoadedRows (HM_SERVED_A_ROWS=1, the default): a thread of these tiles issues a_copies activation
    # copies (cp.async, or zeros past K) a stage, where covering all 16 rows of the tile (HM_SERVED_A_ROWS=0) took
    # four, each under its row's flag. The weights' copies (8) and the scales' (1) are the same in both builds.
    spec = _h200_plan(m, 28672, 8192).spec
    assert (spec.one_token, spec.swap_n8) == (one_token, 1), spec
    copies = {}
    for defines in ("", "HM_SERVED_A_ROWS=0"):
        loop = _hot_loop(spec, tmp_path, defines)
        assert sum(t.startswith("HMMA") for t in loop) == 32, f"{defines or 'default'}: not the decode loop"
        copies[defines] = (sum(t.startswith("LDGSTS") for t in loop), sum(t.startswith("STS") for t in loop))
    assert copies == {"": (9 + a_copies, a_copies), "HM_SERVED_A_ROWS=0": (13, 4)}, copies


@pytest.mark.parametrize("preset, ffma, group_columns", [
    ("nvfp4", (16, 64), 1),  # eight parts (groups of 16) a warp's stage: two columns a lane, against 8 x 2 x 4
    ("mxfp4", (8, 32), 1),  # four parts (groups of 32): one column a lane, against 4 x 2 x 4
    (None, (16, 16), 0),  # s4 g128, one part a warp's stage: column 0 and its zero on the sums, both builds alike
])
def test_one_token_tiles_put_each_group_part_in_its_own_column(preset: str | None, ffma: tuple[int, int],
                                                                group_columns: int, tmp_path: Path) -> None:
    # dequant/route.cuh kGroupColumns: at M = 1 each group part of a warp's stage goes to its own n8 column (the
    # activation loader's spread row) and a lane scales only its own columns once a stage; HM_GROUP_COLUMNS=0 puts
    # every part on column 0, whose sums every lane scaled part by part. The loop's FFMA count says which one ran.
    spec = _h200_plan(1, 28672, 8192, *([presets.get(preset).weight] if preset else [])).spec
    assert (spec.one_token, spec.swap_n8) == (1, 1), spec
    assert compile_spec(spec).exports.get("group_columns") == group_columns
    counts = []
    for defines in ("", "HM_GROUP_COLUMNS=0"):
        loop = _hot_loop(spec, tmp_path, defines)
        assert sum(t.startswith("HMMA") for t in loop) == 32, f"{defines or 'default'}: not the decode loop"
        counts.append(sum(t.startswith("FFMA") for t in loop))
    assert tuple(counts) == ffma, f"{preset}: FFMA (group columns, column 0) = {tuple(counts)}"


@pytest.mark.parametrize("preset, m, pair_muls", [
    ("mxfp4", 16, 32),  # the fix on the activations: 2 n8 fragments x 2 registers x 8 k16 steps
    ("nvfp4", 1, 16),  # groups of 16 at M = 1: 1 fragment x 2 registers x 8 k16 steps
    ("mxfp4", 1, 128),  # groups of 32 at M = 1 keep the fix on the pairs (faster there): one HMUL2 a pair
])
def test_bf16_fp4_decode_fixes_its_exponent_on_the_activations_where_it_pays(preset: str, m: int, pair_muls: int,
                                                                              tmp_path: Path) -> None:
    # dequant/route.cuh kFixOnActivations: e2m1 codes read into bf16 carry 2^-126; the swapped form multiplies its n8
    # operands by 2^64 once a k16 step where the FMA pipe is loaded, instead of every weight pair by 2^126.
    spec = _h200_plan(m, 28672, 8192, presets.get(preset).weight).spec
    counts = []
    for defines in ("", "HM_FIX_ON_ACT=0"):
        loop = _hot_loop(spec, tmp_path, defines)
        assert any(t.startswith("HMMA") for t in loop), f"{defines or 'default'}: no decode loop found"
        counts.append(sum(t.startswith("HMUL2") for t in loop))
    assert counts[0] == pair_muls, f"{preset} M={m}: {counts[0]} HMUL2 in the loop, expected {pair_muls}"
    assert counts[1] == 128, f"{preset} M={m}: the fix on every pair shows {counts[1]} HMUL2, not 128"


def test_the_wgmma_kernels_read_s8_straight_into_bf16(tmp_path: Path) -> None:
    # dequant::s8_bf16_pair: the wgmma kernels (M > 16) build s8 pairs in bf16 (LOP3, LOP3, HADD2), without the f32
    # route's PRMT / FADD / F2FP; the decode form (M <= 16) keeps the f32 route.
    s8 = WeightFormat(dtypes.s8, ScaleSpec(Granularity.CHANNEL, dtypes.f32))
    ops = {}
    for m in (16, 64):
        loop = _hot_loop(_h200_plan(m, 28672, 8192, s8).spec, tmp_path)
        ops[m] = sum(t.startswith("F2FP") for t in loop), sum(t.startswith("HADD2.BF16") for t in loop)
    assert ops[64] == (0, 64), f"M = 64: (F2FP, HADD2.BF16) = {ops[64]}"
    assert ops[16][0] == 64, f"M = 16: (F2FP, HADD2.BF16) = {ops[16]}"


@pytest.mark.parametrize("act", [dtypes.bf16, dtypes.f16])
def test_eight_bit_float_codes_take_one_byte_permute_a_pair(act: dtypes.DType, tmp_path: Path) -> None:
    # dequant::float_pair_unfixed (HM_F8_PRMT=1, the default): each e4m3 pair is one sign-replicating PRMT, a shift
    # and a mask (three instructions where the sign and the rest moved apart, HM_F8_PRMT=0, took three or four). The
    # decode loop of 16 x 128 weights a warp's stage has 64 pairs; the old form has no PRMT there.
    fmt = presets.get("fp8_channel_w8a16").weight
    spec = tuning.TUNER.plan(GemmProblem(16, 28672, 4096, fmt, act, act), archs.capabilities("sm_90a"), 132).spec
    loops = {d: _hot_loop(spec, tmp_path, d) for d in ("HM_F8_PRMT=0", "")}
    prmts = {d: sum(t.startswith("PRMT") for t in loop) for d, loop in loops.items()}
    assert prmts == {"HM_F8_PRMT=0": 0, "": 64}, prmts
    assert len(loops[""]) <= len(loops["HM_F8_PRMT=0"]) - 24, {d: len(loop) for d, loop in loops.items()}


@pytest.mark.parametrize("arch, m", [("sm_90a", 1), ("sm_90a", 1000), ("sm_75", 16)])
def test_the_three_plane_code_keeps_its_words_in_registers(arch: str, m: int, tmp_path: Path) -> None:
    # The 7-bit code (planes 4 + 2 + 1) is the one width with three planes. With the plane geometry written as
    # loops its plane loop stayed rolled: the lane's words in a local array, 80 LDL / STL in a decode loop of ~3270
    # instructions on sm_90a (benchmarks/bench_wna16.py --check --plan-only found it).
    from conformance.sass import loop_spill_accesses, mma_loop

    u7 = WeightFormat(dtypes.u7, ScaleSpec(Granularity.GROUP, dtypes.f16, 128), ZeroPointSpec.INT)
    # K = 1152: nine groups of 128 (1088, used before, pads to the same 1152 and plan, but pack refuses it)
    spec = tuning.TUNER.plan(GemmProblem(m, 1000, 1152, u7, dtypes.f16, dtypes.f16), archs.capabilities(arch), 132).spec
    sass = _compiled_sass(spec, tmp_path)
    loop = mma_loop(sass)
    assert loop_spill_accesses(sass) == 0, spec.describe()
    assert len(loop) < 1200, f"{spec.describe()}: a loop of {len(loop)} instructions"


@pytest.mark.parametrize("act", [dtypes.f16, dtypes.bf16])
def test_eight_bit_zero_point_wgmma_kernels_keep_local_memory_out_of_the_loop(act: dtypes.DType,
                                                                              tmp_path: Path) -> None:
    # The four-fragment wgmma form (M = 33..128) preloads a stage's packed words. For f16 u8 with group zero points
    # that spilled 22 LDL / STL into the k-loop at the 168-register cap, so that one configuration reads its words
    # per k16 step (it ran 0.8-2.9% faster so on the H100); bf16 keeps the preload, which fits there.
    from conformance.sass import loop_spill_accesses

    u8 = WeightFormat(dtypes.u8, ScaleSpec(Granularity.GROUP, act, 128), ZeroPointSpec.INT)
    spec = tuning.TUNER.plan(GemmProblem(64, 28672, 8192, u8, act, act), archs.capabilities("sm_90a"), 132).spec
    assert type(spec) is GemmDenseWgmmaSpec and spec.frag_m == 4, spec.describe()
    assert loop_spill_accesses(_compiled_sass(spec, tmp_path)) == 0, spec.describe()


def test_eight_bit_codes_take_k_warpgroups_where_they_measured_faster() -> None:
    # tile_rules.KSPLIT_TILE (two k-warpgroups on 256 columns): 8-bit codes at M = 33..64, and at M <= 128 without
    # zero-point rows (H100 SXM, 2026-12-06); codes of at most 4 bits and M <= 32 keep their tiles; targets without
    # wgmma never see the row.
    hopper, ampere = archs.capabilities("sm_90a"), archs.capabilities("sm_80")
    s8 = WeightFormat(dtypes.s8, ScaleSpec(Granularity.CHANNEL, dtypes.f32))
    u8 = WeightFormat(dtypes.u8, ScaleSpec(Granularity.GROUP, dtypes.bf16, 128), ZeroPointSpec.INT)
    e4m3 = presets.get("fp8_channel_w8a16").weight
    for fmt, act, m, split in ((s8, dtypes.bf16, 33, True), (e4m3, dtypes.f16, 64, True), (u8, dtypes.bf16, 64, True),
                               (s8, dtypes.bf16, 128, True), (u8, dtypes.f16, 100, False), (s8, dtypes.bf16, 32, False),
                               (W4, dtypes.bf16, 64, False), (presets.get("mxfp4").weight, dtypes.bf16, 64, False)):
        spec = tuning.TUNER.plan(GemmProblem(m, 28672, 8192, fmt, act, act), hopper, 132).spec
        assert (spec.tile.warp_k == 2 and type(spec) is GemmDenseWgmmaSpec) == split, (m, spec.describe())
        if split:
            assert spec.tile == replace(tile_rules.KSPLIT_TILE, stages=spec.stages), spec.describe()
    spec = tuning.TUNER.plan(GemmProblem(64, 28672, 8192, s8, dtypes.bf16, dtypes.bf16), ampere, 108).spec
    assert type(spec) is GemmDenseSpec, spec.describe()


def test_integer_codes_merge_their_planes_onto_the_magic_register(tmp_path: Path) -> None:
    # Each bit plane of an integer code is one shift and one LOP3 (mask and merge) onto the magic exponent pair held
    # in a register (dequant/values.cuh int_pair). With the magic OR-ed in as an immediate after the planes, 3-bit
    # codes (planes 2 + 1) took three LOP3 a pair, 412 a stage against 2-bit's 148, and 2-bit codes an IMAD.MOV a
    # pair rematerialising the magic (98 a stage).
    from collections import Counter

    hopper = archs.capabilities("sm_90a")
    loops = {}
    for name in ("gptq_int2", "gptq_int3"):
        spec = tuning.TUNER.plan(GemmProblem(1, 28672, 8192, presets.get(name).weight, dtypes.bf16, dtypes.bf16),
                                 hopper, 132).spec
        loops[name] = Counter(t.split()[0] for t in _hot_loop(spec, tmp_path))
    two, three = loops["gptq_int2"], loops["gptq_int3"]
    assert two["HMMA.16816.F32.BF16"] == three["HMMA.16816.F32.BF16"] > 0  # the same tile: the same pairs a stage
    assert three["LOP3.LUT"] <= 2 * two["LOP3.LUT"], (two, three)
    assert two["IMAD.MOV.U32"] < 16, two
