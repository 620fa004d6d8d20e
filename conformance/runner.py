"""The conformance runner: a case's status, its result record, the progress bar, and running levels on one target.

Every case ends in exactly one of four states:

- ``pass``: it ran and met its check;
- ``fail``: it ran and missed, or anything raised that is not one of the two answers below;
- ``unsupported``: humming answered that the capability says no, naming the missing feature (a Verdict without
  paths, or an UnsupportedError whose ``missing`` is not empty);
- ``skipped``: it cannot run here (no device, no toolchain, no kernel yet, no nvdisasm that reads the cubin for
  a SASS check), with the reason.

An exception is never turned into ``unsupported`` or ``skipped`` by its type alone: level code raises ``Skip``
on purpose, and only an UnsupportedError that names what is missing counts as the capability's answer. A
plugin's toolchain hook or ``availability()`` that raises fails the cases that need it; only availability()
answering ``(False, why)`` skips them.
"""

from __future__ import annotations

import enum
import fnmatch
import importlib
import os
import queue
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence, TypeVar

from humming import knobs
from humming.capabilities.model import DeviceCapabilities, Target
from humming.devices.device import Device
from humming.devices.manager import DeviceManager
from humming.errors import HummingError, InvalidInputError, UnsupportedError

LEVELS: tuple[str, ...] = ("declare", "compile", "numeric", "perf")
CASE_SETS: tuple[str, ...] = ("core", "extended")


class Status(str, enum.Enum):
    PASS = "pass"
    FAIL = "fail"
    UNSUPPORTED = "unsupported"
    SKIPPED = "skipped"

    def __str__(self) -> str:
        return self.value


class Skip(Exception):
    """Raised by level code for a case that cannot run here; the message is the reason."""


@dataclass
class CaseResult:
    """One case's outcome, as the report records it."""

    id: str  # stable: "<level>/<case>", the same on every target
    level: str
    status: Status
    reason: str = ""  # why it failed, is unsupported or was skipped; for a pass, what was checked
    params: dict[str, Any] = field(default_factory=dict)
    error: dict[str, Any] | None = None  # numeric: max_abs, max_rel, worst margin (|diff| / allowed) ...
    details: dict[str, Any] = field(default_factory=dict)  # SASS opcodes, resources, timings
    duration_s: float = 0.0
    repro: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "level": self.level, "status": self.status.value, "reason": self.reason,
                "params": self.params, "error": self.error, "details": self.details,
                "duration_s": round(self.duration_s, 4), "repro": self.repro}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "CaseResult":
        return cls(id=data["id"], level=data["level"], status=Status(data["status"]), reason=data.get("reason", ""),
                   params=data.get("params") or {}, error=data.get("error"), details=data.get("details") or {},
                   duration_s=float(data.get("duration_s") or 0.0), repro=data.get("repro", ""))


def outcome_of(exc: BaseException) -> tuple[Status, str]:
    """The status an exception gives a case (module docstring) and a one-paragraph reason."""
    if isinstance(exc, Skip):
        return Status.SKIPPED, str(exc)
    if isinstance(exc, UnsupportedError) and exc.missing:
        return Status.UNSUPPORTED, "missing: " + "; ".join(exc.missing)
    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    if isinstance(exc, HummingError):
        return Status.FAIL, f"{type(exc).__name__}: {first}"
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" at {tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno}" if tb else ""
    return Status.FAIL, f"{type(exc).__name__}{where}: {first}"


def error_text(exc: BaseException, limit: int = 4000) -> str:
    """The full message of an exception (compiler logs included), cut to ``limit`` characters for the report."""
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= limit else text[:limit] + f"\n... ({len(text) - limit} more characters)"


