"""How much of a benchmark replay is the kernel, and how much the harness around it (NOTES-wna16 runs 11, 22).

    PYTHONPATH=. python3 benchmarks/experiments/launch_gap.py [--reps 25] [--layers 8]

For a few decode problems (the tuner's plan) and cuBLAS bf16, one line each with four times in us, all medians:
- ``single``: bench_wna16's method: a read flush, then CUDA events around one replay of a graph holding the kernel;
- ``direct``: the same flush, events around a plain stream launch (no graph);
- ``in-graph``: one graph holds the flush, an event, the kernel and an event (event record nodes), replayed;
- ``chain``: one graph of ``--layers`` launches of the same problem over as many distinct weight tensors (each larger
  than the L2 or, together, several times it: every layer reads its weights cold), its replay time / layers. That is
  how a decode step captured in a graph runs consecutive linear layers.
And a tiny kernel (a 1-element negation) under single / direct / in-graph: the harness alone.

    PYTHONPATH=. python3 benchmarks/experiments/launch_gap.py --pdl [--rounds 3]

Programmatic dependent launch off and on (HUMMING_PDL), interleaved in one process: per-layer times of graphs of
dependent MLP layers and of independent layers, each variant's output checked bit for bit against the first's.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_wna16 import FORMATS, bench_weights  # noqa: E402
from timing import Timer, chain_time, settled_replays  # noqa: E402

from humming.core import dtypes  # noqa: E402
from humming.core.problem import GemmProblem  # noqa: E402

CASES = (("w4a16 s4 g128", 28672, 8192, 1), ("w4a16 s4 g128", 28672, 8192, 16), ("w4a16 s4 g128", 28672, 4096, 1),
         ("w4a16 s4 g128", 28672, 4096, 16), ("w8a16 s8 ch", 28672, 4096, 16), ("mxfp4", 8192, 28672, 1))


def single(timer: Timer, fn) -> float:
    return timer(fn)


def direct(timer: Timer, fn) -> float:
    times = []
    for i in range(timer.reps):
        timer._flush(i)
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) * 1000.0)
    return statistics.median(times)


def in_graph(timer: Timer, fn) -> float:
    """Flush, event, kernel, event, all nodes of one graph (external events: record nodes, timed)."""
    a = torch.cuda.Event(enable_timing=True, external=True)
    b = torch.cuda.Event(enable_timing=True, external=True)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=timer.stream):
        timer._flush(0)
        a.record(timer.stream)
        fn()
        b.record(timer.stream)
    for _ in range(3):
        g.replay()
    times = []
    for _ in range(timer.reps):
        g.replay()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) * 1000.0)
    return statistics.median(times)


def line(name: str, timer: Timer, fn, fns=None) -> None:
    got = {"single": single(timer, fn), "direct": direct(timer, fn)}
    try:
        got["in-graph"] = in_graph(timer, fn)
    except Exception as exc:  # noqa: BLE001 - external timing events in a capture: not on every build
        print(f"  in-graph failed: {str(exc).splitlines()[0]}")
    if fns:
        got["chain"] = chain_time(timer, fns)
    print(f"{name:<42} " + "  ".join(f"{k} {v:7.2f}" for k, v in got.items()), flush=True)


#: (name, knobs) of the programmatic-launch comparison. With experiments/wna16-weights-ahead.patch applied, add
#: ("pdl+smem w", {"HUMMING_PDL": True, "HUMMING_KERNEL_DEFINES": ["HM_EARLY_WEIGHTS=1"]}) (the prologue's weights
#: copied before the kernel's wait) or HM_EARLY_WEIGHTS=2 (prefetched into the L2) to time those (NOTES-wna16 run 22).
PDL_VARIANTS = (("pdl off", {"HUMMING_PDL": False}), ("pdl on", {"HUMMING_PDL": True}))


def _mlp_chain(m: int, pairs: int):
    """(run, last output): ``pairs`` up (28672 x 8192) / down (8192 x 28672) s4 g128 pairs of distinct weights, each
    layer reading the previous one's output, a scaling kernel after each pair (as a model has kernels between)."""
    import humming.ops as hg

    caps, tuner, sms = hg._device(0)
    fmt = FORMATS["w4a16 s4 g128"]
    ups = [bench_weights(fmt, 28672, 8192, False)[0] for _ in range(pairs)]
    downs = [bench_weights(fmt, 8192, 28672, False)[0] for _ in range(pairs)]
    x = torch.randn(m, 8192, device="cuda").to(torch.bfloat16) * 0.01
    hs = [torch.empty(m, 28672, device="cuda", dtype=torch.bfloat16) for _ in ups]
    ys = [torch.empty(m, 8192, device="cuda", dtype=torch.bfloat16) for _ in downs]
    up_plan = tuner.plan(GemmProblem(m, 28672, 8192, fmt, dtypes.bf16, dtypes.bf16), caps, sms)
    down_plan = tuner.plan(GemmProblem(m, 8192, 28672, fmt, dtypes.bf16, dtypes.bf16), caps, sms)

    def run():
        src = x
        for pu, pd, h, y in zip(ups, downs, hs, ys):
            hg.launch(h, src, pu.data, pu.scales, pu.zeros, pu.chscale, pu.gscale, None, fmt, 28672, 8192, up_plan)
            hg.launch(y, h, pd.data, pd.scales, pd.zeros, pd.chscale, pd.gscale, None, fmt, 8192, 28672, down_plan)
            src = y * (1.0 / 64)
        return src

    return run, ys[-1]


