"""Device cases run in a child process, so that a crash, a hang or an illegal instruction costs one case, not the run.

An illegal instruction leaves the CUDA context unusable for the rest of the process, and a hung kernel never
returns; new silicon does both. The parent (``run_cases``) starts ``python -m conformance.worker``, sends it
the job as one JSON line, and reads one JSON line per event: ``{"start": id}`` before a case and
``{"result": {...}}`` after it. The events travel on the child's original stdout, which only the protocol
writes: the child points fd 1 at stderr first, so a case's ``print`` or a device ``printf`` lands in the stderr
tail the parent keeps, and never between two events. When the child dies or a case outlives its timeout, that
case fails with the exit status and the tail of the child's stderr, and a fresh child carries on with the
remaining cases.

The child runs ``run_one(suite, case_id)`` of the level module (``conformance.levels.numeric`` or ``.perf``).
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any, Sequence

from conformance.runner import CaseResult, Progress, Status, Suite

ROOT = Path(__file__).resolve().parent.parent  # the checkout holding the conformance package
#: How long a fresh child may take to start (import torch, create the CUDA context) before its first case.
START_TIMEOUT_S = 180.0


def _reader(stream: Any, out: "queue.Queue[str | None]") -> None:
    for line in iter(stream.readline, ""):
        out.put(line)
    out.put(None)


def _collect(stream: Any, out: deque[str]) -> None:
    """Append every line of ``stream`` to ``out`` (a bounded deque keeps the tail) until it closes."""
    for line in iter(stream.readline, ""):
        out.append(line)


def _tail(lines: deque[str]) -> str:
    return "".join(lines)[-3000:]


#: The events the child sends, and the type each carries.
_EVENTS: dict[str, type] = {"start": str, "result": dict, "done": bool}


def _event(line: str) -> dict[str, Any] | None:
    """One protocol event, or None for a line that is not one (output that reached the channel anyway)."""
    try:
        event = json.loads(line)
    except json.JSONDecodeError:
        return None
    if not isinstance(event, dict) or len(event) != 1:
        return None
    key, value = next(iter(event.items()))
    return event if key in _EVENTS and isinstance(value, _EVENTS[key]) else None


def run_device_level(suite: Suite, level: str, ids: Sequence[str]) -> list[CaseResult]:
    """A device level's cases: skipped, each with the reason, without a device; else run in child processes."""
    if suite.device is None:
        reason = f"no device: the {level} level runs on a present device (humming conformance --device ID)"
        return [suite.result(i, level, Status.SKIPPED, reason) for i in ids]
    return run_cases(suite, level, ids)


