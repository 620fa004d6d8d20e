"""``humming cache info`` (where the kernel cache is, what it holds), ``humming cache clear`` (empty it) and
``humming cache warm`` (compile the kernels of given layer shapes into it ahead of their first call)."""

from __future__ import annotations

import argparse
import json
import sys

from humming.core import cache


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("cache", help="the kernel cache: where it is and what it holds; clear it",
                                   description="The compiled-kernel cache ($HUMMING_CACHE_DIR).")
    sub = parser.add_subparsers(dest="cache_command", required=True)
    info = sub.add_parser("info", help="print the cache folder, its entries and their size")
    info.add_argument("--json", action="store_true", help="print the figures as JSON")
    sub.add_parser("clear", help="remove every cached kernel and kept failure (asks nothing)")
    warm = sub.add_parser("warm", help="compile the kernels that layers of the given shapes and format launch at "
                                       "M = 1 .. --max-m (no GPU needed with --target)")
    warm.add_argument("--weights", required=True, help="a format preset (gptq_int4, mxfp4, nvfp4_w4a16 ...)")
    warm.add_argument("--shape", action="append", required=True, metavar="NxK",
                      help="a layer's output x input features, e.g. 28672x8192; repeat for more layers")
    warm.add_argument("--activations", default="bf16", choices=("bf16", "f16"), help="activation (and output) dtype")
    warm.add_argument("--target", default=None, help="an arch of the catalog (default: the present GPU)")
    warm.add_argument("--sm-count", type=int, default=None,
                      help="with --target: the SMs to plan for (default: the largest of the target's SKUs)")
    warm.add_argument("--max-m", type=int, default=None, help="the largest M to plan (default: 65536)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.cache_command == "warm":
        return _warm(args)
    if args.cache_command == "info":
        found = cache.info()
        if args.json:
            print(json.dumps({"root": str(found.root), "entries": found.entries, "bytes": found.entry_bytes,
                              "failed": found.failed, "other_formats": list(found.other_layouts),
                              "disabled": found.disabled, "problem": found.problem}, indent=1))
        else:
            print(found.describe())
        return 0
    root = cache.cache_root()
    done = cache.clear()
    for line in done.removed:
        print(f"removed {line}")
    if not done.removed and not done.failed:
        print(f"nothing to remove under {root}")
    if done.kept:
        shown = ", ".join(done.kept[:5]) + (f" and {len(done.kept) - 5} more" if len(done.kept) > 5 else "")
        print(f"kept {len(done.kept)} files humming did not write: {shown}")
    for line in done.failed:
        print(f"humming cache clear: could not remove {line}", file=sys.stderr)
    if done.failed:
        print(f"humming cache clear: {len(done.failed)} files under {root} are still there; remove them as a user "
              "who may, or point HUMMING_CACHE_DIR elsewhere", file=sys.stderr)
        return 1
    return 0


def _warm(args: argparse.Namespace) -> int:
    from humming.core import presets
    from humming.core.dtypes import DType
    from humming.errors import InvalidInputError
    from humming.warmup import DEFAULT_MAX_M, LayerShape, precompile

    cache.require_writable("humming cache warm")
    fmt = presets.get(args.weights)
    act = DType.parse(args.activations)
    if fmt.activation.dtype is not None:
        raise InvalidInputError(f"cache warm: preset {args.weights} has {fmt.activation.dtype} activations; the dense "
                                "WnA16 kernels take f16 / bf16 activations (a preset such as gptq_int4, mxfp4, "
                                "nvfp4_w4a16, fp8_channel_w8a16)")
    shapes = []
    for text in args.shape:
        n, sep, k = text.lower().partition("x")
        if not sep or not n.isdigit() or not k.isdigit() or int(n) < 1 or int(k) < 1:
            raise InvalidInputError(f"cache warm: --shape {text!r}; expected NxK with positive integers, "
                                    "e.g. 28672x8192")
        shapes.append(LayerShape(int(n), int(k), fmt.weight, act, act))
    done = precompile(shapes, target=args.target, sm_count=args.sm_count,
                      max_m=args.max_m if args.max_m is not None else DEFAULT_MAX_M)
    print(f"{done.describe()}; cache: {cache.cache_root()}")
    return 0
