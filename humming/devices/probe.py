"""InstructionProbe: a micro-kernel that runs one declared MMA form once, and how to launch and check it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class InstructionProbe:
    """What ``humming_instruction_probe`` returns so that conformance can run a probe on the device.

    The kernel takes ``(const unsigned* c_in, unsigned* d_out)``; one block of ``threads`` threads each reads and
    writes ``words`` 32-bit words of accumulator; with every A and B element equal to 1 (and unit block scales),
    every D element must equal C + ``increment`` (the K of the instruction), whatever the fragment layout.
    """

    source: str  # one translation unit
    threads: int
    words: int
    increment: int
    kernel: str = "humming_probe"  # the extern "C" entry name
    values_per_word: int = 0  # accumulator values in one 32-bit word (0: 32 / accumulator bits)
