"""Dense WnA16 GEMM on one GPU: humming against cuBLAS bf16 (torch.matmul) and FP8 (torch._scaled_mm), same run.

    PYTHONPATH=. python3 benchmarks/bench_wna16.py [--quick] [--sweep] [--json FILE]

Timing (timing.py): each kernel is captured once in a CUDA graph; every sample reads a 512 MB buffer (L2 flushed, left
clean: --flush write writes it instead, as before 2026-12-03, and leaves ~50 MB of dirty lines), then times one replay with CUDA events; the median of --reps samples is reported. The roofline is the fewest bytes
the problem must move (canonical weight codes, scales and zero points, activations, output; GemmProblem.
bytes_moved) over the device-to-device copy bandwidth measured at the start of the same run (read + written
bytes over time), or the FLOPs over the bf16 rate cuBLAS reaches on 8192^3 in this run, whichever is larger.

Columns (wna16_report.py's docstring defines each JSON field): shape (N x K), M, format, act (the humming line's
activation and output dtype), us (one replay), %roof (the roofline over us: the longer of bytes and FLOPs), %bytes
(the bytes term alone: issue 5's "% of roofline"), xcuBLAS (cuBLAS bf16 us over humming us), cuBLAS us, FP8 us;
"-" where not measured, "failed: ..." where the tuner's plan did not launch. With --chain L, also each line as one
of L consecutive layers over distinct weights in one graph, per layer: chain_us, chain%roof (FLOP-capped),
chain%bytes (bytes alone), chain_cuBLAS (cuBLAS bf16 the same way) and chain_x (chain_cuBLAS over chain_us): how a
captured decode step runs them, each launch overlapping the end of the one before where the launch allows
(programmatic dependent launch, docs/kernels.md). The JSON also records the device, torch, reps, flush, chain
length, act, the arguments and the commit (HUMMING_COMMIT where the tree has no git).
--sweep also times a few tile variants per (shape, M) and prints the fastest (to refresh the tuning table).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from humming.core import dtypes, packing, presets, quantized, reference  # noqa: E402
from humming.core.formats import Granularity, QuantFormat, ScaleSpec, WeightFormat, ZeroPointSpec  # noqa: E402
from humming.core.problem import GemmProblem  # noqa: E402
from humming.core.plan import KernelPlan  # noqa: E402
from humming.errors import InvalidInputError, UnsupportedError  # noqa: E402
from humming.kernels.gemm_dense import ACTIVATIONS, Tile  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import (Timer, add_plan_only_arguments, bf16_rate, chain_time, copy_bandwidth,  # noqa: E402
                    loop_local_accesses, plan_only_target, read_bandwidth, require_cuda, roofline_us,
                    unwarmed_then_warmed)
from wna16_report import (CheckTally, case_row, failed_row, git_commit, pair_line, progress_line,  # noqa: E402
                          table_lines)

SHAPES = ((8192, 8192), (28672, 8192), (8192, 28672), (28672, 4096), (4096, 14336))
LARGE = SHAPES[1:4]
W4_MS = (1, 4, 8, 16, 32, 64, 128, 256, 1024, 4096)
W4 = WeightFormat(dtypes.s4, ScaleSpec(Granularity.GROUP, dtypes.bf16, 128))
FORMATS = {
    "w4a16 s4 g128": W4,
    "w4a16 u4 zp g128": presets.get("awq_int4").weight,
    "w8a16 s8 ch": WeightFormat(dtypes.s8, ScaleSpec(Granularity.CHANNEL, dtypes.f32)),
    "w8a16 e4m3 ch": presets.get("fp8_channel_w8a16").weight,
    "w8a16 u8 zp g128": WeightFormat(dtypes.u8, ScaleSpec(Granularity.GROUP, dtypes.bf16, 128), ZeroPointSpec.INT),
    "mxfp4": presets.get("mxfp4").weight,
    "nvfp4": presets.get("nvfp4_w4a16").weight,
}
SWEEP = {
    "decode": (Tile(1, 1, 4, 1, 2, 128, 4, 8, 2), Tile(1, 1, 4, 1, 2, 128, 6, 8, 1), Tile(1, 1, 2, 1, 4, 128, 4, 8, 2),
               Tile(1, 1, 4, 1, 1, 64, 8, 8, 2), Tile(1, 1, 8, 1, 1, 128, 4, 8, 1), Tile(1, 1, 2, 1, 2, 128, 6, 8, 3),
               Tile(1, 1, 4, 1, 4, 256, 3, 8, 2), Tile(1, 1, 2, 1, 2, 64, 8, 8, 4)),
    "m64": (Tile(1, 4, 4, 1, 2, 128, 4, 8, 1), Tile(2, 2, 4, 1, 1, 128, 4, 8, 1), Tile(1, 4, 2, 1, 2, 128, 4, 8, 2),
            Tile(2, 2, 2, 1, 2, 128, 4, 8, 1), Tile(1, 4, 4, 1, 1, 64, 6, 8, 1)),
    "large": (Tile(2, 4, 4, 1, 1, 64, 4, 8, 1), Tile(2, 4, 2, 1, 1, 64, 4, 8, 1), Tile(4, 2, 2, 1, 1, 64, 4, 8, 1),
              Tile(2, 4, 4, 1, 1, 128, 3, 8, 1), Tile(2, 4, 2, 1, 1, 64, 5, 8, 2), Tile(4, 2, 4, 1, 1, 64, 4, 8, 1)),
}


def bench_weights(fmt: WeightFormat, n: int, k: int, keep_q: bool, act: dtypes.DType = dtypes.bf16):
    """Random [n, k] weights quantized to ``fmt`` and packed for ``act``, as every timed case makes them: (packed,
    the quantized tensor when ``keep_q``, else None, freed before anything is timed)."""
    w = torch.randn(n, k, device="cuda")
    q = quantized.quantize(w, QuantFormat(fmt))
    del w
    pw = packing.pack(q, act)
    return pw, (q if keep_q else None)


def humming_case(fmt: WeightFormat, n: int, k: int, ms: tuple[int, ...], timer: Timer, *, sweep: bool,
                 bandwidth: float, rate: float, results: list, baselines: dict, verify: bool = False, chain: int = 0,
                 act: dtypes.DType = dtypes.bf16) -> None:
    import humming.ops as hg

    pw, q = bench_weights(fmt, n, k, verify, act)
    # --chain: the other layers' weights (distinct, so that each layer reads its own cold)
    others = [bench_weights(fmt, n, k, False, act)[0] for _ in range(chain - 1)] if chain > 1 else []
    caps, tuner, sms = hg._device(0)
    tdt = hg._TORCH[act]
    for m in ms:
        x = torch.randn(m, k, device="cuda").to(tdt)
        out = torch.empty(m, n, device="cuda", dtype=tdt)
        problem = GemmProblem(m, n, k, fmt, act, act)
        plans = [tuner.plan(problem, caps, sms)]
        if sweep:
            group = "decode" if m <= 16 else ("m64" if m <= 128 else "large")
            for tile in SWEEP[group]:
                for sched in ("stream-k", "data-parallel"):
                    try:
                        plans.append(tuner.plan(problem, caps, sms, tile=tile, schedule=sched))
                    except Exception:  # noqa: BLE001 - a variant that does not apply to this problem
                        pass
        from humming.core.build import compile_many

        compile_many([p.spec for p in plans])
        out.fill_(float("nan"))  # what the timed replays leave unwritten stays NaN (verified() counts it)
        best = None
        chosen = None
        checked = None
        variants = []
        failure = ""
        for i, plan in enumerate(plans):
            try:
                us = timer(lambda: hg.launch(out, x, pw.data, pw.scales, pw.zeros, pw.chscale, pw.gscale, None, fmt,
                                             n, k, plan))
            except Exception as exc:  # noqa: BLE001
                print(f"  {n}x{k} M={m} variant {i} failed: {str(exc).splitlines()[0]}", flush=True)
                failure = failure or str(exc).splitlines()[0]
                continue
            variants.append((str(plan.spec.tile), plan.schedule, round(us, 2)))
            if i == 0:
                chosen = us
                # The timed replays' own output against the float64 reference: a time that beats the roofline or the
                # kernel's own span would otherwise hide work left undone.
                checked = verified(out, x, q) if verify else None
            if best is None or us < best[0]:
                best = (us, plan)
        what = dict(shape=f"{n}x{k}", m=m, fmt=fmt.describe(), act=act.name, tile=plans[0].spec.tile.describe(),
                    schedule=plans[0].schedule)
        if chosen is None:  # the tuner's plan did not launch: the row says so (the table and the JSON keep it)
            results.append(failed_row(**what, error=failure))
            print(progress_line(results[-1]), flush=True)
            continue
        chained = None
        if others:
            outs = [torch.empty_like(out) for _ in others]
            fns = [(lambda w, o: (lambda: hg.launch(o, x, w.data, w.scales, w.zeros, w.chscale, w.gscale, None, fmt,
                                                     n, k, plans[0])))(w, o) for w, o in zip([pw, *others], [out, *outs])]
            chained = chain_time(timer, fns)
        # The roofline: the bytes over the copy bandwidth or the FLOPs over cuBLAS's rate, whichever is longer
        # (../shared/ANCHORS.md's). Issue 5 states its targets against the bytes alone, which differs from M = 64 on
        # (flops-bound there): the row has both, for the single replay and the chain.
        row = case_row(**what, us=chosen, roof_us=roofline_us(problem, bandwidth, rate),
                       bytes_us=roofline_us(problem, bandwidth), base=baselines.get((n, k, m), {}), chained=chained,
                       verified=checked)
        if sweep and best is not None:
            row["variants"] = variants
            row["best_us"] = best[0]
            row["best"] = f"{best[1].spec.tile} {best[1].schedule}"
        results.append(row)
        print(progress_line(row), flush=True)


def verified(out: torch.Tensor, x: torch.Tensor, q: quantized.QuantizedTensor) -> str:
    """'ok', or what is wrong with ``out`` against the float64 reference of x and q: how many outputs are still the
    NaN poison (never written), else the tolerance check's message."""
    if out.is_cuda:
        torch.cuda.synchronize()
    unwritten = int(torch.isnan(out).sum())
    if unwritten:
        rows = int(torch.isnan(out).any(1).sum())
        return f"{unwritten} of {out.numel()} outputs never written (NaN) in {rows} of {out.shape[0]} rows"
    try:
        reference.check_gemm(out, x, q)
    except AssertionError as exc:
        xd, wd = reference.reference_operands(x, q)  # the inputs' scale beside the message
        return (f"{str(exc).splitlines()[0][:160]}; max |x| {float(xd.abs().max()):.3g} (zero rows "
                f"{int((xd.abs().amax(1) == 0).sum())}), max |W| {float(wd.abs().max()):.3g} (zero rows "
                f"{int((wd.abs().amax(1) == 0).sum())}), max |out| {float(out.float().abs().max()):.3g}")
    return "ok"


