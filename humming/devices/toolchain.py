"""The compiler contract a device plugin supplies: source + target -> binary, or a plain reason it cannot."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, Sequence, runtime_checkable

from humming.capabilities.model import Target


@dataclass(frozen=True)
class CompiledBinary:
    """What a toolchain returns: the binary for ``target`` plus everything that explains it."""

    binary: bytes  # a cubin (ELF) for NVIDIA targets; the vendor's own loadable image otherwise
    target: Target
    log: str = ""  # the compiler's log, warnings included
    options: tuple[str, ...] = ()
    toolchain: str = ""  # name and version, e.g. "nvrtc 13.5"
    lowered_names: dict[str, str] = field(default_factory=dict)  # C++ name expression -> mangled symbol


@runtime_checkable
class Toolchain(Protocol):
    """A compiler for one vendor's targets. NVIDIA's is NVRTC in process; T-Head's is the PPU SDK."""

    name: str

    def availability(self) -> tuple[bool, str]:
        """(True, "") when it can compile here; (False, reason) otherwise, e.g. "PPU_SDK is not set"."""
        ...

    def version(self) -> str:
        """A string that changes whenever the compiler's output may change (goes into cache keys)."""
        ...

    def options(self, target: Target) -> tuple[str, ...]:
        """The compile options this toolchain uses for ``target`` (goes into cache keys)."""
        ...

    def include_dirs(self, target: Target) -> tuple[Path, ...]:
        """Header folders the toolchain adds for ``target``: the plugin's arch layer, system headers."""
        ...

    def compile(self, source: str, *, target: Target, name: str = "kernel.cu",
                extra_options: Sequence[str] = (), name_expressions: Sequence[str] = ()) -> CompiledBinary:
        """Compile one translation unit; raise humming.errors.CompileError with the log on failure."""
        ...
