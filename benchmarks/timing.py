"""How the dense benchmarks time a kernel on one GPU, and the machine figures the roofline takes.

- ``Timer``: CUDA-graph replays with the L2 flushed before each, the median of ``reps`` (bench_wna16's method, the
  issue's); ``chain_time``: per layer of one graph of consecutive layers; ``replay_span``: the event interval beside
  the kernel's own run (HM_TIMESTAMPS builds).
- ``copy_bandwidth``, ``read_bandwidth``, ``bf16_rate``: what the roofline divides by, measured in the same run;
  ``roofline_us``: the roofline itself.
- ``add_plan_only_arguments``, ``plan_only_target``, ``loop_local_accesses``: the scripts' dry run without a GPU.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

#: Seconds of flushed replays before each timing (Timer): the GPU's clocks settle after an idle gap. Sustained
#: matmul lowers them (cuBLAS bf16 8192^3 691 TFLOP/s warmed against ~790 unwarmed, H200 2026-12-03), so the
#: roofline's bandwidth and rate are the better of a warmed and an unwarmed measurement (the lower roofline
#: percentage).
WARM_S = 0.2


def require_cuda(script: str) -> None:
    """Exit with a plain message where torch sees no CUDA device (a CPU machine, a CPU build of torch), rather than
    with torch's assertion from deep inside the first allocation."""
    if not torch.cuda.is_available():
        raise SystemExit(f"{script}: needs a CUDA GPU, and torch sees none (torch {torch.__version__}, "
                         f"CUDA {torch.version.cuda}). On a CPU machine, benchmarks/sass_loop.py and "
                         "benchmarks/jit_compile.py compile and inspect the kernels; the timings run on the device "
                         "(benchmarks/device_batch.sh).")


def add_plan_only_arguments(ap: argparse.ArgumentParser, what: str) -> None:
    """--plan-only (help: ``what``), and the --arch / --sms it plans for: a script's dry run on a machine without
    a GPU (benchmarks/device_batch.sh PLAN_ONLY=1)."""
    ap.add_argument("--plan-only", action="store_true", help=what)
    ap.add_argument("--arch", default="sm_90a", help="with --plan-only: the target to plan and compile for")
    ap.add_argument("--sms", type=int, default=132,
                    help="with --plan-only: SM count the tuner plans for (132: the H200)")


def plan_only_target(arch: str) -> tuple[Any, Any]:
    """The capabilities of ``arch`` and its plugin's tuner, for planning without a GPU."""
    import humming.devices
    from humming.devices.manager import get_manager

    caps = humming.devices.target(arch)
    return caps, get_manager().tuner(caps.target)


def loop_local_accesses(kernel: Any) -> int:
    """LDL / STL inside a compiled kernel's MMA loop (conformance.sass.loop_spill_accesses); a kernel without spills
    or a stack frame has none, and is not disassembled."""
    from conformance.sass import disassemble, loop_spill_accesses

    r = kernel.resources
    return loop_spill_accesses(disassemble(kernel.binary)) if r.spills or r.stack_frame else 0


class Timer:
    """CUDA-graph replays with the L2 flushed before each, median of ``reps``.

    ``flush="read"`` (the default) evicts the L2 by reading a 512 MB buffer, so the timed kernel starts with an
    L2 of clean lines it does not need. ``flush="write"`` (bench_wna16's method before 2026-12-03) writes the
    buffer instead: the L2 is then full of dirty lines (its whole ~50 MB) that the timed kernel's own misses
    must write back to memory, which bills a memory-bound kernel for up to 50 MB of traffic it never caused."""

    def __init__(self, reps: int, flush: str = "read", warm_s: float = WARM_S) -> None:
        if flush not in ("read", "write"):
            raise ValueError(f"flush={flush!r}; allowed: read, write")
        self.reps = reps
        self.flush = flush
        self.warm_s = warm_s
        self.flush_buf = torch.ones(128 << 20, dtype=torch.float32, device="cuda")  # 512 MB, > 10x the L2
        self.stream = torch.cuda.Stream()

    def _flush(self, i: int) -> None:
        if self.flush == "read":
            torch.sum(self.flush_buf)
        else:
            self.flush_buf.fill_(float(i & 0xFF))

    def unwarmed(self) -> "Timer":
        """The same timer (flush buffer and stream shared) without the warm-up."""
        same = copy.copy(self)
        same.warm_s = 0.0
        return same

    def __call__(self, fn) -> float:
        # The side stream does not wait for the default one by itself: without this, fn's first launches there run
        # while the work that made its inputs (randn, quantize, pack) is still queued, and write its output into
        # memory that work still uses (bench_wna16 --verify's zero rows at 8192 x 28672, NOTES-wna16 run 23).
        torch.cuda.synchronize()
        with torch.cuda.stream(self.stream):  # warm on the capture stream too (per-stream workspaces)
            for _ in range(2):
                fn()
        for _ in range(2):
            fn()
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=self.stream):
            fn()
        return settled_replays(self, g)


