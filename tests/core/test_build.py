"""compile_many: every spec once, on worker threads, results in order, every failure tried before raising; the
progress bar shows only when a batch takes more than a moment."""

from __future__ import annotations

import io
import threading
from dataclasses import dataclass

import pytest

from humming import knobs
from humming.capabilities.model import Target
from humming.core import build, cache, dtypes
from humming.devices.nvidia.target import toolchain_for
from humming.errors import CompileError, InvalidInputError
from humming.kernels.toy_axpy import ToyAxpySpec

TARGET = Target("nvidia", "sm_80")


@pytest.fixture
def fresh(tmp_path):
    cache.clear_memo()
    with knobs.scope(HUMMING_CACHE_DIR=str(tmp_path)):
        yield tmp_path
    cache.clear_memo()


@dataclass(frozen=True)
class Broken(ToyAxpySpec):
    def exports(self) -> dict[str, str]:
        return {"tile": f"undefined_constant_{self.vec}"}


def test_compile_many_compiles_each_spec_once_on_threads_and_keeps_the_order(fresh, monkeypatch):
    seen: list[tuple[str, ToyAxpySpec]] = []
    real = build.compile_spec

    def spy(spec, **kwargs):
        seen.append((threading.current_thread().name, spec))
        return real(spec, **kwargs)

    monkeypatch.setattr(build, "compile_spec", spy)
    specs = [ToyAxpySpec(target=TARGET, vec=v, dtype=d) for v in (1, 2) for d in (dtypes.f16, dtypes.bf16)]
    asked = specs + [specs[1], specs[0]]
    # the defaults, with a disk cache it could hand kernels over through: threads all the same
    kernels = build.compile_many(asked, max_workers=2)
    assert [k.spec for k in kernels] == asked
    assert kernels[4] is kernels[1] and kernels[5] is kernels[0]
    assert sorted(map(repr, (s for _, s in seen))) == sorted(map(repr, specs))  # duplicates compiled once
    assert all(name.startswith("humming-compile") for name, _ in seen)
    assert len({k.key for k in kernels}) == 4


def test_compile_many_tries_every_spec_before_raising_for_the_failures(fresh):
    good = ToyAxpySpec(target=TARGET, block=32)
    bad = [Broken(target=TARGET, vec=1), Broken(target=TARGET, vec=2)]
    with pytest.raises(CompileError, match=r"2 of 3 kernels failed; the first, Broken\(") as err:
        build.compile_many([bad[0], good, bad[1]], toolchain=toolchain_for(TARGET), max_workers=2)
    assert "undefined_constant_" in err.value.log and err.value.spec in bad
    cache.clear_memo()
    assert build.compile_spec(good, toolchain=toolchain_for(TARGET)).from_cache  # the good one was published


def test_a_single_failure_is_raised_as_it_is(fresh):
    with pytest.raises(CompileError, match="Broken.*did not compile") as err:
        build.compile_many([Broken(target=TARGET, vec=4)], toolchain=toolchain_for(TARGET))
    assert err.value.repro and err.value.source_path


def test_workers_follow_the_knob_and_refuse_a_negative_count():
    with knobs.scope(HUMMING_COMPILE_WORKERS=3):
        assert build.workers() == 3
    with knobs.scope(HUMMING_COMPILE_WORKERS=0):
        assert build.workers() >= 1
    with knobs.scope(HUMMING_COMPILE_WORKERS=-1):
        with pytest.raises(InvalidInputError, match="HUMMING_COMPILE_WORKERS=-1"):
            build.workers()


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_progress_bar_appears_only_after_the_delay():
    clock, out = FakeClock(), io.StringIO()
    bar = build.Progress(4, stream=out, enabled=True, delay=1.0, clock=clock)
    clock.now = 0.5
    bar.step()
    assert out.getvalue() == ""
    clock.now = 1.5
    bar.step()
    bar.close()
    assert "compiling kernels [" in out.getvalue() and "2/4" in out.getvalue() and out.getvalue().endswith("\n")


def test_the_progress_bar_stays_off_when_the_knob_says_so_or_the_stream_is_not_a_terminal():
    clock = FakeClock()
    clock.now = 5.0
    with knobs.scope(HUMMING_PROGRESS=False):
        quiet = build.Progress(2, stream=io.StringIO(), clock=clock)
    assert not quiet.enabled
    with knobs.scope(HUMMING_PROGRESS=True):
        piped = build.Progress(2, stream=io.StringIO(), clock=clock)  # StringIO is not a tty
    assert not piped.enabled


def test_compile_spec_checks_the_targets_capabilities_before_compiling(fresh):
    from humming.errors import UnsupportedError

    with pytest.raises(UnsupportedError, match="cp.async"):
        build.compile_spec(ToyAxpySpec(target=Target("nvidia", "sm_75"), async_copy=True),
                           toolchain=toolchain_for(TARGET))


def test_compile_many_in_worker_processes_publishes_to_the_cache_and_reports_failures(fresh):
    good = ToyAxpySpec(target=TARGET, block=512)
    with pytest.raises(CompileError, match="did not compile") as err:
        build.compile_many([good, Broken(target=TARGET, vec=8)], max_workers=2, processes=True)
    assert "undefined_constant_8" in err.value.log and err.value.repro
    cache.clear_memo()
    assert build.compile_spec(good, toolchain=toolchain_for(TARGET)).from_cache  # a worker published it
    with pytest.raises(InvalidInputError, match="needs a disk cache it can write"):
        build.compile_many([good, good], toolchain=toolchain_for(TARGET), max_workers=2, processes=True)


def test_kernel_defines_reach_the_source_and_the_keys_and_bad_ones_are_refused(fresh):
    spec = ToyAxpySpec(target=TARGET, block=32)
    chain = toolchain_for(TARGET)
    plain = build.compile_spec(spec, toolchain=chain)
    with knobs.scope(HUMMING_KERNEL_DEFINES="HM_EXPERIMENT=1,HM_OTHER=2"):
        assert build.kernel_defines() == "#define HM_EXPERIMENT 1\n#define HM_OTHER 2\n"
        defined = build.compile_spec(spec, toolchain=chain)
    assert defined.key != plain.key  # another source: another cache entry, not the memoised plain kernel
    assert build.compile_spec(spec, toolchain=chain) is plain  # the knob gone, the plain kernel again
    for bad in ("HM_EXPERIMENT", "1X=2", "HM_A=1;int x", "HM_A="):
        with knobs.scope(HUMMING_KERNEL_DEFINES=bad):
            with pytest.raises(InvalidInputError, match="HUMMING_KERNEL_DEFINES"):
                build.compile_spec(spec, toolchain=chain)
