"""benchmarks/sass_loop.py --stalls reads the control codes of the tuner's decode loop (no GPU): held to what the
disassembly says in words, so a wrong bit layout fails here."""

from __future__ import annotations

import os
import sys

import pytest

pytest.importorskip("conformance.sass")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))

import sass_loop  # noqa: E402

import humming.devices  # noqa: E402
from humming.core import dtypes  # noqa: E402
from humming.core.build import compile_spec  # noqa: E402
from humming.core.problem import GemmProblem  # noqa: E402
from humming.devices.nvidia import tuning  # noqa: E402


def test_the_decode_loops_control_codes_agree_with_its_text() -> None:
    problem = GemmProblem(16, 28672, 8192, sass_loop.FORMATS["w4a16 s4 g128"], dtypes.bf16, dtypes.bf16)
    plan = tuning.TUNER.plan(problem, humming.devices.target("sm_90a"), 132)
    rows = [row for block in sass_loop.loop_blocks(compile_spec(plan.spec).binary) for row in block]
    assert sum(sass_loop.is_mma(sass_loop._opcode(r.text)) for r in rows) == 64  # the loop's MMAs, all in the blocks
    # reuse flags sit in the top four bits: set exactly where nvdisasm prints .reuse
    assert all(bool(r.reuse) == (".reuse" in r.text) for r in rows)
    assert any(r.reuse for r in rows)
    # the stall field at the bottom: at least one cycle before the next instruction, at most 15
    assert all(1 <= r.stall <= 15 for r in rows)
    # the barriers between: a shared-memory read that sets a write scoreboard (some do not: a later read's covers
    # them, shared loads completing in order) has a later instruction wait on it before anything sets it again;
    # instructions of fixed latency (HFMA2, LOP3, IMAD ...) set none
    loads = [i for i, r in enumerate(rows) if sass_loop._opcode(r.text).startswith(("LDS", "LDSM"))
             and rows[i].write_barrier < 6]
    assert len(loads) >= 4
    assert all(r.write_barrier == 7 for r in rows if sass_loop._opcode(r.text).startswith(("HFMA2", "LOP3", "IMAD")))
    for i in loads:
        b = rows[i].write_barrier
        later = rows[i + 1:]
        waiter = next(j for j, r in enumerate(later) if r.wait_mask >> b & 1)
        assert all(r.write_barrier != b for r in later[:waiter]), rows[i]
