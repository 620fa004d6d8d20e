"""The example vendor's toolchain: there is no compiler for a made-up target, and it says so plainly.

A real vendor's toolchain finds its compiler (in process, or a binary in the vendor SDK), reports
``(False, reason)`` from availability() when it is missing, and raises humming.errors.CompileError with the
compiler log when a compile fails. humming.devices.thead_ppu.target is a complete subprocess-based example.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from humming.capabilities.model import Target
from humming.devices.toolchain import CompiledBinary
from humming.errors import UnsupportedError

REASON = "the example vendor ships no compiler: exa-1 is a made-up target for the vendor guide"


class ExampleToolchain:
    """Implements humming.devices.toolchain.Toolchain; always unavailable, with the reason."""

    name = "example-none"

    def availability(self) -> tuple[bool, str]:
        return False, REASON

    def version(self) -> str:
        return f"{self.name} 0.1.0"

    def options(self, target: Target) -> tuple[str, ...]:
        return ()

    def include_dirs(self, target: Target) -> tuple[Path, ...]:
        return ()

    def compile(self, source: str, *, target: Target, name: str = "kernel.cu",
                extra_options: Sequence[str] = (), name_expressions: Sequence[str] = ()) -> CompiledBinary:
        raise UnsupportedError(f"cannot compile {name} for {target}: {REASON}", missing=[f"a compiler for {target}"])
