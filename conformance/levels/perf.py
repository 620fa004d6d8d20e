"""Level ``perf`` (a device): memory bandwidth, the tensor rate per dtype, and the GEMM table against that roofline.

Cases:

- ``perf/bandwidth/copy``: device-to-device copy of 2 GiB (read + write counted), median of 20; compared with
  the SKU's datasheet bandwidth when the table has one.
- ``perf/mma/<dtype>``: the dense tensor rate for each operand dtype the target's MMA table takes and torch can
  drive through cuBLAS (f16, bf16, tf32, e4m3 via ``torch._scaled_mm``, s8 via ``torch._int_mm``): an
  8192 x 8192 x 8192 product, median of 10; compared with the SKU's peak when the table has one.
- ``perf/gemm/<case id>``: humming's GEMM (ANCHORS.md's W4A16 g128 layer shapes), CUDA-graph replays with L2
  flushed between them, median of 100, against the roofline max(bytes / measured bandwidth, FLOPs / measured
  tensor rate) and against torch's bf16 matmul of the same shape.

Every case passes once it is measured; the figures are the result (``error`` holds them). A case fails only
when the measurement itself fails. Without a device every case is skipped.
"""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable

from conformance import cases as cases_mod
from conformance import worker
from conformance.runner import CaseResult, Skip, Status, Suite, error_text, outcome_of

LEVEL = "perf"
MMA_DTYPES = ("f16", "bf16", "tf32", "e4m3", "s8")
MMA_SIZE = 8192
COPY_BYTES = 2 << 30
ID_FORMS = (f"{LEVEL}/bandwidth/copy", f"{LEVEL}/mma/<dtype>",
            f"{LEVEL}/gemm/<preset>.<activation>/m<M>n<N>k<K>")
FLUSH_BYTES = 512 << 20  # larger than any L2 in the catalog (H200: 50 MiB; B200: 126 MiB)

#: Measurements a later case of the same worker reuses (the GEMM roofline needs the bandwidth and the rate).
_measured: dict[str, float] = {}


def case_ids(suite: Suite) -> list[str]:
    ids = [f"{LEVEL}/bandwidth/copy"] + [f"{LEVEL}/mma/{d}" for d in MMA_DTYPES]
    ids += [f"{LEVEL}/gemm/{c.id}" for c in cases_mod.PERF_GEMMS]
    return [i for i in ids if suite.selected(i)]


def run(suite: Suite) -> list[CaseResult]:
    return worker.run_device_level(suite, LEVEL, case_ids(suite))


# ---- timing ------------------------------------------------------------------------------------------------------
def time_us(fn: Callable[[], Any], *, reps: int = 100, flush: bool = True, graph: bool = True) -> tuple[float, str]:
    """Median microseconds of ``fn`` on the current stream: CUDA-graph replays (else eager), L2 flushed before each."""
    import torch

    fn()
    torch.cuda.synchronize()
    scratch = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda") if flush else None
    run = fn
    method = "eager"
    if graph:
        try:
            g = torch.cuda.CUDAGraph()
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                fn()  # warm up on the capture stream
                torch.cuda.synchronize()
                with torch.cuda.graph(g, stream=stream):
                    fn()
            torch.cuda.current_stream().wait_stream(stream)
            run, method = g.replay, "cuda-graph"
        except Exception:  # not capturable: time eager launches (host overhead included, and said so)
            torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        if scratch is not None:
            scratch.zero_()
        starts[i].record()
        run()
        ends[i].record()
    torch.cuda.synchronize()
    times = [s.elapsed_time(e) * 1000.0 for s, e in zip(starts, ends)]
    return statistics.median(times), method + (", L2 flushed" if flush else "")


# ---- the cases ---------------------------------------------------------------------------------------------------
def run_one(suite: Suite, case_id: str) -> CaseResult:
    import torch

    t0 = time.monotonic()
    torch.cuda.set_device(suite.device.index)  # type: ignore[union-attr]
    try:
        if case_id == f"{LEVEL}/bandwidth/copy":
            r = _bandwidth(suite, case_id)
        elif case_id.startswith(f"{LEVEL}/mma/"):
            r = _mma(suite, case_id, case_id.rsplit("/", 1)[1])
        else:
            r = _gemm(suite, case_id)
    except Exception as exc:
        status, reason = outcome_of(exc)
        r = suite.result(case_id, LEVEL, status, reason, details={"error": error_text(exc)})
    r.duration_s = time.monotonic() - t0
    return r


def _sku_value(suite: Suite, name: str) -> Any:
    sku = suite.device.sku if suite.device is not None else None
    return getattr(sku, name, None) if sku is not None else None


