"""How a conformance case reaches humming's GEMM: the capability's answer, the selector's kernel, a run, a timing.

``select(suite, case)`` decides, in this order, and the first that says no ends the case:

1. the capability table (``humming.capabilities.query.supports``): no instruction path -> ``unsupported``;
2. a kernel family for the combination: today the dense WnA16 kernel (16-bit activations; its twin's
   ``ACTIVATIONS``); any other -> ``skipped`` "no kernel for W8A8 yet";
3. the target's toolchain can compile here, else ``skipped`` with its availability() reason;
4. the plugin supplies a tuner (``humming_tuner``), else ``skipped`` naming the hook; the tuner plans the problem
   (the same call ``humming.gemm`` makes) and the spec's capability check passes; humming's UnsupportedError
   naming what is missing -> ``unsupported``.

``run_numeric`` and ``time_gemm`` run a selected case on the device through the public op (``humming.gemm``),
with the weight quantized by ``humming.core.quantized`` and packed by ``humming.core.packing``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from humming.capabilities.model import BlockScale
from humming.capabilities.query import supports
from humming.core import dtypes
from humming.core.formats import Granularity
from humming.core.problem import GemmProblem
from humming.errors import UnsupportedError
from conformance.cases import GemmCase
from conformance.runner import Skip, Status, Suite, outcome_of

#: The 8-bit scale dtypes a block-scaled MMA can apply itself, as the MMA tables name them. NVFP4 stores positive
#: e4m3 scales, which PTX calls ue4m3 (PTX ISA, tcgen05.mma "kind::mxf4nvf4": scale type .ue4m3).
_MMA_SCALE = {dtypes.ue8m0: dtypes.ue8m0, dtypes.e4m3: dtypes.ue4m3, dtypes.ue4m3: dtypes.ue4m3}


@dataclasses.dataclass
class Selection:
    """The outcome of ``select``: a final status with its reason, or the kernel specs (and plans) to build."""

    status: Status | None = None  # None: go on with ``specs``
    reason: str = ""
    verdict: Any = None
    plans: list[Any] = dataclasses.field(default_factory=list)

    @property
    def specs(self) -> list[Any]:
        return [p.spec for p in self.plans]

    def describe(self) -> str:
        if self.plans:
            return "; ".join(p.spec.describe() for p in self.plans)
        return self.reason


def block_scale_of(case: GemmCase) -> BlockScale | None:
    """The hardware block scale a format could use: both operands scaled per group along K with one 8-bit type."""
    w, a = case.format.weight.scale, case.format.activation
    if case.weight_only or w.granularity is not Granularity.GROUP or not a.is_quantized:
        return None
    if a.scaling.value != "group" or a.group != w.group or a.scale_dtype is not w.dtype:
        return None
    scale = _MMA_SCALE.get(w.dtype)
    return None if scale is None or w.group is None else BlockScale(scale, w.group)


def verdict_for(suite: Suite, case: GemmCase) -> Any:
    """The capability's answer for the case's (activation, weight), with the format's block scale when it has one."""
    catalog = suite.manager.catalog()
    scale = block_scale_of(case)
    if scale is not None:
        scaled = supports(suite.caps, activation=case.activation, weight=case.weight, weight_block_scale=scale,
                          catalog=catalog)
        if scaled.ok:
            return scaled
    return supports(suite.caps, activation=case.activation, weight=case.weight, catalog=catalog)


def has_kernel(case: GemmCase) -> bool:
    """Whether a kernel family exists for the case: today only the dense WnA16 kernel."""
    from humming.kernels.gemm_dense import ACTIVATIONS

    return case.weight_only and case.activation in ACTIVATIONS


def tuner_for(suite: Suite) -> Any:
    """The target's GEMM tuner, as its plugin's ``humming_tuner`` supplies it.

    A plugin without one skips the case: its table may well say yes, so "unsupported" (the table says no) would
    misreport it; the skip names the hook to supply.
    """
    tuner = suite.manager.tuner(suite.caps.target)
    if tuner is None:
        raise Skip(f"plugin {suite.manager.plugin_of(suite.caps.target)!r} supplies no GEMM tuner (humming_tuner) "
                   f"for {suite.caps.target}: no kernel is planned for it")
    return tuner


def sm_count(suite: Suite) -> int:
    """The device's SM count, or for a catalog target the largest of its SKUs' (the grid does not change a spec)."""
    if suite.device is not None and suite.device.raw.attributes.get("sm_count"):
        return int(suite.device.raw.attributes["sm_count"])
    return suite.caps.largest_sm_count or 1


def problem_of(case: GemmCase) -> GemmProblem:
    return GemmProblem(case.shape.m, case.shape.n, case.shape.k, case.format.weight, case.activation, case.out)


def select(suite: Suite, case: GemmCase) -> Selection:
    """What the selector would run for ``case`` on ``suite``'s target (module docstring for the order)."""
    verdict = verdict_for(suite, case)
    if not verdict.ok:
        return Selection(Status.UNSUPPORTED, "; ".join(verdict.missing) or verdict.message(), verdict)
    if not has_kernel(case):
        act = "16-bit" if case.weight_only else f"{case.activation}"
        return Selection(Status.SKIPPED, f"no kernel for {case.combination} ({case.weight} weights, {act} "
                         f"activations) yet; the capability offers {verdict.chosen.describe()}", verdict)
    chain, status, why = suite.toolchain()
    if chain is None:
        return Selection(status, why, verdict)
    try:
        plan = tuner_for(suite).plan(problem_of(case), suite.caps, sm_count(suite))
        plan.spec.check_supported(suite.caps)
    except Exception as exc:
        status, reason = outcome_of(exc)
        return Selection(status, f"the selector: {reason}", verdict)
    return Selection(None, "", verdict, [plan])


