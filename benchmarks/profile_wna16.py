"""One dense WnA16 GEMM on one GPU: time tile variants side by side, or launch one plan in a loop for ncu.

    PYTHONPATH=. python3 benchmarks/profile_wna16.py --format "w4a16 s4 g128" --n 28672 --k 8192 --m 1 \
        [--tiles "1,1,4,1,4,256,3,8,1 stream-k; 1,1,4,1,2,128,6,8,1"] [--loop 3]

--tiles: semicolon-separated variants, each the nine Tile fields (warp_m, frag_m, warp_n, frag_n, warp_k, bk,
stages, group_m, min_blocks[, swap_n8 0/1/2[, bulk_w 0/1[, producer 0/1]]]) and optionally a schedule; the tuner's own plan is always timed first.
A variant prefixed "wgmma:", "wide:" or "widetma:" (the wide form with TMA activations) runs that form of the wgmma
kernel (gemm_dense_wgmma.cuh), else mma.sync.
--loop N: no timing; launch the tuner's plan (or the first variant) N times, for `ncu --launch-skip`.
Timing is bench_wna16's Timer (CUDA-graph replay, L2 flushed, median); the line shows us and % of roofline
against the copy bandwidth measured in the same run.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_wna16 import FORMATS  # noqa: E402
from timing import (Timer, add_plan_only_arguments, copy_bandwidth, loop_local_accesses, plan_only_target,  # noqa: E402
                    read_bandwidth, replay_span, require_cuda, roofline_us, unwarmed_then_warmed)

from humming import knobs  # noqa: E402
from humming.core import dtypes, packing, quantized  # noqa: E402
from humming.core.build import compile_many, define_lines  # noqa: E402
from humming.core.formats import QuantFormat  # noqa: E402
from humming.core.plan import KernelPlan  # noqa: E402
from humming.core.problem import GemmProblem  # noqa: E402
from humming.kernels.gemm_dense import GemmDenseSpec, Tile  # noqa: E402
from humming.kernels.gemm_dense_wgmma import (  # noqa: E402
    GemmDenseWgmmaSpec, GemmDenseWgmmaWideSpec, GemmDenseWgmmaWideTmaSpec, GemmDenseWgmmaWideTmaPairSpec)

#: Int index in the tile-counter workspace (ops._workspace: at least 4096 ints, tile counters from 0; no variant run
#: here has 1024 tiles) of the two u64
#: slots a --span build's kernels write their first start and last finish to (arch/timer.cuh).
SPAN_INDEX = 1024
#: CTAs that also leave their own record after those slots (HM_TIMESTAMP_CTAS): what fits in a 4096-int workspace.
SPAN_CTAS = (4096 - SPAN_INDEX - 4) // 6


KERNELS = {"sync": GemmDenseSpec, "wgmma": GemmDenseWgmmaSpec, "wide": GemmDenseWgmmaWideSpec,
           "widetma": GemmDenseWgmmaWideTmaSpec, "widepair": GemmDenseWgmmaWideTmaPairSpec}


def slowest_ctas(rec: torch.Tensor, ctas: int, grid: int, tiles: int, k_iters: int, count: int) -> str:
    """The ``count`` slowest of a replay's first ``ctas`` CTAs (HM_TIMESTAMP_CTAS records, arch/timer.cuh): each
    CTA's start after the first, its run time, its SM, and the iterations it ran as the kernel's Stream-K split
    gives them (scheduler/stream_k.cuh: CTA g of G runs [g T / G, (g + 1) T / G) of T = tiles x k-steps)."""
    t0 = int(rec[0])
    per = rec[2:2 + 3 * ctas].view(ctas, 3)
    run = (per[:, 1] - per[:, 0]).double() / 1000.0
    total = tiles * k_iters
    lines = []
    for g in run.argsort(descending=True)[:count].tolist():
        b, e = g * total // grid, (g + 1) * total // grid
        lines.append(f"    CTA {g:4d} SM {int(per[g, 2]):3d} start {(int(per[g, 0]) - t0) / 1000:6.2f} run "
                     f"{float(run[g]):6.2f} us  tiles {b // k_iters}..{(e - 1) // k_iters} (k-steps {b}..{e - 1})")
    return "\n".join(lines)


def with_defines(cls: type[GemmDenseSpec], defines: str) -> type[GemmDenseSpec]:
    """A subclass of ``cls`` whose source starts with ``#define NAME V`` for each ``NAME=V`` of ``defines`` (one
    variant built with a template's experiment switch beside the plain kernels of the same process); its ``defines``
    (GemmDenseSpec.defines) let the twin's sizes follow the switches that change them."""
    prefix = define_lines(defines.split(","), "variant")
    plain = cls.render
    return type(f"{cls.__name__}Defines", (cls,), {"render": lambda self: prefix + plain(self), "defines": defines})


