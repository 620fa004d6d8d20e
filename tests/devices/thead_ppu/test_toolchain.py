"""The PPU SDK toolchain: a plain reason without the SDK; with a stand-in SDK, its command line, log and errors."""

from __future__ import annotations

import json
import random
import shutil
import stat
import sys
import textwrap
from pathlib import Path

import pytest

import humming.devices.thead_ppu as thead_plugin
from humming.capabilities.model import Target
from humming.devices.manager import DeviceManager
from humming.devices.thead_ppu import archs, target as ppu_target
from humming.devices.thead_ppu.target import PpuSdkToolchain
from humming.devices.toolchain import CompiledBinary, Toolchain
from humming.errors import CompileError, InvalidInputError, UnsupportedError

ABSENT = "PPU SDK not found: set PPU_SDK to the SDK root (expected $PPU_SDK/CUDA_SDK/bin/nvcc)"

# A stand-in for the SDK's nvcc: records its command line, then behaves as the source asks (by marker).
FAKE_NVCC = textwrap.dedent("""\
    import hashlib, json, pathlib, sys, time
    here = pathlib.Path(__file__).resolve().parent
    args = sys.argv[1:]
    if args == ["--version"]:
        print("nvcc: NVIDIA (R) Cuda compiler driver (stand-in for the PPU SDK)")
        print("Cuda compilation tools, release 12.3, V12.3.0")
        sys.exit(0)
    with open(here / "calls.jsonl", "a") as f:
        f.write(json.dumps(args) + "\\n")
    out = args[args.index("-o") + 1]
    text = pathlib.Path(args[-1]).read_text()
    print("stand-in nvcc: compiling " + args[-1])
    sys.stderr.write("kernel.cu(1): warning: a warning on stderr\\n")
    if "FAIL_HERE" in text:
        line = text[: text.index("FAIL_HERE")].count("\\n") + 1
        sys.stderr.write(f"kernel.cu({line}): error: identifier \\"FAIL_HERE\\" is undefined\\n")
        sys.exit(2)
    if "HANG_HERE" in text:
        time.sleep(60)
    if "NO_OUTPUT" in text:
        sys.exit(0)
    pathlib.Path(out).write_bytes(b"\\x7fELF" + hashlib.sha256(text.encode()).digest())
""")


