"""Detection: simulated CUDA driver answers become RawDevices, and RawDevices become the right target and part."""

from __future__ import annotations

import random
import types
from dataclasses import dataclass, field

import pytest
from cuda.bindings import driver as real_driver

import humming.devices.nvidia as nvidia_plugin
from humming.core import dtypes as dt
import humming.devices.thead_ppu as ppu_plugin
from humming.devices.device import DeviceDecline, DeviceMatch, RawDevice
from humming.devices.manager import DeviceManager
from humming.devices.nvidia import archs, detect

OK = real_driver.CUresult.CUDA_SUCCESS
ATTR = real_driver.CUdevice_attribute


@dataclass
class FakeGpu:
    name: str
    cc: tuple[int, int]
    sms: int
    memory: int = 80 << 30
    extra: dict = field(default_factory=dict)


class FakeDriver:
    """The few cuda.bindings.driver calls detect makes, answering from a list of FakeGpus."""

    CUresult = real_driver.CUresult
    CUdevice_attribute = ATTR

    def __init__(self, gpus, init_result=OK, init_raises=None):
        self.gpus, self.init_result, self.init_raises = gpus, init_result, init_raises

    def cuInit(self, flags):
        if self.init_raises:
            raise self.init_raises
        return (self.init_result,)

    def cuDeviceGetCount(self):
        return OK, len(self.gpus)

    def cuDeviceGet(self, index):
        return OK, index

    def cuDeviceGetName(self, length, dev):
        return OK, self.gpus[dev].name.encode().ljust(length, b"\0")

    def cuDeviceGetAttribute(self, attr, dev):
        gpu = self.gpus[dev]
        values = {ATTR.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: gpu.cc[0],
                  ATTR.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: gpu.cc[1],
                  ATTR.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: gpu.sms,
                  ATTR.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: 50 << 20,
                  ATTR.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: 227 << 10,
                  ATTR.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: 228 << 10,
                  ATTR.CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: 2_619_000,
                  ATTR.CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: 6144, **gpu.extra}
        if attr in values:
            return OK, values[attr]
        return real_driver.CUresult.CUDA_ERROR_INVALID_VALUE, 0

    def cuDeviceTotalMem(self, dev):
        return OK, self.gpus[dev].memory

    def cuDeviceGetUuid(self, dev):
        return OK, types.SimpleNamespace(bytes=bytes(range(16)))


def enumerate_fake(*gpus, **kw):
    found = []
    detect.enumerate_devices(found.append, driver=FakeDriver(list(gpus), **kw))
    return found


def manager(raws, *plugins):
    return DeviceManager(autoload=False, plugins=plugins or (("nvidia", nvidia_plugin),), raw_devices=raws,
                         strict=True)


def test_an_h200_is_detected_as_sm90a_with_its_part_and_132_sms():
    (raw,) = enumerate_fake(FakeGpu("NVIDIA H200", (9, 0), 132, memory=150_754_820_096))
    assert raw.api == "cuda" and raw.compute_capability == (9, 0)
    assert raw.attributes["sm_count"] == 132 and raw.attributes["memory_bytes"] == 150_754_820_096
    assert raw.attributes["shared_memory_per_block_optin"] == 227 * 1024 and raw.attributes["l2_bytes"] == 50 << 20
    assert raw.uuid == "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f"
    (dev,) = manager([raw]).devices()
    assert dev.target.arch == "sm_90a" and dev.sku.name == "H200 SXM" and dev.sku.sm_count == 132
    assert dev.plugin == "nvidia" and "compute capability 9.0" in dev.evidence and dev.notes == ()
    assert "132 SMs" in dev.describe()


def test_the_driver_name_selects_the_part_exactly_h20_is_not_h200():
    raws = enumerate_fake(FakeGpu("NVIDIA H20", (9, 0), 78), FakeGpu("NVIDIA H200", (9, 0), 132))
    h20, h200 = manager(raws).devices()
    assert (h20.sku.name, h200.sku.name) == ("H20", "H200 SXM")
    assert h20.sku.sm_count == 78