def run_cases(suite: Suite, level: str, ids: Sequence[str], *, label: str = "",
              module: str | None = None) -> list[CaseResult]:
    """Run ``ids`` of ``level`` on ``suite.device`` in child processes; one result per id, in order.

    ``module`` (default ``conformance.levels.<level>``) names the module whose ``run_one`` the child calls.
    """
    results: dict[str, CaseResult] = {}
    remaining = list(ids)
    progress = Progress(len(ids), label or f"{level} {suite.caps.target.arch}", suite.progress)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    while remaining:
        job = {"level": level, "module": module or f"conformance.levels.{level}",
               "device": None if suite.device is None else suite.device.index, "arch": suite.caps.target.arch,
               "vendor": suite.caps.target.vendor, "case_set": suite.case_set, "command": suite.command,
               "ids": remaining}
        proc = subprocess.Popen([sys.executable, "-m", "conformance.worker"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(ROOT), env=env)
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        lines: "queue.Queue[str | None]" = queue.Queue()
        err_tail: deque[str] = deque(maxlen=200)
        threading.Thread(target=_reader, args=(proc.stdout, lines), daemon=True).start()
        threading.Thread(target=_collect, args=(proc.stderr, err_tail), daemon=True).start()
        proc.stdin.write(json.dumps(job) + "\n")
        proc.stdin.close()
        current: str | None = None
        progressed = False
        deadline = time.monotonic() + START_TIMEOUT_S
        why = ""
        while True:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                why = f"timed out after {suite.timeout_s:g} s" if current else "the worker did not start in time"
                proc.kill()
                break
            if line is None:
                proc.wait()
                why = f"the worker exited with status {proc.returncode}"
                break
            event = _event(line)
            if event is None:
                err_tail.append(line)  # not an event: keep it as context
                continue
            if "start" in event:
                current = event["start"]
                deadline = time.monotonic() + suite.timeout_s
            elif "result" in event:
                r = CaseResult.from_json(event["result"])
                results[r.id] = r
                progressed = True
                progress.update(r)
                current = None
                deadline = time.monotonic() + suite.timeout_s
            elif event.get("done"):
                proc.wait()
                break
        remaining = [i for i in remaining if i not in results]
        if current is not None and current in remaining:
            what = "did not finish" if why.startswith("timed out") else "crashed its worker process"
            results[current] = suite.result(current, level, Status.FAIL, f"the case {what} ({why})",
                                            details={"stderr": _tail(err_tail)})
            progress.update(results[current])
            remaining.remove(current)
        elif remaining and not progressed:
            for i in remaining:  # the child died before its first case: a fresh one would too
                results[i] = suite.result(i, level, Status.FAIL, f"the worker process failed before this case "
                                          f"({why})", details={"stderr": _tail(err_tail)})
                progress.update(results[i])
            remaining = []
        # else: the child left between cases (its CUDA context was poisoned); a fresh one takes the rest
    progress.close()
    return [results[i] for i in ids]


#: The child's exit status when a case left its CUDA context unusable; the parent starts a fresh child.
POISONED = 70


def _device_healthy(device: Any) -> bool:
    """Whether this process's CUDA context still works after a failed case (always, without a device)."""
    if device is None:
        return True
    try:
        import torch

        torch.cuda.synchronize()
        torch.ones(1, device="cuda").add_(1).item()
    except Exception:
        return False
    return True


def _protocol_channel() -> Any:
    """The parent's pipe, kept for the events alone; fd 1 (print, printf, any C library) goes to stderr after this."""
    sys.stdout.flush()
    channel = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    return channel


def main() -> int:
    """The child: read the job, build the suite for the device, run each case, send one JSON line per event."""
    import importlib
    import traceback

    out = _protocol_channel()
    job = json.loads(sys.stdin.readline())
    from humming.devices.manager import get_manager

    manager = get_manager()
    device = None if job["device"] is None else manager.device(int(job["device"]))
    caps = device.capabilities if device is not None else manager.capabilities(job["arch"], job["vendor"])
    suite = Suite(manager, caps, device=device, case_set=job["case_set"], command=job["command"], progress=False)
    module = importlib.import_module(job["module"])
    for case_id in job["ids"]:
        out.write(json.dumps({"start": case_id}) + "\n")
        out.flush()
        t0 = time.monotonic()
        try:
            r = module.run_one(suite, case_id)
        except Exception as exc:  # a bug in the case code must still give this case a result
            from conformance.runner import outcome_of

            status, reason = outcome_of(exc)
            r = suite.result(case_id, job["level"], status, reason, details={"traceback": traceback.format_exc()})
        r.duration_s = r.duration_s or (time.monotonic() - t0)
        out.write(json.dumps({"result": r.to_json()}, default=str) + "\n")
        out.flush()
        if r.status is Status.FAIL and not _device_healthy(device):
            # An illegal instruction or a fault is sticky: every later launch in this process would fail too.
            return POISONED
    out.write(json.dumps({"done": True}) + "\n")
    out.flush()
    return 0


if __name__ == "__main__":
    # Run the importable module's main, so that ``conformance.worker`` has one set of globals in the child.
    from conformance.worker import main as _main

    sys.exit(_main())
