"""precompile: the kernels a set of quantized layers will launch, compiled before their first call.

Without it, a layer's first call at an M whose kernel is new compiles that kernel then and there (0.6-2.3 s each for
the W4A16 set on a 2-core CPU, benchmarks/RESULTS.md), which a server pays on its first requests or inside its CUDA
graph captures. ``precompile(model)`` finds every layer shape (N, K, weight format, activation and output dtype),
asks the target's tuner which kernels serve it over M = 1 .. ``max_m``, compiles the distinct ones in parallel into
the disk cache with a progress line, and on a GPU loads them. With ``target="sm_90a"`` it fills the cache on a
machine without that GPU (an image build, say), for a device of ``sm_count`` SMs.

    humming.precompile(model)                                      # the current GPU
    humming.precompile(model, target="sm_90a", sm_count=132)       # no GPU needed
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Iterable

from humming.capabilities.model import DeviceCapabilities
from humming.core.codegen import KernelSpec
from humming.core.dtypes import DType
from humming.core.formats import WeightFormat
from humming.core.plan import GemmTuner
from humming.core.problem import GemmProblem
from humming.errors import InvalidInputError, UnsupportedError

#: Every M up to here is planned; past it the tuner's choice is taken as piecewise constant in M between powers of
#: two and searched by bisection (a kernel this misses compiles at its first call, as without precompile).
EVERY_M_UP_TO = 256
#: The largest M planned by default: the issue's range (ops.gemm splits larger inputs at ops.MAX_M).
DEFAULT_MAX_M = 65536


@dataclass(frozen=True)
class LayerShape:
    """What a dense GEMM's kernel depends on besides M: the weight (N x K, its format) and the operand dtypes."""

    n: int
    k: int
    weight: WeightFormat
    activation: DType
    out: DType

    def problem(self, m: int) -> GemmProblem:
        return GemmProblem(m, self.n, self.k, self.weight, self.activation, self.out)

    def describe(self) -> str:
        return f"{self.n} x {self.k} {self.weight.describe()}, {self.activation} activations, {self.out} output"


@dataclass(frozen=True)
class Precompiled:
    """What precompile did: the layer shapes it found, the kernels that serve them, and how long it took."""

    shapes: tuple[LayerShape, ...]
    specs: tuple[KernelSpec, ...]
    seconds: float
    target: str
    loaded_on: int | None  # the CUDA device the kernels were loaded on, None when only compiled

    def describe(self) -> str:
        where = f", loaded on device {self.loaded_on}" if self.loaded_on is not None else ""
        return (f"{len(self.specs)} kernels for {len(self.shapes)} layer shapes on {self.target} in "
                f"{self.seconds:.1f} s{where}")


def layer_shapes(layers: Any) -> tuple[LayerShape, ...]:
    """The distinct shapes of ``layers``: a PackedWeight, a QuantLinear, any nn.Module (its QuantLinear
    submodules), a LayerShape, or an iterable of these. The output dtype is the activation's, as gemm's default."""
    import torch
    from torch import nn

    from humming.core.packing import PackedWeight
    from humming.nn import QuantLinear

    found: dict[LayerShape, None] = {}

    def add(item: Any) -> None:
        if isinstance(item, LayerShape):
            found[item] = None
        elif isinstance(item, PackedWeight):
            found[LayerShape(item.shape[0], item.shape[1], item.format, item.activation, item.activation)] = None
        elif isinstance(item, QuantLinear):
            add(item.packed)
        elif isinstance(item, nn.Module):
            for sub in item.modules():
                if isinstance(sub, QuantLinear):
                    add(sub)
        elif isinstance(item, Iterable) and not isinstance(item, (str, bytes, torch.Tensor)):
            for part in item:
                add(part)
        else:
            raise InvalidInputError(f"precompile: cannot find layers in a {type(item).__name__}; pass a PackedWeight, "
                                    "a QuantLinear, an nn.Module holding QuantLinear layers, a LayerShape, or a "
                                    "list of these")

    add(layers)
    return tuple(found)


