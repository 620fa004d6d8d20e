"""NVRTC in process: the toy kernel compiles for every NVIDIA arch on the CPU; failures carry the log, the saved
unit and a repro command that reproduces them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from humming import knobs
from humming.capabilities.model import Target
from humming.core import cache, dtypes
from humming.core.build import compile_source, compile_spec
from humming.core.compiler import NvrtcToolchain, nvrtc_version
from humming.core.resources import entry_functions, parse_elf
from humming.devices.manager import get_manager
from humming.devices.nvidia.target import cuda_header_dir, toolchain_for
from humming.errors import CompileError, InvalidInputError, UnsupportedError
from humming.kernels.toy_axpy import ToyAxpySpec
from humming.tools import compile as repro_tool

NVIDIA_ARCHS = ["sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90a", "sm_100a", "sm_103a", "sm_110a",
                "sm_120a", "sm_121a"]
EM_CUDA = 190  # ELF e_machine of NVIDIA cubins


def nvrtc(arch: str = "sm_90a") -> NvrtcToolchain:
    chain = toolchain_for(Target("nvidia", arch))
    assert chain is not None
    return chain


@pytest.mark.parametrize("arch", NVIDIA_ARCHS)
def test_the_toy_kernel_compiles_for_every_nvidia_arch(arch: str):
    spec = ToyAxpySpec(target=Target("nvidia", arch), dtype=dtypes.f16 if arch == "sm_90a" else dtypes.f32,
                       async_copy=arch != "sm_75")
    kernel = compile_spec(spec, toolchain=nvrtc(arch))
    image = parse_elf(kernel.binary)
    assert image.machine == EM_CUDA
    assert entry_functions(image) == [kernel.function]
    assert kernel.function.startswith("_ZN7humming3toy4axpy")  # the lowered name of the name expression
    assert kernel.exports["tile"] == spec.vec * spec.block
    assert kernel.exports["smem_bytes"] == 2 * spec.vec * spec.block * spec.dtype.bits // 8
    assert kernel.resources.registers and kernel.resources.registers > 0
    assert f"for '{arch}'" in kernel.log  # ptxas's verbose report names the arch it built


def test_every_declared_target_compiles_the_toy_or_its_toolchain_says_why():
    manager = get_manager()
    built, unavailable = [], {}
    for caps in manager.catalog():
        chain = manager.toolchain(caps.target)
        ok, reason = chain.availability()
        if not ok:
            unavailable[str(caps.target)] = reason
            continue
        try:
            arch_ok = chain.options(caps.target)
        except UnsupportedError as exc:  # an arch the installed NVRTC is too old for
            unavailable[str(caps.target)] = str(exc)
            continue
        assert arch_ok
        kernel = compile_spec(ToyAxpySpec(target=caps.target), toolchain=chain)
        assert kernel.binary[:4] == b"\x7fELF"
        built.append(caps.target.arch)
    assert set(NVIDIA_ARCHS) <= set(built)
    for target, reason in unavailable.items():
        if target.startswith("thead:"):
            assert "PPU_SDK" in reason  # the PPU SDK is not on CI: its plugin says so in one line


def test_a_compile_error_carries_the_log_the_saved_unit_and_a_repro_that_reproduces_it(capsys):
    source = "__global__ void broken(float* x) { x[threadIdx.x] = not_declared_anywhere; }\n"
    with pytest.raises(CompileError) as err:
        compile_source(source, target=Target("nvidia", "sm_80"), toolchain=nvrtc("sm_80"))
    exc = err.value
    assert 'identifier "not_declared_anywhere" is undefined' in exc.log
    assert exc.source_path is not None and Path(exc.source_path).read_text() == source
    assert exc.repro is not None and exc.repro.startswith("python -m humming.tools.compile ")
    assert "not_declared_anywhere" in str(exc)  # the log is in the message too
    key = exc.repro.split()[-1]
    assert repro_tool.main([key], toolchain=nvrtc("sm_80")) == 1
    assert "not_declared_anywhere" in capsys.readouterr().err


def test_a_failing_spec_is_named_in_the_error_and_carried_with_it():
    @dataclass(frozen=True)
    class BrokenExport(ToyAxpySpec):
        def exports(self) -> dict[str, str]:
            return {"smem_bytes": "humming::toy::NoSuchTraits::kSmemBytes"}

    spec = BrokenExport(target=Target("nvidia", "sm_86"))
    with pytest.raises(CompileError, match=r"BrokenExport\(nvidia:sm_86, dtype=f32") as err:
        compile_spec(spec, toolchain=nvrtc("sm_86"))
    assert err.value.spec is spec
    assert "NoSuchTraits" in err.value.log


def test_an_arch_the_installed_nvrtc_cannot_build_is_unsupported_with_the_ones_it_can():
    with pytest.raises(UnsupportedError, match="cannot compile for sm_70") as err:
        nvrtc().options(Target("nvidia", "sm_70"))
    assert any("sm_90" in a for a in err.value.alternatives)
    with pytest.raises(InvalidInputError, match="not an NVIDIA target"):
        nvrtc().options(Target("nvidia", "hopper"))


def test_the_nvidia_toolchain_is_offered_only_for_nvidia_targets():
    assert toolchain_for(Target("thead", "ppu-810e")) is None
    assert nvrtc().version().startswith("nvrtc %d.%d" % nvrtc_version())


def test_cuda_headers_come_from_the_installed_wheel():
    folder = cuda_header_dir()
    assert folder is not None and (folder / "cuda_fp16.h").is_file() and (folder / "cuda_bf16.h").is_file()
    assert folder in nvrtc().include_dirs(Target("nvidia", "sm_90a"))


def test_the_repro_tool_recompiles_a_kept_entry_by_its_key(tmp_path, capsys):
    spec = ToyAxpySpec(target=Target("nvidia", "sm_89"), vec=2)
    with knobs.scope(HUMMING_CACHE_DIR=str(tmp_path), HUMMING_KEEP_SOURCE=True):
        kernel = compile_spec(spec, toolchain=nvrtc("sm_89"))
        out = tmp_path / "again.cubin"
        assert repro_tool.main([kernel.key, "-o", str(out)], toolchain=nvrtc("sm_89")) == 0
    printed = capsys.readouterr().out
    assert kernel.function in printed and "registers" in printed
    assert entry_functions(parse_elf(out.read_bytes())) == [kernel.function]


def test_the_repro_tool_says_how_to_keep_a_source_that_was_not_kept(tmp_path, capsys):
    with knobs.scope(HUMMING_CACHE_DIR=str(tmp_path), HUMMING_KEEP_SOURCE=False):
        kernel = compile_spec(ToyAxpySpec(target=Target("nvidia", "sm_89"), vec=1), toolchain=nvrtc("sm_89"))
        assert repro_tool.main([kernel.key], toolchain=nvrtc("sm_89")) == 2
        assert "HUMMING_KEEP_SOURCE=1" in capsys.readouterr().err
        assert repro_tool.main(["0" * 32], toolchain=nvrtc("sm_89")) == 2
        assert "no cache entry or failed unit" in capsys.readouterr().err
    cache.clear_memo()


def test_a_missing_cuda_header_says_which_wheel_ships_it():
    bare = NvrtcToolchain(lambda t: ("--gpu-architecture=sm_80",), lambda t: ())
    with pytest.raises(CompileError, match="install the nvidia-cuda-runtime wheel"):
        bare.compile("#include <cuda_fp16.h>\n__global__ void k(__half* x) {}\n", target=Target("nvidia", "sm_80"))


def test_the_repro_tool_takes_a_saved_unit_by_path_and_asks_for_a_target_when_none_is_recorded(tmp_path, capsys):
    source = "__global__ void k(int* x) { x[0] = 1 }\n"  # a missing semicolon
    with knobs.scope(HUMMING_DISABLE_CACHE=True):
        with pytest.raises(CompileError) as err:
            compile_source(source, target=Target("nvidia", "sm_87"), toolchain=nvrtc("sm_87"))
    saved = err.value.source_path
    assert err.value.repro == f"python -m humming.tools.compile {saved}"  # no cache: the path, with meta.json
    assert repro_tool.main([saved], toolchain=nvrtc("sm_87")) == 1
    assert "expected a \";\"" in capsys.readouterr().err
    bare = tmp_path / "bare.cu"
    bare.write_text("__global__ void k(int* x) { x[0] = 2; }\n")
    assert repro_tool.main([str(bare)], toolchain=nvrtc()) == 2
    assert "pass --target" in capsys.readouterr().err
    assert repro_tool.main([str(bare), "--target", "sm_90a"], toolchain=nvrtc()) == 0
    assert "_Z1kPi" in capsys.readouterr().out