def test_an_unknown_name_with_cc_9_0_still_works_with_a_note():
    name = f"NVIDIA Prototype {random.randint(1000, 9999)}"
    (dev,) = manager(enumerate_fake(FakeGpu(name, (9, 0), 100))).devices()
    assert dev.target.arch == "sm_90a" and dev.sku is None
    assert dev.capabilities.has_mma(a=dt.e4m3, b=dt.e4m3)
    assert any(name in n and "not a known sm_90a part" in n for n in dev.notes), dev.notes


@pytest.mark.parametrize("name, cc, arch, part", [
    ("NVIDIA GeForce RTX 5090", (12, 0), "sm_120a", "GeForce RTX 5090"),
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", (12, 0), "sm_120a", "RTX PRO 6000 Blackwell"),
    ("NVIDIA GB10", (12, 1), "sm_121a", "DGX Spark (GB10)"),
    ("NVIDIA B300 SXM6 AC", (10, 3), "sm_103a", "B300"),
    ("NVIDIA Thor", (11, 0), "sm_110a", "Jetson AGX Thor T5000"),
    ("Tesla T4", (7, 5), "sm_75", "T4"),
])
def test_compute_capability_picks_the_target_and_name_the_part(name, cc, arch, part):
    sms = random.randint(20, 200)
    (dev,) = manager(enumerate_fake(FakeGpu(name, cc, sms))).devices()
    assert dev.target.arch == arch and dev.sku.name == part and dev.raw.attributes["sm_count"] == sms


@pytest.mark.parametrize("cc, arch", [((8, 8), "sm_87"), ((8, 1), "sm_80"), ((7, 6), "sm_75")])
def test_an_unknown_minor_uses_the_nearest_older_plain_target_of_its_major_at_lower_specificity(cc, arch):
    raw = RawDevice(api="cuda", index=0, name=f"NVIDIA Future {cc[0]}.{cc[1]}", compute_capability=cc)
    match = detect.probe(raw, {})
    assert isinstance(match, DeviceMatch) and match.capabilities.target.arch == arch
    assert match.specificity == detect.SPECIFICITY_NEAREST < detect.SPECIFICITY
    assert any(f"{cc[0]}.{cc[1]}" in n and "nearest older known target" in n for n in match.notes)
    (dev,) = manager([raw]).devices()
    assert dev.target.arch == arch


@pytest.mark.parametrize("cc, nearest", [((9, 1), "sm_90a"), ((10, 2), "sm_100a"), ((10, 5), "sm_103a"),
                                         ((11, 1), "sm_110a"), ((12, 2), "sm_121a"), ((12, 3), "sm_121a"),
                                         ((13, 0), None), ((14, 0), None)])
def test_an_unknown_cc_whose_only_older_targets_cannot_load_is_declined_with_the_reason(cc, nearest):
    # An 'a' cubin runs on its own architecture only (PTX ISA, 'Architecture-specific features'), and any cubin only
    # on its own major (CUDA Programming Guide, 'Binary Compatibility'): no target humming has can run here.
    raw = RawDevice(api="cuda", index=0, name=f"NVIDIA Future {cc[0]}.{cc[1]}", compute_capability=cc)
    decline = detect.probe(raw, {})
    assert isinstance(decline, DeviceDecline), decline
    with pytest.raises(LookupError) as err:
        detect.target_for(cc)
    reason = decline.reason
    assert reason == str(err.value)
    assert f"compute capability {cc[0]}.{cc[1]}" in reason and f"sm_{cc[0]}{cc[1]}" in reason
    assert "humming 0.1.0" in reason and "NVRTC" in reason
    if nearest is not None:
        assert f"{nearest}, the nearest older target of major {cc[0]}" in reason and "is arch-specific" in reason
    else:
        assert f"no target of major {cc[0]}" in reason
    assert "sm_110a" not in reason or nearest == "sm_110a"  # 10.x never falls to Thor through its 10.1 alias
    m = manager([raw])
    assert m.devices() == [] and m.unclaimed == [raw]
    assert reason in m.unclaimed_reason(raw)


def test_the_legacy_thor_alias_is_never_a_nearest_target():
    assert (10, 1) in archs.LEGACY_CC and archs.BY_CC[(10, 1)] == "sm_110a"  # the alias itself still claims Thor
    decline = detect.probe(RawDevice(api="cuda", index=0, name="NVIDIA Future 10.2", compute_capability=(10, 2)), {})
    assert isinstance(decline, DeviceDecline) and "sm_100a" in decline.reason


