"""The launcher without a GPU: resources and exports come from the cubin, arguments land at the cubin's parameter
offsets, and every driver call a launch makes is checked against a recording driver."""

from __future__ import annotations

import ctypes
import gc
import statistics
import struct
import time
from typing import Any

import pytest

from humming.capabilities.model import Target
from humming.core import launcher
from humming.core.build import compile_source, compile_spec
from humming.core.kernel_args import ArgumentPacker as _Packer
from humming.core.launcher import CompiledKernel
from humming.core.resources import ParamSlot, kernel_resources, parse_ptxas_log
from humming.devices.nvidia.target import toolchain_for
from humming.errors import InvalidInputError, LaunchError, UnsupportedError
from humming.kernels.toy_axpy import ToyAxpySpec

SM80 = Target("nvidia", "sm_80")
SM90 = Target("nvidia", "sm_90a")

SPILLER = r"""
template <int N>
__global__ void __launch_bounds__(128, 16) spill(float* __restrict__ y, const float* __restrict__ x, int n) {
  __shared__ float tile[100];
  float acc[N];
  #pragma unroll
  for (int i = 0; i < N; ++i) acc[i] = x[(threadIdx.x * 31 + i * 7) % n];
  tile[threadIdx.x % 100] = acc[0];
  __syncthreads();
  #pragma unroll
  for (int r = 0; r < 4; ++r)
    #pragma unroll
    for (int i = 0; i < N; ++i) acc[i] = acc[i] * acc[(i + r + 1) % N] + tile[(i + r) % 100];
  float s = 0;
  #pragma unroll
  for (int i = 0; i < N; ++i) s += acc[i];
  y[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
"""


def test_resources_report_registers_spills_stack_and_static_smem_from_the_binary_and_log():
    # 128 threads x 16 blocks per SM leave 32 registers a thread: 96 live floats must spill.
    kernel = compile_source(SPILLER, target=SM80, name_expressions=("spill<96>",), toolchain=toolchain_for(SM80))
    res = kernel.resources
    assert res.registers == 32
    assert res.spills and res.spill_stores > 0 and res.spill_loads > 0
    assert res.stack_frame and res.stack_frame >= res.spill_stores // 4
    assert res.static_smem == 400
    assert res.max_threads == (128, 1, 1)
    assert [(p.offset, p.size) for p in res.params] == [(0, 8), (8, 8), (16, 4)]
    # Without the log, the binary alone still gives registers, stack and the parameter layout.
    bare = kernel_resources(kernel.binary, kernel.function)
    assert (bare.registers, bare.stack_frame, bare.params) == (32, res.stack_frame, res.params)
    assert bare.spill_stores is None
    assert "32 registers" in res.describe()


def test_the_ptxas_parser_reads_each_function_of_a_log():
    log = ("ptxas info    : Compiling entry function '_Z1av' for 'sm_90a'\n"
           "ptxas info    : Function properties for _Z1av\n"
           "ptxas         .     16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
           "ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem\n"
           "ptxas info    : Compiling entry function '_Z1bv' for 'sm_90a'\n"
           "ptxas info    : Used 12 registers, used 0 barriers\n")
    got = parse_ptxas_log(log)
    assert got["_Z1av"] == {"stack_frame": 16, "spill_stores": 8, "spill_loads": 4, "registers": 40,
                            "static_smem": 2048, "barriers": 1}
    assert got["_Z1bv"]["static_smem"] == 0 and got["_Z1bv"]["registers"] == 12


def test_exports_and_the_parameter_layout_come_from_the_cubin():
    kernel = compile_spec(ToyAxpySpec(target=SM90, vec=8, block=1024), toolchain=toolchain_for(SM90))
    assert kernel.exports == {"smem_bytes": 2 * 8 * 1024 * 4, "tile": 8 * 1024}
    assert kernel.default_smem == 65536
    assert [(p.offset, p.size) for p in kernel.resources.params] == [(0, 8), (8, 8), (16, 8), (24, 4), (32, 8)]
    with pytest.raises(InvalidInputError, match="has no kernel 'nope'"):
        kernel_resources(kernel.binary, "nope")


