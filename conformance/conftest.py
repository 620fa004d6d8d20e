"""pytest wiring for ``pytest conformance/``: the plugin manager, the targets and devices to parametrise over.

Options (all optional)::

    --conformance-set core|extended     the case set (default core)
    --conformance-target ARCH[,ARCH]    only these catalog targets (default: every one, the example plugin's too)
    --conformance-report DIR            write one JSON + markdown report per target and device into DIR

The example vendor plugin (tests/plugins/example_vendor) is part of the catalog here, registered in code when
it is not installed, so CI runs the declare and compile levels on it as on every built-in target.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import sys
from pathlib import Path
from typing import Any

import pytest

from humming.devices.hookspecs import ENTRY_POINT_GROUP
from humming.devices.manager import DeviceManager

EXAMPLE_SRC = Path(__file__).resolve().parent.parent / "tests" / "plugins" / "example_vendor" / "src"
EXAMPLE_NAME = "example_vendor"

_manager: DeviceManager | None = None
_runs: dict[str, list[Any]] = {}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance")
    group.addoption("--conformance-set", default="core", choices=("core", "extended"), help="the case set")
    group.addoption("--conformance-target", default="", help="comma-separated catalog targets (default: all)")
    group.addoption("--conformance-report", default="", help="write reports into this folder")


def manager() -> DeviceManager:
    """The session's plugin manager: every installed plugin, plus the example vendor's when it is not installed."""
    global _manager
    if _manager is None:
        installed = {ep.name for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}
        extra: list[tuple[str, object]] = []
        if EXAMPLE_NAME not in installed and EXAMPLE_SRC.is_dir():
            if str(EXAMPLE_SRC) not in sys.path:
                sys.path.insert(0, str(EXAMPLE_SRC))
            extra.append((EXAMPLE_NAME, importlib.import_module("humming_example_vendor")))
        _manager = DeviceManager(plugins=extra)
    return _manager


def _targets(config: pytest.Config) -> list[str]:
    wanted = [t.strip() for t in config.getoption("--conformance-target").split(",") if t.strip()]
    known = [c.target.arch for c in manager().catalog()]
    if wanted:
        unknown = sorted(set(wanted) - set(known))
        if unknown:
            raise pytest.UsageError(f"--conformance-target: unknown {unknown}; catalog: {', '.join(known)}")
        return wanted
    return known


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "target" in metafunc.fixturenames:
        metafunc.parametrize("target", _targets(metafunc.config))
    if "device_index" in metafunc.fixturenames:
        try:
            indices: list[Any] = [d.index for d in manager().devices()]
        except Exception:  # a driver that fails to enumerate counts as no device; the device tests say so
            indices = []
        metafunc.parametrize("device_index", indices or [None], ids=[f"device{i}" for i in indices] or ["no-device"])


def record(key: str, run: Any) -> None:
    """Keep a level's run, so that the session writes one report per target (and device) at the end."""
    _runs.setdefault(key, []).append(run)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    folder = session.config.getoption("--conformance-report", default="")
    if not folder or not _runs:
        return
    from conformance import report
    from conformance.runner import SuiteRun

    for runs in _runs.values():
        first = runs[0]
        merged = SuiteRun(first.suite, [lv for r in runs for lv in r.levels], [x for r in runs for x in r.results],
                          min(r.started for r in runs), max(r.finished for r in runs),
                          {lv: s for r in runs for lv, s in r.level_seconds.items()})
        report.write(report.build(merged, command="pytest conformance/"), folder)
