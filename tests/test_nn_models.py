"""quantize_linears: every nn.Linear of a model replaced in place, all or nothing, with the refusals named."""

from __future__ import annotations

import io

import pytest
import torch
from torch import nn

from humming.core import packing, quantized
from humming.core.build import Progress
from humming.errors import InvalidInputError
from humming.nn import QuantLinear, load_quantized_linears, quantize_linears


def _model() -> nn.Module:
    return nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Sequential(nn.Linear(512, 96, bias=False)),
                         nn.Linear(96, 7))  # the last: K = 96 is no multiple of gptq's group of 128


def test_every_linear_is_replaced_by_its_quantized_weight_or_nothing_is() -> None:
    model = _model()
    before = [m for m in model.modules() if isinstance(m, nn.Linear)]
    with pytest.raises(InvalidInputError, match=r"1 of 3 layers cannot take gptq_int4; nothing was replaced[\s\S]*"
                                                r"\n  3 \(96 -> 7\): .*group"):
        quantize_linears(model, "gptq_int4")
    assert [m for m in model.modules() if isinstance(m, nn.Linear)] == before
    names = quantize_linears(model, "gptq_int4", skip_unsupported=True, activation="f16")
    assert names == ["0", "2.0"] and isinstance(model[3], nn.Linear)
    for name, linear in (("0", before[0]), ("2.0", before[1])):
        layer = model.get_submodule(name)
        assert isinstance(layer, QuantLinear) and str(layer.packed.activation) == "f16"
        want = quantized.quantize(linear.weight.detach(), "gptq_int4")
        assert torch.equal(quantized.dequantize(packing.unpack(layer.packed)), quantized.dequantize(want))
    assert model[0].bias is not None and model[2][0].bias is None


def test_include_picks_the_layers_and_a_bare_linear_is_refused() -> None:
    model = _model()
    assert quantize_linears(model, "mxfp4", include=lambda name, layer: layer.in_features == 512) == ["2.0"]
    assert isinstance(model[2][0], QuantLinear) and isinstance(model[0], nn.Linear)
    with pytest.raises(InvalidInputError, match="the model is itself an nn.Linear; use QuantLinear.from_linear"):
        quantize_linears(nn.Linear(256, 64), "mxfp4")


def test_the_progress_line_says_what_it_does() -> None:
    out = io.StringIO()
    bar = Progress(2, what="2 linear layers", stream=out, enabled=True, delay=0.0, doing="quantizing")
    bar.step()
    bar.close()
    assert out.getvalue().startswith("\rhumming: quantizing 2 linear layers [") and out.getvalue().endswith("\n")


def test_load_quantized_linears_replaces_the_layers_a_checkpoint_holds_quantized() -> None:
    from humming.core import checkpoints
    from tests.core.test_checkpoints import _gptq_checkpoint

    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 64))
    q = quantized.quantize(torch.randn(128, 256), "gptq_int4")
    bias = torch.randn(128)
    tensors = _gptq_checkpoint(q, "0", v1=False) | {"0.bias": bias, "2.weight": torch.randn(64, 128),
                                                    "2.bias": torch.randn(64)}  # layer 2 stays float
    config = {"quant_method": "gptq", "bits": 4, "group_size": 128, "checkpoint_format": "gptq_v2"}
    assert load_quantized_linears(model, tensors, config, activation="f16") == ["0"]
    layer = model[0]
    assert isinstance(layer, QuantLinear) and layer.data.device.type == "cpu" and isinstance(model[2], nn.Linear)
    assert torch.equal(quantized.dequantize(packing.unpack(layer.packed)),
                       quantized.dequantize(checkpoints.read_layer(tensors, "0", config)))
    assert torch.equal(layer.bias, bias.half())
    with torch.device("meta"):
        wrong = nn.Sequential(nn.Linear(256, 96))
    with pytest.raises(InvalidInputError, match="0 is 96 x 256 in the model and 128 x 256 in the checkpoint"):
        load_quantized_linears(wrong, tensors, config)
    with torch.device("meta"):
        unbiased = nn.Sequential(nn.Linear(256, 128))
    del tensors["0.bias"]
    with pytest.raises(InvalidInputError, match="0 has a bias in the model and the checkpoint has no '0.bias'"):
        load_quantized_linears(unbiased, tensors, config)
    with pytest.raises(InvalidInputError, match="quant_method='hqq'"):
        load_quantized_linears(unbiased, tensors, {"quant_method": "hqq"})


def test_load_quantized_linears_leaves_the_layers_an_fp8_checkpoint_keeps_in_float() -> None:
    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(256, 128, bias=False), nn.Linear(128, 64, bias=False))
    b = quantized.quantize(torch.randn(128, 256), "fp8_block")
    tensors = {"0.weight": b.data.view(torch.float8_e4m3fn), "0.weight_scale_inv": b.scales,
               "1.weight": torch.randn(64, 128)}
    assert load_quantized_linears(model, tensors, {"quant_method": "fp8", "weight_block_size": [128, 128]}) == ["0"]
    assert isinstance(model[0], QuantLinear) and isinstance(model[1], nn.Linear)


