"""The conformance suite through pytest: declare and compile for every catalog target; numeric and perf per device.

Each test runs one level on one target (or device) and fails listing every failed case with its reason and its
repro command; unsupported and skipped cases are part of the report, not failures.
"""

from __future__ import annotations

import pytest

from conformance.conftest import manager, record
from conformance.runner import Status, Suite, SuiteRun, run_suite, target_command


def _run(level: str, suite: Suite, key: str) -> SuiteRun:
    run = run_suite(suite, [level])
    record(key, run)
    return run


def _assert_no_failures(run: SuiteRun) -> None:
    failed = run.failed
    if failed:
        lines = [f"{r.id}: {r.reason}\n    repro: {r.repro}" for r in failed[:30]]
        more = f"\n... and {len(failed) - 30} more" if len(failed) > 30 else ""
        pytest.fail(f"{len(failed)} conformance case(s) failed on {run.suite.caps.target.arch}:\n"
                    + "\n".join(lines) + more, pytrace=False)
    assert run.results, "the level produced no cases at all"
    assert all(r.status in Status for r in run.results)


def _suite(request: pytest.FixtureRequest, target: str) -> Suite:
    m = manager()
    caps = m.capabilities(target)
    return Suite(m, caps, case_set=request.config.getoption("--conformance-set"), command=target_command(m, caps))


def test_declare(request: pytest.FixtureRequest, target: str) -> None:
    _assert_no_failures(_run("declare", _suite(request, target), target))


def test_compile(request: pytest.FixtureRequest, target: str) -> None:
    _assert_no_failures(_run("compile", _suite(request, target), target))


def _device_suite(request: pytest.FixtureRequest, device_index: int | None) -> Suite:
    if device_index is None:
        pytest.skip("no device present: the numeric and perf levels need one (humming devices lists them)")
    m = manager()
    dev = m.device(device_index)
    return Suite(m, dev.capabilities, device=dev, case_set=request.config.getoption("--conformance-set"),
                 command=f"humming conformance --device {device_index}")


@pytest.mark.gpu
def test_numeric(request: pytest.FixtureRequest, device_index: int | None) -> None:
    suite = _device_suite(request, device_index)
    _assert_no_failures(_run("numeric", suite, f"device{device_index}"))


@pytest.mark.gpu
def test_perf(request: pytest.FixtureRequest, device_index: int | None) -> None:
    suite = _device_suite(request, device_index)
    _assert_no_failures(_run("perf", suite, f"device{device_index}"))
