"""``humming conformance``: run the conformance suite on a present device or on catalog targets (compile-only).

    humming conformance --device 0 --level all --report conformance/reports
    humming conformance --target sm_103a --level declare --level compile
    humming conformance --target all --json

Exit status: 0 when no case failed, 1 when any did, 2 for a usage error found before any case runs (an unknown
level, a ``--case`` that selects nothing, a ``--report`` folder that cannot be written), 3 when the suite itself
broke (a humming bug, or a report it could not write after the run; the results are printed all the same). The
suite lives in the ``conformance`` package of the source tree (``python -m conformance`` takes the same options).
"""

from __future__ import annotations

import argparse
import dataclasses
import fnmatch
import json
import sys
import traceback
from pathlib import Path
from typing import Any

from humming.errors import InvalidInputError

LEVEL_CHOICES = ("declare", "compile", "numeric", "perf", "all")
#: Exit statuses (module docstring); 2 comes from humming.cli for the InvalidInputError raised here.
PASSED, FAILED, BROKEN = 0, 1, 3


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
    p.add_argument("--report", metavar="DIR", help="write a JSON and a markdown report per target into DIR "
                   "(conformance-<arch>-<vendor>[-device<N>]-<UTC time>; never overwrites one)")
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
    from conformance.runner import Suite, target_command
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
        return [Suite(manager, caps, command=target_command(manager, caps), **common) for caps in manager.catalog()]
    caps = manager.capabilities(args.target, args.vendor)
    return [Suite(manager, caps, command=target_command(manager, caps), **common)]


def check_selection(args: argparse.Namespace, targets: list[Any], levels: list[str]) -> None:
    """Refuse a ``--case`` pattern that selects no case of the levels to run on any target, saying what would."""
    from conformance.runner import case_ids, expand_levels, id_forms

    if args.case is None:
        return
    order = expand_levels(levels)
    if any(case_ids(suite, lv) for suite in targets for lv in order):
        return
    arches = ", ".join(dict.fromkeys(s.caps.target.arch for s in targets))
    hints = []
    everything = [dataclasses.replace(s, pattern=None) for s in targets]
    for lv in order:  # the level prefix left out: 'gptq_int4.*' for 'compile/gptq_int4.*'
        prefixed = f"{lv}/{args.case}"
        if any(fnmatch.fnmatchcase(i, prefixed) for s in everything for i in case_ids(s, lv)):
            hints.append(f"--case '{prefixed}' (with the level prefix)")
    others = [lv for lv in ("declare", "compile", "numeric", "perf") if lv not in order
              and any(case_ids(s, lv) for s in targets)]
    hints += [f"add --level {lv}" for lv in others]
    if args.cases != "extended":
        extended = [dataclasses.replace(s, case_set="extended") for s in targets]
        if any(case_ids(s, lv) for s in extended for lv in order):
            hints.append("add --cases extended (the pattern matches cases of that set)")
    forms = ", ".join(f for lv in order for f in id_forms(lv))
    raise InvalidInputError(f"--case {args.case!r} matches no case of the {', '.join(order)} level(s) on {arches}; "
                            f"case ids begin with their level: {forms}"
                            + (f"; these would select cases: {', or '.join(hints)}" if hints else ""))


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
    """Run the selected levels on every selected target; print, write reports; the exit status (module docstring).

    Everything a usage error can come from is checked before the first case runs, so an hour of numeric and
    perf is never lost to a typo.
    """
    _import_suite()
    from conformance import report as report_mod

    levels = _levels(args)
    targets = suites(args, manager)
    check_selection(args, targets, levels)
    if args.report:
        report_mod.check_folder(args.report)
    reports: list[dict[str, Any]] = []
    try:
        return _run_targets(args, targets, levels, reports)
    except Exception:  # after the checks above, anything raised is the suite's own failure, not the user's
        traceback.print_exc()
        print("conformance: the suite itself failed (a humming bug, please report it with the traceback above)"
              + ("; the reports of the targets that finished follow" if reports and args.json else ""),
              file=sys.stderr)
        if reports and args.json:
            _print_json(reports)
        return BROKEN


def _run_targets(args: argparse.Namespace, targets: list[Any], levels: list[str],
                 reports: list[dict[str, Any]]) -> int:
    """Run, report and print each target in turn; ``reports`` holds those finished (for a crash's output)."""
    from conformance import report as report_mod
    from conformance import runner

    failed = lost = False
    for suite in targets:
        result = runner.run_suite(suite, levels)
        rep = report_mod.build(result, command=suite.command)
        reports.append(rep)
        failed = failed or bool(result.failed)
        if args.report:
            try:
                json_path, md_path = report_mod.write(rep, args.report)
            except OSError as exc:  # the folder was fine before the run (a full disk, say): go on with the rest
                lost = True
                print(f"conformance: could not write the report for {suite.caps.target.arch} into {args.report}: "
                      f"{exc}; its results are printed {'as JSON' if args.json else 'below'}", file=sys.stderr)
            else:
                print(f"wrote {json_path} and {md_path}", file=sys.stderr)
        if not args.json:
            print(report_mod.summary_text(rep))
    if args.json:
        _print_json(reports)
    return BROKEN if lost else FAILED if failed else PASSED


def _print_json(reports: list[dict[str, Any]]) -> None:
    # allow_nan=False: report.build already wrote every NaN / inf as null (JSON has no such numbers).
    print(json.dumps(reports[0] if len(reports) == 1 else reports, indent=1, default=str, allow_nan=False))
