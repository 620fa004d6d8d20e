"""The public op: validate -> GemmProblem -> plan -> launch; every bad input is refused before any launch.

``gemm(x, packed_weight, bias=None, out_dtype=None)`` multiplies x [..., K] (f16/bf16, CUDA) by a weight packed
with ``humming.core.packing.pack``: out [..., N] = x @ W^T + bias. It runs as the
torch custom op ``humming::gemm_dense`` (one node for torch.compile, captured by CUDA graphs). The plan comes from
the device plugin's tuner; the kernel from ``compile_spec`` (cached); nothing here knows a vendor.
"""

from __future__ import annotations

import functools
import json
import threading
from typing import Any, Callable

import torch

from humming.capabilities.model import DeviceCapabilities
from humming.core import dtypes
from humming.core.dtypes import DType
from humming.core.formats import Granularity, WeightFormat, ZeroPointSpec
from humming.core.launcher import programmatic_allowed, relaxed_capture
from humming.core.packing import BYTE_SCALES, LAYOUT, PackedWeight
from humming.core.plan import GemmTuner, KernelPlan
from humming.core.problem import GemmProblem, check_k
from humming.core.torch_op import HummingOp
from humming.errors import InvalidInputError, UnsupportedError

_TORCH = {dtypes.f16: torch.float16, dtypes.bf16: torch.bfloat16}
_CODES = (dtypes.f16, dtypes.bf16)  # dtype <-> the int the op schema carries
#: Largest M one launch takes (tile counts and offsets stay in 32 bits); larger inputs are split.
MAX_M = 1 << 20


def _dtype_of(t: torch.dtype) -> DType | None:
    for d, td in _TORCH.items():
        if td is t:
            return d
    return None


# ---- validation (plain Python on shapes and dtypes: runs under torch.compile tracing too) ------------------
def validate(x: Any, weight: PackedWeight, bias: Any = None, out_dtype: Any = None) -> DType:
    """Check every input against the kernel's rules; return the output dtype. Raises InvalidInputError."""
    if not isinstance(weight, PackedWeight):
        raise InvalidInputError(f"gemm: weight must be a PackedWeight (humming.core.packing.pack), got "
                                f"{type(weight).__name__}")
    check_parts(weight, weight.device, weight.data, weight.scales, weight.zeros, weight.chscale, weight.gscale,
                weight.perm)
    return validate_parts(x, weight, weight.device, bias, out_dtype)