def baseline_cases(shapes, ms, timer: Timer, chain: int = 0) -> dict:
    out = {}
    for n, k in shapes:
        wt = torch.randn(n, k, device="cuda").to(torch.bfloat16)
        w8 = wt.to(torch.float8_e4m3fn)
        one = torch.ones((), device="cuda")
        others = [torch.randn(n, k, device="cuda").to(torch.bfloat16) for _ in range(chain - 1)] if chain > 1 else []
        for m in ms:
            x = torch.randn(m, k, device="cuda").to(torch.bfloat16)
            row = {"cublas": timer(lambda: torch.matmul(x, wt.T))}
            if others:
                row["cublas_chain"] = chain_time(timer, [(lambda w: (lambda: torch.matmul(x, w.T)))(w)
                                                         for w in [wt, *others]])
            try:
                x8 = x.to(torch.float8_e4m3fn)
                row["fp8"] = timer(lambda: torch._scaled_mm(x8, w8.T, one, one, out_dtype=torch.bfloat16))
            except Exception:  # noqa: BLE001 - _scaled_mm needs M % 16 == 0 on some builds
                row["fp8"] = None
            out[(n, k, m)] = row
        del wt, w8, others
    return out


def _case_module():
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "tests" / "gpu" / "test_gemm_dense_gpu.py"
    spec = importlib.util.spec_from_file_location("gemm_dense_gpu_cases", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def check_matrix(first: int = 0, only: tuple[str, ...] = ()) -> int:
    """Correctness of every format x act x M of tests/gpu/test_gemm_dense_gpu.py, one line per (format, act),
    from format index ``first``: START <index> before each format, a pair_line after each (format, act), NEXT
    <index> at the end (wna16_report.CheckTally reads them). A CUDA error poisons the context: print NEXT <index + 1>
    FAILED <index> and stop (the parent restarts a fresh process there). Returns the failures seen."""
    mod = _case_module()
    t = time.time()
    mod.compile_all()
    print(f"compiled the test kernels in {time.time() - t:.1f} s", flush=True)
    failures = 0
    names = list(mod.FORMATS)
    for index in range(first, len(names)):
        fmt_id = names[index]
        if only and fmt_id not in only:
            continue
        print(f"START {index}", flush=True)
        for act in (dtypes.f16, dtypes.bf16):
            marks = []
            for m in mod.MS:
                try:
                    for i, shape in enumerate(mod.SHAPES):
                        mod._run(fmt_id, act, m, shape, bias=(m + i) % 2 == 1, out=act)
                    marks.append(f"{m}:ok")
                except Exception as exc:  # noqa: BLE001
                    failures += 1
                    marks.append(f"{m}:FAIL")
                    print(f"    {fmt_id} {act} M={m}: {str(exc)[:400]}", flush=True)
                    if "CUDA error" in str(exc) or "illegal" in str(exc):
                        print(pair_line(fmt_id, act.name, marks, cuda_error=True), flush=True)
                        print(f"NEXT {index + 1} FAILED {index}", flush=True)
                        return failures
            print(pair_line(fmt_id, act.name, marks), flush=True)
    print(f"NEXT {len(names)}", flush=True)
    return failures


def check_plan_only(arch: str, sms: int, only: tuple[str, ...] = ()) -> None:
    """The check matrix's kernels planned and compiled for ``arch`` without a GPU: how many, how many spill, and
    each that reads or writes local memory inside its MMA loop (a device step's kernel switches,
    HUMMING_KERNEL_DEFINES, checked before device time goes to them)."""
    caps, tuner = plan_only_target(arch)
    refused: dict[str, str] = {}  # what the target cannot run (sm_75: bf16), once per reason

    def plan(problem: GemmProblem) -> KernelPlan | None:
        try:
            return tuner.plan(problem, caps, sms)
        except UnsupportedError as exc:
            refused.setdefault("missing: " + "; ".join(exc.missing) if exc.missing else str(exc), problem.describe())
            return None

    t = time.time()
    kernels = _case_module().compile_all(plan, only)
    unique = list({k.binary: k for k in kernels}.values())
    spills = [k for k in unique if k.resources.spills]
    # local memory in the loop: spilled registers, or an array the compiler could not keep in registers
    in_loop = [(k, n) for k in unique if (n := loop_local_accesses(k))]
    print(f"plan only: the check matrix's {len(kernels)} plans, {len(unique)} kernels for {arch} ({sms} SMs) "
          f"compiled in {time.time() - t:.1f} s; {len(spills)} spill, {len(in_loop)} read or write local memory "
          "inside the MMA loop", flush=True)
    for reason, example in refused.items():
        print(f"  refused ({reason}), e.g. {example}", flush=True)
    for k, n in in_loop:
        r = k.resources
        print(f"  {n} LDL / STL in the loop ({r.spill_stores}/{r.spill_loads} B spilled, {r.stack_frame} B stack "
              f"frame, {r.registers} registers): {k.spec.describe()}", flush=True)


class _Stopped(Exception):
    pass


def _stop(signum: int, frame: object) -> None:
    raise _Stopped(f"{signal.Signals(signum).name}: the step's timeout?")


def check_isolated(only: tuple[str, ...] = ()) -> int:
    """check_matrix in child processes, a fresh one after a CUDA error or a child's death (resuming after the format
    it was in); closes with the counts (CheckTally.summary) even when stopped by SIGTERM, and returns the exit
    status: 1 on any failure or any (format, act) not run."""
    import subprocess
    import tempfile

    tally = CheckTally(list(_case_module().FORMATS), only)
    previous = signal.signal(signal.SIGTERM, _stop)
    first: int | None = tally.selected[0] if tally.selected else None
    try:
        while first is not None:
            with tempfile.TemporaryFile("w+") as err:
                child = subprocess.Popen([sys.executable, __file__, "--check-from", str(first), "--only",
                                          ",".join(only)], stdout=subprocess.PIPE, stderr=err, text=True)
                try:
                    assert child.stdout is not None
                    for line in child.stdout:
                        sys.stdout.write(line)
                        tally.feed(line)
                    child.wait()
                finally:
                    if child.poll() is None:
                        child.kill()
                        child.wait()
                if child.returncode == -signal.SIGTERM:  # the step's timeout signals the whole process group
                    raise _Stopped("SIGTERM: the step's timeout?")
                err.seek(0)
                first, note = tally.child_ended(first, err.read()[-1500:])
            if note:
                print(note, flush=True)
    except _Stopped as exc:
        tally.stopped = str(exc)
    finally:
        signal.signal(signal.SIGTERM, previous)
    lines, status = tally.summary()
    print("\n".join(lines), flush=True)
    return status


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="W4A16 on the large shapes at M = 1, 16, 64, 1024 only")
    ap.add_argument("--m", default="", help="comma list of M for W4A16 (default: 1, 16, 64, 1024 with --quick, else "
                    f"{', '.join(map(str, W4_MS))}); the shapes stay those of --quick or all five")
    ap.add_argument("--sweep", action="store_true", help="also time tile variants and print the fastest")
    ap.add_argument("--reps", type=int, default=100, help="samples a line, each one replay (ANCHORS: median of 100)")
    ap.add_argument("--flush", default="read", choices=("read", "write"), help="how the L2 is flushed before each sample")
    ap.add_argument("--formats", default="all", help="comma list of format ids, or all")
    ap.add_argument("--json", default="")
    ap.add_argument("--no-baselines", action="store_true", help="skip the cuBLAS and FP8 timings")
    ap.add_argument("--verify", action="store_true", help="check each timed kernel's output against the float64 "
                    "reference after its replays")
    ap.add_argument("--chain", type=int, default=0, help="also time each line as one of this many consecutive layers "
                    "over distinct weights in one graph (per layer; cuBLAS too)")
    ap.add_argument("--act", default="bf16", help="activation and output dtype of the humming lines, bf16 or f16, "
                    "or both as a comma list (each case then timed in both, one after the other, in this process); "
                    "the baselines stay cuBLAS bf16 and FP8, as the issue names them")
    ap.add_argument("--check", action="store_true", help="run the correctness matrix (isolated processes) only")
    ap.add_argument("--check-from", type=int, default=-1, help=argparse.SUPPRESS)
    ap.add_argument("--only", default="", help="with --check: a comma list of the test matrix's format ids")
    add_plan_only_arguments(ap, "with --check, no GPU: plan and compile the matrix's kernels for --arch (as the "
                            "kernel switches in HUMMING_KERNEL_DEFINES build them) and list any with local memory "
                            "in its MMA loop; nothing runs")
    ap.add_argument("--diagnose", type=int, default=-1, help="run one case of format #i once, save its cubin to $OUT")
    ap.add_argument("--diag-m", type=int, default=1, help="with --diagnose: M of that case (f16, the first shape)")
    args = ap.parse_args()
    try:
        acts = [dtypes.DType.parse(a) for a in args.act.split(",")]
    except InvalidInputError as exc:
        ap.error(f"--act: {exc}")
    if not set(acts) <= set(ACTIVATIONS):
        ap.error(f"--act takes bf16, f16 or both (bf16,f16), not {args.act!r}")
    names = list(FORMATS) if args.formats == "all" else args.formats.split(",")
    if unknown := [name for name in names if name not in FORMATS]:
        ap.error(f"--formats: unknown {', '.join(map(repr, unknown))}; known: {', '.join(FORMATS)}")
    only = tuple(filter(None, args.only.split(",")))
    if only and not (args.check or args.check_from >= 0):
        ap.error("--only goes with --check")
    if only and (unknown := [o for o in only if o not in _case_module().FORMATS]):
        ap.error(f"--only: unknown format id(s) {', '.join(unknown)}; the check matrix's: "
                 f"{', '.join(_case_module().FORMATS)}")
    if args.plan_only:
        if not args.check:
            ap.error("--plan-only goes with --check (profile_wna16.py --plan-only plans timing variants)")
        check_plan_only(args.arch, args.sms, only)
        return
    require_cuda(Path(__file__).name)
    if args.diagnose >= 0:
        from humming.core.build import compile_spec
        from humming.ops import plan_for

        mod = _case_module()
        name = list(mod.FORMATS)[args.diagnose]
        fmt = mod.FORMATS[name]
        n, k = mod.SHAPES[0][0], mod._k_for(fmt, mod.SHAPES[0][1])
        plan = plan_for(GemmProblem(args.diag_m, n, k, fmt, dtypes.f16, dtypes.f16, True), 0)
        Path(os.environ.get("OUT", "."), "diag.cubin").write_bytes(compile_spec(plan.spec).binary)
        print(f"diagnose {name}: {plan.spec.describe()}", flush=True)
        mod._run(name, dtypes.f16, args.diag_m, mod.SHAPES[0], bias=True, out=dtypes.f16)
        torch.cuda.synchronize()
        print("diagnose: ran without error", flush=True)
        return
    if args.check_from >= 0:
        sys.exit(1 if check_matrix(args.check_from, only) else 0)
    if args.check:
        sys.exit(check_isolated(only))
    timer = Timer(args.reps, args.flush)
    t0 = time.time()
    # (at 20:37 on 2026-12-03 the unwarmed ones came after the warmed copies: 692 TFLOP/s)
    rate, bw = unwarmed_then_warmed(timer, bf16_rate, copy_bandwidth)
    print(f"copy bandwidth {bw / 1e12:.3f} TB/s (read-only pass {read_bandwidth(timer) / 1e12:.3f} TB/s, L2 flush by "
          f"{args.flush}), cuBLAS bf16 8192^3 {rate / 1e12:.0f} TFLOP/s "
          f"({torch.cuda.get_device_name()}, torch {torch.__version__}); humming lines in {args.act}", flush=True)

    shapes = LARGE if args.quick else SHAPES
    w4_ms = (tuple(int(v) for v in args.m.split(",")) if args.m else (1, 16, 64, 1024) if args.quick else W4_MS)
    baselines = {} if args.no_baselines else baseline_cases(shapes, w4_ms, timer, args.chain)
    results: list = []
    for name in names:
        fmt = FORMATS[name]
        is_w4 = name.startswith("w4a16 s4")
        for n, k in (shapes if is_w4 else LARGE):
            ms = w4_ms if is_w4 else (1, 16)
            for act in acts:
                humming_case(fmt, n, k, ms, timer, sweep=args.sweep and is_w4, bandwidth=bw, rate=rate,
                             results=results, baselines=baselines, verify=args.verify, chain=args.chain, act=act)
            torch.cuda.empty_cache()
    print("\n" + "\n".join(table_lines(results, args.chain > 1)))
    print(f"total {time.time() - t0:.0f} s")
    if args.json:
        meta = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "reps": args.reps,
                "flush": args.flush, "chain": args.chain, "act": args.act, "argv": sys.argv[1:],
                "commit": git_commit(Path(__file__).resolve().parents[1]) or os.environ.get("HUMMING_COMMIT"),
                "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        Path(args.json).write_text(json.dumps({"copy_bw": bw, "bf16_rate": rate, **meta, "rows": results}, indent=1))


if __name__ == "__main__":
    main()