@pytest.mark.parametrize("cc, arch", sorted(archs.BY_CC.items()))
def test_every_listed_compute_capability_keeps_its_target_at_full_specificity(cc, arch):
    match = detect.probe(RawDevice(api="cuda", index=0, name="x", compute_capability=cc), {})
    assert match.capabilities.target.arch == arch and match.specificity == detect.SPECIFICITY


@pytest.mark.parametrize("name, cc", [("Tesla V100-SXM2-16GB", (7, 0)), ("Tesla P100-PCIE-16GB", (6, 0))])
def test_a_pre_turing_gpu_is_left_unclaimed_with_the_reason(name, cc):
    raw = RawDevice(api="cuda", index=0, name=name, compute_capability=cc)
    decline = detect.probe(raw, {})
    assert isinstance(decline, DeviceDecline)
    assert "older than every NVIDIA target humming has" in decline.reason and "sm_75" in decline.reason
    m = manager([raw])
    assert m.devices() == [] and m.unclaimed == [raw]
    assert decline.reason in m.unclaimed_reason(raw)


def test_other_drivers_devices_are_not_claimed():
    assert detect.probe(RawDevice(api="rocm", index=0, name="AMD", compute_capability=(9, 0)), {}) is None
    assert detect.probe(RawDevice(api="cuda", index=0, name="?", compute_capability=None), {}) is None


def test_a_cut_down_part_keeps_the_driver_sm_count_and_says_so():
    (dev,) = manager(enumerate_fake(FakeGpu("NVIDIA H100 80GB HBM3", (9, 0), 66))).devices()
    assert dev.raw.attributes["sm_count"] == 66 and dev.sku.sm_count == 132
    assert any("66 SMs" in n for n in dev.notes)


@pytest.mark.parametrize("kw", [{"init_raises": RuntimeError("libcuda.so.1: cannot open shared object file")},
                                {"init_result": real_driver.CUresult.CUDA_ERROR_NO_DEVICE},
                                {"init_result": real_driver.CUresult.CUDA_ERROR_SYSTEM_DRIVER_MISMATCH}])
def test_no_driver_or_no_gpu_means_no_devices_and_no_exception(kw):
    assert enumerate_fake(FakeGpu("NVIDIA H200", (9, 0), 132), **kw) == []


def test_no_gpu_count():
    assert enumerate_fake() == []


def test_the_real_driver_on_a_machine_without_a_gpu_lists_nothing(monkeypatch):
    found = []
    nvidia_plugin.humming_enumerate_devices(register=found.append)  # must not raise with or without a GPU
    assert all(r.api == "cuda" and r.compute_capability for r in found)
    monkeypatch.setattr(detect, "_load_driver", lambda: None)  # cuda.bindings missing
    found.clear()
    detect.enumerate_devices(found.append)
    assert found == []


def test_a_ppu_reporting_cc_8_0_goes_to_the_ppu_plugin_not_to_sm80():
    raw = RawDevice(api="cuda", index=0, name="PPU-ZW810E", compute_capability=(8, 0), attributes={"sm_count": 20})
    assert detect.probe(raw, {}).specificity == detect.SPECIFICITY  # NVIDIA's generic claim exists ...
    (dev,) = manager([raw], ("nvidia", nvidia_plugin), ("thead_ppu", ppu_plugin)).devices()
    assert dev.plugin == "thead_ppu"  # ... and is out-ranked on vendor evidence


def test_an_orin_nx_gets_no_agx_orin_memory_or_bandwidth_and_no_cut_down_note():
    (dev,) = manager(enumerate_fake(FakeGpu("Orin", (8, 7), 8, memory=16 << 30))).devices()
    assert dev.target.arch == "sm_87" and dev.sku is not None
    assert dev.sku.memory_bytes is None and dev.sku.memory_bandwidth is None and dev.sku.sm_count is None
    assert dev.raw.attributes["sm_count"] == 8 and dev.raw.attributes["memory_bytes"] == 16 << 30
    assert not any("cut-down" in n for n in dev.notes), dev.notes
