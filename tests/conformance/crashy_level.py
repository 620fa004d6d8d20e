"""A stand-in level for the worker tests: one case passes, one kills its process, one hangs, one raises."""

from __future__ import annotations

import os
import time

from conformance.runner import CaseResult, Status, Suite


def run_one(suite: Suite, case_id: str) -> CaseResult:
    name = case_id.rsplit("/", 1)[-1]
    if name.startswith("crash"):
        os._exit(3)  # what an illegal instruction does to a CUDA process, as far as the parent can tell
    if name.startswith("hang"):
        time.sleep(600)
    if name.startswith("raise"):
        raise ZeroDivisionError("a bug in the case code")
    if name.startswith("poison"):
        # A failed case whose process must not be reused: the worker leaves, a fresh one runs the rest.
        from conformance import worker

        worker._device_healthy = lambda device: False  # type: ignore[assignment]
        return suite.result(case_id, "numeric", Status.FAIL, "illegal instruction", details={"pid": os.getpid()})
    return suite.result(case_id, "numeric", Status.PASS, f"ran in pid {os.getpid()}", details={"pid": os.getpid()})