def test_a_kernels_binary_is_parsed_once_for_its_exports_and_resources(monkeypatch):
    from humming.core import resources

    kernel = compile_spec(ToyAxpySpec(target=SM90, vec=4, block=256), toolchain=toolchain_for(SM90))
    fresh = launcher.CompiledKernel(key=kernel.key, binary=kernel.binary, target=kernel.target,
                                    function=kernel.function, log=kernel.log)
    exports, res = kernel.exports, kernel.resources
    parsed = []
    real = resources.parse_elf

    def counted(binary: bytes):
        parsed.append(len(binary))
        return real(binary)

    monkeypatch.setattr(resources, "parse_elf", counted)
    monkeypatch.setattr(launcher, "parse_elf", counted)
    assert fresh.exports == exports and fresh.resources == res
    assert parsed == [len(kernel.binary)]


class FakeTensor:
    def __init__(self, address: int, is_cuda: bool = True) -> None:
        self.address, self.is_cuda, self.device = address, is_cuda, "cuda:0" if is_cuda else "cpu"

    def data_ptr(self) -> int:
        return self.address


def unpack(packer: _Packer, slots: list[ParamSlot]) -> list[bytes]:
    pointers = (ctypes.c_void_p * len(slots)).from_address(packer.address)
    return [ctypes.string_at(pointers[i], s.size) for i, s in enumerate(slots)]


SLOTS = [ParamSlot(0, 0, 8), ParamSlot(1, 8, 4), ParamSlot(2, 12, 2), ParamSlot(3, 16, 8), ParamSlot(4, 24, 16)]


def test_arguments_are_packed_at_the_binarys_offsets_by_their_kind():
    args = (FakeTensor(0xDEAD_BEEF_0000), -7, struct.pack("<e", 1.5), 2.25, bytes(range(16)))
    packer = _Packer("k", SLOTS, tuple(map(type, args)))
    packer.pack(args)
    raw = unpack(packer, SLOTS)
    assert struct.unpack("<Q", raw[0])[0] == 0xDEAD_BEEF_0000
    assert struct.unpack("<i", raw[1])[0] == -7
    assert struct.unpack("<e", raw[2])[0] == 1.5  # an undeclared 2-byte float slot takes its bytes (f16 or bf16?)
    assert struct.unpack("<d", raw[3])[0] == 2.25
    assert raw[4] == bytes(range(16))
    again = (None, 0xFFFF_FFFF, b"\x00\xb8", 3.0, bytearray(16))  # an unsigned 32-bit value fits a 4-byte slot
    packer = _Packer("k", SLOTS, tuple(map(type, again)))
    packer.pack(again)
    raw = unpack(packer, SLOTS)
    assert raw[0] == bytes(8) and struct.unpack("<I", raw[1])[0] == 0xFFFF_FFFF


def test_declared_kinds_convert_ints_to_floats_and_refuse_floats_for_ints():
    slots = [ParamSlot(0, 0, 8), ParamSlot(1, 8, 4), ParamSlot(2, 16, 8)]
    packer = _Packer("k", slots, (FakeTensor, int, int), ("ptr", "f32", "s64"))
    packer.pack((FakeTensor(64), 3, 2**40))
    raw = unpack(packer, slots)
    assert struct.unpack("<f", raw[1])[0] == 3.0 and struct.unpack("<q", raw[2])[0] == 2**40
    with pytest.raises(InvalidInputError, match="cannot fill a 8-byte integer parameter; pass an int"):
        _Packer("k", slots, (FakeTensor, float, float), ("ptr", "f32", "s64"))
    with pytest.raises(LaunchError, match="declared f32 .4 bytes. but is 8 bytes"):
        _Packer("k", slots, (FakeTensor, int, int), ("ptr", "f32", "f32"))


