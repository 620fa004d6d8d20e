"""The wide TMA form in clusters of two (GemmDenseWgmmaWideTmaPairSpec), on the CPU: what it compiles to, what it
needs of the target, and which launches the tuner makes of it (tests/gpu/test_gemm_dense_gpu.py runs it)."""

from __future__ import annotations

import re

import pytest

from humming.core import dtypes, presets
from humming.core.build import compile_many
from humming.core.formats import Granularity, ScaleSpec, WeightFormat
from humming.core.problem import GemmProblem
from humming.devices.nvidia import archs, tuning
from humming.errors import InvalidInputError, UnsupportedError
from humming.kernels.dense_decode import DecodeParams
from humming.kernels.gemm_dense_wgmma import GemmDenseWgmmaWideTmaPairSpec, GemmDenseWgmmaWideTmaSpec, wide_tile

W4 = WeightFormat(dtypes.s4, ScaleSpec(Granularity.GROUP, dtypes.f16, 128))
TILE = wide_tile(2, 1, 256, 5, producer=1)


def _plan(m: int, n: int, k: int, schedule: str | None = "data-parallel"):
    return tuning.TUNER.plan(GemmProblem(m, n, k, W4, dtypes.bf16, dtypes.bf16), archs.capabilities("sm_90a"), 132,
                             tile=TILE, kernel=GemmDenseWgmmaWideTmaPairSpec, schedule=schedule)


def test_each_cta_multicasts_its_half_and_hands_slots_back_without_a_gpu_wide_fence() -> None:
    from conformance.sass import SassUnavailable, disassemble

    hopper = archs.capabilities("sm_90a")
    s8 = WeightFormat(dtypes.s8, ScaleSpec(Granularity.CHANNEL, dtypes.f32))
    cases = [(fmt, act) for fmt in (W4, presets.get("mxfp4").weight, s8) for act in (dtypes.bf16, dtypes.f16)]
    specs = [GemmDenseWgmmaWideTmaPairSpec.build(hopper.target, a, a, DecodeParams.of(f), TILE) for f, a in cases]
    kernels = compile_many(specs)
    for spec, kernel in zip(specs, kernels):
        spec.check_supported(hopper)
        assert (kernel.resources.spill_stores, len(kernel.resources.params)) == (0, 20), spec.describe()
        assert kernel.resources.params[-1].size == 128  # the tensor map
        spec.check_compiled(kernel)
    try:
        sass = disassemble(kernels[0].binary)
    except SassUnavailable as exc:
        pytest.skip(str(exc))
    assert "UTMALDG.2D.MULTICAST" in sass
    lines = [line.split("*/")[-1].strip() for line in sass.splitlines() if "*/" in line]
    arrivals = [i for i, line in enumerate(lines) if re.search(r"SYNCS\.ARRIVE\.TRANS64\.RED", line)]
    assert arrivals, "no arrival on a peer CTA's barrier"
    # .release.cluster put a MEMBAR.ALL.GPU before every hand-back (1.5x slower on the H100, NOTES-wna16 run 43)
    fenced = [lines[i] for i in arrivals if any("MEMBAR.ALL.GPU" in line for line in lines[max(0, i - 4):i])]
    assert not fenced, fenced


def test_the_tuner_launches_pairs_of_whole_tiles_on_an_even_count_of_n_tiles() -> None:
    plan = _plan(1024, 28672, 8192)
    assert (plan.cluster, plan.grid, plan.schedule) == (2, 896, "data-parallel")
    assert "clusters of 2 CTAs" in plan.explain()
    with pytest.raises(InvalidInputError, match="one CTA a tile"):
        _plan(1024, 28672, 8192, schedule="stream-k")
    with pytest.raises(InvalidInputError, match="9 n tiles"):
        _plan(1024, 1152, 8192)  # nine 128-column tiles: the last pair would be half a pair
    assert _plan(1024, 1280, 8192).cluster == 2  # ten, the last partly past N
    single = tuning.TUNER.plan(GemmProblem(1024, 28672, 8192, W4, dtypes.bf16, dtypes.bf16),
                               archs.capabilities("sm_90a"), 132, tile=TILE, kernel=GemmDenseWgmmaWideTmaSpec)
    assert single.cluster == 1


def test_the_pair_form_needs_hardware_tma_multicast() -> None:
    # sm_120a compiles .multicast::cluster to a driver call, not a copy (archs.py): the model says it lacks it
    consumer = archs.capabilities("sm_120a")
    spec = GemmDenseWgmmaWideTmaPairSpec.build(archs.capabilities("sm_90a").target, dtypes.bf16, dtypes.bf16,
                                               DecodeParams.of(W4), TILE)
    assert not GemmDenseWgmmaWideTmaPairSpec.target_requirements(dtypes.bf16)[-1].check(consumer)
    assert GemmDenseWgmmaWideTmaPairSpec.target_requirements(dtypes.bf16)[-1].check(archs.capabilities("sm_90a"))
    with pytest.raises(UnsupportedError, match="multicast"):
        GemmDenseWgmmaWideTmaPairSpec.build(consumer.target, dtypes.bf16, dtypes.bf16, DecodeParams.of(W4),
                                            TILE).check_supported(consumer)
