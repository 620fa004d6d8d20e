"""Outputs with an odd row (N or its row stride odd) on the CPU: the tuner builds the element-by-element stores only
for an odd N, and a kernel built without them refuses such an output before launch; the wgmma forms the tuner plans
store through shared memory and take any row with one small loop."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from conformance.sass import SassUnavailable, disassemble
from humming.core import dtypes, presets
from humming.core.build import compile_many
from humming.core.problem import GemmProblem
from humming.devices.nvidia import archs, tuning
from humming.errors import InvalidInputError
from humming.kernels.gemm_dense_wgmma import GemmDenseWgmmaSpec

W4 = presets.get("gptq_int4").weight


def _plan(m: int, n: int, arch: str = "sm_90a"):
    return tuning.TUNER.plan(GemmProblem(m, n, 4096, W4, dtypes.bf16, dtypes.bf16), archs.capabilities(arch), 132)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("m", [1, 16, 64, 1000])
def test_the_tuner_compiles_element_stores_for_an_odd_n_only(arch: str, m: int) -> None:
    assert _plan(m, 4096, arch).spec.odd_n == 0
    assert _plan(m, 4095, arch).spec.odd_n == 1
    assert _plan(m, 999, arch).spec.odd_n == 1


def test_a_kernel_without_element_stores_refuses_an_odd_output_row_before_launch() -> None:
    even = _plan(64, 4096).spec
    even.check_output(4096, 4096)
    even.check_output(4096, 8192)  # a wider even row stride (a view's) is fine
    for n, stride in ((4095, 4095), (4096, 4097)):
        with pytest.raises(InvalidInputError, match=rf"N={n}, row stride {stride}.*odd_n"):
            even.check_output(n, stride)
    replace(even, odd_n=1).check_output(4096, 4097)  # the element stores take any row


def _sass_of(plans: list) -> list[str]:
    out = []
    for kernel in compile_many([p.spec for p in plans]):
        try:
            out.append(disassemble(kernel.binary))
        except SassUnavailable as exc:
            pytest.skip(exc.reason)
    return out


@pytest.mark.parametrize("m", [64, 1000])
def test_the_staged_store_takes_any_row_with_one_small_element_loop(m: int) -> None:
    """The wgmma forms the tuner plans (M = 17..128 four-fragment, M > 128 wide) store through shared memory
    (epilogue/store.cuh store_swapped_group_staged): their element path for a partial group or unaligned rows is
    a loop over the staged rows, whatever odd_n says, and their 8- or 16-byte stores write the rest."""
    plans = [_plan(m, n) for n in (4096, 4095)]
    assert all(isinstance(p.spec, GemmDenseWgmmaSpec) for p in plans)
    assert plans[1].spec.odd_n == 1
    sass = _sass_of(plans)
    lines = [s.count("\n") for s in sass]
    for plan, text in zip(plans, sass):
        stores16 = len(re.findall(r"\bSTG\.E\.U16\b", text))
        chunks = len(re.findall(r"\bSTG\.E\.(?:64|128)\b", text))
        assert stores16 > 0 and chunks > 0, (plan.spec.describe(), stores16, chunks)
    # the same code for an odd N: the element stores were a third of these kernels' SASS when compiled for odd N
    # only (NOTES-wna16 run 39), unrolled over every column and row of the tile
    assert abs(lines[0] - lines[1]) < 0.05 * lines[0], lines
