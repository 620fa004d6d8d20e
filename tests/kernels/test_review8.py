"""Review 8's findings on the dense twins and the NVIDIA tuner: what planning must refuse up front."""

from __future__ import annotations

import dataclasses

import pytest

from humming.core import presets
from humming.core.dtypes import DType
from humming.core.formats import Granularity, ScaleSpec, WeightFormat
from humming.core.problem import GemmProblem
from humming.devices.nvidia import archs, tuning
from humming.errors import InvalidInputError, UnsupportedError
from humming.kernels.gemm_dense_wgmma import GemmDenseWgmmaSpec, GemmDenseWgmmaWideSpec, wgmma_tile, wide_tile

GPTQ = presets.get("gptq_int4").weight


def _plan(problem: GemmProblem, arch: str = "sm_90a", sms: int = 132, **kw):  # type: ignore[no-untyped-def]
    return tuning.TUNER.plan(problem, archs.capabilities(arch), sms, **kw)


@pytest.mark.parametrize("m", [1, 64, 1024])
def test_f7_k_the_groups_do_not_divide_is_refused_at_every_m(m: int) -> None:
    with pytest.raises(InvalidInputError, match="scale.group=128 does not divide K=8200"):
        _plan(GemmProblem(m, 28672, 8200, GPTQ, "bf16", "bf16"))


@pytest.mark.parametrize("m", [1, 64])
def test_f7_k_not_a_multiple_of_8_is_refused_like_gemm(m: int) -> None:
    fmt = dataclasses.replace(GPTQ, scale=ScaleSpec(Granularity.CHANNEL, DType.parse("bf16")))  # no group rule
    with pytest.raises(InvalidInputError, match="K=4097; the kernel reads activations in 16-byte chunks"):
        _plan(GemmProblem(m, 4096, 4097, fmt, "bf16", "bf16"))


@pytest.mark.parametrize("kernel,tile", [(GemmDenseWgmmaSpec, wgmma_tile(1, 1, 32, 2)),
                                         (GemmDenseWgmmaWideSpec, wide_tile(1, 1, 64, 2))])
def test_f2_wgmma_twins_refuse_two_stages_without_a_producer(kernel, tile) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidInputError, match="stages=2; allowed: stages >= 3"):
        _plan(GemmProblem(32, 4096, 4096, GPTQ, "bf16", "bf16"), tile=tile, kernel=kernel)
    with_producer = dataclasses.replace(tile, producer=1)
    assert _plan(GemmProblem(32, 4096, 4096, GPTQ, "bf16", "bf16"), tile=with_producer, kernel=kernel).spec.stages == 2


def test_f2_fit_keeps_three_stages_for_wgmma_without_a_producer() -> None:
    # A target with little shared memory would have shrunk the wgmma tile to 2 stages.
    caps = archs.capabilities("sm_90a")
    spec = GemmDenseWgmmaSpec.build(caps.target, DType.parse("bf16"), DType.parse("bf16"),
                                    tuning.DecodeParams.of(GPTQ), wgmma_tile(1, 1, 64, 4))
    limit = dataclasses.replace(spec, stages=3).total_smem_bytes() - 1
    small = dataclasses.replace(caps, limits=dataclasses.replace(caps.limits, shared_memory_per_block_optin=limit))
    assert tuning._fit(spec, small).stages == 3


def test_f8_wide_rule_text_names_the_allowed_warp_m() -> None:
    with pytest.raises(InvalidInputError) as err:
        _plan(GemmProblem(64, 4096, 4096, GPTQ, "bf16", "bf16"), tile=dataclasses.replace(wide_tile(1, 1, 64, 4), warp_m=2),
              kernel=GemmDenseWgmmaWideSpec)
    assert "4 or 8" not in str(err.value)


@pytest.mark.parametrize("name", ["e6m1", "e7m0"])
def test_f4_wide_exponent_floats_are_refused_before_planning(name: str) -> None:
    wf = WeightFormat(DType.parse(name), ScaleSpec(Granularity.GROUP, DType.parse("bf16"), 128))
    with pytest.raises(UnsupportedError, match="at most 5 exponent bits") as err:
        _plan(GemmProblem(1, 128, 256, wf, "bf16", "bf16"))
    assert err.value.alternatives


def test_f6_unknown_smem_limit_refuses_planning() -> None:
    caps = archs.capabilities("sm_107a")
    assert caps.limits.shared_memory_per_block_optin is None
    with pytest.raises(UnsupportedError, match="shared memory per block") as err:
        _plan(GemmProblem(1, 4096, 4096, GPTQ, "bf16", "bf16"), "sm_107a", 148)
    assert not any("fewer stages" in a for a in err.value.alternatives)


def test_f6_requirement_offers_no_fewer_stages_where_the_limit_is_unknown() -> None:
    caps = archs.capabilities("sm_107a")
    known = archs.capabilities("sm_90a")
    spec = _plan(GemmProblem(1, 4096, 4096, GPTQ, "bf16", "bf16")).spec
    spec = dataclasses.replace(spec, target=caps.target)
    with pytest.raises(UnsupportedError) as err:
        spec.check_supported(caps)
    assert "fewer stages" not in str(err.value)
    huge = dataclasses.replace(spec, target=known.target, stages=8)
    small = dataclasses.replace(known, limits=dataclasses.replace(known.limits, shared_memory_per_block_optin=48 * 1024))
    with pytest.raises(UnsupportedError, match="fewer stages"):
        huge.check_supported(small)


def test_f5_sm75_bf16_output_is_refused_by_planning() -> None:
    with pytest.raises(UnsupportedError, match="bf16 output"):
        _plan(GemmProblem(1, 4096, 4096, GPTQ, "f16", "bf16"), "sm_75", 40)


def test_f3_wide_twin_refuses_64_column_tiles_with_odd_code_widths() -> None:
    with pytest.raises(InvalidInputError, match="odd"):
        _plan(GemmProblem(64, 4096, 4096, presets.get("gptq_int3").weight, "bf16", "bf16"),
              tile=wide_tile(1, 1, 64, 3), kernel=GemmDenseWgmmaWideSpec)
