"""The PPU claim rule: simulated CUDA driver answers are claimed by name or SDK, out-ranking NVIDIA's generic claim."""

from __future__ import annotations

import importlib
import random

import pytest

import humming.devices.thead_ppu as thead_plugin
from humming.capabilities.model import DeviceCapabilities, ExecutionLimits, MemoryFeatures, Target
from humming.devices.device import DeviceMatch, RawDevice
from humming.devices.hookspecs import API_VERSION, hookimpl
from humming.devices.manager import DeviceManager
from humming.devices.thead_ppu import archs, detect, skus

NVIDIA_GENERIC = 10  # the NVIDIA plugin's documented specificity for a claim by compute capability alone
SDK_ENV = {"PPU_SDK": "/opt/simulated/PPU_SDK"}


def _nvidia_plugin():
    """The NVIDIA plugin module when this checkout has it (another helper writes it), else None."""
    try:
        module = importlib.import_module("humming.devices.nvidia")
    except ImportError:
        return None
    return module if hasattr(module, "humming_probe_device") else None


def raw(name: str, cc: tuple[int, int] | None = (8, 0), api: str = "cuda") -> RawDevice:
    rng = random.Random(name)
    return RawDevice(api=api, index=rng.randrange(8), name=name, compute_capability=cc,
                     attributes={"sm_count": rng.randrange(7, 200), "total_memory": rng.randrange(1, 97) * 2**30})


@pytest.mark.parametrize("name,env,specificity,arch,sku", [
    ("PPU-ZW810E", {}, 100, "ppu-810e", "Zhenwu 810E"),
    ("PPU-ZW810E", SDK_ENV, 120, "ppu-810e", "Zhenwu 810E"),
    ("ZW810E", {}, 100, "ppu-810e", "Zhenwu 810E"),
    ("ppu zw810e", {}, 100, "ppu-810e", "Zhenwu 810E"),  # case and separators do not matter
    ("PPU-ZW-M890", {}, 100, "ppu-m890", "Zhenwu M890"),
    ("ZW-M890", SDK_ENV, 120, "ppu-m890", "Zhenwu M890"),
])
def test_a_ppu_name_claims_the_device_and_names_its_sku(name, env, specificity, arch, sku):
    match = detect.probe(raw(name), env)
    assert match is not None and match.specificity == specificity
    assert match.capabilities.target.arch == arch and match.sku is not None and match.sku.name == sku
    assert name in match.evidence
    assert ("PPU_SDK" in match.evidence) == bool(env)


def test_the_sdk_with_a_cc80_ppu_model_code_claims_it_below_a_name_prefix_but_above_nvidia():
    match = detect.probe(raw("810E", (8, 0)), SDK_ENV)
    assert match is not None and match.specificity == 50
    assert NVIDIA_GENERIC < match.specificity < 100
    assert "PPU_SDK=/opt/simulated/PPU_SDK" in match.evidence and "8.0" in match.evidence
    assert "'810E' is the PPU model code" in match.evidence
    unknown = detect.probe(raw("PPU-ZW990X", (8, 0)), SDK_ENV)  # a prefix is a PPU signal, whatever the model
    assert unknown is not None and unknown.specificity == 120 and unknown.sku is None
    assert match.sku is not None and match.sku.name == "Zhenwu 810E" and match.capabilities is archs.CAPS_810E


@pytest.mark.parametrize("name", ["A100-SXM4-40GB", "A100-PCIE-40GB", "A800-SXM4-80GB", "A30", "Accelerator 0"])
def test_the_sdk_never_claims_a_cc80_gpu_whose_name_merely_lacks_nvidia(name):
    # Older drivers name an A100 'A100-SXM4-40GB' (Paddle's docstring: _gpuDeviceProperties(name='A100-SXM4-40GB',
    # major=8, minor=0, ...)): no NVIDIA in the name is no evidence of a PPU.
    assert detect.probe(raw(name, (8, 0)), SDK_ENV) is None


@pytest.mark.skipif(_nvidia_plugin() is None, reason="humming.devices.nvidia has no hookimpls in this checkout yet")
def test_an_a100_named_by_an_older_driver_stays_sm80_next_to_the_ppu_sdk():
    a100 = raw("A100-SXM4-40GB")
    m = DeviceManager(autoload=False, plugins=[("thead_ppu", thead_plugin), ("nvidia", _nvidia_plugin())],
                      raw_devices=[a100], env=SDK_ENV)
    (dev,) = m.devices()
    assert dev.plugin == "nvidia" and dev.target.arch == "sm_80"


@pytest.mark.parametrize("name,cc,env,why", [
    ("NVIDIA H200", (9, 0), {}, "no evidence at all"),
    ("Accelerator 0", (8, 0), {}, "CC 8.0 alone is what an A100 reports"),
    ("Accelerator 0", (9, 0), SDK_ENV, "the SDK is set but the device does not report CC 8.0"),
    ("NVIDIA A100-SXM4-80GB", (8, 0), SDK_ENV, "an NVIDIA-named device next to an installed SDK"),
    ("Tesla ZW810E", (8, 0), {}, "the model code inside a name is not a prefix: no substring matching"),
    ("810E", (8, 0), {}, "a bare model code without the SDK"),
    ("Tesla ZW810E", (8, 0), SDK_ENV, "the SDK with a model code inside a name: no substring matching"),
    ("PPU-ZW810E", (8, 0), {"PPU_SDK": "  "}, None),  # a blank PPU_SDK is not the SDK (the name still claims)
])
def test_no_evidence_means_no_claim(name, cc, env, why):
    match = detect.probe(raw(name, cc), env)
    if why is None:
        assert match is not None and match.specificity == 100 and "PPU_SDK" not in match.evidence
    else:
        assert match is None, why


