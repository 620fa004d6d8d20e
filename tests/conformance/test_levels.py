"""The levels end every case in the right state, with the right reason, and the report says so in JSON and markdown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from humming.devices.manager import DeviceManager
from humming.errors import InvalidInputError

from conformance import cases, report, sass
from conformance.levels import compile as compile_level
from conformance.runner import Status, Suite, run_suite


def run(manager: DeviceManager, arch: str, level: str, pattern: str | None = None):  # noqa: ANN201
    return run_suite(Suite(manager, manager.capabilities(arch), pattern=pattern, jobs=2, progress=False), [level])


def by_id(result) -> dict:  # noqa: ANN001
    return {r.id: r for r in result.results}


# ---- cases ------------------------------------------------------------------------------------------------------
def test_case_ids_are_stable_unique_and_include_edge_shapes() -> None:
    core = cases.gemm_cases("core")
    assert [c.id for c in core] == [c.id for c in cases.gemm_cases("core")]
    assert len({c.id for c in core}) == len(core)
    shapes = {c.shape for c in core}
    assert any(s.m == 1 for s in shapes) and any(s.m % 2 for s in shapes if s.m > 1)
    assert any(s.n % 64 for s in shapes), "an N that is not a multiple of 64"
    assert {c.combination for c in core} >= {"W4A16", "W8A16", "W8A8", "W4A8", "W4A4"}
    assert set(core) <= set(cases.gemm_cases("extended"))
    assert all(cases.tiles(c.format, c.shape) for c in core)


def test_a_shape_the_format_cannot_tile_is_not_a_case() -> None:
    odd_k = cases.Shape(3, 128, 160)
    assert not cases.tiles(cases.GemmCase("gptq_int4", cases.dtypes.f16, odd_k).format, odd_k)  # 128 ∤ 160
    assert cases.tiles(cases.GemmCase("mxfp4", cases.dtypes.bf16, odd_k).format, odd_k)  # 32 | 160
    with pytest.raises(InvalidInputError, match="unknown case set"):
        cases.gemm_cases("huge")


# ---- compile ----------------------------------------------------------------------------------------------------
def test_compile_passes_a_w4a16_kernel_whose_sass_holds_the_bf16_hmma(manager: DeviceManager) -> None:
    got = by_id(run(manager, "sm_80", "compile", "compile/gptq_int4.bf16/m1n256k512"))
    r = got["compile/gptq_int4.bf16/m1n256k512"]
    assert r.status is Status.PASS, r.reason
    (kernel,) = r.details["kernels"]
    assert kernel["resources"]["registers"] <= 255
    (sass_found,) = kernel["sass"].values()
    assert sass_found["status"] == "native" and any(op.startswith("HMMA") and "BF16" in op
                                                    for op in sass_found["found"])


def test_compile_marks_missing_capabilities_unsupported_and_missing_kernels_skipped(manager: DeviceManager) -> None:
    turing = by_id(run(manager, "sm_75", "compile", "compile/*/m1n256k512"))
    assert turing["compile/gptq_int4.bf16/m1n256k512"].status is Status.UNSUPPORTED
    assert "bf16" in turing["compile/gptq_int4.bf16/m1n256k512"].reason
    hopper = by_id(run(manager, "sm_90a", "compile", "compile/w8a8_int8.*/m1n256k512"))
    (w8a8,) = hopper.values()
    assert w8a8.status is Status.SKIPPED and w8a8.reason.startswith("no kernel for W8A8")


def test_compile_cases_of_a_target_without_its_toolchain_are_skipped_with_its_reason(manager: DeviceManager) -> None:
    ppu = by_id(run(manager, "ppu-810e", "compile", "compile/gptq_int4.f16/*"))
    assert ppu and all(r.status is Status.SKIPPED and "PPU SDK not found" in r.reason for r in ppu.values())
    exa = by_id(run(manager, "exa-1", "compile", "compile/gptq_int4.f16/*"))
    assert exa and all(r.status is Status.SKIPPED and "example vendor ships no compiler" in r.reason
                       for r in exa.values())


def test_compile_cases_of_a_plugin_without_a_tuner_are_skipped_not_unsupported(unmarked: DeviceManager) -> None:
    # The table says yes (sm_80 runs bf16 mma.sync) but the plugin plans no GEMM: "unsupported" would claim the
    # table says no; a skip names the hook the vendor has not supplied.
    got = by_id(run(unmarked, "sm_80", "compile", "compile/gptq_int4.bf16/m1n256k512"))
    r = got["compile/gptq_int4.bf16/m1n256k512"]
    assert r.status is Status.SKIPPED, (r.status, r.reason)
    assert "humming_tuner" in r.reason and "sm_80" in r.reason


def test_the_compile_sass_check_fails_a_kernel_that_lacks_the_mma_its_twin_requires() -> None:
    from humming.capabilities.model import DeviceCapabilities
    from humming.core import dtypes as dt
    from humming.core.codegen import Requirement
    from humming.devices.nvidia import archs, probes
    from humming.devices.nvidia.target import toolchain_for

    caps: DeviceCapabilities = archs.SM80
    f16 = next(i for i in caps.mma if i.family.name == "mma.sync" and i.a is dt.f16 and i.k == 16 and i.acc is dt.f32)
    binary = toolchain_for(caps.target).compile(probes.probe_source(f16), target=caps.target).binary

    def wants(act):  # noqa: ANN001, ANN202 - a twin requirement in the shape GemmDenseSpec gives
        return Requirement(f"mma.sync {act}", lambda c: any(i.a is act and i.k == 16 for i in c.mma))

    class Kernel:
        pass

    k = Kernel()
    k.binary = binary
    spec_f16 = type("S", (), {"requirements": lambda self: (wants(dt.f16),)})()
    spec_bf16 = type("S", (), {"requirements": lambda self: (wants(dt.bf16),)})()
    assert compile_level.check_sass(k, spec_f16, caps)[0] == []
    problems, _notes, details = compile_level.check_sass(k, spec_bf16, caps)
    assert problems and "BF16" in problems[0]
    assert all(v["status"] != "native" for v in details["sass"].values())


def test_local_memory_in_the_mma_loop_is_a_note_not_a_failure(monkeypatch) -> None:
    from humming.core import dtypes as dt
    from humming.core.codegen import Requirement
    from humming.devices.nvidia import archs

    caps: DeviceCapabilities = archs.SM80
    summary = {"mma": {"HMMA.16816.F32": 64}, "unpack": [], "loop_local": 9}
    monkeypatch.setattr(compile_level.sass, "summaries", lambda binary: {"k": summary})
    kernel = type("K", (), {"binary": b"", "function": "k"})()
    spec = type("S", (), {"requirements": lambda self: (
        Requirement("mma.sync f16", lambda c: any(i.a is dt.f16 and i.k == 16 for i in c.mma)),)})()
    problems, notes, details = compile_level.check_sass(kernel, spec, caps)
    assert problems == [] and details["loop_local_accesses"] == 9
    assert any(n.startswith("9 local-memory loads / stores") for n in notes), notes


# ---- numeric and perf without a device ---------------------------------------------------------------------------
@pytest.mark.parametrize("level", ["numeric", "perf"])
def test_device_levels_skip_every_case_without_a_device_and_say_why(manager: DeviceManager, level: str) -> None:
    results = run(manager, "sm_90a", level).results
    assert results and all(r.status is Status.SKIPPED and "no device" in r.reason for r in results)
    if level == "numeric":
        assert any(r.id.startswith("numeric/probe/wgmma") for r in results)  # one case per declared instruction


# ---- the report -------------------------------------------------------------------------------------------------
def test_the_report_is_well_formed_and_its_markdown_table_lists_failures_first(unmarked: DeviceManager,
                                                                              tmp_path: Path) -> None:
    result = run(unmarked, "sm_90a", "declare", "declare/probe/mma.sync.m16n8k*.e4m3.e4m3.f32")
    data = report.build(result, command="humming conformance --target sm_90a")
    assert report.validate(data) == []
    assert data["summary"]["fail"] == 2  # ptxas emulates FP8 mma.sync on sm_90a, and this table claims it native
    json_path, md_path = report.write(data, tmp_path)
    assert json.loads(json_path.read_text())["capability_hash"] == report.capability_hash(unmarked.capabilities("sm_90a"))
    md = md_path.read_text()
    assert "| declare | 0 | 2 | 0 | 0 |" in md and "FAIL" in md and "emulates" in md
    assert "humming conformance --target sm_90a --level declare --case" in md


def test_a_report_holding_nan_and_inf_is_standard_json_with_nulls(manager: DeviceManager, tmp_path: Path) -> None:
    from conformance.runner import CaseResult, SuiteRun

    suite = Suite(manager, manager.capabilities("sm_80"), progress=False)
    case = CaseResult("numeric/gptq_int4.bf16/m1n64k128", "numeric", Status.FAIL, "1 of 64 outputs are NaN or inf",
                      error={"max_abs": 0.01, "max_rel": float("nan"), "margin": float("inf"), "nonfinite": 1},
                      details={"sample": [1.0, float("nan"), float("-inf")]})
    data = report.build(SuiteRun(suite, ["numeric"], [case], 0.0, 1.0, {"numeric": 1.0}))

    def strict(token: str) -> None:
        raise ValueError(f"non-standard JSON token {token}")

    json_path, md_path = report.write(data, tmp_path)
    written = json.loads(json_path.read_text(), parse_constant=strict)
    (c,) = written["cases"]
    assert c["error"] == {"max_abs": 0.01, "max_rel": None, "margin": None, "nonfinite": 1}
    assert c["details"]["sample"] == [1.0, None, None]
    assert "1 non-finite" in md_path.read_text() and report.validate(written) == []


def test_the_capability_hash_changes_with_any_claim(manager: DeviceManager) -> None:
    import dataclasses

    caps = manager.capabilities("sm_80")
    assert report.capability_hash(caps) == report.capability_hash(caps)
    assert report.capability_hash(caps) != report.capability_hash(dataclasses.replace(caps, mma=caps.mma[1:]))


def test_validate_names_what_is_wrong_with_a_report() -> None:
    problems = report.validate({"schema": "other", "cases": [{"id": "a", "level": "declare", "status": "maybe"},
                                                             {"id": "a", "level": "declare", "status": "fail"}]})
    text = "\n".join(problems)
    assert "missing key 'versions'" in text and "status 'maybe'" in text and "appears twice" in text
    assert "must give its reason" in text


# ---- the numeric comparison (CPU) ----------------------------------------------------------------------------------
def test_the_numeric_comparison_passes_a_correctly_rounded_result_and_fails_a_dropped_scale_group() -> None:
    import torch

    from conformance import gemm_api
    from humming.core.reference import reference_gemm

    case = cases.GemmCase("gptq_int4", cases.dtypes.bf16, cases.Shape(13, 320, 640))
    gen = torch.Generator().manual_seed(11)
    q, packed = gemm_api._weight(case, gen, "cpu")
    assert packed.shape == (320, 640)
    x = torch.randn(13, 640, generator=gen).to(torch.bfloat16)
    good = reference_gemm(x, q).to(torch.bfloat16)  # what a correct kernel returns, up to one output rounding
    stats = gemm_api.compare(good, x, q, case)
    assert stats["margin"] <= 1.0 and stats["bad"] == 0 and stats["count"] == 13 * 320
    bad = good.clone()
    from humming.core.quantized import dequantize

    # Drop one group of 128 from a single output, as a scale-indexing bug would.
    bad[4, 7] -= (x.to(torch.float64)[4, 128:256] @ dequantize(q, torch.float64)[7, 128:256]).to(torch.bfloat16)
    stats = gemm_api.compare(bad, x, q, case)
    assert stats["margin"] > 1.0 and stats["bad"] == 1 and stats["worst_at"] == [4, 7]


def test_non_finite_outputs_are_counted_apart_and_the_finite_errors_still_reported() -> None:
    import math

    import torch

    from conformance import gemm_api
    from humming.core.reference import reference_gemm

    case = cases.GemmCase("gptq_int4", cases.dtypes.bf16, cases.Shape(13, 320, 640))
    gen = torch.Generator().manual_seed(11)
    q, _packed = gemm_api._weight(case, gen, "cpu")
    x = torch.randn(13, 640, generator=gen).to(torch.bfloat16)
    out = reference_gemm(x, q).to(torch.bfloat16)
    finite = gemm_api.compare(out, x, q, case)
    out[2, 3], out[5, 6] = float("nan"), float("inf")  # what new silicon gives back
    stats = gemm_api.compare(out, x, q, case)
    assert stats["nonfinite"] == 2 and stats["bad"] == 2 and stats["worst_at"] == [2, 3]
    assert all(math.isfinite(stats[k]) for k in ("max_abs", "max_rel", "margin"))  # over the finite outputs
    assert stats["max_abs"] <= finite["max_abs"] and stats["margin"] <= 1.0


def test_every_core_weight_only_case_quantizes_and_packs_for_its_activation_dtype() -> None:
    import torch

    from conformance import gemm_api

    seen = set()
    for case in cases.gemm_cases("core"):
        if not gemm_api.has_kernel(case) or (case.preset, case.activation) in seen:
            continue
        seen.add((case.preset, case.activation))
        q, packed = gemm_api._weight(case, torch.Generator().manual_seed(3), "cpu")
        assert packed.activation is case.activation and packed.shape == (case.shape.n, case.shape.k)
    assert len(seen) >= 8