def test_load_quantized_linears_refuses_a_checkpoint_that_matches_nothing_or_a_dropped_bias() -> None:
    from tests.core.test_checkpoints import _gptq_checkpoint

    config = {"quant_method": "gptq", "bits": 4, "group_size": 128, "checkpoint_format": "gptq_v2"}
    q = quantized.quantize(torch.randn(128, 256), "gptq_int4")
    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(256, 128, bias=False))
    renamed = _gptq_checkpoint(q, "model.0", v1=False)
    with pytest.raises(InvalidInputError, match=r"none of the model's 1 nn.Linear layers \(e.g. \['0'\]\) has a "
                                                r"quantized weight .*'<layer>.qweight'"):
        load_quantized_linears(model, renamed, config)
    tensors = {k.removeprefix("model."): v for k, v in renamed.items()} | {"0.bias": torch.randn(128)}
    with pytest.raises(InvalidInputError, match="0 has no bias in the model and the checkpoint has a '0.bias'"):
        load_quantized_linears(model, tensors, config)
    with pytest.raises(InvalidInputError, match="compressed-tensors format='float-quantized'"):
        load_quantized_linears(model, tensors, {"quant_method": "compressed-tensors", "format": "float-quantized",
                                                "config_groups": {"g": {"weights": {"type": "float"}}}})


def test_pack_under_a_meta_default_device_leaves_no_meta_table_behind() -> None:
    from humming.core import codec

    for cached in (packing._byte_tables, codec._rounding_table, codec._decoded_codes):
        cached.cache_clear()
    q = quantized.quantize(torch.randn(128, 256), "mxfp4")
    x = torch.randn(8)
    with torch.device("meta"):  # accelerate's init_empty_weights(include_buffers=True) builds models this way
        inside = packing.pack(q, "bf16")
        assert codec.encode(x, "e4m3").device.type == "cpu"
    outside = packing.pack(q, "bf16")
    assert inside.data.device.type == "cpu" and torch.equal(inside.data, outside.data)


def test_a_format_that_quantizes_activations_runs_weight_only_and_says_so() -> None:
    # fp8_block is W8A8 (e4m3 activations per 128); the dense kernels take 16-bit activations, so the layer is W8A16
    # on fp8_block's weights: a warning names it (vLLM warns the same way when it serves an FP8 checkpoint weight-only)
    import warnings

    from humming.core import presets
    from humming.core.formats import QuantFormat

    linear = nn.Linear(256, 128)
    with pytest.warns(UserWarning, match=r"fp8_block quantizes activations to e4m3.*keep bf16 activations"):
        layer = QuantLinear.from_linear(linear, "fp8_block", activation="bf16")
    assert layer.packed.format == presets.get("fp8_block").weight
    q = quantized.quantize(linear.weight.detach(), "fp8_block")
    with pytest.warns(UserWarning, match="fp8_block quantizes activations"):
        QuantLinear.from_quantized(q, activation="f16")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the weight format alone, and 16-bit presets, say nothing
        QuantLinear.from_linear(linear, QuantFormat(presets.get("fp8_block").weight))
        QuantLinear.from_linear(linear, "fp8_channel_w8a16")
        quantize_linears(nn.Sequential(nn.Linear(256, 128)), "gptq_int4")
    with pytest.warns(UserWarning) as seen:  # once for a model, pointing at the caller's line
        quantize_linears(nn.Sequential(nn.Linear(256, 128), nn.Linear(128, 64)), "fp8_block")
    assert len(seen) == 1 and seen[0].filename == __file__


def test_multihead_attentions_out_proj_stays_a_float_layer() -> None:
    # nn.MultiheadAttention reads out_proj.weight / .bias as tensors instead of calling the layer: a QuantLinear there
    # broke the model at its first forward. quantize_linears leaves it (and says so); a checkpoint quantizing it is
    # refused before anything changes.
    layer = nn.TransformerEncoderLayer(256, 4, 512, batch_first=True)
    with pytest.warns(UserWarning, match=r"self_attn.out_proj left as they are: their nn.MultiheadAttention"):
        names = quantize_linears(layer, "gptq_int4")
    assert names == ["linear1", "linear2"] and type(layer.self_attn.out_proj) is not QuantLinear
    x = torch.randn(2, 8, 256)
    layer.self_attn(x, x, x)  # reads out_proj.weight (a QuantLinear has none: AttributeError before)


def test_a_layer_on_the_meta_device_is_refused_by_name() -> None:
    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(256, 256))
    with pytest.raises(InvalidInputError, match=r"0 \(256 -> 256\): QuantLinear: the layer's weight is on the meta "
                                                r"device.*load_quantized_linears"):
        quantize_linears(model, "gptq_int4")
