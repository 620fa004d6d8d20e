"""The PPU SDK toolchain: finds the SDK's CUDA-compatible nvcc, and compiles one translation unit for a PPU target.

PPU binaries do not come from NVIDIA's NVRTC: the PPU is CUDA-compatible at the source level only ("binaries
compiled by the GPU CUDA SDK are not compatible with the PPU platform", Alibaba Cloud PPU docs), and its SDK
ships an NVCC-compatible compiler under ``$PPU_SDK/CUDA_SDK``. Whether an NVRTC from the PPU SDK works is an
open question to settle on PPU hardware; until then this toolchain runs that nvcc in a subprocess.

Where no SDK is installed, ``availability()`` says so in one plain line, so that conformance can mark PPU
compile cases skipped with that reason.
"""

from __future__ import annotations

import functools
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Mapping, Sequence

from humming import knobs
from humming.capabilities.model import Target
from humming.devices.thead_ppu import archs
from humming.devices.thead_ppu.detect import SDK_ENV
from humming.devices.toolchain import CompiledBinary
from humming.errors import CompileError, InvalidInputError, UnsupportedError

#: Where the compiler sits below the SDK root (public PPU build scripts call $PPU_SDK/CUDA_SDK/bin/nvcc).
NVCC_RELATIVE = Path("CUDA_SDK/bin/nvcc")
#: The SDK's LLVM backend; its ``--version`` names the PPU SDK release ("ppu version: 2.1.x", public CI scripts).
PPU_LLC_RELATIVE = Path("bin/ppu-llc")
#: Where public PPU images install the SDK when PPU_SDK is not set.
DEFAULT_ROOTS: tuple[Path, ...] = (Path("/usr/local/PPU_SDK"),)
#: The plugin's arch layer (humming/arch/*.cuh for PPU), added to the include path when it exists.
INCLUDE_DIR = Path(__file__).resolve().parent / "include"

#: Options for every PPU target. The SDK treats any --arch as sm_80 (Alibaba Cloud PPU FAQ), so sm_80 is
#: said outright. The mbar yield analysis pass can loop forever on dynamic barrier addresses, so public PPU
#: code turns it off (reported, humming-kernels 0.1.19).
BASE_OPTIONS: tuple[str, ...] = (
    "-cubin",  # one device image, no host code (open question: verify the image kind on PPU hardware)
    "-arch=sm_80",
    "-std=c++17",
    "-O3",
    "-mllvm", "-ppu-mbar-yield-analysis=false",
)
#: A compile that takes longer than this is reported as a failure rather than waited on forever.
DEFAULT_TIMEOUT_S = 600.0

_ABSENT = f"PPU SDK not found: set {SDK_ENV} to the SDK root (expected ${SDK_ENV}/{NVCC_RELATIVE.as_posix()})"


@functools.lru_cache(maxsize=16)
def _version_text(tool: str) -> str:
    """``<tool> --version`` as one line, read once per tool path per process."""
    try:
        done = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CompileError(f"could not run {tool} --version: {exc}") from None
    text = (done.stdout + done.stderr).strip()
    if done.returncode != 0:
        raise CompileError(f"{tool} --version exited with status {done.returncode}", log=text)
    return " | ".join(line.strip() for line in text.splitlines() if line.strip())


