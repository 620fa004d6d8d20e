"""NVRTC options per NVIDIA arch (``--gpu-architecture=sm_90a``), the header folders, and ``toolchain_for(target)``.

A target's ``arch`` is exactly what NVRTC takes: ``sm_90a`` builds a cubin with the arch-specific instructions
(wgmma, setmaxnreg) that runs only on CC 9.0; ``sm_100f`` a family cubin (PTX ISA 8.8 "family-specific"
targets); ``sm_80`` a plain one. The loaded NVRTC says which SM numbers it can build
(``nvrtcGetSupportedArchs``); asking for another is an UnsupportedError naming them.

Header folders, in search order: this plugin's arch layer (``include/``, when present), then the CUDA headers
wheel (``cuda_fp16.h``, ``cuda_bf16.h``, ``cuda_fp8.h``, ``cuda.h``), located through the installed
distribution's file list, never a fixed path.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import re
from pathlib import Path

from humming.capabilities.model import Target
from humming.core.compiler import NvrtcToolchain, nvrtc_version, supported_archs
from humming.errors import InvalidInputError, UnsupportedError

VENDOR = "nvidia"
#: The plugin's arch layer: humming/arch/*.cuh for NVIDIA (added to the include path when it exists).
INCLUDE_DIR = Path(__file__).resolve().parent / "include"
#: Distributions that ship the CUDA headers, newest first (CUDA 13 wheels, then the CUDA 12 ones).
HEADER_DISTRIBUTIONS = ("nvidia-cuda-runtime", "nvidia-cuda-runtime-cu13", "nvidia-cuda-runtime-cu12")
_MARKER = "cuda_fp16.h"

_ARCH_RE = re.compile(r"sm_(\d+)([af]?)")

#: NVRTC releases whose ptxas miscompiles every dense kernel's cp.async for some target families: 13.0 leaves the
#: copy's shared-memory offset and memory descriptor in uniform registers that nothing writes (``LDGSTS
#: [R+UR0], desc[UR1]``, UR0 / UR1 never defined: the mma.sync decode kernels for sm_90a, sm_100a and sm_120a,
#: s4 / s8 / MXFP4, disassembled 2026-12-03; sm_80 / sm_89 builds are clean, and 13.5 defines the registers on
#: every target). On the H200 the first decode launch of a 13.0 build raised an illegal instruction (20:16).
CP_ASYNC_MISCOMPILES: dict[tuple[int, int], frozenset[str]] = {
    (13, 0): frozenset({"hopper", "blackwell", "blackwell-client", "rubin"})}


def refuse_defective_nvrtc(target: Target, version: tuple[int, int]) -> None:
    """UnsupportedError when NVRTC ``version`` is known to miscompile code for ``target`` (CP_ASYNC_MISCOMPILES)."""
    if target.family in CP_ASYNC_MISCOMPILES.get(version[:2], frozenset()):
        raise UnsupportedError(
            f"NVRTC {version[0]}.{version[1]} miscompiles cp.async for {target.arch} (its ptxas leaves the copy's "
            "uniform registers undefined: an illegal instruction at the first launch)",
            missing=[f"an NVRTC that compiles cp.async correctly for {target.arch}"],
            alternatives=["pip install -U nvidia-cuda-nvrtc (13.5 and later compile it correctly)"])


def parse_arch(arch: str) -> tuple[int, str]:
    """``"sm_90a"`` -> ``(90, "a")``; InvalidInputError for anything that is not an NVRTC SM target."""
    m = _ARCH_RE.fullmatch(arch)
    if not m:
        raise InvalidInputError(f"{arch!r} is not an NVIDIA target: expected sm_<number> with an optional "
                                "'a' (arch-specific) or 'f' (family) suffix, e.g. sm_90a")
    return int(m.group(1)), m.group(2)


def arch_options(target: Target) -> tuple[str, ...]:
    """The NVRTC options that select ``target``'s instruction set."""
    if target.vendor != VENDOR:
        raise InvalidInputError(f"the NVIDIA toolchain builds {VENDOR} targets, not {target}")
    number, _suffix = parse_arch(target.arch)
    known = supported_archs()
    if number not in known:
        major, minor = nvrtc_version()
        raise UnsupportedError(
            f"NVRTC {major}.{minor} cannot compile for {target.arch}",
            missing=[f"NVRTC support for sm_{number}"],
            alternatives=[f"targets this NVRTC builds: {', '.join(f'sm_{a}' for a in known)}",
                          f"an nvidia-cuda-nvrtc wheel that supports sm_{number}"])
    # Every kernel this library builds copies with cp.async: a compiler that miscompiles it is refused here, where
    # every compile (and disk-cache lookup) of the target passes, not only the tuner's plans.
    refuse_defective_nvrtc(target, nvrtc_version())
    return (f"--gpu-architecture={target.arch}",)


@functools.lru_cache(maxsize=1)
def cuda_header_dir() -> Path | None:
    """The folder holding the CUDA headers wheel's ``cuda_fp16.h``, or None when no such wheel is installed.

    The wheels install into the ``nvidia`` namespace package (``nvidia/cu13/include`` for CUDA 13,
    ``nvidia/cuda_runtime/include`` for CUDA 12); its locations are searched first because reading a
    distribution's file list costs about 75 ms, which a warm cache hit cannot afford.
    """
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or ()) if spec is not None else ():
        for found in sorted(Path(root).glob(f"*/include/{_MARKER}")):
            return found.resolve().parent
    for name in HEADER_DISTRIBUTIONS:
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        for entry in dist.files or ():
            if entry.name == _MARKER and entry.parent.name == "include":
                return Path(str(dist.locate_file(entry))).resolve().parent
    return None


def include_dirs(target: Target) -> tuple[Path, ...]:
    """Header folders for ``target``: the arch layer, then the CUDA headers."""
    dirs = [INCLUDE_DIR] if INCLUDE_DIR.is_dir() else []
    cuda = cuda_header_dir()
    if cuda is not None:
        dirs.append(cuda)
    return tuple(dirs)


@functools.lru_cache(maxsize=1)
def _toolchain() -> NvrtcToolchain:
    return NvrtcToolchain(arch_options, include_dirs)


def toolchain_for(target: Target) -> NvrtcToolchain | None:
    """NVRTC for an NVIDIA target; None for other vendors' targets (the plugin hook's contract)."""
    if target.vendor != VENDOR:
        return None
    return _toolchain()
