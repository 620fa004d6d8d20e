"""A SASS check passes only when the SASS was read: no nvdisasm (or one that cannot read the cubin) is a skip with
the reason, every requirement that depends on the MMA is checked, and a form marked emulated must be emulated."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from humming import knobs
from humming.capabilities.model import DeviceCapabilities
from humming.core import dtypes as dt
from humming.core.codegen import Requirement
from humming.devices.hookspecs import hookimpl
from humming.devices.manager import DeviceManager
from humming.devices.nvidia import archs
from humming.devices.nvidia.families import MMA_SYNC

from conformance import report, sass
from conformance.levels import compile as compile_level
from conformance.runner import Status, Suite, run_suite
from tests.conformance.test_wrong_capabilities import Liar, run_level

FP8 = "declare/probe/mma.sync.m16n8k32.e4m3.e4m3.f32"


@pytest.fixture
def fresh_sass(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """No SASS summary from an earlier run: an empty kernel cache and an empty in-process memo."""
    monkeypatch.setattr(sass, "_memo", {})
    with knobs.scope(HUMMING_CACHE_DIR=str(tmp_path / "cache")):
        yield


@pytest.fixture
def no_nvdisasm(monkeypatch: pytest.MonkeyPatch, fresh_sass: None) -> None:
    """nvdisasm is not installed: no wheel, no CUDA toolkit, nothing on PATH (the real lookup runs)."""

    def no_files(name: str) -> None:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "files", no_files)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    try:
        import cuda.pathfinder

        monkeypatch.setattr(cuda.pathfinder, "find_nvidia_binary_utility", lambda name: None, raising=False)
    except ImportError:
        pass
    monkeypatch.setattr(sass, "nvdisasm_path", sass.nvdisasm_path.__wrapped__)


@pytest.fixture
def old_nvdisasm(monkeypatch: pytest.MonkeyPatch, fresh_sass: None, tmp_path: Path) -> None:
    """An nvdisasm too old for the cubin's architecture: it exits 1, as 12.x does on an sm_100a cubin."""
    tool = tmp_path / "nvdisasm"
    tool.write_text("#!/bin/sh\necho 'nvdisasm fatal   : unsupported architecture' >&2\nexit 1\n")
    tool.chmod(0o755)
    monkeypatch.setattr(sass, "nvdisasm_path", lambda: tool)


class TunedLiar(Liar):
    """The liar plugin with NVIDIA's tuner, so the compile level selects kernels for its table."""

    @hookimpl
    def humming_tuner(self, target):  # noqa: ANN001, ANN201
        from humming.devices.nvidia.tuning import TUNER

        return TUNER if target == self.caps.target else None


def run_tuned(caps, level: str, pattern: str) -> list:  # noqa: ANN001
    manager = DeviceManager(autoload=False, plugins=[("liar", TunedLiar(caps))], raw_devices=[], strict=True)
    suite = Suite(manager, manager.capabilities(caps.target.arch), pattern=pattern, jobs=2, progress=False)
    return run_suite(suite, [level]).results


def _fp8_on_sm90a_claimed_native() -> DeviceCapabilities:
    fp8 = next(i for i in archs.SM89.mma if i.family == MMA_SYNC and i.a is dt.e4m3 and i.b is dt.e4m3
               and i.acc is dt.f32 and i.k == 32)
    caps = dataclasses.replace(archs.SM90A, mma=tuple(i for i in archs.SM90A.mma if i.family != MMA_SYNC
                                                      or i.a not in (dt.e4m3, dt.e5m2)) + (fp8,))
    return caps


def test_sass_module_finds_nvdisasm_through_the_wheel() -> None:
    path = sass.nvdisasm_path()
    assert path.name.startswith("nvdisasm") and path.is_file()


# ---- no SASS read is no pass ---------------------------------------------------------------------------------------
def test_a_probe_whose_sass_cannot_be_read_without_nvdisasm_is_skipped_with_the_reason(no_nvdisasm: None) -> None:
    (r,) = run_level(_fp8_on_sm90a_claimed_native(), "declare", FP8).values()
    assert r.status is Status.SKIPPED, r  # ptxas emulates it: a pass would hide the wrong claim
    assert "SASS not checked" in r.reason and "nvdisasm is not installed" in r.reason
    assert "pip install nvidia-cuda-nvdisasm" in r.reason


def test_a_probe_whose_sass_an_old_nvdisasm_cannot_read_is_skipped_quoting_nvdisasm(old_nvdisasm: None) -> None:
    (r,) = run_level(_fp8_on_sm90a_claimed_native(), "declare", FP8).values()
    assert r.status is Status.SKIPPED, r
    assert "nvdisasm failed (exit 1)" in r.reason and "unsupported architecture" in r.reason