def test_a_value_past_a_signed_parameters_range_is_refused_not_wrapped():
    # An s32 parameter (every size and stride of the dense kernels) given 2^31 + 8 would read -2^31 + 8 in the
    # kernel (an out-of-bounds access); undeclared or u32 parameters still take values up to 2^32 - 1.
    slots = [ParamSlot(0, 0, 4), ParamSlot(1, 4, 4)]
    with pytest.raises(InvalidInputError, match=r"argument 0: 2147483656 does not fit the 4-byte signed parameter"):
        _Packer("k", slots, (int, int), ("s32", "u32")).pack((2**31 + 8, 1))
    packer = _Packer("k", slots, (int, int), ("s32", "u32"))
    packer.pack((-5, 2**32 - 1))
    raw = unpack(packer, slots)
    assert struct.unpack("<i", raw[0])[0] == -5 and struct.unpack("<I", raw[1])[0] == 2**32 - 1


def test_packing_errors_say_which_argument_and_why():
    with pytest.raises(InvalidInputError, match="takes 5 parameters .sizes in bytes: 8, 4, 2, 8, 16.; got 2"):
        _Packer("k", SLOTS, (FakeTensor, int))
    with pytest.raises(InvalidInputError, match="argument 1 .FakeTensor. is a pointer .8 bytes. but the parameter is 4"):
        _Packer("k", SLOTS, (FakeTensor, FakeTensor, bytes, float, bytes))
    packer = _Packer("k", SLOTS, (FakeTensor, int, bytes, float, bytes))
    with pytest.raises(InvalidInputError, match="15 bytes for a 16-byte parameter"):
        packer.pack((FakeTensor(8), 1, bytes(2), 1.0, bytes(15)))
    with pytest.raises(InvalidInputError, match="a tensor on cpu was passed to a CUDA kernel"):
        packer.pack((FakeTensor(8, is_cuda=False), 1, bytes(2), 1.0, bytes(16)))
    with pytest.raises(InvalidInputError, match="does not fit the 4-byte parameter"):
        packer.pack((FakeTensor(8), 2**33, bytes(2), 1.0, bytes(16)))
    with pytest.raises(InvalidInputError, match="the arguments do not fit its parameters"):
        _Packer("k", SLOTS[2:3], (float,), ("f16",)).pack((1e6,))  # beyond f16's range
    with pytest.raises(InvalidInputError, match="pass a tensor, None, an int, a float or bytes"):
        _Packer("k", SLOTS, (FakeTensor, int, bytes, float, str))


class RecordingDriver:
    """cuda.bindings.driver with the calls recorded and answered; its types and enums are the real ones."""

    def __init__(self, optin: int = 232448, launch_result: int = 0) -> None:
        from cuda.bindings import driver

        self._real = driver
        self.calls: list[tuple[str, tuple]] = []
        self.optin = optin
        self.launch_result = launch_result
        self.packed: list[list[bytes]] = []
        self.slots: list[ParamSlot] = []
        self.capture_mode = driver.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL  # this thread's

    def __getattr__(self, name: str) -> Any:
        if name.startswith("cu") and name[2:3].isupper():
            return lambda *args: self._answer(name, args)
        return getattr(self._real, name)

    def _answer(self, name: str, args: tuple) -> tuple:
        self.calls.append((name, args))
        if name == "cuCtxGetCurrent":
            return (0, 0x1234)
        if name == "cuThreadExchangeStreamCaptureMode":
            previous, self.capture_mode = self.capture_mode, args[0]
            return (0, previous)
        if name in ("cuLibraryLoadData", "cuLibraryGetKernel", "cuKernelGetFunction", "cuDeviceGet"):
            return (0, f"{name}-handle")
        if name == "cuDeviceGetAttribute":
            return (0, self.optin)
        if name in ("cuLaunchKernel", "cuLaunchKernelEx"):
            address = args[9] if name == "cuLaunchKernel" else args[2]
            ptrs = (ctypes.c_void_p * len(self.slots)).from_address(address)
            self.packed.append([ctypes.string_at(ptrs[i], s.size) for i, s in enumerate(self.slots)])
            return (self.launch_result,)
        if name == "cuGetErrorName":
            return (0, b"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES")
        return (0,)

    def names(self) -> list[str]:
        return [n for n, _ in self.calls]


