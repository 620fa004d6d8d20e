"""Kernel specs compiled in worker processes that import humming and nothing of the caller's.

Why not ``multiprocessing``: its spawn and forkserver start methods re-run the caller's ``__main__`` script in every
worker, so a script without an ``if __name__ == "__main__":`` guard (most of them, and the README's precompile
example) loaded its model once more per worker and then died with BrokenProcessPool; fork is unsafe beside CUDA.
A worker here is a fresh interpreter (``python -c``) given the caller's ``sys.path`` and environment (the HUMMING_*
knobs with it), which compiles the specs it is sent and publishes each to the disk cache; the caller then reads
each kernel from there.

The protocol is pickles on two pipes: specs in on the worker's stdin, one answer a spec out on the worker's
stdout, which the worker first moves aside (its own prints go to stderr, so no print can break an answer). A
worker that dies fails the spec it held, with its exit code, and a fresh one takes the rest.
"""

from __future__ import annotations

import json
import os
import pickle
import queue
import subprocess
import sys
import threading
from typing import Any, Callable, Sequence

from humming.core.codegen import KernelSpec
from humming.errors import InternalError

# What a spec's compile gives back: None (published), ("fail", message, log, source path, repro) for a CompileError,
# or ("raise", exception) for any other error, re-raised in the caller.
Answer = Any

_BOOT = ("import json, sys; sys.path[:] = json.loads(sys.argv[1]); "
         "from humming.core.compile_workers import serve; serve()")


def serve() -> None:
    """A worker's loop: read a pickled spec from stdin, compile and publish it, write the answer; stop at EOF."""
    from humming.core.build import compile_spec
    from humming.errors import CompileError

    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # prints of the compile (a plugin's, a toolchain's) go to stderr, not into the answers
    sys.stdout = sys.stderr
    specs = sys.stdin.buffer
    while True:
        answer: Answer
        try:
            spec = pickle.load(specs)
        except EOFError:
            return
        except Exception as exc:  # noqa: BLE001 -- a spec this interpreter cannot load: the caller raises it
            pickle.dump(("raise", _picklable(exc)), answers)
            answers.flush()
            continue
        try:
            compile_spec(spec)
            answer = None
        except CompileError as exc:
            answer = ("fail", str(exc).splitlines()[0], exc.log, exc.source_path, exc.repro)
        except Exception as exc:  # noqa: BLE001 -- handed to the caller, which raises it
            answer = ("raise", _picklable(exc))
        pickle.dump(answer, answers)
        answers.flush()


def _picklable(exc: BaseException) -> BaseException:
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001 -- an exception type that does not round-trip: keep its text
        return RuntimeError(f"{type(exc).__name__}: {exc}")


def importable(spec: KernelSpec) -> bool:
    """Whether a worker can load ``spec``'s class: not one of the caller's script (``__main__``) nor of a function."""
    cls = type(spec)
    return cls.__module__ != "__main__" and "<locals>" not in cls.__qualname__


class _Worker:
    """One worker process, started on first use; none is started once the batch has stopped."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.lock = threading.Lock()
        self.closed = False

    def ask(self, spec: KernelSpec) -> Answer:
        try:
            payload = pickle.dumps(spec)
        except Exception as exc:  # noqa: BLE001 -- a spec a worker cannot receive: the caller raises it
            return ("raise", _picklable(exc))
        with self.lock:  # a stop() that ran before this start would leave the process running, unreaped
            if self.closed:
                return ("raise", InternalError("the compile batch stopped before this kernel was compiled"))
            if self.proc is None:
                self.proc = subprocess.Popen([sys.executable, "-c", _BOOT, json.dumps(sys.path)],
                                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=dict(os.environ))
            proc = self.proc
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(payload)
            proc.stdin.flush()
            return pickle.load(proc.stdout)
        except (EOFError, OSError, pickle.UnpicklingError):
            code = proc.wait()
            self.proc = None
            return ("fail", f"the compile worker process died (exit status {code}) while compiling this kernel",
                    "", None, None)

    def stop(self, kill: bool = False) -> None:
        with self.lock:
            self.closed = True
            proc = self.proc
        if proc is None:
            return
        if kill:
            proc.kill()
        else:
            try:
                assert proc.stdin is not None
                proc.stdin.close()
            except OSError:
                pass
        proc.wait()


def compile_in_workers(specs: Sequence[KernelSpec], n: int, done: Callable[[KernelSpec, Answer], None]) -> None:
    """Compile ``specs`` in ``n`` worker processes; ``done(spec, answer)`` runs in this thread as each finishes.

    An exception from ``done`` stops the workers (killed) and propagates."""
    todo: queue.Queue[KernelSpec] = queue.Queue()
    for s in specs:
        todo.put(s)
    finished: queue.Queue[tuple[KernelSpec, Answer]] = queue.Queue()
    workers = [_Worker() for _ in range(max(1, min(n, len(specs))))]
    stop = threading.Event()

    def drive(worker: _Worker) -> None:
        while not stop.is_set():
            try:
                spec = todo.get_nowait()
            except queue.Empty:
                return
            try:
                answer = worker.ask(spec)
            except BaseException as exc:  # noqa: BLE001 -- every spec must get an answer, or the caller waits forever
                answer = ("raise", exc)
            finished.put((spec, answer))

    threads = [threading.Thread(target=drive, args=(w,), name="humming-compile-worker", daemon=True)
               for w in workers]
    for t in threads:
        t.start()
    ok = False
    try:
        for _ in range(len(specs)):
            done(*finished.get())
        ok = True
    finally:
        stop.set()
        for w in workers:
            w.stop(kill=not ok)
        for t in threads:
            t.join()
