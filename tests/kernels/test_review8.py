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