def test_devices_from_other_drivers_are_never_claimed():
    assert detect.probe(raw("PPU-ZW810E", api="example"), SDK_ENV) is None


def test_an_unknown_ppu_model_is_claimed_with_the_810e_table_and_says_so():
    match = detect.probe(raw("PPU-ZW990X", (8, 9)), {})
    assert match is not None and match.specificity == 100
    assert match.sku is None and match.capabilities is archs.CAPS_810E
    (note,) = match.notes
    assert "'ZW990X'" in note and "conformance" in note


def test_the_claim_table_is_ordered_and_every_row_beats_nvidia():
    specs = [r.specificity for r in detect.RULES]
    assert specs == sorted(specs, reverse=True) and len(set(specs)) == len(specs)
    assert min(specs) > NVIDIA_GENERIC
    both = next(r for r in detect.RULES if r.name_prefix and r.sdk_with_cc)
    assert both.specificity == max(specs)


def test_sku_from_name_is_an_exact_model_code_match():
    assert skus.sku_for_name("PPU-ZW810E") is skus.ZW810E
    assert skus.sku_for_name("ZW810E") is skus.ZW810E
    assert skus.sku_for_name("PPU-ZW810EX") is None
    assert skus.sku_for_name("ZW810") is None
    assert archs.CAPS_810E.sku("PPU-ZW810E") is skus.ZW810E.facts


def _generic_cuda_plugin(specificity: int = NVIDIA_GENERIC):
    """A stand-in for the NVIDIA plugin's generic claim: any CUDA device with CC 8.0 is sm_80-like."""
    sm80_like = DeviceCapabilities(target=Target("stand-in", "sm_80"), name="generic CC 8.0 stand-in", mma=(),
                                   memory=MemoryFeatures(), limits=ExecutionLimits())

    class Generic:
        @hookimpl
        def humming_api_version(self):
            return API_VERSION

        @hookimpl
        def humming_declare_targets(self, register):
            register(sm80_like)

        @hookimpl
        def humming_probe_device(self, raw, env):
            if raw.api == "cuda" and raw.compute_capability == (8, 0):
                return DeviceMatch(specificity, sm80_like, evidence="compute capability 8.0")
            return None

    return Generic()


@pytest.mark.parametrize("env", [{}, SDK_ENV], ids=["no-sdk", "sdk"])
def test_the_manager_gives_a_ppu_to_thead_whatever_the_load_order(env):
    ppu = raw("PPU-ZW810E")
    generic = _generic_cuda_plugin()
    for order in ((("thead_ppu", thead_plugin), ("generic", generic)),
                  (("generic", generic), ("thead_ppu", thead_plugin))):
        m = DeviceManager(autoload=False, plugins=order, raw_devices=[ppu], env=env)
        (dev,) = m.devices()
        assert dev.plugin == "thead_ppu" and dev.target == archs.PPU_810E and dev.vendor == "thead"
        assert dev.sku is not None and dev.sku.name == "Zhenwu 810E"
        assert any("over generic (10)" in n for n in dev.notes)


def test_an_a100_next_to_the_ppu_sdk_stays_with_the_generic_plugin():
    a100 = raw("NVIDIA A100-SXM4-80GB")
    m = DeviceManager(autoload=False, plugins=[("thead_ppu", thead_plugin), ("generic", _generic_cuda_plugin())],
                      raw_devices=[a100], env=SDK_ENV)
    (dev,) = m.devices()
    assert dev.plugin == "generic"


@pytest.mark.skipif(_nvidia_plugin() is None, reason="humming.devices.nvidia has no hookimpls in this checkout yet")
@pytest.mark.parametrize("env", [{}, SDK_ENV], ids=["no-sdk", "sdk"])
def test_thead_out_ranks_the_real_nvidia_plugin_for_a_ppu(env):
    nvidia_plugin = _nvidia_plugin()
    ppu = raw("PPU-ZW810E")
    nv = nvidia_plugin.humming_probe_device(raw=ppu, env=env)
    ours = thead_plugin.humming_probe_device(raw=ppu, env=env)
    assert ours is not None and ours.capabilities.target == archs.PPU_810E
    assert nv is not None and nv.capabilities.target.arch == "sm_80"  # CC 8.0: NVIDIA would take it as an A100
    assert ours.specificity > nv.specificity
    for order in ((("nvidia", nvidia_plugin), ("thead_ppu", thead_plugin)),
                  (("thead_ppu", thead_plugin), ("nvidia", nvidia_plugin))):
        (dev,) = DeviceManager(autoload=False, plugins=order, raw_devices=[ppu], env=env).devices()
        assert dev.plugin == "thead_ppu" and dev.target.arch == "ppu-810e"


def test_the_plugin_loads_cleanly_and_declares_both_targets():
    m = DeviceManager(autoload=False, plugins=[("thead_ppu", thead_plugin)], raw_devices=[], strict=True)
    assert [c.target.arch for c in m.catalog()] == ["ppu-810e", "ppu-m890"]
    (status,) = m.statuses()
    assert status.ok and status.api_version == API_VERSION and status.targets == ["ppu-810e", "ppu-m890"]
    assert not hasattr(thead_plugin, "humming_enumerate_devices")  # the CUDA driver's devices are NVIDIA's to list
