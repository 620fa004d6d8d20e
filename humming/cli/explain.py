"""``humming explain --target T --weights W --activations A``: the instruction path the capability model picks."""

from __future__ import annotations

import argparse
import json

from humming.capabilities.explain import render_verdict
from humming.capabilities.query import Verdict, default_accumulator, supports, supports_format
from humming.core import presets
from humming.core.dtypes import DType
from humming.core.launcher import programmatic_allowed
from humming.devices.manager import DeviceManager, get_manager
from humming.errors import InvalidInputError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("explain", help="which instruction path serves a weight/activation combination on a target")
    p.add_argument("--target", required=True, help="a catalog target, e.g. sm_90a, sm_103a, ppu-810e")
    p.add_argument("--weights", required=True,
                   help="weight element dtype (s4, u4, e2m1, e4m3, s8 ...) or a format preset (gptq_int4, mxfp4, nvfp4 ...)")
    p.add_argument("--activations", default=None,
                   help="activation dtype: f16, bf16, s8, e4m3, s4, e2m1 (default with a preset: the preset's, "
                        "or bf16 when its activations stay 16-bit)")
    p.add_argument("--accumulator", default=None, help="accumulator dtype (default: s32 for ints, f32 otherwise)")
    p.add_argument("--vendor", default=None, help="the vendor, when two vendors declare the same target name")
    p.add_argument("--m", type=int, default=None, help="with --n and --k and a preset: also show the kernel the "
                                                          "target's tuner plans for this GEMM, and why")
    p.add_argument("--n", type=int, default=None, help="output features (rows of the weight)")
    p.add_argument("--k", type=int, default=None, help="input features")
    p.add_argument("--sm-count", type=int, default=None,
                   help="SMs to plan the grid for (default: the largest of the target's SKUs)")
    p.add_argument("--json", action="store_true", help="print the verdict as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, manager: DeviceManager | None = None) -> int:
    """Exit code 0 when the combination is supported, 2 when it is not."""
    _check_args(args)  # before any verdict: a flag combination that cannot work is refused whatever the answer
    manager = manager or get_manager()
    caps = manager.capabilities(args.target, args.vendor)
    verdict = _verdict(args, caps, manager)
    plan, plan_error = _plan(args, caps, verdict, manager) if verdict.ok else (None, None)
    if args.json:
        out = verdict.to_json()
        if plan is not None or plan_error is not None:
            out["plan"] = {"kernel": plan.spec.describe(), "mma_family": plan.spec.mma_family,
                           "grid": plan.grid, "block": plan.block, "smem": plan.smem,
                           "schedule": plan.schedule, "programmatic": programmatic_allowed(caps),
                           "why": list(plan.reasons)} if plan else {"error": plan_error}
        print(json.dumps(out, indent=2))
    else:
        print(render_verdict(verdict))
        if plan is not None:
            # The verdict above is what the capability offers; this is the kernel humming has and would run.
            print("\nkernel plan (the kernel humming runs for this GEMM, from the target's tuner):")
            note = _family_note(verdict, plan.spec.mma_family)
            if note:
                print(note)
            print(plan.explain())
            if programmatic_allowed(caps):  # every dense kernel waits where the target has the instructions
                print("launch: programmatic (it may start while the kernel before it finishes, and waits for it before "
                      "reading anything: memory.programmatic_launch; HUMMING_PDL=0 turns it off)")
        elif plan_error is not None:
            print(f"\nno kernel: {plan_error}")
    return 0 if verdict.ok and plan_error is None else 2


def _family_note(verdict: Verdict, family: str | None) -> str:
    """A line where the plan's kernel issues another MMA family than the verdict's first path (wgmma on sm_90a,
    while the decode kernels run mma.sync), so that the two answers do not read as a contradiction; else ""."""
    chosen = verdict.chosen
    if family is None or chosen is None or chosen.instruction.family.name == family:
        return ""
    return (f"instruction: {family}, not {chosen.instruction.family.name} (the target's fastest family for these "
            f"operands, above): the tuner's rule for this shape picks the kernel, and says why below")


def _check_args(args: argparse.Namespace) -> None:
    """InvalidInputError for flags that do not go together: the shape flags, --sm-count and --accumulator."""
    sizes = (args.m, args.n, args.k)
    if all(v is None for v in sizes):
        if args.sm_count is not None:
            raise InvalidInputError(f"--sm-count {args.sm_count} without --m, --n and --k: --sm-count plans the "
                                    "grid of the kernel plan; give all three with it, or leave it out")
        return
    if any(v is None for v in sizes):
        raise InvalidInputError("--m, --n and --k go together: give all three to see the kernel plan")
    try:
        fmt = presets.get(args.weights)
    except InvalidInputError:
        raise InvalidInputError(f"--m/--n/--k need a format preset for --weights (the plan depends on its scales "
                                f"and zero points), not the dtype {args.weights!r}; presets: "
                                f"{', '.join(presets.names())}") from None
    # `is not None`, not `or`: --sm-count 0 is a wrong value, not "use the default"
    if args.sm_count is not None and args.sm_count <= 0:
        raise InvalidInputError(f"--sm-count {args.sm_count}: the plan needs a positive SM count (an H100 SXM has "
                                "132); leave it out to plan for the target's largest part")
    if args.accumulator is not None:
        activation = fmt.activation.dtype if fmt.activation.dtype is not None else \
            DType.parse(args.activations if args.activations is not None else "bf16")  # as _verdict reads them
        acc, planned = DType.parse(args.accumulator), default_accumulator(activation)
        if acc is not planned:
            # A GemmProblem takes no accumulator: the tuner plans humming's kernels, which use the default one.
            raise InvalidInputError(f"--accumulator {acc} with --m/--n/--k: humming's kernels accumulate {activation} "
                                    f"activations in {planned}, and the kernel plan has no other; leave --accumulator "
                                    f"out to see the plan, or --m/--n/--k out to see the {acc} paths")


def _plan(args: argparse.Namespace, caps, verdict: Verdict, manager: DeviceManager):
    """(KernelPlan, None), (None, why no kernel), or (None, None) when no GEMM shape was asked about.

    The flags were checked by _check_args: all three sizes or none, a preset, a positive --sm-count."""
    if args.m is None:
        return None, None
    fmt = presets.get(args.weights)
    from humming.core.problem import GemmProblem
    from humming.errors import HummingError

    sms = args.sm_count if args.sm_count is not None else caps.largest_sm_count
    if sms is None:
        raise InvalidInputError(f"{caps.target.arch} lists no SM count in its SKUs; pass --sm-count")
    tuner = manager.tuner(caps.target)
    if tuner is None:
        return None, f"plugin {manager.plugin_of(caps.target)!r} supplies no GEMM tuner for {caps.target.arch}"
    try:
        problem = GemmProblem(args.m, args.n, args.k, fmt.weight, activation=verdict.activation,
                              out=verdict.activation if verdict.activation.bits == 16 else DType.parse("bf16"))
        return tuner.plan(problem, caps, sms), None
    except HummingError as exc:
        return None, str(exc)  # with its missing / would-work-instead lines (planning's compile-time refusals)


def _verdict(args: argparse.Namespace, caps, manager: DeviceManager) -> Verdict:
    """A dtype pair, or a preset (with its block scales and, unless overridden, its activation dtype)."""
    try:
        weight = DType.parse(args.weights)
    except InvalidInputError as not_dtype:
        try:
            fmt = presets.get(args.weights)
        except InvalidInputError:
            raise InvalidInputError(f"{not_dtype}; or a preset: {', '.join(presets.names())}") from None
        if args.activations is not None:
            activation = DType.parse(args.activations)
            if fmt.activation.dtype is not None and activation is not fmt.activation.dtype:
                raise InvalidInputError(f"preset {args.weights} has {fmt.activation.dtype} activations, "
                                        f"not {activation}; leave --activations out or pick another preset")
            return supports_format(caps, fmt, activation16=activation, accumulator=args.accumulator,
                                   catalog=manager.catalog())
        return supports_format(caps, fmt, accumulator=args.accumulator, catalog=manager.catalog())
    if args.activations is None:
        raise InvalidInputError("--activations is required with a weight dtype (f16, bf16, s8, e4m3, s4, e2m1)")
    return supports(caps, activation=args.activations, weight=weight, accumulator=args.accumulator,
                    catalog=manager.catalog())
