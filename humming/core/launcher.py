"""CompiledKernel: a cubin and what it exports; loads it through the driver API and launches it on torch's stream.

The API::

    k = compile_spec(spec)              # humming.core.build; no GPU needed up to here
    k.resources                         # KernelResources: registers, spills, stack, static smem, param layout
    k.exports                           # {"smem_bytes": 65536, ...}: constants the unit exported
    k.prepare()                         # load on the current device, opt in to its smem (the first launch does it)
    k.launch(grid, block, smem, args, stream=None, cluster=None, cooperative=False, programmatic=False)

``grid``/``block``/``cluster`` are an int or a tuple of up to three; ``smem`` None means the exported
``smem_bytes`` (0 without one). ``args`` follow the kernel's parameters, whose sizes come from the cubin: a
tensor (or anything with ``data_ptr()``) or None fills a pointer (an int too, as a raw address; a bool never); an
int any integer slot (not a negative one a slot the spec's signature declares unsigned); a float an f32/f64 slot by
its size, and a 2-byte slot only where the signature declares it f16 (undeclared, 2 bytes may be f16 or bf16: pass
its bytes); ``bytes`` a by-value struct of exactly its size (a TMA descriptor). The launch goes on
torch's current CUDA stream for the current device unless ``stream`` is given, so it is captured by CUDA graphs.
``cooperative`` asks the driver to run every CTA at once or refuse the launch (CTAs that wait for one another).
``programmatic`` lets the grid start while the previous kernel in the stream finishes (programmatic dependent
launch); only for a kernel that waits for it before touching what that kernel may touch (arch/grid_dependency.cuh).

Host cost: loading, the smem opt-in and the argument layout are settled once (per device, per argument
types); a launch then packs the values (kernel_args.ArgumentPacker) with one ``struct.pack_into`` into a buffer
whose parameter pointers are prepared, and makes one driver call (cuLaunchKernel, or cuLaunchKernelEx for a
cluster, a cooperative or a programmatic launch).
Loading a module is not a stream operation: a first launch inside a CUDA graph capture loads the kernel with the
thread's capture mode relaxed (relaxed_capture), and prepare() before capturing keeps the load out of it.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from typing import Any, Callable, Iterator, Sequence

from humming import knobs
from humming.capabilities.model import Target
from humming.core.kernel_args import ArgumentPacker
from humming.core.resources import ElfImage, KernelResources, exported_constants, kernel_resources, parse_elf
from humming.errors import InvalidInputError, LaunchError, UnsupportedError

#: Dynamic shared memory a kernel gets without opting in (CUDA Programming Guide: 48 KiB).
DEFAULT_SMEM_LIMIT = 48 * 1024
#: Clusters larger than this need the non-portable-size attribute (CUDA Programming Guide: portable size 8).
PORTABLE_CLUSTER = 8

Dims = int | Sequence[int]


def programmatic_allowed(caps: Any) -> bool:
    """Whether kernels that wait for the grid before them may be launched programmatically on a device of ``caps``
    (a DeviceCapabilities): it has the instructions (memory.programmatic_launch) and HUMMING_PDL leaves it on."""
    return caps.memory.programmatic_launch is True and knobs.programmatic_launch.get()


@functools.lru_cache(maxsize=1)
def _driver() -> Any:
    from cuda.bindings import driver

    return driver


@functools.lru_cache(maxsize=1)
def _torch_hooks() -> tuple[Callable[[], int], Callable[[int], int]]:
    """(current device index, current raw stream of a device), the fastest torch offers."""
    import torch

    torch.cuda.init()
    device = getattr(torch._C, "_cuda_getDevice", torch.cuda.current_device)
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is None:  # older torch: the public, slower spelling
        def raw(index: int) -> int:
            return int(torch.cuda.current_stream(index).cuda_stream)
    return device, raw


def _dim3(value: Dims, what: str) -> tuple[int, int, int]:
    dims = (value,) if isinstance(value, int) else tuple(value)
    if not 1 <= len(dims) <= 3 or any(not isinstance(d, int) or isinstance(d, bool) or d < 1 for d in dims):
        raise InvalidInputError(f"{what}={value!r}: expected a positive int or a tuple of 1 to 3 positive ints")
    return (dims + (1, 1))[:3]  # type: ignore[return-value]


def _error_name(code: Any) -> str:
    try:
        err, name = _driver().cuGetErrorName(code)
        return name.decode() if isinstance(name, bytes) else str(name)
    except Exception:  # the name is only decoration of an error already being raised
        return str(code)


def _ok(result: Any, what: str) -> Any:
    """The values a driver call returned after its status; LaunchError naming the call when it failed."""
    if result[0]:
        raise LaunchError(f"{what} failed: {_error_name(result[0])}")
    return result[1] if len(result) == 2 else result[1:]


# ---- per device --------------------------------------------------------------------------------------------
class _DeviceState:
    __slots__ = ("function", "smem_set", "configs", "device")

    def __init__(self, function: Any, device: int) -> None:
        self.function = function
        self.device = device
        self.smem_set = DEFAULT_SMEM_LIMIT
        self.configs: dict[tuple, Any] = {}


@contextlib.contextmanager
def relaxed_capture() -> Iterator[None]:
    """This thread's stream-capture mode relaxed for the block, then restored. While a thread captures a CUDA graph in
    the global mode (torch's default), the driver refuses calls that add nothing to the graph but might synchronize:
    loading a library, setting a function attribute, allocating, waiting for a stream outside the capture. A first
    launch or a first workspace inside a capture needs them; outside a capture the mode changes nothing."""
    drv = _driver()
    err, previous = drv.cuThreadExchangeStreamCaptureMode(drv.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED)
    if err != drv.CUresult.CUDA_SUCCESS:
        raise LaunchError(f"cuThreadExchangeStreamCaptureMode failed: {_error_name(err)}")
    try:
        yield
    finally:
        drv.cuThreadExchangeStreamCaptureMode(previous)


def _ensure_context(device: int) -> None:
    """Make the device's primary context (the one torch uses) current on this thread if none is."""
    drv = _driver()
    ctx = _ok(drv.cuCtxGetCurrent(), "cuCtxGetCurrent")
    if int(ctx) != 0:
        return
    _ok(drv.cuInit(0), "cuInit")
    dev = _ok(drv.cuDeviceGet(device), f"cuDeviceGet({device})")
    ctx = _ok(drv.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
    _ok(drv.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")


class CompiledKernel:
    """One compiled entry function: the binary, where it came from, its resources; launches on the GPU."""

    def __init__(self, *, key: str, binary: bytes, target: Target, function: str, log: str = "",
                 options: Sequence[str] = (), toolchain: str = "", spec: Any = None, from_cache: bool = False,
                 compile_seconds: float | None = None) -> None:
        self.key = key
        self.binary = binary
        self.target = target
        self.function = function  # the entry symbol in the binary
        self.log = log
        self.options = tuple(options)
        self.toolchain = toolchain
        self.spec = spec
        self.from_cache = from_cache
        self.compile_seconds = compile_seconds
        self._lock = threading.Lock()
        self._library: Any = None
        self._kernel: Any = None
        self._states: dict[int, _DeviceState] = {}
        self._packers: dict[tuple, ArgumentPacker] = {}

    def __repr__(self) -> str:
        what = self.spec.describe() if self.spec is not None else self.function
        return f"<CompiledKernel {what} key={self.key} {'cached' if self.from_cache else 'compiled'}>"

    @functools.cached_property
    def _image(self) -> ElfImage:
        """The binary parsed once (~0.5 ms for a GEMM cubin): resources and exports both read it."""
        return parse_elf(self.binary)

    @functools.cached_property
    def resources(self) -> KernelResources:
        """Registers, spills, stack, static shared memory and the parameter layout (no GPU needed)."""
        return kernel_resources(self.binary, self.function, self.log, image=self._image)

    @functools.cached_property
    def exports(self) -> dict[str, int]:
        """The integer constants the unit exported (``humming_export_<name>``)."""
        return exported_constants(self._image)

    @property
    def default_smem(self) -> int:
        return self.exports.get("smem_bytes", 0)

    # ---- loading -------------------------------------------------------------------------------------------
    def prepare(self, device: int | None = None) -> None:
        """Load the kernel on ``device`` (default: torch's current) and opt in to its exported shared memory."""
        if device is None:
            device = _torch_hooks()[0]()
        self._state(device)

    def _state(self, device: int) -> _DeviceState:
        state = self._states.get(device)
        if state is not None:
            return state
        with self._lock:
            state = self._states.get(device)
            if state is not None:
                return state
            drv = _driver()
            _ensure_context(device)
            with relaxed_capture():  # a first launch may come inside a CUDA graph capture
                if self._library is None:
                    result = drv.cuLibraryLoadData(self.binary, None, None, 0, None, None, 0)
                    if result[0]:
                        raise LaunchError(self._load_message(result[0], device))
                    self._library = result[1]
                    self._kernel = _ok(drv.cuLibraryGetKernel(self._library, self.function.encode()),
                                       f"cuLibraryGetKernel({self.function})")
                function = _ok(drv.cuKernelGetFunction(self._kernel), f"cuKernelGetFunction({self.function})")
                if hasattr(drv, "cuFuncLoad"):  # CUDA 12.4+: finish lazy loading here, not at the launch itself
                    _ok(drv.cuFuncLoad(function), f"cuFuncLoad({self.function})")
            state = _DeviceState(function, device)
            self._states[device] = state
        if self.default_smem > state.smem_set:
            self._opt_in_smem(state, self.default_smem)
        return state

    def _load_message(self, code: Any, device: int) -> str:
        name = _error_name(code)
        text = f"cannot load {self.function} (built for {self.target}) on device {device}: {name}"
        if name in ("CUDA_ERROR_NO_BINARY_FOR_GPU", "CUDA_ERROR_INVALID_IMAGE", "CUDA_ERROR_INVALID_SOURCE"):
            text += (f"; a cubin for {self.target.arch} runs only on that architecture: compile for the "
                     "device's own target (humming.devices.current().target)")
        return text

    def _device_attribute(self, device: int, name: str) -> int:
        drv = _driver()
        dev = _ok(drv.cuDeviceGet(device), "cuDeviceGet")
        return int(_ok(drv.cuDeviceGetAttribute(getattr(drv.CUdevice_attribute, name), dev), name))

    def _opt_in_smem(self, state: _DeviceState, smem: int) -> None:
        limit = self._device_attribute(state.device, "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN")
        static = self.resources.static_smem or 0
        if smem + static > limit:
            raise UnsupportedError(
                f"{self.function} needs {smem} bytes of dynamic shared memory (+{static} static) per block; "
                f"device {state.device} allows {limit}", missing=[f"{smem + static} bytes of shared memory per block"],
                alternatives=["a configuration with fewer stages or smaller tiles"])
        drv = _driver()
        attr = drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        with relaxed_capture():
            _ok(drv.cuFuncSetAttribute(state.function, attr, smem), "cuFuncSetAttribute(max dynamic smem)")
        state.smem_set = smem

    def _packer(self, types: tuple) -> ArgumentPacker:
        packer = self._packers.get(types)
        if packer is None:
            kinds = tuple(getattr(self.spec, "signature", ()) or ())
            packer = ArgumentPacker(self.function, self.resources.params, types, kinds)
            self._packers[types] = packer
        return packer

    # ---- launching -----------------------------------------------------------------------------------------
    def launch(self, grid: Dims, block: Dims, smem: int | None = None, args: Sequence[Any] = (),
               stream: Any = None, cluster: Dims | None = None, cooperative: bool = False,
               programmatic: bool = False) -> None:
        """Launch on ``stream`` (default: torch's current stream of the current device); ``cooperative``: all CTAs
        resident at once, or a LaunchError; ``programmatic``: may overlap the previous kernel in the stream."""
        current_device, raw_stream = _torch_hooks()
        device = current_device()
        state = self._states.get(device) or self._state(device)
        if smem is None:
            smem = self.default_smem
        if smem > state.smem_set:
            self._opt_in_smem(state, smem)
        gx, gy, gz = (grid, 1, 1) if type(grid) is int and grid > 0 else _dim3(grid, "grid")
        bx, by, bz = (block, 1, 1) if type(block) is int and block > 0 else _dim3(block, "block")
        if cluster is not None:  # a hashable (x, y, z): the key of the launch configuration
            cluster = _dim3(cluster, "cluster")
        if stream is None:
            handle = raw_stream(device)
        else:
            handle = int(getattr(stream, "cuda_stream", stream))
        packer = self._packers.get(tuple(map(type, args))) or self._packer(tuple(map(type, args)))
        drv = _driver()
        with self._lock:  # the buffer is shared; the driver copies the values during the call
            packer.pack(args)
            if cluster is None and not cooperative and not programmatic:
                result = drv.cuLaunchKernel(state.function, gx, gy, gz, bx, by, bz, smem, handle, packer.address, 0)
            else:
                config = self._config(state, (gx, gy, gz), (bx, by, bz), smem, cluster, cooperative, programmatic)
                config.hStream = handle
                result = drv.cuLaunchKernelEx(config, state.function, packer.address, 0)
        if result[0]:
            raise LaunchError(self._launch_message(result[0], (gx, gy, gz), (bx, by, bz), smem, cluster, cooperative,
                                                   programmatic))

    def _config(self, state: _DeviceState, grid: tuple[int, int, int], block: tuple[int, int, int], smem: int,
                cluster: Dims | None, cooperative: bool, programmatic: bool = False) -> Any:
        key = (grid, block, smem, cluster, cooperative, programmatic)
        config = state.configs.get(key)
        if config is not None:
            return config
        drv = _driver()
        attributes = []
        if cluster is not None:
            cx, cy, cz = _dim3(cluster, "cluster")
            if grid[0] % cx or grid[1] % cy or grid[2] % cz:
                raise InvalidInputError(f"cluster {(cx, cy, cz)} must divide the grid {grid} in every dimension")
            self._check_clusters()
            if cx * cy * cz > PORTABLE_CLUSTER:
                attr = drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED
                _ok(drv.cuFuncSetAttribute(state.function, attr, 1), "cuFuncSetAttribute(non-portable cluster size)")
            attribute = drv.CUlaunchAttribute()
            attribute.id = drv.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
            attribute.value.clusterDim.x, attribute.value.clusterDim.y, attribute.value.clusterDim.z = cx, cy, cz
            attributes.append(attribute)
        if cooperative:
            attribute = drv.CUlaunchAttribute()
            attribute.id = drv.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_COOPERATIVE
            attribute.value.cooperative = 1
            attributes.append(attribute)
        if programmatic:
            attribute = drv.CUlaunchAttribute()
            attribute.id = drv.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
            attribute.value.programmaticStreamSerializationAllowed = 1
            attributes.append(attribute)
        config = drv.CUlaunchConfig()
        config.gridDimX, config.gridDimY, config.gridDimZ = grid
        config.blockDimX, config.blockDimY, config.blockDimZ = block
        config.sharedMemBytes = smem
        config.attrs = attributes
        config.numAttrs = len(attributes)
        state.configs[key] = config
        return config

    def _check_clusters(self) -> None:
        try:
            from humming.devices.manager import get_manager

            caps = get_manager().capabilities(self.target.arch, self.target.vendor)
        except Exception:  # no catalog entry for this target: the driver will judge
            return
        if caps.memory.clusters is False:
            raise UnsupportedError(f"{self.function} was launched with a cluster, but {caps.name} has no "
                                   "thread-block clusters", missing=["memory.clusters"],
                                   alternatives=["launch without cluster="])

    def _launch_message(self, code: Any, grid: tuple, block: tuple, smem: int, cluster: Dims | None,
                        cooperative: bool = False, programmatic: bool = False) -> str:
        name = _error_name(code)
        text = (f"launching {self.function} failed: {name} (grid {grid}, block {block}, {smem} bytes of dynamic "
                f"smem{'' if cluster is None else f', cluster {cluster}'}{', cooperative' if cooperative else ''}"
                f"{', programmatic' if programmatic else ''})")
        res = self.resources
        if name == "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES":
            threads = block[0] * block[1] * block[2]
            text += (f"; {threads} threads x {res.registers} registers exceed the register file: use fewer "
                     "threads per block or cap registers (__launch_bounds__)")
        elif name == "CUDA_ERROR_INVALID_VALUE" and res.max_threads and \
                block[0] * block[1] * block[2] > res.max_threads[0] * res.max_threads[1] * res.max_threads[2]:
            text += f"; the kernel was compiled for at most {res.max_threads} threads per block"
        elif name == "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE":
            text += ("; a cooperative launch runs every CTA at once: this grid is more than the device holds with "
                     "these resources per CTA (another process's limits count too)")
        elif name.startswith("CUDA_ERROR_STREAM_CAPTURE"):
            text += "; call prepare() before capturing, and launch only on the capturing stream"
        return text
