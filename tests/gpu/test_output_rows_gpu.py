"""On a CUDA device: outputs whose rows hold an odd count of elements, or start off a 16-byte boundary. The tuner's
kernels take any row (``odd_n_changes_code``), and a kernel built for even rows (``odd_n = 0``) refuses an output
with an odd row stride before launch. Kept apart from test_gemm_dense_gpu so that a short device call runs
it without compiling that module's whole matrix; its ``_run`` checks each result against the float64 reference."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

from humming.core import dtypes, packing  # noqa: E402
from humming.errors import InvalidInputError  # noqa: E402
from tests.gpu.test_gemm_dense_gpu import FORMATS, _quantize, _run  # noqa: E402


#: M = 1 (one-token decode), 33 (on sm_90a the wgmma kernel), 300 (the wide one), an odd N: the kernels store its rows
#: element by element where pairs or chunks do not fit.
@pytest.mark.parametrize("m", [1, 33, 300])
@pytest.mark.parametrize("out", [dtypes.f16, dtypes.bf16], ids=str)
def test_output_dtype_may_differ_from_the_activations_and_odd_n_uses_scalar_stores(out: dtypes.DType, m: int) -> None:
    plan = _run("s4_g128", dtypes.bf16 if out is dtypes.f16 else dtypes.f16, m, (999, 1152), bias=True, out=out)
    assert plan.spec.odd_n == 1


def test_an_output_with_an_odd_row_stride_is_refused_by_a_kernel_built_for_even_rows() -> None:
    import dataclasses

    from humming.core.problem import GemmProblem
    from humming.ops import launch, plan_for

    fmt = FORMATS["s4_g128"]
    plan = plan_for(GemmProblem(33, 1000, 1024, fmt, dtypes.bf16, dtypes.bf16))
    even = dataclasses.replace(plan, spec=dataclasses.replace(plan.spec, odd_n=0))
    gen = torch.Generator(device="cuda")
    gen.seed()
    q = _quantize(fmt, 1000, 1024, gen)
    pw = packing.pack(q, dtypes.bf16)
    x = torch.randn(33, 1024, device="cuda", generator=gen).to(torch.bfloat16)
    wide = torch.full((33, 1001), float("nan"), device="cuda", dtype=torch.bfloat16)
    with pytest.raises(InvalidInputError, match="row stride 1001"):
        launch(wide[:, :1000], x, pw.data, pw.scales, pw.zeros, pw.chscale, pw.gscale, None, fmt, 1000, 1024, even)
    torch.cuda.synchronize()
    assert wide.isnan().all()  # nothing written


#: The same M with an even N whose last 16-column group is partial (1000 = 62 x 16 + 8): on sm_90a the wgmma forms
#: store that group element by element and the other groups by chunks, the decode kernel (M = 1) all by pairs.
@pytest.mark.parametrize("m", [1, 33, 300])
def test_an_even_n_with_a_partial_last_column_group(m: int) -> None:
    _run("s4_g128", dtypes.bf16, m, (1000, 1152), bias=True, out=dtypes.bf16)


#: The wgmma forms (on sm_90a M = 33 and 64 the four-fragment one, 300 the wide one) store 16-column groups through
#: shared memory and write 16- or 8-byte chunks of whole rows when the output's rows allow them; a view whose rows
#: start off those boundaries (an even row stride that is not a multiple of 4 and a 4-byte offset, or an odd row
#: stride) takes their element-by-element path; M = 1 is the decode kernel's pair store. Either way the columns
#: beside the view stay untouched.
@pytest.mark.parametrize("m", [1, 33, 64, 300])
@pytest.mark.parametrize("offset, width", [(8, 1040), (2, 1030), (0, 1025)],
                         ids=["aligned-rows", "unaligned-rows", "odd-row-stride"])
def test_an_output_view_is_written_inside_its_columns_alone(m: int, offset: int, width: int) -> None:
    from humming.core import reference
    from humming.ops import launch

    n, k = 1024, 1024
    fmt = FORMATS["s4_g128"]
    gen = torch.Generator(device="cuda")
    gen.seed()
    q = _quantize(fmt, n, k, gen)
    pw = packing.pack(q, dtypes.bf16)
    x = torch.randn(m, k, device="cuda", generator=gen).to(torch.bfloat16)
    bias = torch.randn(n, device="cuda", generator=gen).to(torch.bfloat16)
    buf = torch.full((m, width), float("nan"), device="cuda", dtype=torch.bfloat16)
    view = buf[:, offset:offset + n]
    plan = launch(view, x, pw.data, pw.scales, pw.zeros, pw.chscale, pw.gscale, bias, fmt, n, k)
    torch.cuda.synchronize()
    if torch.cuda.get_device_capability() == (9, 0) and m > 16:  # sm_90a plans these M on the staged stores' forms
        assert plan.spec.staged_blocks() > 0, plan.spec.describe()
    assert buf[:, :offset].isnan().all() and buf[:, offset + n:].isnan().all(), "written outside the view"
    assert not view.isnan().any(), f"seed {gen.initial_seed()}: {int(view.isnan().sum())} outputs never written"
    reference.check_gemm(view, x, q, bias)
