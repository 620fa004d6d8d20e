"""``humming explain --target T --weights W --activations A``: the instruction path the capability model picks."""

from __future__ import annotations

import argparse
import json

from humming.capabilities.explain import render_verdict
from humming.capabilities.query import Verdict, supports, supports_format
from humming.core import presets
from humming.core.dtypes import DType
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
    p.add_argument("--json", action="store_true", help="print the verdict as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, manager: DeviceManager | None = None) -> int:
    """Exit code 0 when the combination is supported, 2 when it is not."""
    manager = manager or get_manager()
    caps = manager.capabilities(args.target, args.vendor)
    verdict = _verdict(args, caps, manager)
    print(json.dumps(verdict.to_json(), indent=2) if args.json else render_verdict(verdict))
    return 0 if verdict.ok else 2


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
            return supports_format(caps, fmt, activation16=activation, catalog=manager.catalog())
        return supports_format(caps, fmt, catalog=manager.catalog())
    if args.activations is None:
        raise InvalidInputError("--activations is required with a weight dtype (f16, bf16, s8, e4m3, s4, e2m1)")
    return supports(caps, activation=args.activations, weight=weight, accumulator=args.accumulator,
                    catalog=manager.catalog())
