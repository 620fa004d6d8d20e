"""On a CUDA device: outputs whose rows hold an odd count of elements. Odd N takes the kernels built with the
element-by-element stores (``odd_n``), every even N the ones without, and a kernel built for even rows refuses an
output with an odd row stride before launch. Kept apart from test_gemm_dense_gpu so that a short device call runs
it without compiling that module's whole matrix; its ``_run`` checks each result against the float64 reference."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

from humming.core import dtypes, packing  # noqa: E402
from humming.errors import InvalidInputError  # noqa: E402
from tests.gpu.test_gemm_dense_gpu import FORMATS, _quantize, _run  # noqa: E402


#: M = 1 (one-token decode), 33 (on sm_90a the wgmma kernel), 300 (the wide one): odd N takes the kernels built with
#: element-by-element stores (odd_n), which every even N leaves out.
@pytest.mark.parametrize("m", [1, 33, 300])
@pytest.mark.parametrize("out", [dtypes.f16, dtypes.bf16], ids=str)
def test_output_dtype_may_differ_from_the_activations_and_odd_n_uses_scalar_stores(out: dtypes.DType, m: int) -> None:
    plan = _run("s4_g128", dtypes.bf16 if out is dtypes.f16 else dtypes.f16, m, (999, 1152), bias=True, out=out)
    assert plan.spec.odd_n == 1


def test_an_output_with_an_odd_row_stride_is_refused_by_a_kernel_built_for_even_rows() -> None:
    from humming.ops import launch

    fmt = FORMATS["s4_g128"]
    gen = torch.Generator(device="cuda")
    gen.seed()
    q = _quantize(fmt, 1000, 1024, gen)
    pw = packing.pack(q, dtypes.bf16)
    x = torch.randn(33, 1024, device="cuda", generator=gen).to(torch.bfloat16)
    wide = torch.full((33, 1001), float("nan"), device="cuda", dtype=torch.bfloat16)
    with pytest.raises(InvalidInputError, match="row stride 1001"):
        launch(wide[:, :1000], x, pw.data, pw.scales, pw.zeros, pw.chscale, pw.gscale, None, fmt, 1000, 1024)
    torch.cuda.synchronize()
    assert wide.isnan().all()  # nothing written


#: The same M with an even N: the pair-only kernels (the wgmma forms' at 33 and 300 on sm_90a).
@pytest.mark.parametrize("m", [1, 33, 300])
def test_an_even_n_takes_the_kernels_without_element_stores(m: int) -> None:
    plan = _run("s4_g128", dtypes.bf16, m, (1000, 1152), bias=True, out=dtypes.bf16)
    assert plan.spec.odd_n == 0