def test_the_command_summary_says_why_sass_checks_were_skipped(no_nvdisasm: None) -> None:
    manager = DeviceManager(autoload=False, plugins=[("liar", Liar(_fp8_on_sm90a_claimed_native()))],
                            raw_devices=[], strict=True)
    suite = Suite(manager, manager.capabilities("sm_90a"), pattern="declare/probe/mma.sync.*", jobs=2,
                  progress=False)
    text = report.summary_text(report.build(run_suite(suite, ["declare"])))
    skipped = [line for line in text.splitlines() if line.strip().startswith("skipped x")]
    assert len(skipped) == 1 and "nvdisasm is not installed" in skipped[0], text  # one line for every probe


def test_a_kernel_whose_sass_cannot_be_read_is_skipped_not_passed_at_compile(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(binary: bytes) -> dict:
        raise sass.SassUnavailable("nvdisasm is not installed, so SASS checks cannot run", missing=["nvdisasm"])

    kernel = type("K", (), {"binary": b"\x7fELF", "function": "k"})()
    spec = type("S", (), {"requirements": lambda self: (
        Requirement("mma.sync f16", lambda c: any(i.a is dt.f16 and i.k == 16 for i in c.mma)),)})()
    monkeypatch.setattr(compile_level.sass, "summaries", missing)
    with pytest.raises(compile_level.Skip, match="SASS not checked: nvdisasm is not installed"):
        compile_level.check_sass(kernel, spec, archs.SM80)


def test_a_compile_case_is_skipped_when_no_sass_can_be_read(no_nvdisasm: None) -> None:
    (r,) = run_tuned(archs.SM80, "compile", "compile/gptq_int4.bf16/m1n64k128")
    assert r.status is Status.SKIPPED, r
    assert r.reason.startswith("compiles and fits; SASS not checked: nvdisasm is not installed"), r.reason


def test_a_binary_that_is_not_an_nvidia_cubin_is_told_apart_from_a_missing_nvdisasm(no_nvdisasm: None) -> None:
    with pytest.raises(sass.NotACubin):  # a PPU image: no SASS check applies, whatever nvdisasm there is
        sass.disassemble(b"\x7fELF\x02\x01\x01" + bytes(11) + (0x10E).to_bytes(2, "little") + bytes(44))


# ---- a table whose every form meets the requirement is still checked -----------------------------------------------
def test_a_requirement_every_declared_form_meets_is_still_an_mma_requirement() -> None:
    bf16 = next(i for i in archs.SM80.mma if i.family == MMA_SYNC and i.a is dt.bf16 and i.k == 16
                and i.acc is dt.f32)
    caps = dataclasses.replace(archs.SM80, mma=(bf16,))
    mma = Requirement("mma.sync bf16", lambda c: any(i.a is dt.bf16 for i in c.mma))
    smem = Requirement("shared memory", lambda c: True)  # does not depend on the MMA: not a SASS question
    spec = type("S", (), {"requirements": lambda self: (mma, smem)})()
    assert compile_level.required_instructions(spec, caps) == [bf16]


def test_a_table_with_one_mma_form_has_its_kernels_sass_checked() -> None:
    bf16 = next(i for i in archs.SM80.mma if i.family == MMA_SYNC and i.a is dt.bf16 and i.k == 16
                and i.acc is dt.f32)
    caps = dataclasses.replace(archs.SM80, mma=(bf16,))
    (r,) = run_tuned(caps, "compile", "compile/gptq_int4.bf16/m1n64k128")
    assert r.status is Status.PASS, r
    assert "names no MMA requirement" not in r.reason and "SASS holds HMMA" in r.reason
    (kernel,) = r.details["kernels"]
    assert [v["status"] for v in kernel["sass"].values()] == ["native"]


# ---- a form marked emulated that runs natively ---------------------------------------------------------------------
def test_a_form_marked_emulated_that_the_sass_shows_native_fails_declare() -> None:
    fp8 = next(i for i in archs.SM89.mma if i.family == MMA_SYNC and i.a is dt.e4m3 and i.b is dt.e4m3
               and i.acc is dt.f32 and i.k == 32)
    marked = dataclasses.replace(fp8, emulated=True, emulation="F2FP unpacks + HMMA (wrongly)")
    caps = dataclasses.replace(archs.SM89, mma=tuple(marked if i is fp8 else i for i in archs.SM89.mma))
    (r,) = run_level(caps, "declare", FP8).values()
    assert r.status is Status.FAIL, r
    assert "marks it emulated" in r.reason and "native" in r.reason and "QMMA" in r.reason