def validate_parts(x: Any, weight: PackedWeight, device: torch.device, bias: Any = None, out_dtype: Any = None,
                   owner: str = "weight") -> DType:
    """validate() with the weight's device given apart (QuantLinear keeps its tensors as buffers; ``owner``: what to
    move when x and the weight sit on different devices)."""
    if weight.layout != LAYOUT:
        raise InvalidInputError(f"gemm: the weight is packed in layout {weight.layout!r}, but this kernel reads "
                                f"{LAYOUT!r}; pack it again for this device with humming.core.packing.pack")
    if not isinstance(x, torch.Tensor):
        raise InvalidInputError(f"gemm: x must be a torch.Tensor, got {type(x).__name__}")
    act = _dtype_of(x.dtype)
    if act is None:
        raise InvalidInputError(f"gemm: x is {x.dtype}; allowed: torch.float16, torch.bfloat16")
    if act is not weight.activation:
        raise InvalidInputError(f"gemm: x is {act} but the weight was packed for {weight.activation} activations; "
                                f"pass x.to({_TORCH[weight.activation]}) or pack the weight with activation={act}")
    if x.dim() < 1 or x.shape[-1] != weight.shape[1]:
        raise InvalidInputError(f"gemm: x has shape {list(x.shape)}; its last dimension must be K={weight.shape[1]} "
                                f"(the weight is N x K = {weight.shape[0]} x {weight.shape[1]})")
    check_k(weight.shape[1], "gemm")
    if x.numel() and x.stride(-1) != 1:
        raise InvalidInputError("gemm: x's last dimension must be contiguous (stride 1); call x.contiguous()")
    if out_dtype is None:
        out = act
    else:
        parsed = _dtype_of(out_dtype) if isinstance(out_dtype, torch.dtype) else DType.parse(out_dtype)
        if parsed is None or parsed not in _TORCH:  # None: a torch dtype other than f16/bf16
            raise InvalidInputError(f"gemm: out_dtype={out_dtype}; allowed: torch.float16, torch.bfloat16")
        out = parsed
    if bias is not None:
        if not isinstance(bias, torch.Tensor) or bias.dim() != 1 or bias.shape[0] != weight.shape[0]:
            got = f"{list(bias.shape)}" if isinstance(bias, torch.Tensor) else type(bias).__name__
            raise InvalidInputError(f"gemm: bias must be a 1-D tensor of N={weight.shape[0]} elements, got {got}")
        if bias.dtype is not _TORCH[out]:
            raise InvalidInputError(f"gemm: bias is {bias.dtype}; it must be the output dtype {_TORCH[out]}")
        if not bias.is_contiguous():
            raise InvalidInputError("gemm: bias must be contiguous; call bias.contiguous()")
    # Devices last, so that every rule above can be tested without a GPU.
    if x.device.type != "cuda":
        raise InvalidInputError(f"gemm: x is on {x.device}; the kernel runs on CUDA devices: move x with .cuda()")
    if device != x.device:
        raise InvalidInputError(f"gemm: x is on {x.device} but the weight is on {device}; move the {owner} "
                                f"with {owner}.to({str(x.device)!r})")
    if bias is not None and bias.device != x.device:
        raise InvalidInputError(f"gemm: bias is on {bias.device} but x is on {x.device}")
    return out