def settled_replays(timer: Timer, g: torch.cuda.CUDAGraph, per: int = 1) -> float:
    """``g``'s flushed replays for ``timer.warm_s`` seconds first (after an idle gap the first ones run up to 15% slow:
    s8 28672 x 8192 M=1 70.9 us, then 61.5 in the same process, H200 2026-12-03), then the median over ``timer.reps``
    replays, each after a flush between CUDA events, in us / ``per``."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timer.warm_s:
        for i in range(8):
            timer._flush(i)
            g.replay()
        torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(timer.reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(timer.reps)]
    for i in range(timer.reps):
        timer._flush(i)
        starts[i].record()
        g.replay()
        ends[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) * 1000.0 for s, e in zip(starts, ends)) / per


def chain_time(timer: Timer, fns: list[Callable[[], object]]) -> float:
    """Per-layer time of one graph that runs every fn in turn (settled_replays): how consecutive layers of a captured
    decode step run, each launch overlapping the one before it where the launch allows (ops.launch's programmatic
    launch). Every fn has run under ``timer`` on its stream already (its workspace exists there)."""
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=timer.stream):
        for fn in fns:
            fn()
    return settled_replays(timer, g, len(fns))


def replay_span(timer: Timer, fn: Callable[[], object], slots: torch.Tensor,
                ctas: int = 0) -> tuple[float, float, dict[str, float]]:
    """Medians over ``timer.reps`` single replays of a graph of ``fn`` (L2 flushed before each, as the timer does):
    the event interval, and the span of the kernel's own run that a build with HM_TIMESTAMPS wrote to ``slots``
    (int64: earliest warp start, latest warp finish, in ns of %globaltimer; arch/timer.cuh). Both in us.
    With ``ctas`` (a build with HM_TIMESTAMP_CTAS >= ctas; ``slots`` then holds 2 + 3 * ctas values), also the
    medians of how that span splits (cta_split). ``fn`` has been timed by ``timer`` already (both callers report
    that figure), which warmed it on the capture stream."""
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=timer.stream):
        fn()
    events, spans, splits = [], [], []
    for i in range(timer.reps):
        slots[0], slots[1] = -1, 0  # read unsigned: the largest value for atomicMin, zero for atomicMax
        if ctas:
            per = slots[2:2 + 3 * ctas].view(ctas, 3)
            per[:, 0], per[:, 1] = -1, 0
        timer._flush(i)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        g.replay()
        end.record()
        torch.cuda.synchronize()
        events.append(start.elapsed_time(end) * 1000.0)
        spans.append((int(slots[1]) - (int(slots[0]) & (2**64 - 1))) / 1000.0)
        if ctas:
            splits.append(cta_split(slots[:2 + 3 * ctas].cpu()))
    median = {k: statistics.median(s[k] for s in splits) for k in splits[0]} if splits else {}
    return statistics.median(events), statistics.median(spans), median


def cta_split(rec: torch.Tensor) -> dict[str, float]:
    """How one run's span splits, from HM_TIMESTAMP_CTAS records (arch/timer.cuh), in us: ``ramp`` (the last CTA's
    start after the first's), the CTAs' own run times (``run_min``/``run_med``/``run_max``), the median run of the
    CTAs that shared their SM with another (``run_shared``) and of those alone on theirs (``run_alone``, 0 if none),
    and ``tail`` (the last finish after the median finish)."""
    t0 = int(rec[0])
    per = rec[2:].view(-1, 3)
    ran = per[:, 1] > 0
    start = (per[ran, 0] - t0).double() / 1000.0
    finish = (per[ran, 1] - t0).double() / 1000.0
    sm = per[ran, 2]
    run = finish - start
    shared = torch.bincount(sm)[sm] > 1
    med = lambda x: float(x.median()) if x.numel() else 0.0  # noqa: E731
    return {"ramp": float(start.max()), "run_min": float(run.min()), "run_med": med(run), "run_max": float(run.max()),
            "run_shared": med(run[shared]), "run_alone": med(run[~shared]), "tail": float(finish.max()) - med(finish)}


def read_bandwidth(timer: Timer, nbytes: int = 256 << 20) -> float:
    """Bytes per second of a read-only pass (torch.sum over ``nbytes`` of float32 data, one tiny write): the
    floor a weight-streaming kernel of that size could reach under this timer."""
    a = torch.rand(nbytes // 4, device="cuda")
    us = timer(lambda: torch.sum(a))
    del a
    return nbytes / (us * 1e-6)


def roofline_us(problem: Any, bandwidth: float, rate: float | None = None) -> float:
    """The fastest a GEMM can run, in us: the bytes it must move (``GemmProblem.bytes_moved``) over ``bandwidth``
    (bytes/s), or, given ``rate`` (FLOP/s), the longer of that and its FLOPs over the rate (../shared/ANCHORS.md's
    roofline). Issue 5 states its targets against the bytes alone."""
    us = problem.bytes_moved() / bandwidth * 1e6
    return us if rate is None else max(us, problem.flops / rate * 1e6)


def copy_bandwidth(timer: Timer) -> float:
    """Bytes per second of a 2 GiB device-to-device copy by an SM kernel, counting bytes read plus written.

    Not ``b.copy_(a)``: captured in a graph that becomes a memcpy node on the copy engines, which measured
    2.77 TB/s on the H200 (2026-12-02) against about 4.25 TB/s for a kernel (ANCHORS.md)."""
    a = torch.randn(1 << 29, device="cuda")
    b = torch.empty_like(a)
    us = timer(lambda: torch.neg(a, out=b))
    del a, b
    return 2 * 4 * (1 << 29) / (us * 1e-6)


def bf16_rate(timer: Timer) -> float:
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    us = timer(lambda: a @ b)
    return 2 * 8192**3 / (us * 1e-6)


def unwarmed_then_warmed(timer: Timer, *measures: Callable[[Timer], float]) -> list[float]:
    """Each of ``measures`` (a rate: larger is faster) taken unwarmed, all of them first while the GPU is still
    cool, then warmed; the larger of each pair, for the roofline (WARM_S: the lower percentage)."""
    cool = [measure(timer.unwarmed()) for measure in measures]
    return [max(c, measure(timer)) for c, measure in zip(cool, measures)]
