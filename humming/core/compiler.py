"""NVRTC through cuda.bindings, in process: one translation unit + options -> cubin bytes, or CompileError with the log.

``NvrtcToolchain`` implements humming.devices.toolchain.Toolchain for any vendor whose compiler is NVRTC; it
knows no architecture. The plugin gives it the per-target options and header folders (NVIDIA:
humming.devices.nvidia.target). NVRTC releases the GIL while it compiles, so several threads compile in
parallel (measured on 2 cores: 6 kernels in 2.9 s with 2 threads against 4.7 s in one).

Header choice (measured with NVRTC 13.5 on the CPU machine, sm_90a, median of 7 compiles of a tiny kernel):
no header 28 ms; + cuda_fp16.h and cuda_bf16.h 39 ms; + cuda_fp8.h 55 ms; + cuda_fp4.h 65 ms. A production
GEMM compile costs 0.3-1 s, most of it in ptxas (394 ms of 795 ms for a synthetic mma.sync kernel), so the
standard headers cost 1-4 % of a compile. We therefore use the CUDA headers wheel (nvidia-cuda-runtime, a
declared dependency; found through its package metadata, never a fixed path) rather than our own copies of
the half/bfloat16/fp8 types, and hash the bytes of every header a unit includes into its cache key.

Precompiled headers (``--pch``, NVRTC 12.8+) are left off: the automatic PCH lives in a per-process folder
(``/tmp/__nvrtc_auto_pch_<pid>_0``), so it never helps a fresh process; it saved 10-35 ms a compile within one
process, but with two threads compiling at once it serialised them (6 kernels: 5.4 s with --pch against
2.9 s without) and once reported using the PCH before creating it.
"""

from __future__ import annotations

import functools
import importlib.metadata
from pathlib import Path
from typing import Any, Callable, Sequence

from humming.capabilities.model import Target
from humming.devices.toolchain import CompiledBinary
from humming.errors import CompileError, UnsupportedError

#: Options every NVRTC compile gets: C++17, and ptxas's verbose report, which humming.core.resources parses.
COMMON_OPTIONS: tuple[str, ...] = ("--std=c++17", "-Xptxas=-v")

OptionsFor = Callable[[Target], Sequence[str]]
DirsFor = Callable[[Target], Sequence[Path]]


@functools.lru_cache(maxsize=1)
def _nvrtc() -> Any:
    from cuda.bindings import nvrtc

    return nvrtc


def _check(result: Any, what: str) -> None:
    code = result[0] if isinstance(result, tuple) else result
    if int(code) != 0:
        nvrtc = _nvrtc()
        _err, text = nvrtc.nvrtcGetErrorString(code)
        raise CompileError(f"{what} failed: {text.decode() if isinstance(text, bytes) else text}")


@functools.lru_cache(maxsize=1)
def nvrtc_version() -> tuple[int, int]:
    """NVRTC's (major, minor), as the loaded library reports it."""
    nvrtc = _nvrtc()
    err, major, minor = nvrtc.nvrtcVersion()
    _check((err,), "nvrtcVersion")
    return int(major), int(minor)


@functools.lru_cache(maxsize=1)
def supported_archs() -> tuple[int, ...]:
    """The SM numbers the loaded NVRTC can compile for (75, 80, 86, ... 121 for NVRTC 13.x)."""
    nvrtc = _nvrtc()
    err, archs = nvrtc.nvrtcGetSupportedArchs()
    _check((err,), "nvrtcGetSupportedArchs")
    return tuple(int(a) for a in archs)


@functools.lru_cache(maxsize=1)
def _wheel_version() -> str:
    # NVRTC reports only major.minor; the wheel's patch release can change code generation too.
    for dist in ("nvidia-cuda-nvrtc", "nvidia-cuda-nvrtc-cu13", "nvidia-cuda-nvrtc-cu12"):
        try:
            return f"{dist}=={importlib.metadata.version(dist)}"
        except importlib.metadata.PackageNotFoundError:
            continue
    return "nvrtc from the system CUDA toolkit"


def _text(buf: bytes) -> str:
    return buf.rstrip(b"\0").decode("utf-8", errors="replace")


