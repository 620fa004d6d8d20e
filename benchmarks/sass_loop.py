"""The hot loop of the tuner's dense kernel for a problem, as compiled here (no GPU): its length and instruction mix.

    python benchmarks/sass_loop.py --m 64 --define "" --define HM_UNIFORM_WARP=0

One line per ``--define`` set (the templates' switches, as profile_wna16's ``+NAME=V``): registers, spill bytes,
the loop's instructions and MMAs, and its commonest opcodes. Comparing a kernel with a part of its code compiled out
is how NOTES-wna16 run 20 found the R2UR that a non-uniform warp index put into the wgmma k-loop.

``--stalls`` adds, per basic block of the loop, the stall cycles ptxas wrote into the instructions' control codes
(after issuing an instruction, the cycles before the warp may issue its next: what ncu counts as "wait" for a lone
warp) and how many instructions wait on a scoreboard (a variable-latency result not yet written, or a source register
a copy still reads). The control field layout is Volta's, as Jia et al.,
"Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking" (arXiv:1804.06826, 2018) give it: the top 23
bits of each 128-bit instruction hold, from the least significant, 4 bits of stall cycles, the yield flag, the write
and read barrier indices (3 bits each), the 6-bit wait mask and 4 reuse flags; later architectures' disassemblies read
consistently with it (reuse flags where nvdisasm prints .reuse). A static reading, not a timing: the producer-warp
decode tiles' compute loops carry 23-32% fewer stall cycles a stage than the tuner's, and ran 3-11% slower on the
H200 (NOTES-wna16 run 27).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from typing import NamedTuple

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from conformance.sass import (EM_CUDA, disassemble, elf_machine, is_mma, mma_loop, mma_loop_span,  # noqa: E402
                              nvdisasm_path)
from humming import knobs  # noqa: E402
from humming.core import dtypes  # noqa: E402
from humming.core.build import compile_spec  # noqa: E402
from humming.core.problem import GemmProblem  # noqa: E402
from humming.devices.nvidia import archs, tuning  # noqa: E402
from humming.errors import UnsupportedError  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_wna16 import FORMATS  # noqa: E402


_ENCODED = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;?\s*/\* 0x[0-9a-f]{16} \*/\s*\n\s*/\* (0x[0-9a-f]{16}) \*/")
#: Opcodes after which a basic block ends (a branch, an indirect branch, a call, a return, an exit).
_ENDS_BLOCK = {"BRA", "BRX", "JMP", "JMX", "CALL", "RET", "EXIT"}


def _opcode(text: str) -> str:
    """The opcode of an instruction's text, past its predicate (``@!P1 BRA ...`` -> ``BRA``)."""
    words = text.split()
    return words[1] if words[0].startswith("@") else words[0]


class Issued(NamedTuple):
    """One instruction with its control code."""

    text: str
    stall: int  # cycles after issuing it before the warp's next instruction may issue
    wait_mask: int  # the scoreboards (bit b: barrier b) it waits on before issuing
    write_barrier: int  # the scoreboard its variable-latency result sets (7: none)
    reuse: int  # operand reuse flags (nvdisasm prints .reuse on those operands)

    @property
    def waits(self) -> bool:
        return bool(self.wait_mask)