def _bandwidth(suite: Suite, case_id: str) -> CaseResult:
    import torch

    src = torch.empty(COPY_BYTES // 2 // 4, dtype=torch.int32, device="cuda").random_()
    dst = torch.empty_like(src)
    us, method = time_us(lambda: dst.copy_(src), reps=20, flush=False, graph=False)
    moved = 2 * src.numel() * 4
    tbs = moved / (us * 1e-6) / 1e12
    _measured["bandwidth"] = tbs * 1e12
    sheet = _sku_value(suite, "memory_bandwidth")
    frac = None if not sheet else tbs * 1e12 / sheet
    note = f"; {frac:.0%} of the datasheet's {sheet / 1e12:.2f} TB/s" if frac else ""
    return suite.result(case_id, LEVEL, Status.PASS, f"copy bandwidth {tbs:.2f} TB/s{note}",
                        params={"bytes_moved": moved}, error={"bandwidth_tbs": tbs, "datasheet_fraction": frac},
                        details={"method": method, "us": us})


def _mma(suite: Suite, case_id: str, name: str) -> CaseResult:
    import torch

    from humming.core.dtypes import DType

    d = DType.parse(name)
    if not any(i.a is d or i.b is d for i in suite.caps.mma):
        raise Skip(f"the capability table declares no {d} MMA for {suite.caps.target.arch}")
    n = MMA_SIZE
    gen = torch.Generator(device="cuda").manual_seed(0)
    if d.name in ("f16", "bf16", "tf32"):
        tdt = {"f16": torch.float16, "bf16": torch.bfloat16, "tf32": torch.float32}[d.name]
        a = torch.randn(n, n, device="cuda", dtype=tdt, generator=gen)
        b = torch.randn(n, n, device="cuda", dtype=tdt, generator=gen)
        prev = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = d.name == "tf32"
        try:
            us, method = time_us(lambda: a @ b, reps=10, flush=False)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = prev
        how = "torch.matmul (cuBLAS)"
    elif d.name == "e4m3":
        a = torch.randn(n, n, device="cuda", generator=gen).to(torch.float8_e4m3fn)
        b = torch.randn(n, n, device="cuda", generator=gen).to(torch.float8_e4m3fn).t()
        one = torch.ones((), device="cuda")
        us, method = time_us(lambda: torch._scaled_mm(a, b, one, one, out_dtype=torch.bfloat16), reps=10, flush=False)
        how = "torch._scaled_mm (cuBLASLt)"
    elif d.name == "s8":
        a = torch.randint(-64, 64, (n, n), device="cuda", dtype=torch.int8, generator=gen)
        b = torch.randint(-64, 64, (n, n), device="cuda", dtype=torch.int8, generator=gen)
        try:
            torch._int_mm(a, b)
        except RuntimeError:  # some builds take the second operand column-major only
            b = b.t().contiguous().t()
        us, method = time_us(lambda: torch._int_mm(a, b), reps=10, flush=False)
        how = "torch._int_mm (cuBLASLt)"
    else:  # pragma: no cover - MMA_DTYPES lists only the above
        raise Skip(f"no torch path to time {d} products")
    tflops = 2 * n**3 / (us * 1e-6) / 1e12
    _measured[f"rate.{d.name}"] = tflops * 1e12
    peaks = _sku_value(suite, "peak_dense_tflops") or {}
    peak = peaks.get(d)
    frac = None if not peak else tflops / peak
    note = f"; {frac:.0%} of the datasheet's {peak:g} TFLOP/s" if frac else ""
    return suite.result(case_id, LEVEL, Status.PASS, f"{d} dense rate {tflops:.0f} TFLOP/s through {how}{note}",
                        params={"m": n, "n": n, "k": n, "dtype": d.name}, error={"tflops": tflops,
                                                                                 "datasheet_fraction": frac},
                        details={"method": method, "us": us})


def _gemm(suite: Suite, case_id: str) -> CaseResult:
    from conformance import gemm_api

    cid = case_id[len(f"{LEVEL}/gemm/"):]
    case = next((c for c in cases_mod.PERF_GEMMS if c.id == cid), None)
    if case is None:
        raise Skip(f"{cid} is not in the perf GEMM table")
    selection = gemm_api.select(suite, case)
    if selection.status is not None:
        return suite.result(case_id, LEVEL, selection.status, selection.reason, params=case.params())
    bandwidth = _measured.get("bandwidth")
    if bandwidth is None:
        _bandwidth(suite, f"{LEVEL}/bandwidth/copy")
        bandwidth = _measured["bandwidth"]
    rate_key = f"rate.{case.activation.name}"
    if rate_key not in _measured:
        _mma(suite, f"{LEVEL}/mma/{case.activation.name}", case.activation.name)
    rate = _measured[rate_key]
    got = gemm_api.time_gemm(suite, case, time_us)
    m, n, k = case.shape.m, case.shape.n, case.shape.k
    roofline_us = max(got["bytes"] / bandwidth, 2.0 * m * n * k / rate) * 1e6
    frac = roofline_us / got["us"]
    speedup = got["torch_us"] / got["us"]
    reason = (f"{got['us']:.1f} us: {frac:.0%} of the roofline ({roofline_us:.1f} us), {speedup:.2f}x torch bf16 "
              f"({got['torch_us']:.1f} us)")
    return suite.result(case_id, LEVEL, Status.PASS, reason, params=case.params(),
                        error={"us": got["us"], "roofline_us": roofline_us, "roofline_fraction": frac,
                               "torch_bf16_us": got["torch_us"], "speedup_vs_bf16": speedup},
                        details={"bytes": got["bytes"], "bandwidth": bandwidth, "rate": rate, "method": got["method"],
                                 "kernel": selection.describe()})
