"""The hot loop of the tuner's dense kernel for a problem, as compiled here (no GPU): its length and instruction mix.

    python benchmarks/sass_loop.py --m 64 --define "" --define HM_UNIFORM_WARP=0

One line per ``--define`` set (the templates' switches, as profile_wna16's ``+NAME=V``): registers, spill bytes,
the loop's instructions and MMAs, and its commonest opcodes. Comparing a kernel with a part of its code compiled out
is how NOTES-wna16 run 20 found the R2UR that a non-uniform warp index put into the wgmma k-loop.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from conformance.sass import disassemble, is_mma, mma_loop  # noqa: E402
from humming import knobs  # noqa: E402
from humming.core import dtypes  # noqa: E402
from humming.core.build import compile_spec  # noqa: E402
from humming.core.problem import GemmProblem  # noqa: E402
from humming.devices.nvidia import archs, tuning  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_wna16 import FORMATS  # noqa: E402


def describe(m: int, n: int, k: int, fmt: str, act: str, arch: str, sms: int, defines: str) -> str:
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
    top = ", ".join(f"{op} {n}" for op, n in ops.most_common(8))
    return (f"{defines or 'default':<32} regs {r.registers:3d} spill {r.spill_stores}/{r.spill_loads} B  loop "
            f"{len(loop):4d} instr, {mmas:2d} MMA, R2UR {ops.get('R2UR', 0):2d}, LDL {ops.get('LDL', 0)}: {top}")


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
    args = ap.parse_args()
    print(f"{args.format}, {args.n} x {args.k}, M = {args.m}, {args.act}, {args.arch}")
    for defines in args.define or [""]:
        print(describe(args.m, args.n, args.k, args.format, args.act, args.arch, args.sms, defines), flush=True)


if __name__ == "__main__":
    main()
