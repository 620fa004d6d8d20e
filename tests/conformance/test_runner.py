"""The runner's rules: what status an outcome gets, and that a crashing or hanging device case costs only itself."""

from __future__ import annotations

import pytest

from humming.devices.manager import DeviceManager
from humming.errors import CompileError, InvalidInputError, UnsupportedError

from conformance import worker
from conformance.runner import Progress, Skip, Status, Suite, expand_levels, outcome_of


def test_only_an_unsupported_error_naming_what_is_missing_is_unsupported() -> None:
    assert outcome_of(UnsupportedError("no fp4", missing=["e2m1 MMA"]))[0] is Status.UNSUPPORTED
    assert "e2m1 MMA" in outcome_of(UnsupportedError("no fp4", missing=["e2m1 MMA"]))[1]
    assert outcome_of(UnsupportedError("vague refusal"))[0] is Status.FAIL  # names nothing: not an answer
    assert outcome_of(Skip("no device here"))[0] is Status.SKIPPED


@pytest.mark.parametrize("exc", [CompileError("ptxas said no", log="error"), InvalidInputError("bad shape"),
                                 ZeroDivisionError("oops"), KeyError("x")])
def test_every_other_exception_is_a_failure_with_its_type(exc: Exception) -> None:
    status, reason = outcome_of(exc)
    assert status is Status.FAIL and type(exc).__name__ in reason


def test_levels_expand_in_suite_order_and_unknown_levels_are_refused() -> None:
    assert expand_levels(["perf", "declare", "perf"]) == ["declare", "perf"]
    assert expand_levels(["all"]) == ["declare", "compile", "numeric", "perf"]
    with pytest.raises(InvalidInputError, match="unknown conformance level 'speed'"):
        expand_levels(["speed"])


def test_progress_draws_only_when_enabled() -> None:
    import io

    out = io.StringIO()
    bar = Progress(3, "compile sm_80", enabled=True, stream=out)
    for _ in range(3):
        bar.update()
    bar.close()
    assert "3/3" in out.getvalue()
    quiet = io.StringIO()
    Progress(3, "x", enabled=None, stream=quiet).update()  # not a terminal: silent
    assert quiet.getvalue() == ""


def _suite(timeout_s: float = 60.0) -> Suite:
    manager = DeviceManager()
    return Suite(manager, manager.capabilities("sm_80"), progress=False, timeout_s=timeout_s)


def test_a_case_that_kills_its_worker_fails_alone_and_the_next_case_runs_in_a_fresh_worker() -> None:
    ids = ["numeric/ok-1", "numeric/crash", "numeric/ok-2", "numeric/raise"]
    results = worker.run_cases(_suite(), "numeric", ids, module="tests.conformance.crashy_level")
    by_id = {r.id: r for r in results}
    assert [r.id for r in results] == ids
    assert by_id["numeric/ok-1"].status is Status.PASS and by_id["numeric/ok-2"].status is Status.PASS
    crash = by_id["numeric/crash"]
    assert crash.status is Status.FAIL and "exited with status 3" in crash.reason
    assert by_id["numeric/ok-1"].details["pid"] != by_id["numeric/ok-2"].details["pid"]
    raised = by_id["numeric/raise"]
    assert raised.status is Status.FAIL and "ZeroDivisionError" in raised.reason and raised.repro


def test_a_case_that_hangs_is_killed_at_its_timeout() -> None:
    results = worker.run_cases(_suite(timeout_s=3.0), "numeric", ["numeric/hang", "numeric/ok"],
                               module="tests.conformance.crashy_level")
    assert results[0].status is Status.FAIL and "did not finish (timed out after 3 s)" in results[0].reason
    assert results[1].status is Status.PASS


def test_a_case_that_poisons_its_process_is_recorded_and_the_rest_run_in_a_fresh_worker() -> None:
    ids = ["numeric/ok-1", "numeric/poison", "numeric/ok-2"]
    results = worker.run_cases(_suite(), "numeric", ids, module="tests.conformance.crashy_level")
    assert [r.status for r in results] == [Status.PASS, Status.FAIL, Status.PASS]
    assert results[1].reason == "illegal instruction"  # its own result, not a crash report
    assert results[0].details["pid"] == results[1].details["pid"] != results[2].details["pid"]


def test_case_output_on_stdout_does_not_break_the_worker_protocol() -> None:
    ids = ["numeric/print-number", "numeric/printf", "numeric/print-json", "numeric/ok"]
    results = worker.run_cases(_suite(), "numeric", ids, module="tests.conformance.noisy_level")
    assert [(r.id, r.status) for r in results] == [(i, Status.PASS) for i in ids], results
    assert len({r.details["pid"] for r in results}) == 1  # one worker ran every case, each once


def test_a_repro_line_carries_a_case_set_other_than_core() -> None:
    manager = DeviceManager()
    suite = Suite(manager, manager.capabilities("sm_80"), case_set="extended", progress=False)
    assert suite.repro("compile/x", "compile") == ("humming conformance --target sm_80 --cases extended "
                                                   "--level compile --case 'compile/x'")


def test_run_bounded_keeps_order_and_gives_a_stuck_call_a_timeout_while_the_rest_finish() -> None:
    import threading

    from conformance.runner import TimedOut, run_bounded

    release = threading.Event()

    def work(x: int) -> int:
        if x == 2:
            release.wait(60)  # stuck
        return x * 10

    try:
        got = run_bounded(work, [1, 2, 3, 4], workers=1, timeout_s=0.5)  # one worker: the rest wait behind 2
    finally:
        release.set()
    assert got[0] == 10 and isinstance(got[1], TimedOut) and got[2:] == [30, 40]
    with pytest.raises(ZeroDivisionError):
        run_bounded(lambda x: 1 // x, [1, 0], workers=2, timeout_s=5)