@pytest.fixture
def driven(monkeypatch):
    def make(spec: ToyAxpySpec, **kwargs: Any) -> tuple[CompiledKernel, RecordingDriver]:
        kernel = compile_spec(spec, toolchain=toolchain_for(spec.target))
        fresh = CompiledKernel(key=kernel.key, binary=kernel.binary, target=kernel.target, function=kernel.function,
                               log=kernel.log, spec=spec)  # its own load state, so each test starts unloaded
        drv = RecordingDriver(**kwargs)
        drv.slots = list(fresh.resources.params)
        monkeypatch.setattr(launcher, "_driver", lambda: drv)
        monkeypatch.setattr(launcher, "_torch_hooks", lambda: ((lambda: 0), (lambda device: 0xABC0)))
        return fresh, drv
    return make


def test_a_launch_loads_once_opts_in_to_the_exported_smem_and_passes_the_values(driven):
    kernel, drv = driven(ToyAxpySpec(target=SM90, vec=8, block=1024))  # 64 KiB of staged tiles
    out, x, y = FakeTensor(0x1000), FakeTensor(0x2000), FakeTensor(0x3000)
    kernel.launch(3, 1024, None, (out, x, y, 2, 12345))
    kernel.launch((5, 1), (1024,), None, (out, x, y, 0.5, 7))
    names = drv.names()
    assert names.count("cuLibraryLoadData") == 1 and names.count("cuKernelGetFunction") == 1
    # Loading and the smem opt-in run with the thread's capture mode relaxed (a first launch may come inside a CUDA
    # graph capture, where the global mode refuses them), and the mode is restored after each.
    modes = [a[0] for n, a in drv.calls if n == "cuThreadExchangeStreamCaptureMode"]
    relaxed, global_ = (drv.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED,
                        drv.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL)
    assert modes == [relaxed, global_, relaxed, global_] and drv.capture_mode == global_
    exchanges = [i for i, n in enumerate(names) if n == "cuThreadExchangeStreamCaptureMode"]
    assert exchanges[0] < names.index("cuLibraryLoadData") < names.index("cuFuncLoad") < exchanges[1]
    assert exchanges[2] < names.index("cuFuncSetAttribute") < exchanges[3]
    assert ("cuFuncSetAttribute", ("cuKernelGetFunction-handle",
            drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 65536)) in drv.calls
    launches = [a for n, a in drv.calls if n == "cuLaunchKernel"]
    assert launches[0][1:9] == (3, 1, 1, 1024, 1, 1, 65536, 0xABC0)
    assert launches[1][1:4] == (5, 1, 1)
    first = drv.packed[0]
    assert [struct.unpack("<Q", first[i])[0] for i in range(3)] == [0x1000, 0x2000, 0x3000]
    assert struct.unpack("<f", first[3])[0] == 2.0  # the signature says f32: the int became a float
    assert struct.unpack("<q", first[4])[0] == 12345
    assert struct.unpack("<q", drv.packed[1][4])[0] == 7


def test_a_cluster_launch_goes_through_launch_kernel_ex_with_the_cluster_attribute(driven):
    kernel, drv = driven(ToyAxpySpec(target=SM90, block=128))
    args = (FakeTensor(16), FakeTensor(32), FakeTensor(48), 1.0, 10)
    kernel.launch((4, 2), 128, 0, args, cluster=(2, 1))
    (config, function, _params, _extra), = [a for n, a in drv.calls if n == "cuLaunchKernelEx"]
    assert function == "cuKernelGetFunction-handle"
    assert (config.gridDimX, config.gridDimY, config.blockDimX, int(config.hStream)) == (4, 2, 128, 0xABC0)
    assert config.numAttrs == 1 and config.attrs[0].value.clusterDim.x == 2
    with pytest.raises(InvalidInputError, match="cluster .3, 1, 1. must divide the grid .4, 2, 1."):
        kernel.launch((4, 2), 128, 0, args, cluster=3)