def parse_variants(text: str) -> list[tuple[Tile | None, str | None, type[GemmDenseSpec] | None, str]]:
    """``[kernel:]fields [schedule] [+NAME=V,...]`` items separated by ';'; fields ``tuner``: the tuner's own tile
    and kernel (under the schedule given, else the tuner's); ``+NAME=V``: that variant built with those macros (with_defines)."""
    out: list[tuple[Tile | None, str | None, type[GemmDenseSpec] | None, str]] = []
    for item in filter(None, (s.strip() for s in text.split(";"))):
        item, _, defines = item.partition(" +")
        kernel, _, rest = item.partition(":")
        kernel, item = (kernel, rest) if kernel in KERNELS else ("", item)  # split-k:N has a colon too
        fields, _, sched = item.partition(" ")
        if fields == "tuner":
            out.append((None, sched.strip() or None, None, defines.strip()))
            continue
        values = [int(v) for v in fields.split(",")]
        out.append((Tile(*values), sched.strip() or None, KERNELS[kernel or "sync"], defines.strip()))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--format", default="w4a16 s4 g128", help=f"one of {list(FORMATS)}")
    ap.add_argument("--n", type=int, default=28672)
    ap.add_argument("--k", type=int, default=8192)
    ap.add_argument("--m", default="1", help="comma list of M")
    ap.add_argument("--act", default="bf16")
    ap.add_argument("--tiles", default="")
    ap.add_argument("--loop", type=int, default=0)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--flush", default="read", choices=("read", "write"), help="how the L2 is flushed (bench_wna16.Timer)")
    ap.add_argument("--ablate", type=int, default=0, help="gemm_dense.cuh HM_ABLATE (timing experiments only: 1 no MMA, 2 no dequant, 3 neither, 4 no stage reads, 5 weight copies only, 6 as 5 without the tile finish)")
    ap.add_argument("--verify", action="store_true", help="also check every variant's output against the CPU-defined "
                    "reference (fresh inputs, poisoned output, the tolerance table)")
    ap.add_argument("--define", default="", help="NAME=VALUE[,NAME=VALUE]: macros every variant is built with "
                    "(the templates' experiment switches, e.g. HM_ABLATE=3)")
    ap.add_argument("--slowest", type=int, default=0, help="with --span: list the last replay's N slowest CTAs "
                    "(start, run, SM and the (tile, k-step) range each ran)")
    ap.add_argument("--span", action="store_true", help="also time each variant's own run on the device clock "
                    "(arch/timer.cuh, HM_TIMESTAMPS) and print how much of the replay's time lies outside it")
    add_plan_only_arguments(ap, "no GPU: plan and compile every variant for --arch and print each one's launch, "
                            "registers, spills and CTAs an SM (a check of a device step's variants before device "
                            "time is spent on them)")
    args = ap.parse_args()
    if not args.plan_only:
        require_cuda(Path(__file__).name)
    defines = [*knobs.kernel_defines.get(), *filter(None, args.define.split(","))]
    if args.span:
        defines += [f"HM_TIMESTAMPS={SPAN_INDEX}", f"HM_TIMESTAMP_CTAS={SPAN_CTAS}"]
    if args.ablate:
        defines.append(f"HM_ABLATE={args.ablate}")
    # every kernel of this process built with them, in the compile workers too (build.kernel_defines)
    with knobs.scope(**({"HUMMING_KERNEL_DEFINES": defines} if defines else {})):
        plan_only(args) if args.plan_only else profile(args)