def _independent_chain(n: int, k: int, layers: int):
    """(fns, last output): ``layers`` s4 g128 M = 1 GEMMs over distinct weights, all reading one x."""
    import humming.ops as hg

    caps, tuner, sms = hg._device(0)
    fmt = FORMATS["w4a16 s4 g128"]
    weights = [bench_weights(fmt, n, k, False)[0] for _ in range(layers)]
    x = torch.randn(1, k, device="cuda").to(torch.bfloat16)
    outs = [torch.empty(1, n, device="cuda", dtype=torch.bfloat16) for _ in weights]
    plan = tuner.plan(GemmProblem(1, n, k, fmt, dtypes.bf16, dtypes.bf16), caps, sms)
    return [(lambda pw, o: (lambda: hg.launch(o, x, pw.data, pw.scales, pw.zeros, pw.chscale, pw.gscale, None, fmt, n,
                                              k, plan)))(pw, o) for pw, o in zip(weights, outs)], outs[-1]


def _graph_of(timer: Timer, fns) -> torch.cuda.CUDAGraph:
    for fn in fns:
        fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=timer.stream):
        for fn in fns:
            fn()
    g.replay()
    torch.cuda.synchronize()
    return g


def pdl(timer: Timer, layers: int, rounds: int) -> None:
    """Per layer, us, under each PDL_VARIANTS, ``rounds`` rounds interleaved in one process (each variant's graph
    captured once): dependent MLP chains at M = 1 and 16, and independent 28672 x 4096 / 28672 x 8192 M = 1 chains.
    Each variant's output after its graph's replays must equal the first variant's bit for bit (the kernels are
    deterministic): a layer that read its input before the layer before it wrote it would differ."""
    from humming import knobs

    cases = []
    for m in (1, 16):
        run, last = _mlp_chain(m, layers // 2)
        cases.append((f"MLP chain M={m} (+4 scaling kernels)", [run], last, layers))
    for n, k in ((28672, 4096), (28672, 8192)):
        fns, last = _independent_chain(n, k, layers)
        cases.append((f"independent {n}x{k} M=1", fns, last, layers))
    for name, fns, last, per in cases:
        graphs = []
        for _, values in PDL_VARIANTS:
            with knobs.scope(**values):
                graphs.append(_graph_of(timer, fns))
        results: list[list[float]] = [[] for _ in PDL_VARIANTS]
        outputs = []
        for i, g in enumerate(graphs):
            last.fill_(float("nan"))
            g.replay()
            torch.cuda.synchronize()
            outputs.append(last.clone())
        for _ in range(rounds):  # each measurement settles the clocks first (timing.settled_replays)
            for i, g in enumerate(graphs):
                results[i].append(settled_replays(timer, g, per))
        same = ["equal" if torch.equal(o, outputs[0]) else "DIFFERS" for o in outputs]
        print(f"{name:<38} " + "  ".join(f"{v}: {' '.join(f'{t:6.2f}' for t in r)} ({s})"
                                           for (v, _), r, s in zip(PDL_VARIANTS, results, same)), flush=True)
        del graphs
        torch.cuda.empty_cache()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=25)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--pdl", action="store_true", help="only the programmatic-launch comparison")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    import humming.ops as hg

    timer = Timer(args.reps)
    if args.pdl:
        pdl(timer, args.layers, args.rounds)
        return
    tiny = torch.ones(1, device="cuda")
    line("tiny kernel (neg of 1 element)", timer, lambda: torch.neg(tiny))
    caps, tuner, sms = hg._device(0)
    for fmt_id, n, k, m in CASES:
        fmt = FORMATS[fmt_id]
        weights = [bench_weights(fmt, n, k, False)[0] for _ in range(args.layers)]
        x = torch.randn(m, k, device="cuda").to(torch.bfloat16)
        outs = [torch.empty(m, n, device="cuda", dtype=torch.bfloat16) for _ in weights]
        plan = tuner.plan(GemmProblem(m, n, k, fmt, dtypes.bf16, dtypes.bf16), caps, sms)

        def call(pw, out):
            return lambda: hg.launch(out, x, pw.data, pw.scales, pw.zeros, pw.chscale, pw.gscale, None, fmt, n, k, plan)

        fns = [call(pw, out) for pw, out in zip(weights, outs)]
        line(f"{fmt_id} {n}x{k} M={m}", timer, fns[0], fns)
        del weights, outs, fns
        if fmt_id == "w4a16 s4 g128" and m == 1:
            wts = [torch.randn(n, k, device="cuda").to(torch.bfloat16) for _ in range(4)]
            bfns = [(lambda w: (lambda: torch.matmul(x, w.T)))(w) for w in wts]
            line(f"cuBLAS bf16 {n}x{k} M={m}", timer, bfns[0], bfns)
            del wts, bfns
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
