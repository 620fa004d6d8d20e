"""Outputs with an odd row (N or its row stride odd) on the CPU: the tuner builds kernels that take any row, except
the one form whose code an odd row costs (the wgmma N = 16 form's element stores), which gets them for an odd N
only; a kernel built without them refuses such an output before launch; the staged stores of the other wgmma forms
take any row with the same code."""

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
from humming.kernels.gemm_dense_wgmma import GemmDenseWgmmaSpec, wgmma_tile

W4 = presets.get("gptq_int4").weight


def _plan(m: int, n: int, arch: str = "sm_90a", **kw):
    return tuning.TUNER.plan(GemmProblem(m, n, 4096, W4, dtypes.bf16, dtypes.bf16), archs.capabilities(arch), 132,
                             **kw)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("m", [1, 16, 64, 1000])
def test_the_tuners_kernels_take_any_row(arch: str, m: int) -> None:
    for n in (4096, 4095, 999):
        spec = _plan(m, n, arch).spec
        assert not spec.odd_n_changes_code() and spec.odd_n == 1, spec.describe()
        spec.check_output(n, n + 1)  # an output view's odd (or even) row stride


def test_the_wgmma_n16_form_gets_its_element_stores_for_an_odd_n_only() -> None:
    tile = wgmma_tile(2, 1, 16, 4)  # 512 columns by 16 tokens: a caller's tile, which no tuner rule takes
    for n, odd in ((4096, 0), (4095, 1)):
        spec = _plan(16, n, tile=tile, kernel=GemmDenseWgmmaSpec).spec
        assert spec.odd_n_changes_code() and spec.odd_n == odd, spec.describe()


def test_a_kernel_without_element_stores_refuses_an_odd_output_row_before_launch() -> None:
    even = replace(_plan(64, 4096).spec, odd_n=0)
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


def _instructions(sass: str) -> list[str]:
    """The instruction lines of a disassembly without their addresses (the symbol names hold the template's
    arguments, odd_n among them)."""
    return [re.sub(r"/\*[0-9a-f]{4,}\*/|_Z\w+", "", line).strip() for line in sass.splitlines()
            if re.match(r"\s+/\*[0-9a-f]{4,}\*/", line)]


@pytest.mark.parametrize("arch, m", [("sm_80", 1), ("sm_80", 64), ("sm_90a", 1), ("sm_90a", 16), ("sm_90a", 64),
                                     ("sm_90a", 1000)])
def test_odd_n_changes_no_code_where_the_twin_says_so(arch: str, m: int) -> None:
    """odd_n_changes_code() is what lets the tuner build every kernel for any row: the mma.sync form chooses at run
    time, and the staged wgmma forms' element path for a partial group or unaligned rows is a loop over the staged
    rows (their 8- or 16-byte stores write the rest)."""
    plan = _plan(m, 4096, arch)
    assert not plan.spec.odd_n_changes_code()
    even, odd = _sass_of([replace(plan, spec=replace(plan.spec, odd_n=v)) for v in (0, 1)])
    assert _instructions(even) == _instructions(odd), plan.spec.describe()
    if isinstance(plan.spec, GemmDenseWgmmaSpec):
        stores16 = len(re.findall(r"\bSTG\.E\.U16\b", odd))
        chunks = len(re.findall(r"\bSTG\.E\.(?:64|128)\b", odd))
        assert stores16 > 0 and chunks > 0, (plan.spec.describe(), stores16, chunks)


def test_the_wgmma_n16_form_compiles_its_element_stores_for_odd_n_alone() -> None:
    plan = _plan(16, 4096, tile=wgmma_tile(2, 1, 16, 4), kernel=GemmDenseWgmmaSpec)
    even, odd = _sass_of([replace(plan, spec=replace(plan.spec, odd_n=v)) for v in (0, 1)])
    assert not re.search(r"\bSTG\.E\.U16\b", even) and re.search(r"\bSTG\.E\.U16\b", odd)