# ---- the run's context -------------------------------------------------------------------------------------------
@dataclass
class Suite:
    """What every level needs: the plugin manager, the target's capabilities, the device (if any) and options."""

    manager: DeviceManager
    caps: DeviceCapabilities
    device: Device | None = None
    case_set: str = "core"
    pattern: str | None = None  # fnmatch pattern on case ids ("compile/gptq_int4*"); None: every case
    jobs: int = 0  # parallel compile workers; 0: knobs.compile_workers, else one per core
    progress: bool | None = None  # None: knobs.progress and stderr is a terminal
    command: str = ""  # the command that selects this target, for repro lines ("humming conformance --target sm_90a")
    timeout_s: float = 300.0  # the longest one device case may take (numeric, perf) before it is a failure
    compile_timeout_s: float = 900.0  # the longest one compile (a probe batch, a kernel) may take: declare, compile

    @property
    def target(self) -> Target:
        return self.caps.target

    @property
    def workers(self) -> int:
        if self.jobs > 0:
            return self.jobs
        knob = knobs.compile_workers.get()
        return knob if knob > 0 else (os.cpu_count() or 1)

    def selected(self, case_id: str) -> bool:
        return self.pattern is None or fnmatch.fnmatchcase(case_id, self.pattern)

    def repro(self, case_id: str, level: str) -> str:
        """The command line that runs this one case again: the same target, case set and level."""
        base = self.command or target_command(self.manager, self.caps)
        cases = f" --cases {self.case_set}" if self.case_set != "core" else ""  # its ids exist in that set only
        return f"{base}{cases} --level {level} --case '{case_id}'"

    def toolchain(self) -> tuple[Any, Status | None, str]:
        """(the target's toolchain, None, "") when it can compile here, else (None, the cases' status, the reason).

        SKIPPED when it cannot compile here: availability() answers (False, why), or no plugin supplies one (an
        UnsupportedError naming what is missing). FAIL when the hook or availability() raises anything else, or
        availability() answers something other than (ok, why): a plugin's bug is never a skip.
        """
        try:
            chain = self.manager.toolchain(self.caps.target)
        except Exception as exc:
            return None, *_toolchain_outcome(exc, "the toolchain hook")
        try:
            answer = chain.availability()
        except Exception as exc:
            return None, *_toolchain_outcome(exc, "the toolchain's availability()")
        if not (isinstance(answer, (tuple, list)) and len(answer) == 2):
            return None, Status.FAIL, (f"the toolchain's availability() returned {answer!r}; it must return "
                                       "(True, '') or (False, 'why it cannot compile here')")
        ok, why = answer
        return (chain, None, "") if ok else (None, Status.SKIPPED, f"cannot compile here: {why}")

    def result(self, case_id: str, level: str, status: Status, reason: str = "", **kw: Any) -> CaseResult:
        return CaseResult(id=case_id, level=level, status=status, reason=reason, repro=self.repro(case_id, level), **kw)


def target_command(manager: DeviceManager, caps: DeviceCapabilities) -> str:
    """``humming conformance --target ARCH``, with ``--vendor`` when another plugin declares the same arch name
    (the command refuses an ambiguous name)."""
    arch = caps.target.arch
    shared = sum(1 for c in manager.catalog() if c.target.arch == arch) > 1
    return f"humming conformance --target {arch}" + (f" --vendor {caps.target.vendor}" if shared else "")


def _toolchain_outcome(exc: BaseException, what: str) -> tuple[Status, str]:
    """A toolchain that cannot be had: a skip when the answer names what is missing, else the plugin's failure."""
    status, reason = outcome_of(exc)
    if status in (Status.UNSUPPORTED, Status.SKIPPED):
        return Status.SKIPPED, f"cannot compile here: {reason}"
    return Status.FAIL, f"{what} raised {reason}"


# ---- progress ------------------------------------------------------------------------------------------------------
class Progress:
    """A one-line progress bar on stderr (only on a terminal, and only when HUMMING_PROGRESS allows)."""

    def __init__(self, total: int, label: str, enabled: bool | None = None, stream: Any = None) -> None:
        self.total, self.label, self.done, self.failed = total, label, 0, 0
        self.stream = stream or sys.stderr
        tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.enabled = (knobs.progress.get() and tty) if enabled is None else enabled
        self._start = time.monotonic()
        self._last = 0.0

    def update(self, result: CaseResult | None = None, n: int = 1) -> None:
        self.done += n
        if result is not None and result.status is Status.FAIL:
            self.failed += 1
        now = time.monotonic()
        if self.enabled and (now - self._last > 0.1 or self.done >= self.total):
            self._last = now
            width = 30
            filled = width * self.done // max(self.total, 1)
            fail = f", {self.failed} failed" if self.failed else ""
            self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total}"
                              f"{fail} {now - self._start:5.1f}s")
            self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()


# ---- running -------------------------------------------------------------------------------------------------------
LevelFn = Callable[[Suite], list[CaseResult]]
T = TypeVar("T")
R = TypeVar("R")


class TimedOut(TimeoutError):
    """A call that did not finish within its time bound (Suite.compile_timeout_s); its thread was left behind."""


