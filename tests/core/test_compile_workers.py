"""compile_many's worker processes: a caller's script is never re-run in them, a worker that dies fails only the
spec it held, and the default worker count follows the CPUs this process may use."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

from humming import knobs
from humming.capabilities.model import Target
from humming.core import build, cache, compile_workers
from humming.devices.nvidia.target import toolchain_for
from humming.errors import CompileError, InvalidInputError, PluginError, UnsupportedError
from humming.kernels.toy_axpy import ToyAxpySpec

TARGET = Target("nvidia", "sm_80")
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def fresh(tmp_path):
    cache.clear_memo()
    with knobs.scope(HUMMING_CACHE_DIR=str(tmp_path / "cache")):
        yield tmp_path
    cache.clear_memo()


@dataclass(frozen=True)
class DiesInWorker(ToyAxpySpec):
    """A spec whose rendering ends the process: what a crashing compiler does to a worker."""

    def exports(self) -> dict[str, str]:
        os._exit(7)


def test_a_script_without_a_main_guard_runs_once_and_its_kernels_compile_in_workers(fresh):
    # The README's precompile example is top-level code; multiprocessing's spawn re-ran such a script in every
    # worker, which then died with BrokenProcessPool.
    runs = fresh / "runs.txt"
    script = fresh / "script.py"
    script.write_text(textwrap.dedent(f"""
        from pathlib import Path
        from humming.capabilities.model import Target
        from humming.core import build
        from humming.kernels.toy_axpy import ToyAxpySpec
        with open({str(runs)!r}, "a") as f:
            f.write("ran\\n")
        t = Target("nvidia", "sm_80")
        kernels = build.compile_many([ToyAxpySpec(target=t, block=64), ToyAxpySpec(target=t, block=128)],
                                     max_workers=2, processes=True)
        print("compiled", len(kernels), all(k.from_cache for k in kernels))
        """))
    env = dict(os.environ, PYTHONPATH=str(REPO), HUMMING_CACHE_DIR=str(fresh / "cache"), HUMMING_PROGRESS="0")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert runs.read_text() == "ran\n"  # the script body ran in the caller only
    assert "compiled 2 True" in done.stdout  # each read back from what a worker published


def test_a_worker_that_dies_fails_its_spec_with_the_exit_status_and_the_rest_still_compile(fresh):
    good = [ToyAxpySpec(target=TARGET, block=b) for b in (64, 128, 256)]
    with pytest.raises(CompileError, match=r"worker process died \(exit status 7\)") as err:
        build.compile_many([good[0], DiesInWorker(target=TARGET), good[1], good[2]], max_workers=2, processes=True)
    assert isinstance(err.value.spec, DiesInWorker)
    cache.clear_memo()
    assert all(build.compile_spec(s, toolchain=toolchain_for(TARGET)).from_cache for s in good)


@dataclass(frozen=True)
class RaisesInWorker(ToyAxpySpec):
    """A spec whose rendering raises: a humming error (collected like a failed compile) or another (raised)."""

    humming_error: bool = False

    def exports(self) -> dict[str, str]:
        if self.humming_error:
            raise UnsupportedError("this spec needs a feature the worker lacks", missing=["a feature"])
        raise ValueError("boom from a worker")


def test_a_workers_humming_error_is_collected_and_any_other_raised_as_itself(fresh):
    good = ToyAxpySpec(target=TARGET, block=64)
    with pytest.raises(UnsupportedError, match="needs a feature the worker lacks"):
        build.compile_many([good, RaisesInWorker(target=TARGET, humming_error=True)], max_workers=2, processes=True)
    with pytest.raises(ValueError, match="boom from a worker"):
        build.compile_many([good, RaisesInWorker(target=TARGET)], max_workers=2, processes=True)


def test_without_a_writable_cache_the_batch_compiles_on_threads_once_each(fresh, monkeypatch):
    # Workers hand kernels over through the cache; with none to write, each would compile twice (worker, caller).
    (fresh / "afile").write_text("not a folder")

    def no_workers(*args, **kwargs):
        raise AssertionError("worker processes started without a cache to publish to")

    monkeypatch.setattr(compile_workers, "compile_in_workers", no_workers)
    specs = [ToyAxpySpec(target=TARGET, block=b) for b in (64, 128)]
    with knobs.scope(HUMMING_CACHE_DIR=str(fresh / "afile")), warnings.catch_warnings():
        warnings.simplefilter("ignore", cache.CacheWarning)
        kernels = build.compile_many(specs, max_workers=2)
        assert [k.spec for k in kernels] == specs
        with pytest.raises(InvalidInputError, match="needs a disk cache it can write"):
            build.compile_many(specs, max_workers=2, processes=True)


def test_a_spec_class_of_the_callers_script_compiles_on_threads_by_default(fresh):
    # A worker is a fresh interpreter: it cannot import a class defined in the caller's __main__ (spawn could, by
    # re-running the script, which is what the workers no longer do).
    script = fresh / "own_spec.py"
    script.write_text(textwrap.dedent("""
        from dataclasses import dataclass
        from humming.capabilities.model import Target
        from humming.core import build
        from humming.errors import InvalidInputError
        from humming.kernels.toy_axpy import ToyAxpySpec

        @dataclass(frozen=True)
        class MySpec(ToyAxpySpec):
            pass

        t = Target("nvidia", "sm_80")
        specs = [MySpec(target=t, block=64), MySpec(target=t, block=128)]
        print("compiled", len(build.compile_many(specs, max_workers=2)))
        try:
            build.compile_many(specs, max_workers=2, processes=True)
        except InvalidInputError as exc:
            print("refused:", exc)
        """))
    env = dict(os.environ, PYTHONPATH=str(REPO), HUMMING_CACHE_DIR=str(fresh / "cache"), HUMMING_PROGRESS="0")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "compiled 2" in done.stdout
    assert "refused:" in done.stdout and "MySpec" in done.stdout


@dataclass(frozen=True)
class PluginBreaksInWorker(ToyAxpySpec):
    def exports(self) -> dict[str, str]:
        raise PluginError("nvidia", "a hook raised")


def test_a_workers_plugin_error_keeps_its_type_and_is_collected(fresh):
    good = ToyAxpySpec(target=TARGET, block=64)
    with pytest.raises(PluginError, match="device plugin 'nvidia': a hook raised") as err:
        build.compile_many([good, PluginBreaksInWorker(target=TARGET)], max_workers=2, processes=True)
    assert err.value.plugin == "nvidia" and err.value.reason == "a hook raised"


def test_a_stopped_worker_starts_no_process_for_a_late_spec():
    # After an abort, a driving thread may still hold a spec: its worker must not start (nothing would reap it).
    worker = compile_workers._Worker()
    worker.stop(kill=True)
    answer = worker.ask(ToyAxpySpec(target=TARGET, block=64))
    assert answer[0] == "raise" and "stopped" in str(answer[1])
    assert worker.proc is None


def test_the_default_worker_count_is_the_cpus_this_process_may_use(monkeypatch):
    if not hasattr(os, "sched_getaffinity"):
        pytest.skip("no affinity mask on this platform")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3})
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    with knobs.scope(HUMMING_COMPILE_WORKERS=0):
        assert build.workers() == 1
    with knobs.scope(HUMMING_COMPILE_WORKERS=5):
        assert build.workers() == 5
