"""Bad input to humming.gemm raises a clear InvalidInputError (value, rule, way out) before anything is compiled or
launched. Runs on the CPU: every rule but the device ones is checked before the device, and the launcher and the
compiler are replaced by functions that fail the test if reached."""

from __future__ import annotations

import pytest
import torch

import humming.ops as hg
from humming.core import dtypes, packing, presets, quantized
from humming.core.formats import Granularity, QuantFormat, ScaleSpec, WeightFormat, ZeroPointSpec
from humming.errors import InvalidInputError, UnsupportedError


@pytest.fixture(autouse=True)
def _no_launch(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("gemm reached the launcher with bad input")

    monkeypatch.setattr(hg, "launch", refuse)
    monkeypatch.setattr(hg.gemm_dense_op, "_impl", refuse)
    import humming.core.build as build

    monkeypatch.setattr(build, "compile_spec", refuse)


@pytest.fixture(scope="module")
def weight() -> packing.PackedWeight:
    q = quantized.quantize(torch.randn(96, 256), presets.get("gptq_int4"))
    return packing.pack(q, dtypes.bf16)


def x_for(w: packing.PackedWeight, m: int = 4, dtype: torch.dtype = torch.bfloat16) -> torch.Tensor:
    return torch.randn(m, w.shape[1]).to(dtype)


def test_a_wrong_activation_dtype_names_both_dtypes_and_the_fix(weight: packing.PackedWeight) -> None:
    with pytest.raises(InvalidInputError, match=r"x is f16 but the weight was packed for bf16.*activation=f16"):
        hg.gemm(x_for(weight, dtype=torch.float16), weight)
    with pytest.raises(InvalidInputError, match="allowed: torch.float16, torch.bfloat16"):
        hg.gemm(x_for(weight, dtype=torch.float32), weight)


def test_a_wrong_k_names_the_weight_shape(weight: packing.PackedWeight) -> None:
    with pytest.raises(InvalidInputError, match=r"last dimension must be K=256.*96 x 256"):
        hg.gemm(torch.randn(4, 255).to(torch.bfloat16), weight)


def test_a_non_contiguous_last_dimension_is_refused(weight: packing.PackedWeight) -> None:
    x = torch.randn(256, 4).to(torch.bfloat16).T
    with pytest.raises(InvalidInputError, match="contiguous"):
        hg.gemm(x, weight)


def test_bias_shape_dtype_and_layout_are_checked(weight: packing.PackedWeight) -> None:
    x = x_for(weight)
    with pytest.raises(InvalidInputError, match="N=96"):
        hg.gemm(x, weight, torch.zeros(95, dtype=torch.bfloat16))
    with pytest.raises(InvalidInputError, match="output dtype"):
        hg.gemm(x, weight, torch.zeros(96, dtype=torch.float16))
    with pytest.raises(InvalidInputError, match="contiguous"):
        hg.gemm(x, weight, torch.zeros(96, 2, dtype=torch.bfloat16)[:, 0])


def test_an_unknown_out_dtype_is_refused(weight: packing.PackedWeight) -> None:
    with pytest.raises(InvalidInputError, match="out_dtype"):
        hg.gemm(x_for(weight), weight, out_dtype=torch.float32)


def test_a_weight_packed_for_another_layout_is_refused_before_launch(weight: packing.PackedWeight) -> None:
    from dataclasses import replace

    other = replace(weight, layout="ppu16x64.v1")
    with pytest.raises(InvalidInputError, match=r"layout 'ppu16x64.v1'.*pack it again"):
        hg.gemm(x_for(weight), other)


def test_a_canonical_tensor_instead_of_a_packed_one_is_refused() -> None:
    q = quantized.quantize(torch.randn(64, 128), presets.get("gptq_int4"))
    with pytest.raises(InvalidInputError, match="PackedWeight"):
        hg.gemm(torch.randn(2, 128).to(torch.bfloat16), q)  # type: ignore[arg-type]


def test_k_that_is_not_a_multiple_of_8_is_refused_with_the_padding_advice() -> None:
    q = quantized.quantize(torch.randn(64, 100), QuantFormat(presets.get("fp8_channel_w8a16").weight))
    w = packing.pack(q, dtypes.f16)
    with pytest.raises(InvalidInputError, match="multiple of 8"):
        hg.gemm(torch.randn(2, 100).to(torch.float16), w)
    # A layer refuses when it is built, not at its first forward.
    from humming.nn import QuantLinear

    with pytest.raises(InvalidInputError, match=r"QuantLinear: K=100; .* multiple of 8: pad"):
        QuantLinear(w)
    with pytest.raises(InvalidInputError, match=r"QuantLinear: K=100"):
        QuantLinear.from_linear(torch.nn.Linear(100, 64), "fp8_channel_w8a16")


def test_cpu_tensors_are_refused_last_with_the_move(weight: packing.PackedWeight) -> None:
    with pytest.raises(InvalidInputError, match=r"x is on cpu.*\.cuda\(\)"):
        hg.gemm(x_for(weight), weight)


def test_float_zero_point_formats_are_unsupported_by_the_twin() -> None:
    from humming.core.formats import Granularity, ScaleSpec, WeightFormat, ZeroPointSpec
    from humming.kernels.dense_decode import DecodeParams

    fmt = WeightFormat(dtypes.u4, ScaleSpec(Granularity.GROUP, dtypes.f16, 128), ZeroPointSpec.FLOAT)
    with pytest.raises(UnsupportedError, match="float zero points"):
        DecodeParams.of(fmt)


@pytest.mark.parametrize("preset", ["gptq_int4", "fp8_channel_w8a16", "nvfp4_w4a16"])
def test_casting_a_model_leaves_a_quant_linears_packed_buffers_as_packed(preset: str) -> None:
    # model.half() / .float() / .to(dtype) cast every floating buffer; the packed scales (activation dtype), channel
    # and global scales (f32) and the bias would then be read by the kernel as the dtype pack stored: silently wrong
    # outputs (f16 bits as bf16, bf16 as f32). They keep their dtypes and bits; the casts still reach other layers.
    from humming.nn import QuantLinear

    layer = QuantLinear.from_linear(torch.nn.Linear(256, 128), preset)
    before = {name: t.clone() for name, t in layer.named_buffers()}
    model = torch.nn.Sequential(layer, torch.nn.Linear(128, 8))
    model.half()
    assert model[1].weight.dtype is torch.float16
    model.float()
    model.to(torch.bfloat16)
    model.to("cpu", torch.float16)
    after = dict(layer.named_buffers())
    assert after.keys() == before.keys()
    for name, t in before.items():
        assert after[name].dtype is t.dtype and torch.equal(after[name], t), name


def test_a_quant_linear_loads_only_a_checkpoint_packed_its_own_way() -> None:
    # The packing (format, activation dtype, shape, scale shift, layout) travels in the state dict as _extra_state. A
    # checkpoint packed for bf16 activations loaded into an f16 layer used to load bit for bit where every packed part
    # is uint8 (MXFP4 without bias): e2m1 codes swizzled for bf16, read as f16's, silently wrong outputs.
    import io

    from humming.nn import QuantLinear

    def layer(preset: str, act: str, bias: bool = False, n: int = 128) -> QuantLinear:
        return QuantLinear.from_linear(torch.nn.Linear(256, n, bias=bias), preset, activation=act)

    saved = layer("mxfp4", "bf16").state_dict()
    assert "_extra_state" in saved and saved["_extra_state"].dtype is torch.uint8
    buf = io.BytesIO()
    torch.save(saved, buf)
    buf.seek(0)
    same = layer("mxfp4", "bf16")
    same.load_state_dict(torch.load(buf, weights_only=True))
    assert torch.equal(same.data, saved["data"]) and torch.equal(same.scales, saved["scales"])
    f16 = layer("mxfp4", "f16")
    kept = {name: t.clone() for name, t in f16.state_dict().items()}
    with pytest.raises(InvalidInputError, match=r"packed another way .*activation 'bf16' there, 'f16' here"):
        f16.load_state_dict(saved)
    assert all(torch.equal(t, kept[name]) for name, t in f16.state_dict().items()), "a refused load changed the layer"
    with pytest.raises(InvalidInputError, match=r"format .* there"):
        layer("mxint4", "bf16").load_state_dict(saved)
    with pytest.raises((InvalidInputError, RuntimeError), match=r"f16|float16"):
        layer("gptq_int4", "f16", bias=True).load_state_dict(layer("gptq_int4", "bf16", bias=True).state_dict())
    with pytest.raises(InvalidInputError, match="not one humming wrote"):
        layer("mxfp4", "bf16").load_state_dict(dict(saved, _extra_state=torch.tensor([1, 2, 3], dtype=torch.uint8)))


def test_a_checkpoint_brings_its_scale_shift_and_global_scale_whatever_the_layer_was_built_from() -> None:
    # Built from placeholder weights and then loaded (the usual way to restore a model), a layer takes the checkpoint's
    # data-dependent scale shift, and the global scale that carries it: with strict=False a gscale left behind would
    # scale every output by 2^e.
    from humming.nn import QuantLinear

    fmt = QuantFormat(WeightFormat(dtypes.s4, ScaleSpec(Granularity.GROUP, dtypes.bf16, 128), ZeroPointSpec.NONE))

    def layer(magnitude: float) -> QuantLinear:
        return QuantLinear.from_quantized(quantized.quantize(torch.randn(128, 256) * magnitude, fmt), activation="f16")

    tiny, plain = layer(1e-7), layer(1.0)
    assert tiny.gscale is not None and tiny.packed.scale_shift != 0 and plain.gscale is None
    for strict in (True, False):
        into = layer(1.0)
        into.load_state_dict(tiny.state_dict(), strict=strict)
        assert into.packed.scale_shift == tiny.packed.scale_shift and torch.equal(into.gscale, tiny.gscale)
        assert torch.equal(packing.unpack(into.packed).scales, packing.unpack(tiny.packed).scales)
        back = layer(1e-7)
        back.load_state_dict(plain.state_dict(), strict=strict)
        assert back.gscale is None and back.packed.scale_shift == 0
        assert torch.equal(packing.unpack(back.packed).scales, packing.unpack(plain.packed).scales)


def test_a_packed_weight_cast_or_moved_in_parts_is_refused(weight: packing.PackedWeight) -> None:
    # The kernel reads each part's bytes in the dtype and shape pack() made: a cast (PackedWeight.to(dtype) used to
    # turn the codes into their values), a reshaped or a non-contiguous part would be read as something else.
    from dataclasses import replace

    x = x_for(weight)
    with pytest.raises(InvalidInputError, match=r"keeps its dtypes; pass a device"):
        weight.to(torch.bfloat16)
    with pytest.raises(InvalidInputError, match=r"data is torch.bfloat16 .*pack\(\) makes torch.uint8"):
        hg.gemm(x, replace(weight, data=weight.data.to(torch.bfloat16)))
    with pytest.raises(InvalidInputError, match=r"scales is torch.float32 .*pack\(\) makes torch.bfloat16"):
        hg.gemm(x, replace(weight, scales=weight.scales.float()))
    with pytest.raises(InvalidInputError, match=r"zeros is torch.bfloat16 \[1, "):
        hg.gemm(x, replace(weight, zeros=weight.zeros[:1]))
    with pytest.raises(InvalidInputError, match="has no scales, which its format"):
        hg.gemm(x, replace(weight, scales=None))
    with pytest.raises(InvalidInputError, match="scales is not contiguous"):
        hg.gemm(x, replace(weight, scales=weight.scales.T.contiguous().T))
    with pytest.raises(InvalidInputError, match=r"scales is on meta, its data on cpu"):
        hg.gemm(x, replace(weight, scales=weight.scales.to("meta")))


def test_a_quant_linear_refuses_a_cast_of_its_integer_buffers() -> None:
    # Module.type(dtype) casts every tensor, the packed codes included (by value): refused at the cast.
    from humming.nn import QuantLinear

    layer = QuantLinear.from_quantized(quantized.quantize(torch.randn(64, 128), "gptq_int4"), activation="bf16")
    with pytest.raises(InvalidInputError, match=r"Module.type.*keeps its packed dtypes"):
        layer.type(torch.float16)
    assert layer.data.dtype is torch.uint8 and layer.scales.dtype is torch.bfloat16
    layer.half()  # a floating cast leaves the packed parts alone, as before
    assert layer.data.dtype is torch.uint8 and layer.scales.dtype is torch.bfloat16


def test_a_quant_linear_on_another_device_says_to_move_the_layer() -> None:
    # A QuantLinear has no .weight to move: the advice names the layer (x here a fake CUDA tensor: no GPU needed).
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

    from humming.nn import QuantLinear

    layer = QuantLinear.from_quantized(quantized.quantize(torch.randn(64, 128), "gptq_int4"), activation="bf16")
    mode = FakeTensorMode()
    x = FakeTensor(mode, torch.empty(2, 128, dtype=torch.bfloat16, device="meta"), torch.device("cuda", 0))
    with mode, pytest.raises(InvalidInputError, match=r"weight is on cpu; move the layer with layer.to\('cuda:0'\)"):
        layer(x)


def test_a_row_stride_past_the_kernels_32_bit_lda_is_refused() -> None:
    # lda is an s32 kernel parameter: a row stride of 2^31 or more would wrap (an illegal address on the GPU).
    x = torch.empty(0, dtype=torch.bfloat16, device="meta").as_strided((2, 512), (2**31 + 8, 1))
    with pytest.raises(InvalidInputError, match=r"row stride is 2147483656 elements; .* under 2\^31: call x.contiguous"):
        hg._check_launchable(x)
