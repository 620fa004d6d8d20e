"""humming.precompile without a GPU: which kernels a layer needs over M, that they land in the cache so that later
plans compile nothing, and its errors. The GPU case (kernels loaded, a forward compiles nothing) is marked gpu."""

from __future__ import annotations

import random

import pytest
import torch

import humming
from humming import knobs
from humming.cli import main
from humming.core import build, cache, dtypes, presets
from humming.core.build import compile_spec
from humming.core.packing import pack
from humming.core.quantized import quantize
from humming.devices.nvidia import archs, tuning
from humming.errors import InvalidInputError, UnsupportedError
from humming.nn import QuantLinear
from humming.warmup import LayerShape, kernel_specs, layer_shapes, precompile

W4 = presets.get("gptq_int4").weight


@pytest.mark.parametrize("arch, sms", [("sm_90a", 132), ("sm_80", 108), ("sm_120a", 84)])
@pytest.mark.parametrize("preset", ["gptq_int4", "mxfp4", "fp8_channel_w8a16"])
def test_the_kernels_found_are_those_planning_every_m_finds(arch: str, sms: int, preset: str) -> None:
    caps = archs.capabilities(arch)
    seed = random.randrange(1 << 30)
    draw = random.Random(seed)
    for n, k in ((28672, 8192), (3072, 1024)):
        shape = LayerShape(n, k, presets.get(preset).weight, dtypes.bf16, dtypes.bf16)
        found = kernel_specs(shape, caps, tuning.TUNER, sms)
        ms = [*range(1, 1025), *draw.sample(range(1025, 65537), 150), 65536]
        every = {tuning.TUNER.plan(shape.problem(m), caps, sms).spec for m in ms}
        assert set(found) == every, f"seed {seed}, {arch} {preset} {n} x {k}"
        assert len(found) == len(set(found))
    small = kernel_specs(LayerShape(4096, 4096, W4, dtypes.bf16, dtypes.bf16), caps, tuning.TUNER, sms, max_m=16)
    assert {type(s).__name__ for s in small} == {"GemmDenseSpec"}


def test_layer_shapes_come_from_modules_weights_and_shapes_once_each() -> None:
    def layer(n: int, k: int, preset: str = "gptq_int4", act: str = "bf16") -> QuantLinear:
        return QuantLinear.from_quantized(quantize(torch.randn(n, k), presets.get(preset)), activation=act)

    model = torch.nn.Sequential(layer(256, 512), torch.nn.ReLU(), layer(512, 256), layer(256, 512))
    extra = pack(quantize(torch.randn(128, 256), presets.get("mxfp4")), "f16")
    given = LayerShape(64, 128, W4, dtypes.f16, dtypes.bf16)
    shapes = layer_shapes([model, extra, given, layer(256, 512, act="f16")])
    assert [(s.n, s.k, s.activation, s.out) for s in shapes] == [
        (256, 512, dtypes.bf16, dtypes.bf16), (512, 256, dtypes.bf16, dtypes.bf16), (128, 256, dtypes.f16, dtypes.f16),
        (64, 128, dtypes.f16, dtypes.bf16), (256, 512, dtypes.f16, dtypes.f16)]
    assert shapes[2].weight == presets.get("mxfp4").weight
    for bad in ("gptq_int4", 3, torch.nn.Linear(4, 4).weight):
        with pytest.raises(InvalidInputError, match="cannot find layers"):
            layer_shapes(bad)
    with pytest.raises(InvalidInputError, match="no quantized layers"):
        precompile(torch.nn.Linear(8, 8), target="sm_80")


def test_precompile_for_a_target_fills_the_cache_and_later_plans_compile_nothing(tmp_path, monkeypatch) -> None:
    shape = LayerShape(4096, 2048, W4, dtypes.f16, dtypes.f16)
    caps = archs.capabilities("sm_80")
    with knobs.scope(HUMMING_CACHE_DIR=str(tmp_path)):
        cache.clear_memo()
        done = precompile([shape], target="sm_80", max_m=300, progress=False)
        assert done.target == "sm_80" and done.loaded_on is None and done.shapes == (shape,)
        assert set(done.specs) == set(kernel_specs(shape, caps, tuning.TUNER, 108, max_m=300))
        assert "kernels for 1 layer shapes on sm_80" in done.describe()
        assert cache.info().entries >= len(done.specs)

        def refuse(*args, **kwargs):
            raise AssertionError("a compile after precompile")

        monkeypatch.setattr(build, "_compile", refuse)
        for m in (1, 5, 16, 17, 64, 65, 128, 129, 300):
            compile_spec(tuning.TUNER.plan(shape.problem(m), caps, 108).spec)
        cache.clear_memo()  # from the disk cache alone, as a fresh process would
        for m in (1, 300):
            compile_spec(tuning.TUNER.plan(shape.problem(m), caps, 108).spec)


def test_precompile_refuses_what_it_cannot_do_before_compiling(monkeypatch) -> None:
    monkeypatch.setattr(build, "_compile", lambda *a, **k: pytest.fail("compiled"))
    bf16 = LayerShape(4096, 4096, W4, dtypes.bf16, dtypes.bf16)
    with pytest.raises(UnsupportedError, match=r"layer 4096 x 4096 .* cannot run on sm_75[\s\S]*f16 activations"):
        precompile([LayerShape(128, 128, W4, dtypes.f16, dtypes.f16), bf16], target="sm_75")
    with pytest.raises(InvalidInputError, match="not both"):
        precompile(bf16, target="sm_80", device=0)
    with pytest.raises(InvalidInputError, match="max_m=0"):
        precompile(bf16, target="sm_80", max_m=0)
    if not torch.cuda.is_available():
        with pytest.raises(InvalidInputError, match="no CUDA device here; pass target="):
            humming.precompile(bf16)


def test_cache_warm_compiles_a_presets_layers_for_a_target(capsys) -> None:
    assert main(["cache", "warm", "--target", "sm_80", "--weights", "gptq_int4", "--activations", "f16",
                 "--shape", "4096x2048", "--shape", "2048X4096", "--max-m", "64"]) == 0
    assert "kernels for 2 layer shapes on sm_80" in capsys.readouterr().out
    for args, message in ((["--shape", "4096x"], "expected NxK"), (["--shape", "0x64"], "expected NxK"),
                          (["--weights", "w4a8_int4", "--shape", "64x64"], "e4m3 activations")):
        argv = ["cache", "warm", "--target", "sm_80", "--weights", "gptq_int4", *args]
        if "--weights" in args:
            argv = ["cache", "warm", "--target", "sm_80", *args]
        assert main(argv) == 2
        assert message in capsys.readouterr().err


@pytest.mark.gpu
def test_after_precompile_a_layers_forwards_compile_nothing(monkeypatch) -> None:
    layer = QuantLinear.from_linear(torch.nn.Linear(1024, 640, device="cuda", dtype=torch.bfloat16), "gptq_int4")
    done = humming.precompile(torch.nn.Sequential(layer), max_m=256, progress=False)
    assert done.loaded_on == torch.cuda.current_device()
    monkeypatch.setattr(build, "_compile", lambda *a, **k: pytest.fail("compiled after precompile"))
    for m in (1, 9, 16, 33, 200):
        x = torch.randn(m, 1024, device="cuda", dtype=torch.bfloat16)
        assert layer(x).shape == (m, 640)
    torch.cuda.synchronize()
