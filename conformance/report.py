"""The conformance report: a JSON document for machines (schema below) and a markdown table for people.

Schema ``humming.conformance/1``::

    {"schema": "humming.conformance/1", "created": ISO-8601 UTC, "command": str,
     "versions": {"humming", "python", "torch", "cuda-bindings", "toolchain", "nvdisasm", "plugin", ...},
     "target": {"vendor", "arch", "family", "name", "plugin", "preview"},
     "device": null | {"index", "name", "sku", "attributes"},
     "capability_hash": sha256 of the capability table's canonical JSON (two reports with equal hashes tested
                        the same claims),
     "levels": [names], "case_set": "core" | "extended", "duration_s": {level: seconds},
     "summary": {"pass", "fail", "unsupported", "skipped"}, "by_level": {level: summary},
     "cases": [{"id", "level", "status", "reason", "params", "error", "details", "duration_s", "repro"}]}

``error`` is the numeric error statistics of a case (max_abs, max_rel, margin = worst |diff| / allowed, each
over the finite outputs; nonfinite = how many outputs were NaN or inf; the tolerance); ``repro`` is the command
line that runs the case alone.

The report is standard JSON (RFC 8259): a number that is NaN or infinite anywhere in it (a perf figure, a
probe's sample values) is written as ``null``.
"""

from __future__ import annotations

import datetime
import hashlib
import importlib.metadata
import itertools
import json
import math
import platform
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from humming.errors import InvalidInputError
from conformance.runner import LEVELS, Status, SuiteRun

SCHEMA = "humming.conformance/1"