def test_a_programmatic_launch_carries_the_stream_serialization_attribute_beside_the_cooperative_one(driven):
    kernel, drv = driven(ToyAxpySpec(target=SM90, block=128))
    args = (FakeTensor(16), FakeTensor(32), FakeTensor(48), 1.0, 10)
    kernel.launch(4, 128, 0, args, programmatic=True)
    kernel.launch(4, 128, 0, args, cooperative=True, programmatic=True)
    kernel.launch(4, 128, 0, args)
    ex = [a[0] for n, a in drv.calls if n == "cuLaunchKernelEx"]
    ids = drv.CUlaunchAttributeID
    assert [[c.attrs[i].id for i in range(c.numAttrs)] for c in ex] == [
        [ids.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION],
        [ids.CU_LAUNCH_ATTRIBUTE_COOPERATIVE, ids.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION]]
    assert ex[0].attrs[0].value.programmaticStreamSerializationAllowed == 1
    assert drv.names().count("cuLaunchKernel") == 1  # without either: the plain call


def test_a_cluster_on_a_target_without_clusters_is_unsupported(driven):
    kernel, _ = driven(ToyAxpySpec(target=SM80, block=128))
    with pytest.raises(UnsupportedError, match="has no thread-block clusters"):
        kernel.launch(2, 128, 0, (FakeTensor(16), FakeTensor(32), FakeTensor(48), 1.0, 10), cluster=2)


def test_more_shared_memory_than_the_device_allows_is_refused_before_launching(driven):
    kernel, drv = driven(ToyAxpySpec(target=SM90, vec=8, block=1024), optin=48 * 1024)
    with pytest.raises(UnsupportedError, match="needs 65536 bytes of dynamic shared memory .*allows 49152"):
        kernel.launch(1, 1024, None, (FakeTensor(16), FakeTensor(32), FakeTensor(48), 1.0, 10))
    assert "cuLaunchKernel" not in drv.names()


def test_a_failed_launch_names_the_error_and_what_to_change(driven):
    kernel, _ = driven(ToyAxpySpec(target=SM90, block=128), launch_result=701)
    with pytest.raises(LaunchError, match=r"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES .grid \(2, 1, 1\), block \(128, 1, 1\)"
                                          r".*registers exceed the register file"):
        kernel.launch(2, 128, 0, (FakeTensor(16), FakeTensor(32), FakeTensor(48), 1.0, 10))


def test_bad_launch_dimensions_are_refused(driven):
    kernel, _ = driven(ToyAxpySpec(target=SM90, block=128))
    args = (FakeTensor(16), FakeTensor(32), FakeTensor(48), 1.0, 10)
    with pytest.raises(InvalidInputError, match="grid=0: expected a positive int"):
        kernel.launch(0, 128, 0, args)
    with pytest.raises(InvalidInputError, match=r"block=\(1, 2, 3, 4\)"):
        kernel.launch(1, (1, 2, 3, 4), 0, args)