class PpuSdkToolchain:
    """The PPU SDK's nvcc, run in a subprocess: CUDA C++ source + a PPU target -> the PPU's device image.

    :param env: the environment to find ``PPU_SDK`` in (default: the process environment, read at each call).
    :param default_roots: SDK roots to try when ``PPU_SDK`` is not set.
    :param timeout_s: the longest one compile may take.
    """

    name = "ppu-sdk-nvcc"

    def __init__(self, env: Mapping[str, str] | None = None, *, default_roots: Sequence[Path] = DEFAULT_ROOTS,
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self._env = env
        self._default_roots = tuple(Path(r) for r in default_roots)
        self.timeout_s = timeout_s

    # ---- discovery ----------------------------------------------------------------------------------
    def _environ(self) -> Mapping[str, str]:
        # The process environment goes through humming.knobs, the one place that reads os.environ.
        return {SDK_ENV: knobs.ppu_sdk.get()} if self._env is None else self._env

    def sdk_root(self) -> Path | None:
        """The SDK root whose nvcc is used: ``$PPU_SDK`` when set, else the first default root holding nvcc."""
        configured = self._environ().get(SDK_ENV, "").strip()
        if configured:
            return Path(configured)
        for root in self._default_roots:
            if _is_executable(root / NVCC_RELATIVE):
                return root
        return None

    def nvcc(self) -> Path:
        """The path of the SDK's nvcc; UnsupportedError with the availability reason when there is none."""
        ok, reason = self.availability()
        if not ok:
            raise UnsupportedError(reason, missing=["the PPU SDK compiler"],
                                   alternatives=[f"install the PPU SDK and set {SDK_ENV}"])
        root = self.sdk_root()
        assert root is not None, "availability() said yes without an SDK root"
        return root / NVCC_RELATIVE

    def availability(self) -> tuple[bool, str]:
        """(True, "") when the SDK's nvcc is there and executable; (False, the plain reason) otherwise."""
        configured = self._environ().get(SDK_ENV, "").strip()
        root = self.sdk_root()
        if root is None:
            looked = ", ".join(str(r) for r in self._default_roots)
            return False, _ABSENT + (f"; also looked in {looked}" if looked else "")
        nvcc = root / NVCC_RELATIVE
        where = f"{SDK_ENV}={configured}" if configured else f"the default SDK root {root}"
        if not nvcc.exists():
            return False, f"PPU SDK not found: {where} has no {NVCC_RELATIVE.as_posix()} (expected {nvcc})"
        if not _is_executable(nvcc):
            return False, f"PPU SDK compiler {nvcc} is not executable (check its permissions)"
        return True, ""

    # ---- what goes into cache keys ---------------------------------------------------------------------
    def version(self) -> str:
        """The nvcc path and its ``--version``, plus the SDK's ppu-llc ``--version`` (the SDK release) if present."""
        nvcc = self.nvcc()
        text = f"{self.name} {nvcc}: {_version_text(str(nvcc))}"
        llc = nvcc.parent.parent.parent / PPU_LLC_RELATIVE  # <root>/CUDA_SDK/bin/nvcc -> <root>/bin/ppu-llc
        if _is_executable(llc):
            text += f" | {_version_text(str(llc))}"
        return text

    def options(self, target: Target) -> tuple[str, ...]:
        """The nvcc options for ``target`` (every PPU arch compiles as sm_80 for now)."""
        _check_target(target)
        return BASE_OPTIONS

    def include_dirs(self, target: Target) -> tuple[Path, ...]:
        """The plugin's own header folder when it exists; the SDK's nvcc finds its system headers by itself."""
        _check_target(target)
        return (INCLUDE_DIR,) if INCLUDE_DIR.is_dir() else ()

    # ---- compiling ---------------------------------------------------------------------------------------
    def compile(self, source: str, *, target: Target, name: str = "kernel.cu",
                extra_options: Sequence[str] = (), name_expressions: Sequence[str] = ()) -> CompiledBinary:
        """Compile one translation unit with the SDK's nvcc; CompileError with nvcc's log on failure.

        The source and the log of a failed compile are kept in a temporary folder named by the error.
        """
        _check_target(target)
        if name_expressions:
            raise UnsupportedError(
                f"the PPU SDK's nvcc cannot lower C++ name expressions ({', '.join(name_expressions)}); "
                "that is an NVRTC feature", missing=["NVRTC name expressions on PPU"],
                alternatives=['declare the kernel extern "C" and launch it by that name'])
        nvcc = self.nvcc()
        stem = Path(name).stem or "kernel"
        work = Path(tempfile.mkdtemp(prefix="humming-ppu-"))
        src = work / (stem + ".cu")
        out = work / (stem + ".cubin")
        src.write_text(source)
        options = self.options(target) + tuple(f"-I{d}" for d in self.include_dirs(target)) + tuple(extra_options)
        command = [str(nvcc), *options, "-o", str(out), str(src)]
        repro = shlex.join(command)
        try:
            returncode, log = _run(command, cwd=work, timeout_s=self.timeout_s)
        except subprocess.TimeoutExpired as exc:
            raise CompileError(f"PPU SDK nvcc did not finish compiling {name} for {target} in {self.timeout_s:g} s",
                               log=_text(exc.output), source_path=str(src), repro=repro) from None
        except OSError as exc:  # the file is there but cannot be run (wrong format, a bad #! line)
            raise CompileError(f"could not run the PPU SDK nvcc {nvcc}: {exc}", source_path=str(src),
                               repro=repro) from None
        if returncode != 0:
            raise CompileError(f"PPU SDK nvcc failed on {name} for {target} (exit status {returncode})",
                               log=log, source_path=str(src), repro=repro)
        if not out.is_file() or out.stat().st_size == 0:
            raise CompileError(f"PPU SDK nvcc exited 0 but wrote no binary for {name} ({out} is missing or empty)",
                               log=log, source_path=str(src), repro=repro)
        binary = out.read_bytes()
        shutil.rmtree(work, ignore_errors=True)
        return CompiledBinary(binary=binary, target=target, log=log, options=options, toolchain=self.version())


def _run(command: Sequence[str], *, cwd: Path, timeout_s: float) -> tuple[int, str]:
    """Run a compiler; return its exit status and its output (stdout and stderr together, interleaved as written).

    It runs in a session of its own, so that a timeout ends nvcc's children (cicc, the assembler) too.
    """
    proc = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, _ = proc.communicate()
        raise subprocess.TimeoutExpired(command, timeout_s, output=out) from None
    return proc.returncode, _text(out).strip()


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    return data if isinstance(data, str) else data.decode(errors="replace")


def _check_target(target: Target) -> None:
    if target.vendor != "thead" or target.arch not in archs.BY_ARCH:
        raise InvalidInputError(f"the PPU SDK toolchain compiles for {', '.join(archs.BY_ARCH)} (vendor thead), "
                                f"not for {target}")


def toolchain_for(target: Target) -> PpuSdkToolchain | None:
    """The toolchain for a PPU target, or None for any other plugin's target."""
    if target.vendor == "thead" and target.arch in archs.BY_ARCH:
        return PpuSdkToolchain()
    return None
