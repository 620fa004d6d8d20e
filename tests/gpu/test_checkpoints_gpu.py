"""On a CUDA device: layers read from GPTQ / AWQ / compressed-tensors / FP8 / NVFP4 / MXFP4 checkpoint tensors (built
here from their public layouts, moved to the GPU, read there) run through QuantLinear within tolerance of the float64
reference of the weights they were written from."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from humming.core import checkpoints, presets, quantized, reference  # noqa: E402
from humming.core.formats import QuantFormat  # noqa: E402
from tests.core.test_checkpoints import _awq_words, _ct_words, _gptq_tensors  # noqa: E402

pytestmark = pytest.mark.gpu
N, K = 1000, 1024


def _read(kind: str) -> tuple[quantized.QuantizedTensor, quantized.QuantizedTensor]:
    """(the weight written, the weight read back on the GPU)."""
    w = torch.randn(N, K) * (0.5 + torch.rand(N, 1))
    if kind == "mxfp4":
        q = quantized.quantize(w, "mxfp4")
        return q, checkpoints.from_mxfp4(q.data.reshape(N, K // 32, 16).cuda(), q.scales.cuda())
    if kind == "awq":
        q = quantized.quantize(w, "awq_int4")
        return q, checkpoints.from_awq(_awq_words(q.codes().T.contiguous()).cuda(),
                                       _awq_words(q.zeros.T.contiguous()).cuda(), q.scales.T.contiguous().cuda())
    if kind == "fp8_block":
        # the weight format alone: the fp8_block preset's activations are e4m3 (W8A8), and a reference made with them
        # quantizes x, which these 16-bit layers do not (25% of the outputs then "failed" on the H200, 2026-12-05)
        q = quantized.quantize(w, QuantFormat(presets.get("fp8_block").weight))
        return q, checkpoints.from_fp8(q.data.view(torch.float8_e4m3fn).cuda(), q.scales.cuda(), block=(128, 128))
    if kind == "nvfp4":
        q = quantized.quantize(w, "nvfp4_w4a16")
        return q, checkpoints.from_nvfp4(q.data.cuda(), q.scales.view(torch.float8_e4m3fn).cuda(),
                                         q.global_scale.cuda())
    if kind == "compressed_tensors_asym":
        q = quantized.quantize(w + 0.2, "awq_int4")  # u4, zero points per group of 128
        return q, checkpoints.from_compressed_tensors(_ct_words(q.codes(), 4).cuda(), q.scales.cuda(),
                                                      _ct_words(q.zeros.T, 4).T.contiguous().cuda())
    if kind == "gptq_sym_act_order":
        g_idx = (torch.randperm(K) // 128).to(torch.int32)
        q = quantized.quantize(w, "gptq_int4_act_order", g_idx=g_idx)
        q = quantized.QuantizedTensor(q.format, q.shape, q.data, q.scales, torch.full_like(q.zeros, 8), None, g_idx)
        qweight, qzeros = _gptq_tensors(q, 4, v1=True)
        return q, checkpoints.from_gptq(qweight.cuda(), qzeros.cuda(), q.scales.T.contiguous().cuda(), g_idx.cuda(),
                                        bits=4)
    q = quantized.quantize(w + 0.2, "gptq_int4")  # asymmetric, v2 zero points
    qweight, qzeros = _gptq_tensors(q, 4, v1=False)
    return q, checkpoints.from_gptq(qweight.cuda(), qzeros.cuda(), q.scales.T.contiguous().cuda(), bits=4,
                                    checkpoint_format="gptq_v2")


@pytest.mark.parametrize("m", [1, 16, 128])
@pytest.mark.parametrize("kind", ["gptq_sym_act_order", "gptq_asym", "awq", "compressed_tensors_asym", "fp8_block",
                                  "nvfp4", "mxfp4"])
def test_a_checkpoint_layer_runs_within_tolerance(kind: str, m: int) -> None:
    from humming.nn import QuantLinear

    written, read = _read(kind)
    assert torch.equal(quantized.dequantize(read).cpu(), quantized.dequantize(written))
    bias = torch.randn(N, device="cuda")
    layer = QuantLinear.from_quantized(read, bias, activation="bf16")
    x = torch.randn(m, K, device="cuda", dtype=torch.bfloat16)
    reference.check_gemm(layer(x), x, written.to("cuda"), layer.bias)


def test_a_model_loads_its_quantized_layers_from_gpu_tensors() -> None:
    from humming.nn import QuantLinear, load_quantized_linears

    with torch.device("meta"):
        model = torch.nn.Sequential(torch.nn.Linear(K, N), torch.nn.ReLU(), torch.nn.Linear(N, 64))
    q = quantized.quantize(torch.randn(N, K), "awq_int4")
    tensors = {"0.qweight": _awq_words(q.codes().T.contiguous()).cuda(),
               "0.qzeros": _awq_words(q.zeros.T.contiguous()).cuda(), "0.scales": q.scales.T.contiguous().cuda(),
               "0.bias": torch.randn(N, device="cuda")}
    assert load_quantized_linears(model, tensors, {"quant_method": "awq", "bits": 4, "group_size": 128}) == ["0"]
    layer = model[0]
    assert isinstance(layer, QuantLinear) and layer.data.is_cuda
    x = torch.randn(5, K, device="cuda", dtype=torch.bfloat16)
    reference.check_gemm(layer(x), x, q.to("cuda"), layer.bias)