def test_the_host_side_of_a_launch_is_a_few_microseconds(driven):
    # Everything but the driver: the device and stream lookups, packing, the call through the binding layer.
    kernel, drv = driven(ToyAxpySpec(target=SM90, block=128))
    args = (FakeTensor(16), FakeTensor(32), FakeTensor(48), 1.0, 10)
    kernel.launch(8, 128, 0, args)  # loads
    drv._answer = lambda name, args: (0,)  # from here a driver that answers at once
    # Run alone, the process still owes a full garbage collection of what importing torch made (~100 ms): it fell
    # inside the timed loop and read 50-65 us a launch (gc.freeze() before it: a pass). Collected first, and the
    # median of five batches, so that a collection's pause is not charged to the launch.
    gc.collect()
    batches = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(400):
            kernel.launch(8, 128, 0, args)
        batches.append((time.perf_counter() - start) / 400 * 1e6)
    per_call_us = statistics.median(batches)
    assert per_call_us < 25, f"{per_call_us:.1f} us of Python per launch"  # loose: CI machines vary


def test_the_toy_op_registers_once_and_gives_torch_compile_its_output_shape():
    torch = pytest.importorskip("torch")
    from humming.core.torch_op import HummingOp
    from humming.kernels import toy_axpy

    op = toy_axpy.axpy.op()
    assert toy_axpy.axpy.op() is op
    assert HummingOp("toy_axpy", lambda *a: None, schema="(Tensor x, Tensor y, float alpha) -> Tensor",
                     fake=lambda *a: None).op() is op  # the same name is the same registered op
    x = torch.empty(7, 3, device="meta", dtype=torch.bfloat16)
    out = torch.ops.humming.toy_axpy(x, x, 2.0)  # meta tensors run the fake implementation
    assert out.shape == (7, 3) and out.dtype == torch.bfloat16 and out.device.type == "meta"
    with pytest.raises(NotImplementedError):
        torch.ops.humming.toy_axpy(torch.ones(3), torch.ones(3), 1.0)  # CUDA only: no CPU kernel


def test_the_gemm_op_is_registered_when_humming_ops_is_imported_and_not_by_import_humming():
    # torch.compile(fullgraph=True) cannot trace the registration (a lock, torch.library calls): a first gemm under
    # it failed in a fresh process. humming.ops registers at its import (the first use of gemm or QuantLinear);
    # `import humming` still registers nothing. Fresh interpreters, since this one may have registered already.
    import subprocess
    import sys

    probe = ("import sys, humming; from humming.core import torch_op; a = dict(torch_op._registered); "
             "import humming.ops; print(sorted(a), sorted(torch_op._registered))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[]", "['humming::gemm_dense']"], out.stdout


def test_a_tensor_map_travels_as_declared_bytes_at_its_aligned_offset():
    # the TMA kernels' last parameter: 128 opaque bytes that the binary places on a 64-byte boundary
    slots = [ParamSlot(0, 0, 8), ParamSlot(1, 8, 4), ParamSlot(2, 64, 128)]
    packer = _Packer("k", slots, (FakeTensor, int, bytes), ("ptr", "s32", "bytes"))
    packer.pack((FakeTensor(0x1000), 5, bytes(range(128))))
    raw = unpack(packer, slots)
    assert raw[2] == bytes(range(128)) and struct.unpack("<i", raw[1])[0] == 5
    with pytest.raises(InvalidInputError, match="127 bytes for a 128-byte parameter"):
        packer.pack((FakeTensor(0x1000), 5, bytes(127)))


def test_the_jit_benchmark_runs_on_a_machine_without_a_gpu(tmp_path):
    # benchmarks/jit_compile.py times the launcher's Python against a null driver where there is no GPU. That driver
    # must answer every call a first launch makes as the real one shapes it: run 23's relaxed_capture unpacks a pair
    # from cuThreadExchangeStreamCaptureMode, which the null driver answered with one value until 2026-12-04.
    import os
    import subprocess
    import sys

    import torch

    if torch.cuda.is_available():
        pytest.skip("with a GPU the benchmark launches for real (device_batch.sh jit)")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, HUMMING_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, os.path.join(root, "benchmarks", "jit_compile.py"), "--skip-gemm",
                           "--json", str(tmp_path / "jit.json")], cwd=root, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    import json

    launch = json.loads((tmp_path / "jit.json").read_text())["launch"]
    assert 0 < launch["launch_us"] < 1000