# ---- on the device (the worker process) ---------------------------------------------------------------------
_TORCH_NAMES = {dtypes.f16: "float16", dtypes.bf16: "bfloat16"}


#: The float64 reference runs on the CPU up to this many multiply-adds (M*N*K), on the device up to the second
#: figure (same function, float64 either way), and a larger case is skipped with that reason.
CPU_REFERENCE_MACS = 1 << 31
DEVICE_REFERENCE_MACS = 1 << 37


def _weight(case: GemmCase, gen: Any, where: str) -> tuple[Any, Any]:
    """(the QuantizedTensor on ``where``, the packed weight on ``where``) of a fresh random [N, K] weight."""
    import torch

    from humming.core.packing import pack
    from humming.core.quantized import quantize

    n, k = case.shape.n, case.shape.k
    w = torch.randn(n, k, generator=gen, device=gen.device) * 0.05
    g_idx = None
    if case.format.weight.act_order:
        group = case.format.weight.scale.group or k
        g_idx = (torch.randperm(k, generator=gen, device=gen.device) // group).to(torch.int32)  # scattered groups
    q = quantize(w.to(where), case.format, g_idx=None if g_idx is None else g_idx.to(where), clamp=True)
    return q, pack(q, case.activation)


def run_numeric(suite: Suite, case: GemmCase, seed: int) -> dict[str, Any]:
    """Run ``case`` through humming.gemm and compare with the float64 reference; the error statistics."""
    import torch

    import humming.ops as hg

    m, n, k = case.shape.m, case.shape.n, case.shape.k
    macs = m * n * k
    if macs > DEVICE_REFERENCE_MACS:
        raise Skip(f"M*N*K = {macs} is past the float64 reference budget ({DEVICE_REFERENCE_MACS}); "
                   "the perf level times shapes this large")
    device = suite.device.index  # type: ignore[union-attr]
    cuda = f"cuda:{device}"
    gen = torch.Generator().manual_seed(seed)
    q, packed = _weight(case, gen, "cpu")
    x = (torch.randn(m, k, generator=gen)).to(getattr(torch, _TORCH_NAMES[case.activation]))
    with torch.cuda.device(device):
        out = hg.gemm(x.to(cuda), packed.to(cuda))
        torch.cuda.synchronize()
    where = "cpu" if macs <= CPU_REFERENCE_MACS else cuda
    stats = compare(out.to(where), x.to(where), q.to(where), case)
    stats["reference_on"] = "the CPU" if where == "cpu" else "the device"
    return stats


def compare(out: Any, x: Any, q: Any, case: GemmCase) -> dict[str, Any]:
    """Error statistics of ``out`` against the float64 reference of (x, q), under the case's tolerance.

    ``nonfinite`` counts the outputs that are NaN or inf (each one a failure); ``max_abs``, ``max_rel`` and
    ``margin`` (the worst |out - ref| / allowed; a pass is <= 1) are taken over the finite outputs, so one NaN
    neither hides the largest finite error nor turns the statistics into numbers JSON cannot hold. ``bad``
    counts both kinds of failure; ``worst_at`` is the first non-finite output, else the worst finite one.
    """
    import torch

    from humming.core import tolerances
    from humming.core.reference import reference_operands, reference_product

    xd, wd = reference_operands(x, q)
    ref = reference_product(xd, wd)
    tol = tolerances.tolerance(case.activation, case.weight, case.out)
    allowed = tol.bound(ref, tolerances.magnitude(xd, wd), case.shape.k)
    out = out.to(torch.float64)
    finite = torch.isfinite(out)
    nonfinite = int((~finite).sum())
    diff = torch.where(finite, (out - ref).abs(), torch.zeros_like(ref))  # non-finite outputs are counted apart
    ratio = diff / allowed.clamp_min(1e-300)
    flat = int((~finite).flatten().nonzero()[0]) if nonfinite else int(torch.argmax(ratio))
    worst = divmod(flat, case.shape.n)
    return {"margin": float(ratio.max()), "max_abs": float(diff.max()),
            "max_rel": float((diff / ref.abs().clamp_min(1e-30)).max()), "bad": int((ratio > 1).sum()) + nonfinite,
            "nonfinite": nonfinite, "count": diff.numel(), "worst_at": list(worst), "worst_out": float(out[worst]),
            "worst_ref": float(ref[worst]), "tolerance": dataclasses.asdict(tol)}


def time_gemm(suite: Suite, case: GemmCase, time_us: Callable[..., tuple[float, str]]) -> dict[str, Any]:
    """Median microseconds of humming.gemm and of torch's bf16 matmul for the case; the bytes it must move."""
    import torch

    import humming.ops as hg

    device = suite.device.index  # type: ignore[union-attr]
    cuda = f"cuda:{device}"
    gen = torch.Generator(device=cuda).manual_seed(1)
    m, n, k = case.shape.m, case.shape.n, case.shape.k
    tdt = getattr(torch, _TORCH_NAMES[case.activation])
    _q, packed = _weight(case, gen, cuda)  # quantized on the device: a 28672 x 8192 weight is slow on a CPU
    x = torch.randn(m, k, device=cuda, dtype=tdt, generator=gen)
    with torch.cuda.device(device):
        us, method = time_us(lambda: hg.gemm(x, packed))
        dense = torch.randn(n, k, device=cuda, dtype=tdt, generator=gen)
        torch_us, _ = time_us(lambda: x @ dense.T)
    return {"us": us, "torch_us": torch_us, "method": method, "bytes": problem_of(case).bytes_moved()}
