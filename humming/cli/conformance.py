"""``humming conformance``: run the conformance suite on a present device or on catalog targets (compile-only).

    humming conformance --device 0 --level all --report conformance/reports
    humming conformance --target sm_103a --level declare --level compile
    humming conformance --target all --json

Exit status: 0 when no case failed, 1 when any did (2 for a usage error, from humming.cli). The suite itself
lives in the ``conformance`` package of the source tree (``python -m conformance`` takes the same options).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from humming.errors import InvalidInputError

LEVEL_CHOICES = ("declare", "compile", "numeric", "perf", "all")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options ``humming conformance`` and ``python -m conformance`` share."""
    where = p.add_mutually_exclusive_group()
    where.add_argument("--device", metavar="ID", help="a present device: its index (0) or id (nvidia:0); "
                       "runs every level by default")
    where.add_argument("--target", metavar="ARCH", help="a catalog target (sm_103a, ppu-810e), or 'all': "
                       "declare and compile only, no GPU needed")
    p.add_argument("--level", action="append", metavar="LEVEL",
                   help="declare | compile | numeric | perf | all; repeat or comma-separate "
                        "(default: all with --device, declare,compile with --target)")
    p.add_argument("--cases", choices=("core", "extended"), default="core",
                   help="the case set: core (CI, minutes) or extended (more formats and shapes)")
    p.add_argument("--case", metavar="PATTERN", help="run only the cases whose id matches this glob "
                   "(e.g. 'compile/gptq_int4.*', as printed in a report's repro line)")
    p.add_argument("--report", metavar="DIR", help="write conformance-<arch>-<date>.json and .md into DIR")
    p.add_argument("--json", action="store_true", help="print the JSON report(s) on stdout instead of a summary")
    p.add_argument("--jobs", type=int, default=0, help="parallel compiles (default: HUMMING_COMPILE_WORKERS, "
                   "else one per core)")
    p.add_argument("--vendor", help="the vendor, when two plugins declare the same arch name")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("conformance", help="what works on a device or target, what does not, and what the plugin "
                       "claims wrongly")
    add_arguments(p)
    p.set_defaults(func=run)


def _levels(args: argparse.Namespace) -> list[str]:
    if not args.level:
        return ["all"] if args.device is not None else ["declare", "compile"]
    out = []
    for item in args.level:
        for name in item.split(","):
            name = name.strip()
            if name not in LEVEL_CHOICES:
                raise InvalidInputError(f"--level {name!r}: allowed: {', '.join(LEVEL_CHOICES)}")
            out.append(name)
    return out


def _device(manager: Any, text: str) -> Any:
    devices = manager.devices()
    for d in devices:
        if text in (str(d.index), d.id):
            return d
    present = ", ".join(f"{d.index} ({d.id}, {d.name})" for d in devices) or "none"
    raise InvalidInputError(f"--device {text!r}: no such device; present: {present}"
                            + ("" if devices else "; without a GPU, use --target ARCH for the declare and "
                               "compile levels"))


def suites(args: argparse.Namespace, manager: Any = None) -> list[Any]:
    """One Suite per selected target (``--target all``: every catalog target)."""
    from conformance.runner import Suite
    from humming.devices.manager import get_manager

    manager = manager or get_manager()
    common = {"case_set": args.cases, "pattern": args.case, "jobs": args.jobs}
    if args.device is not None:
        dev = _device(manager, args.device)
        return [Suite(manager, dev.capabilities, device=dev, command=f"humming conformance --device {args.device}",
                      **common)]
    if args.target in (None, ""):
        devices = manager.devices()
        if not devices:
            raise InvalidInputError("no device present: pass --target ARCH (or --target all) to run the declare and "
                                    "compile levels for catalog targets")
        d = devices[0]
        return [Suite(manager, d.capabilities, device=d, command=f"humming conformance --device {d.index}", **common)]
    if args.target == "all":
        return [Suite(manager, caps, command=f"humming conformance --target {caps.target.arch}", **common)
                for caps in manager.catalog()]
    caps = manager.capabilities(args.target, args.vendor)
    return [Suite(manager, caps, command=f"humming conformance --target {caps.target.arch}", **common)]


def _import_suite() -> None:
    """Make the ``conformance`` package importable: installed, or beside this humming package in its checkout.

    The ``humming`` console script does not put the working directory on sys.path, so a source checkout's
    suite is found next to the package it belongs to.
    """
    import importlib.util

    if importlib.util.find_spec("conformance") is not None:
        return
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "conformance" / "__init__.py").is_file():
        sys.path.insert(0, str(checkout))
        return
    raise InvalidInputError("the conformance suite is not installed: it is the conformance/ package of a humming "
                            "source checkout (pip install -e <checkout>, then run humming conformance)")


def run(args: argparse.Namespace, manager: Any = None) -> int:
    """Run the selected levels on every selected target; print, write reports, and return 1 if anything failed."""
    _import_suite()
    from conformance import report as report_mod
    from conformance.runner import run_suite

    levels = _levels(args)
    reports = []
    failed = False
    for suite in suites(args, manager):
        result = run_suite(suite, levels)
        rep = report_mod.build(result, command=suite.command)
        reports.append(rep)
        failed = failed or bool(result.failed)
        if args.report:
            json_path, md_path = report_mod.write(rep, args.report)
            print(f"wrote {json_path} and {md_path}", file=sys.stderr)
        if not args.json:
            print(report_mod.summary_text(rep))
    if args.json:
        print(json.dumps(reports[0] if len(reports) == 1 else reports, indent=1, default=str))
    return 1 if failed else 0
