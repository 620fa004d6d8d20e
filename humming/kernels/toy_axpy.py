"""The toy kernel's twin: ToyAxpySpec declares toy_axpy.cuh's parameters; ``axpy`` runs it as op humming::toy_axpy.

The toy exists to test the JIT alone (codegen, NVRTC, the cache, the launcher, the torch op) with a kernel
small enough to read at once; see toy_axpy.cuh for what each parameter exercises.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from humming.capabilities.model import Target
from humming.core import dtypes
from humming.core.codegen import KernelSpec, cpp_type, needs, param
from humming.core.dtypes import DType
from humming.core.torch_op import HummingOp
from humming.errors import InvalidInputError

#: Blocks launched at most: the kernel loops over the rest (a grid-stride loop).
MAX_BLOCKS = 4096


@dataclass(frozen=True)
class ToyAxpySpec(KernelSpec):
    """``out = alpha * x + y`` on ``n`` elements of one dtype."""

    header = "toy_axpy.cuh"
    kernel = "humming::toy::axpy"
    signature = ("ptr", "ptr", "ptr", "f32", "s64")  # out, x, y, alpha, n

    dtype: DType = param(default=dtypes.f32, allowed=(dtypes.f16, dtypes.bf16, dtypes.f32),
                         doc="element type of x, y and out")
    vec: int = param(default=4, allowed=(1, 2, 4, 8), doc="elements per thread per step")
    block: int = param(default=256, allowed=(32, 64, 128, 256, 512, 1024), doc="threads per block")
    async_copy: bool = param(
        default=False, doc="stage tiles with cp.async instead of plain loads",
        requires=lambda on: needs("memory.cp_async", what="memory.cp_async (cp.async, sm_80 and later)",
                                  alternatives=("async_copy=False",)) if on else None)

    def exports(self) -> dict[str, str]:
        traits = f"humming::toy::AxpyTraits<{cpp_type(self.dtype)}, {self.vec}, {self.block}>"
        return {"smem_bytes": f"{traits}::kSmemBytes", "tile": f"{traits}::kTile"}


# ---- running it ----------------------------------------------------------------------------------------------
_targets: dict[int, Target] = {}
_specs: dict[tuple[int, str], ToyAxpySpec] = {}
_lock = threading.Lock()


def device_target(index: int) -> Target:
    """The compile target of CUDA device ``index``, as its plugin claims it (looked up once)."""
    target = _targets.get(index)
    if target is None:
        import humming.devices

        target = humming.devices.get(index).target
        with _lock:
            _targets[index] = target
    return target


def _spec_for(device: int, dtype: Any) -> ToyAxpySpec:
    key = (device, str(dtype))
    spec = _specs.get(key)
    if spec is None:
        spec = ToyAxpySpec(target=device_target(device), dtype=DType.parse(dtype))
        with _lock:
            _specs[key] = spec
    return spec


def run(out: Any, x: Any, y: Any, alpha: float, *, spec: ToyAxpySpec | None = None) -> None:
    """Launch ``out = alpha * x + y`` on torch's current stream (``spec`` default: the device's f32/f16/bf16 one)."""
    from humming.core.build import compile_spec

    if not (x.shape == y.shape == out.shape and x.dtype == y.dtype == out.dtype):
        raise InvalidInputError(f"toy_axpy needs x, y and out of one shape and dtype; got {tuple(x.shape)} "
                                f"{x.dtype}, {tuple(y.shape)} {y.dtype}, {tuple(out.shape)} {out.dtype}")
    if not (x.is_contiguous() and y.is_contiguous() and out.is_contiguous()):
        raise InvalidInputError("toy_axpy needs contiguous tensors; call .contiguous() first")
    if (x.data_ptr() | y.data_ptr()) % 4:
        raise InvalidInputError("toy_axpy stages 4-byte words: x and y must start on a 4-byte boundary")
    n = x.numel()
    if n == 0:
        return
    if spec is None:
        spec = _spec_for(x.device.index, x.dtype)
    kernel = compile_spec(spec)
    tile = kernel.exports["tile"]
    blocks = min(-(-n // tile), MAX_BLOCKS)
    kernel.launch(blocks, spec.block, None, (out, x, y, float(alpha), n))


def _impl(x: Any, y: Any, alpha: float) -> Any:
    import torch

    out = torch.empty_like(y)
    if x.device.index == torch.cuda.current_device():
        run(out, x, y, alpha)
    else:
        with torch.cuda.device(x.device):
            run(out, x, y, alpha)
    return out


def _fake(x: Any, y: Any, alpha: float) -> Any:
    import torch

    return torch.empty_like(y)


#: The op: ``axpy(x, y, alpha) -> alpha * x + y``; ``torch.ops.humming.toy_axpy`` once registered.
axpy = HummingOp("toy_axpy", _impl, schema="(Tensor x, Tensor y, float alpha) -> Tensor", fake=_fake)