def variant_plans(problem: GemmProblem, caps, tuner, sms: int, tiles: str) -> list[KernelPlan]:
    """The tuner's plan for ``problem``, then one plan per --tiles variant (parse_variants); a variant that does not
    apply is reported on a ``skip`` line and left out."""
    plans = [tuner.plan(problem, caps, sms)]
    for tile, sched, kernel, defs in parse_variants(tiles):
        try:
            if tile is None:  # the tuner's tile and kernel, under the schedule given, else the tuner's
                first = plans[0]
                tile, kernel = first.spec.tile, type(first.spec)
                sched = sched or first.schedule
            # +COOP=0 / +COOP=1: the plan launched without / with the cooperative attribute (what it costs; the
            # co-residency an experiment's kernel needs)
            items = defs.split(",")
            names = [d for d in items if d and d not in ("COOP=0", "COOP=1")]
            if names:
                kernel = with_defines(kernel, ",".join(names))
            sched, _, parts = (sched or "").partition(":")  # split-k:N, N parts of K
            plan = tuner.plan(problem, caps, sms, tile=tile, schedule=sched or None, kernel=kernel,
                              splits=int(parts) if parts else None)
            coop = False if "COOP=0" in items else True if "COOP=1" in items else plan.cooperative
            plans.append(dataclasses.replace(plan, cooperative=coop))
        except Exception as exc:  # noqa: BLE001 - a variant that does not apply: say so, go on
            print(f"  skip {tile}: {exc}", flush=True)
    return plans


def plan_columns(args: argparse.Namespace, m: int, i: int, plan: KernelPlan) -> str:
    """The start of a variant's line, the same with and without a GPU: format, activations, shape, M, which variant,
    its kernel form and switches, the Tile's fields, schedule (* cooperative) and grid."""
    fields = ",".join(str(v) for v in dataclasses.astuple(plan.spec.tile))
    base = type(plan.spec) if type(plan.spec) in KERNELS.values() else type(plan.spec).__mro__[1]
    kind = next(k for k, v in KERNELS.items() if base is v) + (f" +{plan.spec.defines}" if plan.spec.defines else "")
    which = "tuner" if i == 0 else f"v{i}"
    return (f"{args.format:<16} {args.act:<4} {args.n}x{args.k} M={m:<5} {which:<6} a{args.ablate} {kind:<5} "
            f"{args.define:<22} {fields:<26} {plan.schedule + ('*' if plan.cooperative else ''):<13} grid {plan.grid:<5}")