def run_bounded(fn: Callable[[T], R], items: Sequence[T], workers: int, timeout_s: float) -> list[R | TimedOut]:
    """``[fn(item) for item in items]`` on up to ``workers`` threads, with each call bounded in time.

    A call still running ``timeout_s`` after it started gets a TimedOut in its place, and a fresh thread takes
    its slot. Python cannot stop a thread, so the stuck one is a daemon: it does not keep the process alive.
    (A vendor compiler in process, or one that waits on a subprocess without a timeout, would otherwise hang
    the declare and compile levels with no report.) An exception ``fn`` raises is raised here.
    """
    todo: "queue.SimpleQueue[int]" = queue.SimpleQueue()
    for i in range(len(items)):
        todo.put(i)
    results: dict[int, Any] = {}
    started: dict[int, float] = {}
    cond = threading.Condition()

    def work() -> None:
        while True:
            try:
                i = todo.get_nowait()
            except queue.Empty:
                return
            with cond:
                started[i] = time.monotonic()
            try:
                got: Any = fn(items[i])
            except BaseException as exc:  # handed to the caller's thread below
                got = exc
            with cond:
                results.setdefault(i, got)  # a late answer after TimedOut is dropped
                cond.notify()

    def spawn() -> None:
        threading.Thread(target=work, daemon=True, name="conformance-compile").start()

    for _ in range(max(1, min(workers, len(items)))):
        spawn()
    with cond:
        while len(results) < len(items):
            now = time.monotonic()
            for i, t0 in started.items():
                if i not in results and now - t0 > timeout_s:
                    results[i] = TimedOut(f"it did not finish in {timeout_s:g} s (a hung compiler?)")
                    spawn()  # the stuck thread keeps its slot; the rest of the queue needs another
            running = [t0 for i, t0 in started.items() if i not in results]
            cond.wait(timeout=max(0.05, min(running) + timeout_s - now) if running else 1.0)
    for got in results.values():
        if isinstance(got, BaseException) and not isinstance(got, TimedOut):
            raise got
    return [results[i] for i in range(len(items))]


def level_function(level: str) -> LevelFn:
    """The ``run(suite)`` of one level module (conformance.levels.<level>)."""
    if level not in LEVELS:
        raise InvalidInputError(f"unknown conformance level {level!r}; levels: {', '.join(LEVELS)}")
    return importlib.import_module(f"conformance.levels.{level}").run  # type: ignore[no-any-return]


def case_ids(suite: Suite, level: str) -> list[str]:
    """The ids of ``level``'s cases that ``suite`` selects, without running (or compiling) anything."""
    level_function(level)  # validates the name
    return importlib.import_module(f"conformance.levels.{level}").case_ids(suite)  # type: ignore[no-any-return]


def id_forms(level: str) -> tuple[str, ...]:
    """What ``level``'s case ids look like (``compile/<preset>.<activation>/m<M>n<N>k<K>``), for messages."""
    level_function(level)
    return importlib.import_module(f"conformance.levels.{level}").ID_FORMS  # type: ignore[no-any-return]


def expand_levels(levels: Iterable[str]) -> list[str]:
    """``all`` -> every level; otherwise the given ones, in suite order, each once."""
    wanted: set[str] = set()
    for name in levels:
        if name == "all":
            wanted.update(LEVELS)
        else:
            level_function(name)  # validates the name
            wanted.add(name)
    return [lv for lv in LEVELS if lv in wanted]


@dataclass
class SuiteRun:
    """Everything one run produced: the results in order, how long each level took, and when it ran."""

    suite: Suite
    levels: list[str]
    results: list[CaseResult]
    started: float
    finished: float
    level_seconds: dict[str, float] = field(default_factory=dict)

    @property
    def failed(self) -> list[CaseResult]:
        return [r for r in self.results if r.status is Status.FAIL]

    def counts(self, level: str | None = None) -> dict[str, int]:
        out = {s.value: 0 for s in Status}
        for r in self.results:
            if level is None or r.level == level:
                out[r.status.value] += 1
        return out


def run_suite(suite: Suite, levels: Sequence[str]) -> SuiteRun:
    """Run ``levels`` (in suite order) on ``suite``'s target. A level that raises is one failed case, not a crash."""
    started = time.time()
    order = expand_levels(levels)
    results: list[CaseResult] = []
    seconds: dict[str, float] = {}
    for level in order:
        t0 = time.monotonic()
        try:
            got = level_function(level)(suite)
        except Exception as exc:  # a bug in a level must still produce a report
            _status, reason = outcome_of(exc)
            got = [suite.result(f"{level}/level", level, Status.FAIL, f"the {level} level itself raised: {reason}",
                                details={"traceback": traceback.format_exc()[-4000:]})]
        results.extend(got)
        seconds[level] = time.monotonic() - t0
    return SuiteRun(suite, order, results, started, time.time(), seconds)