def capability_hash(caps: Any) -> str:
    """sha256 of the capability table's canonical JSON: what the run tested, independent of the run."""
    body = json.dumps(caps.to_json(), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(body.encode()).hexdigest()


def _dist(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _nvdisasm_version() -> str | None:
    try:
        from conformance.sass import nvdisasm_path

        out = subprocess.run([str(nvdisasm_path()), "--version"], capture_output=True, text=True, timeout=30)
    except Exception:
        return None
    lines = [ln.strip() for ln in out.stdout.splitlines() if ln.strip()]
    return lines[-1] if lines else None


def versions(run: SuiteRun) -> dict[str, Any]:
    """Everything that could change a result: humming, Python, torch, the bindings, the compiler, the plugin."""
    suite = run.suite
    out: dict[str, Any] = {"humming": _dist("humming"), "python": platform.python_version(),
                           "platform": platform.platform(), "torch": _dist("torch"),
                           "cuda-bindings": _dist("cuda-bindings"), "nvdisasm": _nvdisasm_version()}
    try:
        chain = suite.manager.toolchain(suite.caps.target)
        ok, why = chain.availability()
        out["toolchain"] = chain.version() if ok else f"{chain.name} (unavailable: {why})"
    except Exception as exc:
        out["toolchain"] = f"none ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
    try:
        plugin = suite.manager.plugin_of(suite.caps.target)
        status = next((s for s in suite.manager.statuses() if s.name == plugin), None)
        out["plugin"] = {"name": plugin, "origin": status.origin if status else "",
                         "api_version": status.api_version if status else None}
    except Exception:
        out["plugin"] = None
    if suite.device is not None:
        try:
            import torch

            out["torch_cuda"] = torch.version.cuda
            out["driver"] = _driver_version()
        except Exception:
            pass
    return out


def _driver_version() -> str | None:
    try:
        from cuda.bindings import driver

        err, v = driver.cuDriverGetVersion()
        return f"{int(v) // 1000}.{int(v) % 1000 // 10}" if int(err) == 0 else None
    except Exception:
        return None


def finite(value: Any) -> Any:
    """``value`` with every NaN or infinite float replaced by None, in nested dicts, lists and tuples."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def build(run: SuiteRun, command: str = "") -> dict[str, Any]:
    """The JSON report of one run (schema in the module docstring); standard JSON, NaN and inf written as null."""
    suite, caps = run.suite, run.suite.caps
    try:
        plugin = suite.manager.plugin_of(caps.target)
    except Exception:
        plugin = None
    device = None
    if suite.device is not None:
        d = suite.device
        device = {"index": d.index, "name": d.name, "sku": d.sku.name if d.sku else None,
                  "attributes": {k: v for k, v in d.raw.attributes.items()}, "uuid": d.raw.uuid}
    by_level = {lv: run.counts(lv) for lv in run.levels}
    return finite({
        "schema": SCHEMA,
        "created": datetime.datetime.fromtimestamp(run.started, datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": command or suite.command,
        "versions": versions(run),
        "target": {"vendor": caps.target.vendor, "arch": caps.target.arch, "family": caps.target.family,
                   "name": caps.name, "plugin": plugin, "preview": caps.preview},
        "device": device,
        "capability_hash": capability_hash(caps),
        "levels": list(run.levels),
        "case_set": suite.case_set,
        "pattern": suite.pattern,
        "duration_s": {lv: round(s, 2) for lv, s in run.level_seconds.items()},
        "summary": run.counts(),
        "by_level": by_level,
        "cases": [r.to_json() for r in run.results],
    })


# ---- markdown -----------------------------------------------------------------------------------------------------
def _cell(text: Any, limit: int = 160) -> str:
    s = " ".join(str(text).split()).replace("|", "\\|")
    return s if len(s) <= limit else s[:limit - 1] + "…"


def _error_cell(err: dict[str, Any] | None) -> str:
    if not err:
        return ""
    parts = []
    if err.get("nonfinite"):
        parts.append(f"{err['nonfinite']} non-finite")
    if err.get("margin") is not None:
        parts.append(f"margin {err['margin']:.3g}")
    if err.get("max_abs") is not None:
        parts.append(f"max abs {err['max_abs']:.3g}")
    for key in ("bandwidth_tbs", "tflops", "us", "roofline_fraction"):
        if key in err and err[key] is not None:
            parts.append(f"{key} {err[key]:.4g}")
    return ", ".join(parts)


def markdown(report: dict[str, Any]) -> str:
    """A readable page: the header facts, the summary per level, then one table per level (failures first)."""
    t, s = report["target"], report["summary"]
    dev = report["device"]
    lines = [f"# humming conformance: {t['arch']} ({t['name']})", "",
             f"- created: {report['created']}",
             f"- device: {dev['name'] + ' (index ' + str(dev['index']) + ')' if dev else 'none (compile-only run)'}",
             f"- plugin: {t['plugin']}; capability hash `{report['capability_hash'][:16]}`",
             f"- case set: {report['case_set']}" + (f", pattern `{report['pattern']}`" if report.get("pattern") else ""),
             f"- versions: " + ", ".join(f"{k} {v}" for k, v in report["versions"].items()
                                         if isinstance(v, str) and k != "platform"),
             f"- command: `{report['command']}`" if report.get("command") else "",
             "", "| level | pass | fail | unsupported | skipped | seconds |", "|---|---|---|---|---|---|"]
    for lv in report["levels"]:
        c = report["by_level"][lv]
        lines.append(f"| {lv} | {c['pass']} | {c['fail']} | {c['unsupported']} | {c['skipped']} | "
                     f"{report['duration_s'].get(lv, 0):.1f} |")
    lines.append(f"| **all** | {s['pass']} | {s['fail']} | {s['unsupported']} | {s['skipped']} | |")
    order = {Status.FAIL.value: 0, Status.PASS.value: 1, Status.UNSUPPORTED.value: 2, Status.SKIPPED.value: 3}
    for lv in report["levels"]:
        cases = [c for c in report["cases"] if c["level"] == lv]
        if not cases:
            continue
        lines += ["", f"## {lv}", "", "| case | status | reason | error |", "|---|---|---|---|"]
        for _status, group in _grouped(sorted(cases, key=lambda c: order.get(c["status"], 9))):
            first = group[0]
            name = first["id"] if len(group) == 1 else f"{first['id']} (+{len(group) - 1} like it)"
            lines.append(f"| `{_cell(name, 90)}` | {first['status'].upper() if first['status'] == 'fail' else first['status']}"
                         f" | {_cell(first['reason'])} | {_error_cell(first.get('error'))} |")
    fails = [c for c in report["cases"] if c["status"] == Status.FAIL.value]
    if fails:
        lines += ["", "## Re-running a failure", ""]
        lines += [f"- `{c['repro']}`" for c in fails[:20]]
    return "\n".join(line for line in lines if line is not None) + "\n"


def summary_text(report: dict[str, Any], limit: int = 40) -> str:
    """What the CLI prints: one line per level, every failure, and the reasons for unsupported and skipped cases."""
    t, dev = report["target"], report["device"]
    where = f"device {dev['index']} ({dev['name']})" if dev else "compile-only"
    lines = [f"{t['arch']} [{where}]: " + ", ".join(f"{k} {v}" for k, v in report["summary"].items())]
    for lv in report["levels"]:
        c = report["by_level"][lv]
        lines.append(f"  {lv:8s} pass {c['pass']:4d}  fail {c['fail']:4d}  unsupported {c['unsupported']:4d}  "
                     f"skipped {c['skipped']:4d}  ({report['duration_s'].get(lv, 0):.1f} s)")
    fails = [c for c in report["cases"] if c["status"] == Status.FAIL.value]
    for c in fails[:limit]:
        lines.append(f"  FAIL {c['id']}: {_cell(c['reason'], 300)}")
    if len(fails) > limit:
        lines.append(f"  ... and {len(fails) - limit} more failures (see the report)")
    others = [c for c in report["cases"] if c["status"] in (Status.UNSUPPORTED.value, Status.SKIPPED.value)]
    for _status, group in _grouped(others)[:limit]:
        lines.append(f"  {group[0]['status']} x{len(group)}: {_cell(group[0]['reason'], 200)}")
    return "\n".join(lines)


def _grouped(cases: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """Collapse non-failing cases that share a status and reason (one unsupported format over many shapes)."""
    out: list[tuple[str, list[dict[str, Any]]]] = []
    index: dict[tuple[str, str], int] = {}
    for c in cases:
        if c["status"] in (Status.FAIL.value, Status.PASS.value):
            out.append((c["status"], [c]))
            continue
        key = (c["status"], re.sub(r"\bm\d+n\d+k\d+\b", "mNnNkN", c["reason"]))
        if key in index:
            out[index[key]][1].append(c)
        else:
            index[key] = len(out)
            out.append((c["status"], [c]))
    return out


def check_folder(folder: str | Path) -> Path:
    """Create ``folder`` if needed and make sure a report can be written there, before any case runs.

    Raises InvalidInputError naming the folder and the reason (a file of that name, no permission).
    """
    path = Path(folder)
    try:
        if path.exists() and not path.is_dir():
            raise NotADirectoryError(f"{path} is a file, not a folder")
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".conformance-", suffix=".tmp"):
            pass  # creating a file is what write() will need
    except OSError as exc:
        raise InvalidInputError(f"--report {str(folder)!r}: cannot write reports there ({exc}); pass a folder "
                                "you can create files in (it is created when missing)") from None
    return path


def report_stem(report: dict[str, Any]) -> str:
    """``conformance-<arch>-<vendor>[-device<N>]-<YYYY-MM-DD>T<HHMMSS>Z``: the target, the device and the run's
    start (UTC) tell two reports apart (two vendors may declare one arch; a pytest session reports each target
    and each device)."""
    t, dev = report["target"], report.get("device")
    when = datetime.datetime.fromisoformat(report["created"]).astimezone(datetime.timezone.utc)
    parts = ["conformance", t["arch"], t["vendor"]] + ([f"device{dev['index']}"] if dev else [])
    return "-".join(parts + [when.strftime("%Y-%m-%dT%H%M%SZ")])


def write(report: dict[str, Any], folder: str | Path) -> tuple[Path, Path]:
    """Write ``<folder>/<report_stem>.json`` and ``.md`` and return both paths; never overwrites a report.

    A stem already taken (two runs in one second) gets ``-2``, ``-3`` ...
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    base = report_stem(report)
    body = json.dumps(report, indent=1, default=str, allow_nan=False) + "\n"
    for n in itertools.count(1):
        stem = base if n == 1 else f"{base}-{n}"
        json_path, md_path = folder / f"{stem}.json", folder / f"{stem}.md"
        if md_path.exists():
            continue
        try:
            with open(json_path, "x") as f:  # "x": created here, or FileExistsError; never replaced
                f.write(body)
        except FileExistsError:
            continue
        with open(md_path, "x") as f:
            f.write(markdown(report))
        return json_path, md_path
    raise AssertionError("itertools.count ended")  # unreachable; keeps the return type honest


def validate(report: dict[str, Any]) -> list[str]:
    """Problems with a report's shape (for tests and for anyone consuming reports); empty when it is well formed."""
    problems = []
    required = ("schema", "created", "versions", "target", "device", "capability_hash", "levels", "summary", "cases")
    problems += [f"missing key {k!r}" for k in required if k not in report]
    if report.get("schema") != SCHEMA:
        problems.append(f"schema is {report.get('schema')!r}, expected {SCHEMA!r}")
    statuses = {s.value for s in Status}
    seen: set[str] = set()
    for c in report.get("cases", []):
        for k in ("id", "level", "status", "reason", "params", "repro"):
            if k not in c:
                problems.append(f"case {c.get('id')!r}: missing {k!r}")
        if c.get("status") not in statuses:
            problems.append(f"case {c.get('id')!r}: status {c.get('status')!r} is not one of {sorted(statuses)}")
        if c.get("level") not in LEVELS and c.get("level") is not None:
            problems.append(f"case {c.get('id')!r}: level {c.get('level')!r} is unknown")
        if c.get("status") in ("unsupported", "skipped", "fail") and not c.get("reason"):
            problems.append(f"case {c.get('id')!r}: a {c.get('status')} case must give its reason")
        if c.get("id") in seen:
            problems.append(f"case id {c.get('id')!r} appears twice")
        seen.add(c.get("id"))
    return problems
