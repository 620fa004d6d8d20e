"""On a real NVIDIA GPU: detection agrees with torch, and every declared instruction's probe compiles, loads and runs.

Each probe computes D = A*B + C with ones in A, B (and the block scales), so every element of D must be C + K;
C is fresh random small integers (exact in every accumulator type), never zeros.
"""

from __future__ import annotations

import ctypes

import pytest

torch = pytest.importorskip("torch")

import humming.devices.nvidia as nvidia_plugin  # noqa: E402
from humming.core import dtypes as dt  # noqa: E402
from humming.devices.manager import DeviceManager  # noqa: E402
from humming.devices.nvidia import archs, detect, probes  # noqa: E402
from humming.devices.nvidia.families import TCGEN05, WGMMA  # noqa: E402
from humming.devices.nvidia.target import toolchain_for  # noqa: E402

pytestmark = pytest.mark.gpu


def nvidia_devices():
    return DeviceManager(autoload=False, plugins=[("nvidia", nvidia_plugin)], strict=True).devices()


def test_detected_devices_match_torch():
    devices = nvidia_devices()
    assert len(devices) == torch.cuda.device_count()
    for dev in devices:
        props = torch.cuda.get_device_properties(dev.index)
        assert dev.name == props.name
        assert dev.raw.compute_capability == (props.major, props.minor)
        assert dev.raw.attributes["sm_count"] == props.multi_processor_count
        assert dev.raw.attributes["memory_bytes"] == props.total_memory
        caps, nearest = detect.target_for((props.major, props.minor))
        assert dev.target.arch == caps.target.arch
        if nearest is None:  # the table's limits are the driver's for a known compute capability
            lim, attrs = caps.limits, dev.raw.attributes
            assert lim.shared_memory_per_sm == attrs["shared_memory_per_sm"]
            assert lim.shared_memory_per_block_optin == attrs["shared_memory_per_block_optin"]
            assert lim.max_threads_per_sm in (None, attrs["max_threads_per_sm"])
            assert lim.registers_per_sm == attrs["registers_per_sm"]
        if dev.sku is not None and dev.sku.l2_bytes is not None:
            assert dev.sku.l2_bytes == dev.raw.attributes["l2_bytes"]
        if props.name == "NVIDIA H200":
            assert dev.target.arch == "sm_90a" and dev.sku.name == "H200 SXM"
            assert dev.raw.attributes["sm_count"] == 132 == dev.sku.sm_count


def test_humming_devices_list_detects_the_gpu_through_the_entry_points():
    import importlib.metadata

    import humming
    from humming.devices.manager import reset_manager

    if not any(e.name == "nvidia" for e in importlib.metadata.entry_points(group="humming.devices")):
        pytest.skip("humming is not installed here (pip install -e .), so its entry points are not registered")

    reset_manager()
    listed = humming.devices.list()
    assert listed and listed[0].raw.attributes["sm_count"] == torch.cuda.get_device_properties(0).multi_processor_count


# ---- probes --------------------------------------------------------------------------------------------------
def _driver():
    from cuda.bindings import driver

    return driver


def _check(result):
    err, *values = result
    assert int(err) == 0, f"CUDA driver error {err}"
    return values[0] if len(values) == 1 else tuple(values)


class Module:
    """A cubin loaded into torch's current context, and launches of its probe kernels."""

    def __init__(self, cubin: bytes):
        torch.cuda.init()
        torch.zeros(1, device="cuda")  # makes torch's primary context current on this thread
        self.driver = _driver()
        self.module = _check(self.driver.cuModuleLoadData(cubin))

    def run(self, spec: probes.ProbeSpec, c_in: torch.Tensor) -> torch.Tensor:
        d_out = torch.full_like(c_in, -1)
        fn = _check(self.driver.cuModuleGetFunction(self.module, spec.kernel.encode()))
        params = ((c_in.data_ptr(), d_out.data_ptr()), (ctypes.c_void_p, ctypes.c_void_p))
        stream = torch.cuda.current_stream().cuda_stream
        _check(self.driver.cuLaunchKernel(fn, 1, 1, 1, spec.threads, 1, 1, 0, stream, params, 0))
        torch.cuda.synchronize()
        return d_out

    def close(self):
        _check(self.driver.cuModuleUnload(self.module))