def _executable(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!{sys.executable}\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def fake_sdk(tmp_path: Path) -> Path:
    root = tmp_path / "PPU_SDK"
    _executable(root / "CUDA_SDK" / "bin" / "nvcc", FAKE_NVCC)
    _executable(root / "bin" / "ppu-llc", 'print("ppu version: 2.2.0")\n')
    return root


def calls(root: Path) -> list[list[str]]:
    log = root / "CUDA_SDK" / "bin" / "calls.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def kernel_source(marker: str = "") -> tuple[str, str]:
    name = f"probe_{random.randrange(1 << 30):x}"
    src = f'extern "C" __global__ void {name}(float* out) {{\n  out[threadIdx.x] = {random.random()!r}f;\n{marker}\n}}\n'
    return name, src


# ---- without the SDK --------------------------------------------------------------------------------------
def test_without_the_sdk_the_toolchain_is_unavailable_with_the_plain_reason():
    assert PpuSdkToolchain(env={}, default_roots=()).availability() == (False, ABSENT)


def test_the_reason_names_the_default_roots_it_looked_in(tmp_path):
    ok, reason = PpuSdkToolchain(env={}, default_roots=(tmp_path / "nowhere",)).availability()
    assert not ok and reason.startswith(ABSENT) and str(tmp_path / "nowhere") in reason


def test_a_ppu_sdk_without_nvcc_says_where_nvcc_was_expected(tmp_path):
    ok, reason = PpuSdkToolchain(env={"PPU_SDK": str(tmp_path)}, default_roots=()).availability()
    assert not ok
    assert f"PPU_SDK={tmp_path}" in reason and str(tmp_path / "CUDA_SDK" / "bin" / "nvcc") in reason


def test_an_nvcc_that_cannot_be_executed_is_reported(tmp_path):
    nvcc = tmp_path / "CUDA_SDK" / "bin" / "nvcc"
    nvcc.parent.mkdir(parents=True)
    nvcc.write_text("not a program")
    ok, reason = PpuSdkToolchain(env={"PPU_SDK": str(tmp_path)}, default_roots=()).availability()
    assert not ok and "not executable" in reason and str(nvcc) in reason


def test_compile_and_version_without_the_sdk_raise_the_same_reason():
    chain = PpuSdkToolchain(env={}, default_roots=())
    _, src = kernel_source()
    with pytest.raises(UnsupportedError) as err:
        chain.compile(src, target=archs.PPU_810E)
    assert ABSENT in str(err.value) and "the PPU SDK compiler" in err.value.missing
    with pytest.raises(UnsupportedError):
        chain.version()


# ---- with a stand-in SDK -----------------------------------------------------------------------------------
def test_the_sdk_is_found_through_ppu_sdk_and_through_a_default_root(fake_sdk):
    assert PpuSdkToolchain(env={"PPU_SDK": str(fake_sdk)}, default_roots=()).availability() == (True, "")
    by_default = PpuSdkToolchain(env={}, default_roots=(fake_sdk.parent / "absent", fake_sdk))
    assert by_default.availability() == (True, "") and by_default.sdk_root() == fake_sdk


@pytest.mark.parametrize("tgt", [archs.PPU_810E, archs.PPU_M890], ids=str)
def test_compile_runs_the_sdk_nvcc_with_the_ppu_options_and_returns_its_binary(fake_sdk, tgt):
    import hashlib

    chain = PpuSdkToolchain(env={"PPU_SDK": str(fake_sdk)}, default_roots=())
    _, src = kernel_source()
    extra = (f"-DHUMMING_TILE_N={random.choice((48, 80, 112))}",)
    out = chain.compile(src, target=tgt, name="gemm.cu", extra_options=extra)

    assert isinstance(out, CompiledBinary) and out.target == tgt
    assert out.binary == b"\x7fELF" + hashlib.sha256(src.encode()).digest()  # the bytes nvcc wrote for this source
    (argv,) = calls(fake_sdk)
    assert argv[: len(ppu_target.BASE_OPTIONS)] == list(ppu_target.BASE_OPTIONS)
    assert "-arch=sm_80" in argv and "-cubin" in argv
    assert argv[argv.index("-mllvm") + 1] == "-ppu-mbar-yield-analysis=false"
    assert argv[-4] == extra[0]  # caller's options come after the toolchain's, before -o
    assert argv[-3] == "-o" and argv[-2].endswith("gemm.cubin") and argv[-1].endswith("gemm.cu")
    assert tuple(argv[:-3]) == out.options
    assert not Path(argv[-1]).exists()  # the work folder of a good compile is removed
    assert "stand-in nvcc: compiling" in out.log and "warning: a warning on stderr" in out.log
    assert "ppu-sdk-nvcc" in out.toolchain and "release 12.3" in out.toolchain and "ppu version: 2.2.0" in out.toolchain


def test_a_failed_compile_raises_compile_error_with_log_source_and_repro(fake_sdk):
    chain = PpuSdkToolchain(env={"PPU_SDK": str(fake_sdk)}, default_roots=())
    _, src = kernel_source("  FAIL_HERE;")
    with pytest.raises(CompileError) as err:
        chain.compile(src, target=archs.PPU_810E)
    e = err.value
    assert "exit status 2" in str(e) and "thead:ppu-810e" in str(e)
    assert 'error: identifier "FAIL_HERE" is undefined' in e.log and "kernel.cu(3)" in e.log  # line 3 holds the marker
    assert e.source_path and Path(e.source_path).read_text() == src  # kept, so the failure can be reproduced
    assert e.repro and e.repro.startswith(str(fake_sdk / "CUDA_SDK" / "bin" / "nvcc"))
    assert "-ppu-mbar-yield-analysis=false" in e.repro and e.source_path in e.repro
    assert "compiler log:" in str(e)
    shutil.rmtree(Path(e.source_path).parent)


def test_a_compile_that_hangs_is_stopped_and_reported(fake_sdk):
    chain = PpuSdkToolchain(env={"PPU_SDK": str(fake_sdk)}, default_roots=(), timeout_s=0.5)
    _, src = kernel_source("  HANG_HERE;")
    with pytest.raises(CompileError) as err:
        chain.compile(src, target=archs.PPU_810E)
    assert "did not finish" in str(err.value) and "0.5 s" in str(err.value)
    assert "stand-in nvcc: compiling" in err.value.log
    shutil.rmtree(Path(err.value.source_path).parent)


def test_exit_status_zero_without_a_binary_is_an_error(fake_sdk):
    chain = PpuSdkToolchain(env={"PPU_SDK": str(fake_sdk)}, default_roots=())
    _, src = kernel_source("  NO_OUTPUT;")
    with pytest.raises(CompileError, match="wrote no binary") as err:
        chain.compile(src, target=archs.PPU_810E)
    shutil.rmtree(Path(err.value.source_path).parent)


def test_name_expressions_are_refused_with_the_way_out(fake_sdk):
    chain = PpuSdkToolchain(env={"PPU_SDK": str(fake_sdk)}, default_roots=())
    with pytest.raises(UnsupportedError) as err:
        chain.compile("template <int N> __global__ void k() {}", target=archs.PPU_810E, name_expressions=["k<3>"])
    assert "k<3>" in str(err.value) and 'extern "C"' in str(err.value)
    assert calls(fake_sdk) == []


def test_a_non_ppu_target_is_refused(fake_sdk):
    chain = PpuSdkToolchain(env={"PPU_SDK": str(fake_sdk)}, default_roots=())
    with pytest.raises(InvalidInputError) as err:
        chain.compile("__global__ void k() {}", target=Target("nvidia", "sm_80"))
    assert "nvidia:sm_80" in str(err.value) and "ppu-810e" in str(err.value)


# ---- through the plugin hook ------------------------------------------------------------------------------
def test_the_plugin_supplies_the_toolchain_for_its_targets_only(monkeypatch):
    monkeypatch.delenv("PPU_SDK", raising=False)
    chain = thead_plugin.humming_toolchain(target=archs.PPU_810E)
    assert isinstance(chain, PpuSdkToolchain) and isinstance(chain, Toolchain)
    assert thead_plugin.humming_toolchain(target=Target("nvidia", "sm_80")) is None
    m = DeviceManager(autoload=False, plugins=[("thead_ppu", thead_plugin)], raw_devices=[])
    assert isinstance(m.toolchain(archs.PPU_M890), PpuSdkToolchain)


def test_the_toolchain_reads_ppu_sdk_when_asked_not_when_made(monkeypatch, fake_sdk):
    monkeypatch.delenv("PPU_SDK", raising=False)
    chain = PpuSdkToolchain(default_roots=())
    assert chain.availability() == (False, ABSENT)
    monkeypatch.setenv("PPU_SDK", str(fake_sdk))
    assert chain.availability() == (True, "")


def test_the_instruction_probe_is_declined_for_every_ppu_instruction():
    for caps in archs.ALL:
        for instr in caps.mma:
            assert thead_plugin.humming_instruction_probe(instruction=instr, target=caps.target) is None
    assert "not public" in (thead_plugin.humming_instruction_probe.__doc__ or "")