def resident_ctas(plan: KernelPlan, registers: int, limits) -> int:
    """CTAs of ``plan`` one SM holds at once by its shared memory (1 KiB a CTA reserved, as tuning._fit counts it),
    registers (a warp's allocated in units of 256) and threads."""
    warps = -(-plan.block // 32)
    by_regs = limits.registers_per_sm // (warps * -(-registers * 32 // 256) * 256)
    by_smem = limits.shared_memory_per_sm // (plan.smem + 1024)
    return min(by_regs, by_smem, limits.max_threads_per_sm // plan.block)


def plan_only(args: argparse.Namespace) -> None:
    """Every variant of every M planned and compiled for --arch with no GPU: one line each with the launch, the
    kernel's registers and spills, and the CTAs an SM it fits beside the tile's min_blocks (FEWER where it fits
    fewer than the tile asks: the schedule's residency would not hold)."""
    fmt = FORMATS[args.format]
    act = dtypes.DType.parse(args.act)
    caps, tuner = plan_only_target(args.arch)
    print(f"plan only: {args.arch}, {args.sms} SMs; nothing is launched or timed", flush=True)
    for m in (int(v) for v in args.m.split(",")):
        problem = GemmProblem(m, args.n, args.k, fmt, act, act)
        plans = variant_plans(problem, caps, tuner, args.sms, args.tiles)
        try:
            kernels = compile_many([p.spec for p in plans], processes=False if args.tiles.count(" +") else None)
        except Exception as exc:  # noqa: BLE001 - say which compile failed, go on with the next M
            print(f"  compile failed at M={m}: {str(exc).splitlines()[0]}", flush=True)
            continue
        for i, (plan, kernel) in enumerate(zip(plans, kernels)):
            r = kernel.resources
            fits = resident_ctas(plan, r.registers, caps.limits)
            in_loop = loop_local_accesses(kernel)
            print(f"{plan_columns(args, m, i, plan)} smem {plan.smem:<6} regs {r.registers:3d} spill "
                  f"{r.spill_stores}/{r.spill_loads} B ({in_loop} LDL/STL in the loop)  CTAs/SM {fits} of "
                  f"{plan.spec.tile.min_blocks}"
                  + ("  FEWER" if fits < plan.spec.tile.min_blocks else ""), flush=True)


def profile(args: argparse.Namespace) -> None:
    import humming.ops as hg

    fmt = FORMATS[args.format]
    act = dtypes.DType.parse(args.act)
    tdt = hg._TORCH[act]
    # The bandwidths first, on a fresh allocator: measured after the weights' quantisation (whose 1 GB float
    # matrix is freed again) the same copy read 3.83 instead of 4.26 TB/s in some processes (H200, 2026-12-03).
    timer = None if args.loop else Timer(args.reps, args.flush)
    bw = unwarmed_then_warmed(timer, copy_bandwidth)[0] if timer else 0.0
    if timer:
        print(f"copy bandwidth {bw / 1e12:.3f} TB/s, read-only pass {read_bandwidth(timer) / 1e12:.3f} TB/s "
              f"(L2 flush by {args.flush})", flush=True)
    w = torch.randn(args.n, args.k, device="cuda")
    q = quantized.quantize(w, QuantFormat(fmt))
    pw = packing.pack(q, act)
    del w
    caps, tuner, sms = hg._device(0)
    for m in (int(v) for v in args.m.split(",")):
        x = torch.randn(m, args.k, device="cuda").to(tdt)
        out = torch.empty(m, args.n, device="cuda", dtype=tdt)
        problem = GemmProblem(m, args.n, args.k, fmt, act, act)
        plans = variant_plans(problem, caps, tuner, sms, args.tiles)
        # a variant's class made here cannot be pickled for compiler processes: threads then
        compile_many([p.spec for p in plans], processes=False if args.tiles.count(" +") else None)

        def run(plan):
            return lambda: hg.launch(out, x, pw.data, pw.scales, pw.zeros, pw.chscale, pw.gscale, None, fmt,
                                     args.n, args.k, plan)

        if args.loop:
            fn = run(plans[1] if len(plans) > 1 else plans[0])
            for _ in range(args.loop):
                fn()
            torch.cuda.synchronize()
            print(f"looped {args.loop} x {plans[-1].spec.tile.describe()}", flush=True)
            continue
        def verify(plan) -> str:
            from humming.core import reference

            xv = torch.randn(m, args.k, device="cuda").to(tdt)  # fresh inputs, poisoned output
            cv = torch.full((m, args.n), float("nan"), device="cuda", dtype=tdt)
            hg.launch(cv, xv, pw.data, pw.scales, pw.zeros, pw.chscale, pw.gscale, None, fmt, args.n, args.k, plan)
            torch.cuda.synchronize()
            if bool(torch.isnan(cv).any()):
                return f"FAIL ({int(torch.isnan(cv).sum())} outputs not written)"
            try:
                reference.check_gemm(cv, xv, q)
            except AssertionError as exc:
                return f"FAIL ({str(exc)[:160]})"
            return "ok"

        def span(plan) -> str:
            assert plan.counters <= SPAN_INDEX, "the tile counters would overlap the span records"
            ctas = min(plan.grid, SPAN_CTAS)
            slots = hg._workspace(0, timer.stream.cuda_stream, 0, 0, plan.sentinel)[1][SPAN_INDEX:SPAN_INDEX + 4 + 6 * ctas]
            ev, sp, split = replay_span(timer, run(plan), slots.view(torch.int64), ctas)
            text = (f"  span: replay {ev:.2f} us, kernel {sp:.2f} us, outside {ev - sp:.2f} us; "
                    + " ".join(f"{k} {v:.2f}" for k, v in split.items()))
            if args.slowest:
                m_tiles, n_tiles, k_pad = tuner.grid_sizes(plan)
                text += "\n" + slowest_ctas(slots.view(torch.int64).cpu(), ctas, plan.grid, m_tiles * n_tiles,
                                            k_pad // plan.spec.tile.bk, args.slowest)
            return text

        roof_us = roofline_us(problem, bw)
        for i, plan in enumerate(plans):
            try:
                us = timer(run(plan))
            except Exception as exc:  # noqa: BLE001
                print(f"  variant {i} failed: {str(exc).splitlines()[0]}", flush=True)
                continue
            print(f"{plan_columns(args, m, i, plan)} {us:8.2f} us "
                  f"{100 * roof_us / us:5.1f}% roof" + (f"  verify {verify(plan)}" if args.verify else "")
                  + (span(plan) if args.span else ""), flush=True)


if __name__ == "__main__":
    main()
