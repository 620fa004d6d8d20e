"""A plugin's bug fails the cases it touches, naming the exception; only a plain "no" (availability() saying
False, a hook answering None) skips them."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from humming import knobs
from humming.capabilities.model import DeviceCapabilities, MmaInstruction, Target
from humming.devices.hookspecs import hookimpl
from humming.devices.manager import DeviceManager
from humming.devices.nvidia import archs
from humming.devices.nvidia.target import toolchain_for

from conformance.runner import CaseResult, Status, Suite, run_suite
from tests.conformance.test_sass_checks import TunedLiar

DECLARE = "declare/probe/mma.sync.m16n8k16.bf16.bf16.f32"
COMPILE = "compile/gptq_int4.bf16/m1n64k128"


class BrokenAvailability:
    """NVRTC, but availability() raises: a vendor toolchain with a bug in its own check."""

    def __init__(self, target: Target) -> None:
        self.real = toolchain_for(target)
        self.name = self.real.name

    def __getattr__(self, name: str) -> object:
        return getattr(self.real, name)

    def availability(self) -> tuple[bool, str]:
        raise AttributeError("'NoneType' object has no attribute 'sdk_root'")


class Unavailable(BrokenAvailability):
    def availability(self) -> tuple[bool, str]:
        return False, "VENDOR_SDK is not set"


def _plugin(toolchain=None, probe=None, tuner: bool = True):  # noqa: ANN001, ANN202
    """The SM80 liar with its toolchain and probe hooks replaced by ``toolchain(target)`` / ``probe(instr, target)``."""
    class Plugin(TunedLiar):
        if toolchain is not None:
            @hookimpl
            def humming_toolchain(self, target: Target):  # noqa: ANN201
                return toolchain(target)

        if probe is not None:
            @hookimpl
            def humming_instruction_probe(self, instruction: MmaInstruction, target: Target):  # noqa: ANN201
                return probe(instruction, target)

    return Plugin(archs.SM80)


def _run(plugin: object, level: str, pattern: str, strict: bool = False) -> CaseResult:
    manager = DeviceManager(autoload=False, plugins=[("vendor", plugin)], raw_devices=[], strict=strict)
    suite = Suite(manager, manager.capabilities("sm_80"), pattern=pattern, jobs=2, progress=False)
    (r,) = run_suite(suite, [level]).results
    return r


# ---- the toolchain --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("level, pattern", [("declare", DECLARE), ("compile", COMPILE)])
def test_an_availability_check_that_raises_fails_the_cases_naming_the_exception(level: str, pattern: str) -> None:
    r = _run(_plugin(toolchain=BrokenAvailability), level, pattern)
    assert r.status is Status.FAIL, r
    assert "AttributeError" in r.reason and "sdk_root" in r.reason and "availability()" in r.reason


@pytest.mark.parametrize("level, pattern", [("declare", DECLARE), ("compile", COMPILE)])
def test_a_toolchain_hook_that_raises_fails_the_cases_rather_than_reading_as_no_toolchain(level: str,
                                                                                           pattern: str) -> None:
    def broken(target: Target) -> None:
        raise RuntimeError("vendor SDK layout changed")

    r = _run(_plugin(toolchain=broken), level, pattern)  # not strict: the manager records the raise
    assert r.status is Status.FAIL, r
    assert "RuntimeError" in r.reason and "vendor SDK layout changed" in r.reason


@pytest.mark.parametrize("level, pattern", [("declare", DECLARE), ("compile", COMPILE)])
def test_a_toolchain_that_says_no_still_skips_with_its_reason(level: str, pattern: str) -> None:
    r = _run(_plugin(toolchain=Unavailable), level, pattern)
    assert r.status is Status.SKIPPED and "VENDOR_SDK is not set" in r.reason, r


# ---- the probe hook -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("answer", [Path("/tmp/probe.cu"), b"__global__ void humming_probe() {}",
                                    type("Probe", (), {"source": Path("/tmp/probe.cu")})()])
def test_a_probe_hook_returning_the_wrong_type_fails_naming_what_it_returned(answer: object) -> None:
    r = _run(_plugin(probe=lambda instr, target: answer), "declare", DECLARE)
    assert r.status is Status.FAIL, r
    assert "TypeError" in r.reason and "humming_instruction_probe" in r.reason and type(answer).__name__ in r.reason


def test_a_probe_hook_that_raises_fails_rather_than_reading_as_no_probe() -> None:
    def broken(instr: MmaInstruction, target: Target) -> None:
        raise KeyError("m16n8k16")

    r = _run(_plugin(probe=broken), "declare", DECLARE)  # not strict: the manager records the raise
    assert r.status is Status.FAIL, r
    assert "KeyError" in r.reason and "supplies no probe" not in r.reason


def test_a_probe_hook_answering_none_is_still_no_probe() -> None:
    r = _run(_plugin(probe=lambda instr, target: None), "declare", DECLARE)
    assert r.status is Status.SKIPPED and "supplies no probe" in r.reason, r


# ---- a compiler that never returns ------------------------------------------------------------------------------
@pytest.mark.parametrize("level, pattern", [("declare", "declare/probe/mma.sync.m16n8k16.*"), ("compile", COMPILE)])
def test_a_compile_that_never_returns_fails_its_cases_at_the_time_bound(level: str, pattern: str,
                                                                        tmp_path: Path) -> None:
    release = threading.Event()

    class Hanging(BrokenAvailability):
        def availability(self) -> tuple[bool, str]:
            return True, ""

        def compile(self, source: str, **kwargs: object) -> object:
            release.wait(120)  # an in-process vendor compiler stuck in a loop
            raise RuntimeError("released by the test")

    manager = DeviceManager(autoload=False, plugins=[("vendor", _plugin(toolchain=Hanging))], raw_devices=[])
    suite = Suite(manager, manager.capabilities("sm_80"), pattern=pattern, jobs=2, progress=False,
                  compile_timeout_s=1.0)
    t0 = time.monotonic()
    try:
        with knobs.scope(HUMMING_CACHE_DIR=str(tmp_path)):  # nothing compiled before may answer from the cache
            results = run_suite(suite, [level]).results
    finally:
        release.set()
    assert time.monotonic() - t0 < 30
    assert results and all(r.status is Status.FAIL and "did not finish in 1 s" in r.reason for r in results), results