class NvrtcToolchain:
    """NVRTC in process for one vendor's targets.

    :param options_for: the target's own options (``--gpu-architecture=sm_90a``); raise UnsupportedError for a
        target this NVRTC cannot build.
    :param include_dirs_for: the plugin's header folders for a target (arch layer, CUDA headers), in search order.
    :param common_options: options for every target (default: C++17 and ptxas's verbose report).
    """

    name = "nvrtc"

    def __init__(self, options_for: OptionsFor, include_dirs_for: DirsFor, *,
                 common_options: Sequence[str] = COMMON_OPTIONS) -> None:
        self._options_for = options_for
        self._include_dirs_for = include_dirs_for
        self._common = tuple(common_options)

    def __repr__(self) -> str:
        return f"NvrtcToolchain({self.version()!r})"

    def availability(self) -> tuple[bool, str]:
        try:
            nvrtc_version()
        except Exception as exc:  # the wheel missing, or a library that does not load
            return False, (f"NVRTC is not usable here ({type(exc).__name__}: {exc}); "
                           "install the nvidia-cuda-nvrtc wheel")
        return True, ""

    def version(self) -> str:
        major, minor = nvrtc_version()
        return f"nvrtc {major}.{minor} ({_wheel_version()})"

    def options(self, target: Target) -> tuple[str, ...]:
        return tuple(self._options_for(target)) + self._common

    def include_dirs(self, target: Target) -> tuple[Path, ...]:
        return tuple(Path(d) for d in self._include_dirs_for(target))

    def compile(self, source: str, *, target: Target, name: str = "kernel.cu",
                extra_options: Sequence[str] = (), name_expressions: Sequence[str] = ()) -> CompiledBinary:
        """Compile one unit to a cubin for ``target``; CompileError carrying NVRTC's log on failure.

        ``name`` is the program name NVRTC reports in its log; quoted includes of the unit resolve relative to
        its folder first, then along the include folders.
        """
        ok, reason = self.availability()
        if not ok:
            raise UnsupportedError(reason, missing=["NVRTC"])
        nvrtc = _nvrtc()
        options = (self.options(target) + tuple(f"-I{d}" for d in self.include_dirs(target))
                   + tuple(extra_options))
        err, prog = nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], [])
        _check((err,), "nvrtcCreateProgram")
        try:
            for expr in name_expressions:
                _check(nvrtc.nvrtcAddNameExpression(prog, expr.encode()), f"nvrtcAddNameExpression({expr!r})")
            result = nvrtc.nvrtcCompileProgram(prog, len(options), [o.encode() for o in options])
            err, size = nvrtc.nvrtcGetProgramLogSize(prog)
            _check((err,), "nvrtcGetProgramLogSize")
            buf = b" " * size
            _check(nvrtc.nvrtcGetProgramLog(prog, buf), "nvrtcGetProgramLog")
            log = _text(buf)
            code = result[0]
            if int(code) != 0:
                _e, what = nvrtc.nvrtcGetErrorString(code)
                what = what.decode() if isinstance(what, bytes) else str(what)
                raise CompileError(f"NVRTC could not compile {name} for {target} ({what})"
                                   + _hint(log), log=log)
            err, size = nvrtc.nvrtcGetCUBINSize(prog)
            _check((err,), "nvrtcGetCUBINSize")
            cubin = b" " * size
            _check(nvrtc.nvrtcGetCUBIN(prog, cubin), "nvrtcGetCUBIN")
            lowered: dict[str, str] = {}
            for expr in name_expressions:
                err, low = nvrtc.nvrtcGetLoweredName(prog, expr.encode())
                _check((err,), f"nvrtcGetLoweredName({expr!r})")
                lowered[expr] = low.decode() if isinstance(low, bytes) else str(low)
        finally:
            nvrtc.nvrtcDestroyProgram(prog)
        return CompiledBinary(binary=bytes(cubin), target=target, log=log, options=options,
                              toolchain=self.version(), lowered_names=lowered)


def _hint(log: str) -> str:
    """A way out for the failures whose cause is the environment rather than the source."""
    if 'open source file "cuda_' in log:
        return "; a CUDA header is missing: install the nvidia-cuda-runtime wheel, which ships them"
    return ""