def check_parts(p: PackedWeight, device: torch.device, data: torch.Tensor, scales: torch.Tensor | None,
                zeros: torch.Tensor | None, chscale: torch.Tensor | None, gscale: torch.Tensor | None,
                perm: torch.Tensor | None, where: str = "gemm") -> None:
    """Each part as pack() makes it for ``p``'s format (dtype, shape, contiguous, on ``device``), or
    InvalidInputError: the kernel reads the parts' bytes as those dtypes and shapes, so a part cast, reshaped or left
    on another device would be read as something else. ``p`` gives the format and sizes (its own tensors are not
    read: QuantLinear passes its buffers apart)."""
    spec = p.format.scale
    act = _TORCH.get(p.activation)
    rows = p.k_pad // p.group if p.group else 1
    byte_scales = spec.dtype in BYTE_SCALES
    grouped = spec.granularity in (Granularity.GROUP, Granularity.BLOCK)
    expected = (  # name, tensor, required, dtype, shape
        ("data", data, True, torch.uint8, (p.k_pad // 16, p.n_pad // 64, 128 * p.bits)),
        ("scales", scales, grouped, torch.uint8 if byte_scales else act, (rows, p.n_pad)),
        ("zeros", zeros, p.format.zero_point is ZeroPointSpec.INT, act, (rows, p.n_pad)),
        ("chscale", chscale, spec.granularity is Granularity.CHANNEL, torch.float32, (p.n_pad,)),
        ("gscale", gscale, p.format.global_scale or spec.granularity is Granularity.TENSOR or p.scale_shift != 0,
         torch.float32, (1,)),
        ("perm", perm, p.format.act_order, torch.int64, (p.shape[1],)),
    )
    for name, t, required, dtype, shape in expected:
        if t is None:
            if required:
                raise InvalidInputError(f"{where}: the packed weight has no {name}, which its format "
                                        f"({p.format.describe()}) needs; pack it again with humming.core.packing.pack")
            continue
        if t.dtype is not dtype or tuple(t.shape) != shape:
            raise InvalidInputError(f"{where}: the packed weight's {name} is {t.dtype} {list(t.shape)}; pack() makes "
                                    f"{dtype} {list(shape)} for this weight (was it cast or reshaped? a packed weight "
                                    f"moves with .to(device) only)")
        if t.device != device:
            raise InvalidInputError(f"{where}: the packed weight's {name} is on {t.device}, its data on {device}; "
                                    f"move the whole weight with .to(device)")
        if not t.is_contiguous():
            raise InvalidInputError(f"{where}: the packed weight's {name} is not contiguous; pack() makes it "
                                    f"contiguous (call .contiguous() on it)")


def _check_launchable(x2: torch.Tensor) -> None:
    """Rules that need real (not fake) tensors: alignment of the activation rows, a row stride the kernel's 32-bit
    lda holds."""
    if x2.shape[0] > 1 and x2.stride(0) >= 2**31:
        raise InvalidInputError(f"gemm: x's row stride is {x2.stride(0)} elements; the kernel takes row strides under "
                                "2^31: call x.contiguous()")
    if x2.data_ptr() % 16 or (x2.shape[0] > 1 and x2.stride(0) % 8):
        raise InvalidInputError(f"gemm: x must start on a 16-byte boundary with a row stride that is a multiple "
                                f"of 8 elements (got address % 16 = {x2.data_ptr() % 16}, row stride {x2.stride(0)}); "
                                "call x.contiguous()")


# ---- per-device context, plans, workspaces -------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _device(index: int) -> tuple[DeviceCapabilities, GemmTuner, int]:
    """(capabilities, tuner, SM count) of CUDA device ``index``, from its plugin."""
    import humming.devices
    from humming.devices.manager import get_manager

    dev = humming.devices.get(index)
    caps = dev.capabilities
    tuner = get_manager().tuner(caps.target)
    if tuner is None:
        raise UnsupportedError(f"device {index} ({dev.name}): its plugin supplies no GEMM tuner",
                               missing=["humming_tuner for " + str(caps.target)])
    sms = int(dev.raw.attributes.get("sm_count") or 0)
    if sms <= 0:
        sms = int(torch.cuda.get_device_properties(index).multi_processor_count)
    return caps, tuner, sms


_plans: dict[tuple, KernelPlan] = {}
_workspaces: dict[tuple[int, int, bool], tuple[torch.Tensor, torch.Tensor]] = {}
#: Workspaces replaced by larger ones stay allocated: a captured CUDA graph still launches with their addresses.
_retired: list[torch.Tensor] = []
#: Per device, the stream that fills workspaces made while the current stream is capturing a CUDA graph.
_fill_streams: dict[int, torch.cuda.Stream] = {}
_lock = threading.Lock()


def plan_for(problem: GemmProblem, device: int = 0) -> KernelPlan:
    """The plan the op would launch for ``problem`` on CUDA device ``device`` (cached)."""
    key = (device, problem)
    plan = _plans.get(key)
    if plan is None:
        caps, tuner, sms = _device(device)
        plan = tuner.plan(problem, caps, sms)
        with _lock:
            _plans[key] = plan
    return plan


def _filled_now(device: int, make: Callable[[], torch.Tensor]) -> torch.Tensor:
    """``make()``'s tensor, allocated and filled in memory any stream and any graph may use from now on.

    Outside a capture, ``make`` runs on the current stream, ordered before the launch that needs it. While the current
    stream captures a CUDA graph, its allocation would come from that graph's private pool and its fill would exist
    only as a node of that graph: a second graph captured on the same stream, replayed without the first, or an eager
    launch on it, would find the workspace made and never filled. So it runs on a stream outside the capture (the
    regular pool), which the host waits for; the thread's capture mode is relaxed meanwhile, as for any allocation
    torch makes during a capture.
    """
    if not torch.cuda.is_current_stream_capturing():
        return make()
    with relaxed_capture():
        with _lock:
            side = _fill_streams.get(device)
            if side is None:
                side = _fill_streams[device] = torch.cuda.Stream(device)
        with torch.cuda.stream(side):
            made = make()
        side.synchronize()
    return made


def _workspace(device: int, stream: int, floats: int, counters: int,
               sentinel: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Scratch per (device, stream, kind): f32 partial-sum slots and int32 counters (zero, kept zero).

    ``sentinel``: the slots of the decode form's plans, which wait for partials to land (epilogue/finish.cuh): all-ones
    words (its kSentinel, "not written yet") between launches, which those kernels write back after reading, so
    they are filled once, here (_filled_now: at once, even while the stream captures a graph). Other plans' slots hold
    anything: a kernel of the other protocol must not share them.
    """
    key = (device, stream, sentinel)
    ws, cnt = _workspaces.get(key, (None, None))
    where = f"cuda:{device}"
    if ws is None or ws.numel() < max(floats, 1):
        if ws is not None:
            _retired.append(ws)
        size = max(floats, 1 << 16)
        ws = _filled_now(device, lambda: torch.full((size,), -1, dtype=torch.int32, device=where).view(torch.float32)
                         if sentinel else torch.empty(size, dtype=torch.float32, device=where))
    if cnt is None or cnt.numel() < max(counters, 1):
        if cnt is not None:
            _retired.append(cnt)
        cnt = _filled_now(device, lambda: torch.zeros(max(counters, 4096), dtype=torch.int32, device=where))
    _workspaces[key] = (ws, cnt)
    return ws, cnt


def _programmatic(device: int, kernel: Any) -> bool:
    """Whether to launch ``kernel`` programmatically (it may start while the kernel before it finishes and waits for
    it in the kernel: arch/grid_dependency.cuh): the kernel was built to wait (its exported waits_for_prior_grids),
    and the device and HUMMING_PDL allow it (launcher.programmatic_allowed)."""
    return bool(kernel.exports.get("waits_for_prior_grids")) and programmatic_allowed(_device(device)[0])


@functools.lru_cache(maxsize=256)
def _format(text: str) -> WeightFormat:
    return WeightFormat.from_dict(json.loads(text))


def launch(out: torch.Tensor, x2: torch.Tensor, data: torch.Tensor, scales: torch.Tensor | None,
           zeros: torch.Tensor | None, chscale: torch.Tensor | None, gscale: torch.Tensor | None,
           bias: torch.Tensor | None, fmt: WeightFormat, n: int, k: int, plan: KernelPlan | None = None) -> KernelPlan:
    """Run the kernel into ``out`` [M, N] for x2 [M, K] (already gathered for act order). Returns the plan."""
    from humming.core.build import compile_spec

    _check_launchable(x2)
    m = x2.shape[0]
    act, out_dt = _dtype_of(x2.dtype), _dtype_of(out.dtype)
    if act is None or out_dt is None:  # gemm() validated them; a direct caller may not have
        raise InvalidInputError(f"launch: x2 is {x2.dtype} and out is {out.dtype}; "
                                f"allowed: torch.float16, torch.bfloat16")
    problem = GemmProblem(m, n, k, fmt, act, out_dt, bias is not None)
    if plan is not None and plan.problem != problem:  # its grid, tile and kernel were made for that problem
        raise InvalidInputError(f"launch: the plan was made for {plan.problem.describe()}; this call is "
                                f"{problem.describe()}; plan this problem (humming.ops.plan_for) or pass plan=None")
    device = x2.device.index if x2.device.index is not None else torch.cuda.current_device()
    if device != torch.cuda.current_device():  # the launch goes to the current device (gemm() has entered x's)
        with torch.cuda.device(device):
            return launch(out, x2, data, scales, zeros, chscale, gscale, bias, fmt, n, k, plan)
    if plan is None:
        plan = plan_for(problem, device)
    plan.spec.check_output(n, out.stride(0))
    kernel = compile_spec(plan.spec)
    tuner = _device(device)[1]
    m_tiles, n_tiles, k_pad = tuner.grid_sizes(plan)
    stream = torch.cuda.current_stream(device).cuda_stream
    ws, cnt = _workspace(device, stream, plan.workspace_floats, plan.counters, plan.sentinel)
    nb64 = data.shape[1]
    kernel.launch(plan.grid, plan.block, plan.smem,
                  (x2, data, scales, zeros, chscale, gscale, bias, out, ws, cnt,
                   m, n, k, x2.stride(0), out.stride(0), nb64, k_pad, m_tiles, n_tiles, *plan.spec.launch_extras(x2)),
                  cluster=(plan.cluster, 1, 1) if plan.cluster > 1 else None, cooperative=plan.cooperative,
                  programmatic=_programmatic(device, kernel))
    return plan


def _impl(x: torch.Tensor, data: torch.Tensor, scales: torch.Tensor | None, zeros: torch.Tensor | None,
          chscale: torch.Tensor | None, gscale: torch.Tensor | None, bias: torch.Tensor | None,
          perm: torch.Tensor | None, fmt: str, n: int, k: int, out_code: int) -> torch.Tensor:
    x2 = x.reshape(-1, k)
    if perm is not None:
        x2 = x2.index_select(1, perm)
    out_dtype = _TORCH[_CODES[out_code]]
    out = torch.empty(x2.shape[0], n, dtype=out_dtype, device=x.device)
    wf = _format(fmt)
    with torch.cuda.device(x.device):
        for m0 in range(0, x2.shape[0], MAX_M):
            part = x2[m0:m0 + MAX_M]
            if part.shape[0]:
                launch(out[m0:m0 + MAX_M], part, data, scales, zeros, chscale, gscale, bias, wf, n, k)
    return out.reshape(*x.shape[:-1], n)


def _fake(x: torch.Tensor, data: torch.Tensor, scales: torch.Tensor | None, zeros: torch.Tensor | None,
          chscale: torch.Tensor | None, gscale: torch.Tensor | None, bias: torch.Tensor | None,
          perm: torch.Tensor | None, fmt: str, n: int, k: int, out_code: int) -> torch.Tensor:
    return x.new_empty((*x.shape[:-1], n), dtype=_TORCH[_CODES[out_code]])


gemm_dense_op = HummingOp(
    "gemm_dense", _impl,
    schema="(Tensor x, Tensor data, Tensor? scales, Tensor? zeros, Tensor? chscale, Tensor? gscale, Tensor? bias, "
           "Tensor? perm, str fmt, int n, int k, int out_code) -> Tensor",
    fake=_fake)
# Registered now (this module is imported on the first use of humming.gemm or QuantLinear, not by `import
# humming`): torch.compile(fullgraph=True) cannot trace the registration itself, so a first call under it would fail.
gemm_dense_op.op()


def output_code(out: DType) -> int:
    """The op's int for an output dtype (0: f16, 1: bf16); identity tests only, so torch.compile traces it."""
    return 0 if out is dtypes.f16 else 1


def gemm(x: torch.Tensor, packed_weight: PackedWeight, bias: torch.Tensor | None = None,
         out_dtype: torch.dtype | None = None) -> torch.Tensor:
    """out [..., N] = x [..., K] @ W^T (+ bias), W the packed weight; f16/bf16 in, f16/bf16 out (default: x's).

    Usable in CUDA graphs and under torch.compile. Raises InvalidInputError before any launch for a wrong dtype,
    device, shape, stride or a weight packed for another layout or activation dtype. Scratch memory is per (device,
    stream), a graph's that of its capture stream: graphs to be replayed concurrently need their own capture streams
    (docs/kernels.md).
    """
    out = validate(x, packed_weight, bias, out_dtype)
    w = packed_weight
    return gemm_dense_op(x, w.data, w.scales, w.zeros, w.chscale, w.gscale, bias, w.perm, w.format_key,
                         w.shape[0], w.shape[1], output_code(out))