def _accumulator_words(spec: probes.ProbeSpec, values: torch.Tensor) -> torch.Tensor:
    """Accumulator values -> the 32-bit words the probe reads (one thread's words after another's)."""
    acc = spec.instruction.acc
    if acc is dt.f32:
        return values.float().view(torch.int32)
    if acc is dt.s32:
        return values.int()
    if acc is dt.f64:
        return values.double().view(torch.int32)
    if acc is dt.f16 and spec.instruction.family == TCGEN05:
        return values.half().view(torch.int16).int() & 0xFFFF  # one f16 per TMEM column, low half
    return values.half().view(torch.int32)  # two f16 per register


def _values_per_thread(spec: probes.ProbeSpec) -> int:
    acc, fam = spec.instruction.acc, spec.instruction.family
    if acc is dt.f64:
        return spec.words // 2
    if acc is dt.f16 and fam != TCGEN05:
        return spec.words * 2
    return spec.words


def _run_and_check(module: Module, spec: probes.ProbeSpec, gen: torch.Generator) -> None:
    count = spec.threads * _values_per_thread(spec)
    c = torch.randint(-8, 9, (count,), generator=gen, dtype=torch.int64)
    c[0] = 5  # never all zeros
    words = _accumulator_words(spec, c).to(torch.int32).cuda()
    got = module.run(spec, words).cpu()
    expected = _accumulator_words(spec, c + spec.increment).to(torch.int32)
    assert torch.equal(got, expected), (
        f"{spec.instruction.describe()} (N={spec.n}): D != C + {spec.increment}; "
        f"first words got {got[:8].tolist()} expected {expected[:8].tolist()}")


def _device_target():
    (dev, *_) = nvidia_devices()
    return dev.capabilities


def test_every_declared_instruction_probe_compiles_loads_and_runs():
    caps = _device_target()
    from humming.core.compiler import nvrtc_version

    source, specs = probes.batch([i for i in caps.mma if probes.nvrtc_needed(i) <= nvrtc_version()])
    cubin = toolchain_for(caps.target).compile(source, target=caps.target, name=f"probes_{caps.target.arch}.cu").binary
    module = Module(cubin)
    gen = torch.Generator().manual_seed(torch.seed())
    failures = []
    try:
        for spec in specs:
            try:
                _run_and_check(module, spec, gen)
            except AssertionError as exc:
                failures.append(str(exc))
    finally:
        module.close()
    assert not failures, f"{len(failures)} of {len(specs)} probes failed on {caps.target.arch}:\n" + "\n".join(failures)


def test_the_largest_n_of_each_async_family_runs():
    caps = _device_target()
    forms = [i for i in caps.mma if i.family in (WGMMA, TCGEN05) and i.acc is dt.f32 and i.a in (dt.bf16, dt.e4m3)]
    if not forms:
        pytest.skip(f"{caps.target.arch} has no wgmma or tcgen05")
    gen = torch.Generator().manual_seed(torch.seed())
    for i in forms:
        source, spec = probes.render(i, "humming_probe", n=max(i.n_values))
        cubin = toolchain_for(caps.target).compile(probes.helpers([i]) + source, target=caps.target).binary
        module = Module(cubin)
        try:
            _run_and_check(module, spec, gen)
        finally:
            module.close()


def test_the_target_is_the_one_for_this_compute_capability():
    caps = _device_target()
    assert caps.target.arch == archs.BY_CC.get(torch.cuda.get_device_capability(0), caps.target.arch)