def kernel_specs(shape: LayerShape, caps: DeviceCapabilities, tuner: GemmTuner, sm_count: int,
                 max_m: int = DEFAULT_MAX_M) -> tuple[KernelSpec, ...]:
    """The distinct kernels ``tuner`` plans for ``shape`` over M = 1 .. ``max_m``, in order of first M."""
    if max_m < 1:
        raise InvalidInputError(f"precompile: max_m={max_m}; it must be at least 1")
    specs: dict[KernelSpec, None] = {}

    def spec_at(m: int) -> KernelSpec:
        spec = tuner.plan(shape.problem(m), caps, sm_count).spec
        specs[spec] = None
        return spec

    for m in range(1, min(EVERY_M_UP_TO, max_m) + 1):
        spec_at(m)
    powers = (1 << e for e in range(EVERY_M_UP_TO.bit_length(), max_m.bit_length()))
    anchors = sorted(m for m in {EVERY_M_UP_TO, max_m, *powers} if EVERY_M_UP_TO <= m <= max_m)

    def bisect(lo: int, hi: int, at_lo: KernelSpec, at_hi: KernelSpec) -> None:
        if hi - lo <= 1 or at_lo == at_hi:
            return
        mid = (lo + hi) // 2
        at_mid = spec_at(mid)
        bisect(lo, mid, at_lo, at_mid)
        bisect(mid, hi, at_mid, at_hi)

    ends = [(m, spec_at(m)) for m in anchors]
    for (lo, at_lo), (hi, at_hi) in zip(ends, ends[1:]):
        bisect(lo, hi, at_lo, at_hi)
    return tuple(specs)


def precompile(layers: Any, *, device: int | None = None, target: str | None = None, sm_count: int | None = None,
               max_m: int = DEFAULT_MAX_M, progress: bool | None = None) -> Precompiled:
    """Compile (and on a GPU load) every kernel ``layers`` will launch at M = 1 .. ``max_m``.

    ``device``: the CUDA device to plan for and load on (default: the current one). ``target``: an arch of the
    catalog to compile for instead, with no GPU needed (``sm_count`` defaults to the largest of its SKUs').
    ``progress``: the compile's progress line (default: HUMMING_PROGRESS, on a terminal).

    :raises InvalidInputError: no layers, or neither a GPU nor a target; with ``target``, a kernel cache that is
        disabled or cannot be written (the kernels would be compiled for nothing).
    :raises UnsupportedError: a layer shape the target cannot run (naming it), before anything is compiled.
    """
    from humming.core import cache
    from humming.core.build import Progress, compile_many

    start = time.monotonic()
    if target is not None:  # no GPU to load on: the cache is all that is left of the work
        cache.require_writable(f"precompile(target={target!r})")
    shapes = layer_shapes(layers)
    if not shapes:
        raise InvalidInputError("precompile: no quantized layers found (QuantLinear modules or PackedWeights)")
    caps, tuner, sms, load_on = _planner(device, target, sm_count)
    specs: dict[KernelSpec, None] = {}
    for shape in shapes:
        try:
            specs.update(dict.fromkeys(kernel_specs(shape, caps, tuner, sms, max_m)))
        except UnsupportedError as exc:
            first = str(exc).splitlines()[0]  # the rest are its missing / alternatives lines, given again below
            raise UnsupportedError(f"precompile: layer {shape.describe()} cannot run on {caps.target.arch}: {first}",
                                   missing=exc.missing, alternatives=exc.alternatives) from exc
    unique = tuple(specs)
    bar = Progress(len(unique), what=f"kernels for {len(shapes)} layer shapes", enabled=progress)
    try:
        kernels = compile_many(unique, progress=bar)
    finally:
        bar.close()
    if load_on is not None:
        for kernel in kernels:
            kernel.prepare(load_on)
    return Precompiled(shapes, unique, time.monotonic() - start, caps.target.arch, load_on)


def _planner(device: int | None, target: str | None,
             sm_count: int | None) -> tuple[DeviceCapabilities, GemmTuner, int, int | None]:
    """(capabilities, tuner, SM count, device to load on or None) for a present device or a catalog target."""
    if target is not None:
        if device is not None:
            raise InvalidInputError("precompile: give device= or target=, not both")
        from humming.devices.manager import get_manager

        manager = get_manager()
        caps = manager.capabilities(target)
        tuner = manager.tuner(caps.target)
        if tuner is None:
            raise UnsupportedError(f"precompile: the plugin of {target} supplies no GEMM tuner",
                                   missing=[f"humming_tuner for {target}"])
        sms = sm_count or caps.largest_sm_count
        if sms is None or sms <= 0:
            raise InvalidInputError(f"precompile: {target} lists no SM count in its SKUs; pass sm_count=")
        return caps, tuner, sms, None
    import torch

    if not torch.cuda.is_available():
        raise InvalidInputError("precompile: no CUDA device here; pass target= (an arch such as 'sm_90a', see "
                                "`humming devices --all`) to fill the kernel cache for a device this machine lacks")
    from humming import ops

    index = torch.cuda.current_device() if device is None else int(device)
    caps, tuner, sms = ops._device(index)
    if sm_count is not None and sm_count != sms:
        raise InvalidInputError(f"precompile: device {index} has {sms} SMs; leave sm_count out for a present device")
    return caps, tuner, sms, index


__all__ = ["DEFAULT_MAX_M", "LayerShape", "Precompiled", "kernel_specs", "layer_shapes", "precompile"]
