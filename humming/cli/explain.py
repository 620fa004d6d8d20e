"""``humming explain --target T --weights W --activations A``: the instruction path the capability model picks."""

from __future__ import annotations

import argparse
import json

from humming.capabilities.explain import render_verdict
from humming.capabilities.query import supports
from humming.devices.manager import DeviceManager, get_manager


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("explain", help="which instruction path serves a weight/activation combination on a target")
    p.add_argument("--target", required=True, help="a catalog target, e.g. sm_90a, sm_103a, ppu-810e")
    p.add_argument("--weights", required=True, help="weight element dtype, e.g. s4, u4, e2m1, e4m3, s8")
    p.add_argument("--activations", required=True, help="activation dtype: f16, bf16, s8, e4m3, s4, e2m1")
    p.add_argument("--accumulator", default=None, help="accumulator dtype (default: s32 for ints, f32 otherwise)")
    p.add_argument("--vendor", default=None, help="the vendor, when two vendors declare the same target name")
    p.add_argument("--json", action="store_true", help="print the verdict as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, manager: DeviceManager | None = None) -> int:
    """Exit code 0 when the combination is supported, 2 when it is not."""
    manager = manager or get_manager()
    caps = manager.capabilities(args.target, args.vendor)
    verdict = supports(caps, activation=args.activations, weight=args.weights, accumulator=args.accumulator,
                       catalog=manager.catalog())
    print(json.dumps(verdict.to_json(), indent=2) if args.json else render_verdict(verdict))
    return 0 if verdict.ok else 2