def loop_blocks(cubin: bytes) -> list[list[Issued]]:
    """The hot loop's basic blocks (split at labels and after branches), from ``nvdisasm -hex``'s second word of each
    instruction (bits 105..127 of the instruction are its bits 41..63)."""
    if elf_machine(cubin) != EM_CUDA:
        raise UnsupportedError("sass_loop reads NVIDIA cubins only", missing=["an NVIDIA cubin"])
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        text = subprocess.run([str(nvdisasm_path()), "-c", "-hex", f.name], capture_output=True, text=True,
                              check=True, timeout=120).stdout
    rows: list[Issued] = []
    labels: dict[str, int] = {}
    for chunk in re.split(r"^\s*(\.L_x_\d+):", text, flags=re.MULTILINE):
        if re.fullmatch(r"\.L_x_\d+", chunk):
            labels[chunk] = len(rows)
            continue
        for found in _ENCODED.finditer(chunk):
            control = int(found.group(2), 16) >> 41
            rows.append(Issued(found.group(1), stall=control & 0xF, wait_mask=(control >> 11) & 0x3F,
                               write_barrier=(control >> 5) & 7, reuse=control >> 17))
    # the loop conformance.sass.mma_loop finds, from the instructions' text without their predicates
    span = mma_loop_span([r.text.split(None, 1)[1] if r.text.startswith("@") else r.text for r in rows], labels)
    if span is None:
        return []
    starts = set(labels.values())
    blocks: list[list[Issued]] = []
    for i in range(span[0], span[1] + 1):
        if not blocks or i in starts or _opcode(rows[i - 1].text).split(".")[0] in _ENDS_BLOCK:
            blocks.append([])
        blocks[-1].append(rows[i])
    return blocks


def stall_lines(cubin: bytes) -> list[str]:
    """One line per basic block of the hot loop: instructions, MMAs, stall cycles, scoreboard waits."""
    out = []
    blocks = loop_blocks(cubin)
    for block in blocks:
        mmas = sum(is_mma(_opcode(r.text)) for r in block)
        out.append(f"    block {len(block):4d} instr {mmas:3d} MMA: {sum(r.stall for r in block):5d} stall cycles, "
                   f"{sum(r.waits for r in block):3d} scoreboard waits; ends {block[-1].text[:48]}")
    every = [row for block in blocks for row in block]
    out.append(f"    loop  {len(every):4d} instr: {sum(r.stall for r in every):5d} stall cycles over every block "
               "(a segment change's too: read the blocks)")
    return out


def describe(m: int, n: int, k: int, fmt: str, act: str, arch: str, sms: int, defines: str,
             stalls: bool = False) -> str:
    """One line about the tuner's kernel for the problem, built with ``defines`` (comma list of NAME=V)."""
    a = getattr(dtypes, act)
    plan = tuning.TUNER.plan(GemmProblem(m, n, k, FORMATS[fmt], a, a), archs.capabilities(arch), sms)
    names = [d for d in defines.split(",") if d]
    with knobs.scope(**({"HUMMING_KERNEL_DEFINES": names} if names else {})):
        kernel = compile_spec(plan.spec)
    loop = mma_loop(disassemble(kernel.binary))
    ops = Counter(text.split()[0] for text in loop)
    mmas = sum(n for op, n in ops.items() if is_mma(op))
    r = kernel.resources
    top = ", ".join(f"{op} {n}" for op, n in ops.most_common(int(os.environ.get("HM_SASS_TOP", "8"))))
    line = (f"{defines or 'default':<32} regs {r.registers:3d} spill {r.spill_stores}/{r.spill_loads} B  loop "
            f"{len(loop):4d} instr, {mmas:2d} MMA, R2UR {ops.get('R2UR', 0):2d}, LDL {ops.get('LDL', 0)}: {top}")
    return "\n".join([line, *stall_lines(kernel.binary)]) if stalls else line


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--format", default="w4a16 s4 g128", help=f"one of {list(FORMATS)}")
    ap.add_argument("--n", type=int, default=28672)
    ap.add_argument("--k", type=int, default=8192)
    ap.add_argument("--m", type=int, default=64)
    ap.add_argument("--act", default="bf16", choices=("bf16", "f16"))
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--sms", type=int, default=132, help="SM count the tuner plans for (132: the H200)")
    ap.add_argument("--define", action="append", default=None, help="NAME=V[,NAME=V]; repeat for more lines")
    ap.add_argument("--stalls", action="store_true",
                    help="each basic block of the loop: its stall cycles and scoreboard waits")
    args = ap.parse_args()
    print(f"{args.format}, {args.n} x {args.k}, M = {args.m}, {args.act}, {args.arch}")
    for defines in args.define or [""]:
        line = describe(args.m, args.n, args.k, args.format, args.act, args.arch, args.sms, defines, args.stalls)
        print(line, flush=True)


if __name__ == "__main__":
    main()
