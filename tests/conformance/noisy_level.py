"""A stand-in level for the worker tests: cases that write to stdout, as a debug print or a device printf would."""

from __future__ import annotations

import os

from conformance.runner import CaseResult, Status, Suite


def run_one(suite: Suite, case_id: str) -> CaseResult:
    name = case_id.rsplit("/", 1)[-1]
    if name.startswith("print-number"):
        print(42)  # a plugin's debug print: a line that is valid JSON, but not an event
    if name.startswith("print-json"):
        print('{"result": "not a result"}', flush=True)  # JSON that looks like an event
    if name.startswith("printf"):
        os.write(1, b"probe: lane 0 ok ")  # a C library (device printf) on fd 1, without a newline
    return suite.result(case_id, "numeric", Status.PASS, f"ran in pid {os.getpid()}", details={"pid": os.getpid()})
