"""SASS checks: disassemble an NVIDIA cubin with nvdisasm and say whether it holds the MMA a capability promised.

A capability table says "this target runs e4m3 x e4m3 on mma.sync"; PTX accepts many forms on targets whose
tensor cores lack them, and ptxas then *emulates* them. This module reads the machine code and answers
``native`` (the promised opcode class with the promised operand types), ``emulated`` (another MMA opcode does the
work) or ``absent`` (no MMA at all), so a wrong table is caught without hardware.

The map below was verified on 2026-12-02 by compiling one micro-kernel per form with NVRTC 13.5 and reading it
with nvdisasm 13.5 (the ``nvidia-cuda-nvdisasm`` wheel); opcodes seen (examples):

=============================================  ===========================================================
PTX form                                       SASS
=============================================  ===========================================================
mma.sync f16 / bf16 / tf32                     HMMA.16816.F32 / HMMA.16816.F32.BF16 / HMMA.1688.F32.TF32
mma.sync s8, u8 (sm_75..sm_121)                IMMA.16832.S8.S8, IMMA.16832.S8.U8
mma.sync s4 (sm_75..sm_89)                     IMMA.16864.S4.S4; on sm_90 and later IMMA.16832.S8.S8 after
                                               an unpack (no int4 tensor op: emulated)
mma.sync b1                                    BMMA.168256.AND.POPC; sm_120a: IMMA.16832.U8.U8 (emulated)
mma.sync e4m3 / e5m2 (sm_89, sm_120a)          QMMA.16832.F32.E4M3.E4M3; sm_90a/100a/103a/110a: F2FP.F16.E4M3
                                               .UNPACK_B + HMMA.16816.F32 (emulated)
mma.sync kind::f8f6f4 (sm_120a)                QMMA.16832.F32.E4M3.E2M1, QMMA.16832.F32.E3M2.E2M3
mma.sync block_scale mxf8f6f4 (sm_120a)        QMMA.SF.16832.F32.E4M3.E4M3.E8
mma.sync block_scale mxf4 / mxf4nvf4           OMMA.SF.16864.F32.E2M1.E2M1.E8 / ....UE4M3.4X
wgmma f16 / bf16 (sm_90a)                      HGMMA.64x8x16.F32 / HGMMA.64x8x16.F32.BF16
wgmma e4m3 / e5m2, s8 / u8                     QGMMA.64x8x32.F32.E5M2.E4M3, IGMMA.64x8x32.U8.S8
tcgen05 kind::f16, kind::tf32                  UTCHMMA
tcgen05 kind::f8f6f4, kind::mxf8f6f4           UTCQMMA
tcgen05 kind::i8 (sm_100a, sm_110a only)       UTCIMMA  (sm_103a: ptxas "Feature '.kind::i8' not supported")
tcgen05 kind::mxf4, kind::mxf4nvf4             UTCOMMA (UTCOMMA.4X / UTCOMMA.BLOCK16)
=============================================  ===========================================================

The map is keyed by the PTX family name an instruction is declared with (``mma.sync``, ``wgmma``,
``tcgen05``), not by any architecture: a vendor family that is not PTX (``ppu.mma.sync``) has no expectation,
and its SASS check is reported as not applicable.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from humming.capabilities.model import MmaInstruction
from humming.core import dtypes as dt
from humming.core.dtypes import DType
from humming.errors import UnsupportedError

#: ELF e_machine of an NVIDIA cubin (EM_CUDA). A PPU image says 0x10E; nvdisasm cannot read it.
EM_CUDA = 190
WHEEL = "nvidia-cuda-nvdisasm"

#: SASS operand tokens an opcode may carry, by dtype. f16 is implicit in HMMA/HGMMA (no token).
_TOKEN: dict[DType, str] = {dt.bf16: "BF16", dt.tf32: "TF32", dt.s8: "S8", dt.u8: "U8", dt.s4: "S4", dt.u4: "U4",
                            dt.e4m3: "E4M3", dt.e5m2: "E5M2", dt.e2m1: "E2M1", dt.e3m2: "E3M2", dt.e2m3: "E2M3"}
_OPERAND_TOKENS = frozenset(_TOKEN.values())
#: Opcode classes whose text names the operand types; the UTC* (tcgen05) and BMMA opcodes do not.
_CARRIES_OPERANDS = frozenset({"HMMA", "IMMA", "QMMA", "OMMA", "HGMMA", "QGMMA", "IGMMA"})

_F16 = frozenset({dt.f16, dt.bf16, dt.tf32})
_INT = frozenset({dt.s8, dt.u8, dt.s4, dt.u4})
_FP8 = frozenset({dt.e4m3, dt.e5m2})
_F8F6F4 = frozenset({dt.e4m3, dt.e5m2, dt.e3m2, dt.e2m3, dt.e2m1})


@dataclass(frozen=True)
class Expectation:
    """The SASS a declared MMA instruction must produce: an opcode class, flags, and the operand tokens."""

    opcode: str  # opcode class: the first dotted part ("HMMA", "UTCQMMA")
    flags: tuple[str, ...] = ()  # dotted parts that must also be there ("SF" for block-scaled mma.sync)
    operands: tuple[str, ...] = ()  # the a and b tokens, checked when the opcode class carries operand tokens

    def describe(self) -> str:
        text = ".".join((self.opcode, *self.flags))
        return text + (f" with {'.'.join(self.operands)} operands" if self.operands else "")


def _operands(instr: MmaInstruction) -> tuple[str, ...]:
    return tuple(_TOKEN[d] for d in (instr.a, instr.b) if d in _TOKEN)


def expectation(instr: MmaInstruction) -> Expectation | None:
    """The SASS an NVIDIA PTX MMA form must lower to natively; None when no map exists for its family or dtypes."""
    fam, a, b = instr.family.name, instr.a, instr.b
    pair = frozenset({a, b})
    scaled = instr.block_scale is not None
    if fam == "mma.sync":
        if scaled and pair <= {dt.e2m1} and instr.k >= 64:
            return Expectation("OMMA", ("SF",), _operands(instr))
        if scaled and pair <= _F8F6F4:
            return Expectation("QMMA", ("SF",), _operands(instr))
        if pair <= _F16:
            return Expectation("HMMA", (), _operands(instr))
        if pair <= _INT:
            return Expectation("IMMA", (), _operands(instr))
        if pair <= _F8F6F4:
            return Expectation("QMMA", (), _operands(instr))
        if pair == {dt.b1}:
            return Expectation("BMMA")
        if pair == {dt.f64}:
            return Expectation("DMMA")
        return None
    if fam == "wgmma":
        if pair <= _F16:
            return Expectation("HGMMA", (), _operands(instr))
        if pair <= _FP8:
            return Expectation("QGMMA", (), _operands(instr))
        if pair <= {dt.s8, dt.u8}:
            return Expectation("IGMMA", (), _operands(instr))
        if pair == {dt.b1}:
            return Expectation("BGMMA")
        return None
    if fam == "tcgen05":
        if pair <= _F16:
            return Expectation("UTCHMMA")
        if pair <= {dt.s8, dt.u8}:
            return Expectation("UTCIMMA")
        if scaled and pair <= {dt.e2m1} and instr.k >= 64:
            return Expectation("UTCOMMA")  # kind::mxf4 / kind::mxf4nvf4
        if pair <= _F8F6F4:
            return Expectation("UTCQMMA")  # kind::f8f6f4 / kind::mxf8f6f4
        return None
    return None


# ---- disassembly --------------------------------------------------------------------------------------------
class NotACubin(UnsupportedError):
    """The binary is not an NVIDIA cubin (a PPU image, say): no SASS check applies to it."""


class SassUnavailable(UnsupportedError):
    """An NVIDIA cubin whose SASS cannot be read here: nvdisasm is not installed, or cannot read the cubin.

    A SASS check that meets this has not run: conformance reports the case as skipped with ``reason``, never as
    a pass.
    """

    @property
    def reason(self) -> str:
        """One line: what went wrong and how to get a working nvdisasm."""
        first = str(self).splitlines()[0]
        return first + (f" ({'; '.join(self.alternatives)})" if self.alternatives else "")


@functools.lru_cache(maxsize=1)
def nvdisasm_path() -> Path:
    """nvdisasm from the ``nvidia-cuda-nvdisasm`` wheel (found through its package metadata), else a CUDA toolkit
    (as cuda-pathfinder finds it, else on PATH).

    Raises SassUnavailable saying how to install it when neither is there.
    """
    try:
        for f in importlib.metadata.files(WHEEL) or ():
            if f.name in ("nvdisasm", "nvdisasm.exe") and f.parent.name == "bin":
                path = Path(str(f.locate())).resolve()
                if path.is_file():
                    return path
    except importlib.metadata.PackageNotFoundError:
        pass
    try:  # a CUDA toolkit (CUDA_HOME, /usr/local/cuda) as cuda-pathfinder finds it
        from cuda.pathfinder import find_nvidia_binary_utility

        found = find_nvidia_binary_utility("nvdisasm")
    except ImportError:
        found = None
    found = found or shutil.which("nvdisasm")  # a CUDA toolkit on PATH (older cuda-pathfinder lacks the finder)
    if found:
        return Path(found)
    raise SassUnavailable("nvdisasm is not installed, so SASS checks cannot run",
                          missing=["nvdisasm"], alternatives=[f"pip install {WHEEL} (it is in humming's [test] extra)"])


def elf_machine(binary: bytes) -> int | None:
    """The ELF e_machine of a binary, or None when it is not an ELF file."""
    if len(binary) < 20 or binary[:4] != b"\x7fELF":
        return None
    return struct.unpack_from("<H" if binary[5] == 1 else ">H", binary, 18)[0]


def disassemble(cubin: bytes) -> str:
    """The SASS text of an NVIDIA cubin.

    Raises NotACubin for a binary that is not one (a PPU image), and SassUnavailable when nvdisasm is missing
    or fails on it (an nvdisasm older than the cubin's architecture).
    """
    machine = elf_machine(cubin)
    if machine != EM_CUDA:
        what = "not an ELF file" if machine is None else f"ELF e_machine {machine:#x}, not EM_CUDA ({EM_CUDA:#x})"
        raise NotACubin(f"cannot disassemble this binary with nvdisasm: {what}",
                        missing=["a disassembler for this binary format"])
    tool = nvdisasm_path()
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        done = subprocess.run([str(tool), "-c", f.name], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise SassUnavailable(f"nvdisasm failed (exit {done.returncode}): {' '.join(done.stderr.split())[:500]}",
                              missing=["an nvdisasm that reads this cubin's architecture"],
                              alternatives=[f"pip install -U {WHEEL}"])
    return done.stdout


_LINE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Za-z0-9_.]*)")


def opcodes_in_order(sass: str) -> list[str]:
    """Every instruction's full opcode (``HMMA.16816.F32.BF16``), in program order."""
    return [m.group(1) for m in _LINE.finditer(sass)]


def opcodes(sass: str) -> Counter[str]:
    """Every instruction's full opcode with its count."""
    return Counter(opcodes_in_order(sass))


#: An instruction with its operands (up to the semicolon).
_INSTRUCTION = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Za-z0-9_.]*)\s*([^;]*);")


def unwritten_uniform_registers(sass: str) -> set[int]:
    """Uniform registers (URn) some instruction reads and no instruction writes: a miscompile (NVRTC 13.0 left
    a cp.async's UR0 / UR1 so for sm_90a and later). The first operand is the written one; .64 / .WIDE writes
    define a pair, .128 four."""
    written: set[int] = set()
    read: set[int] = set()
    for op, operands in _INSTRUCTION.findall(sass):
        read.update(int(r) for r in re.findall(r"\bUR(\d+)\b", operands))
        first = re.fullmatch(r"UR(\d+)", operands.split(",")[0].strip())
        if first:
            width = 4 if ".128" in op else 2 if ".64" in op or ".WIDE" in op else 1
            written.update(int(first.group(1)) + i for i in range(width))
    return read - written


def is_mma(op: str) -> bool:
    """Whether an opcode (``HGMMA.64x64x16.F32.BF16``, optionally followed by operands) is an MMA: its class ends
    in MMA (HMMA, IGMMA, UTCQMMA, OMMA ...)."""
    return op.split(".")[0].split()[0].endswith("MMA")


def mma_opcodes(sass: str) -> Counter[str]:
    """The MMA opcodes only (anything whose class ends in MMA: HMMA, IGMMA, UTCQMMA, OMMA ...)."""
    return Counter({op: n for op, n in opcodes(sass).items() if is_mma(op)})


_LABEL = re.compile(r"^\s*(\.L_x_\d+):", re.MULTILINE)
_BRANCH = re.compile(r"\bBRA\b[^;]*?(\.L_x_\d+)")


def mma_loop(sass: str) -> list[str]:
    """The instructions (opcode and operands) of the smallest loop that holds the most MMA instructions of one
    kernel's SASS: its hot loop, for counting what the compiler put around the MMAs (benchmarks/sass_loop.py).
    A loop is a backward branch to a label; empty when no loop holds an MMA."""
    lines: list[str] = []
    labels: dict[str, int] = {}
    for row in sass.splitlines():
        label = _LABEL.match(row)
        if label:
            labels[label.group(1)] = len(lines)
        found = _INSTRUCTION.search(row)
        if found:
            lines.append(f"{found.group(1)} {found.group(2).strip()}".strip())
    span = mma_loop_span(lines, labels)
    return lines[span[0]:span[1] + 1] if span else []


def loop_spill_accesses(sass: str) -> int:
    """Local-memory loads and stores (LDL / STL: spilled registers, or an array indexed at run time) inside
    mma_loop's loop: on the hot path, where those outside it (a split tile's fix-up, say) cost once per tile."""
    return sum(1 for text in mma_loop(sass) if text.split()[0].split(".")[0] in ("LDL", "STL"))


def mma_loop_span(lines: Sequence[str], labels: Mapping[str, int]) -> tuple[int, int] | None:
    """(first, last) index of mma_loop's loop among ``lines`` (each an instruction's opcode and operands, without its
    predicate) whose ``labels`` give the index each label stands before; None when no loop holds an MMA."""
    best: tuple[int, int, int, int] | None = None  # (MMAs, -length, start, end)
    for end, text in enumerate(lines):
        target = _BRANCH.search(text)
        start = labels.get(target.group(1), end + 1) if target else end + 1
        if start > end:
            continue
        mmas = sum(1 for t in lines[start:end + 1] if is_mma(t))
        if mmas and (best is None or (mmas, start - end) > best[:2]):
            best = (mmas, start - end, start, end)
    return (best[2], best[3]) if best else None


# ---- per-kernel summaries, cached by the cubin's content ----------------------------------------------------------
#: Bump when what a summary holds changes.
SUMMARY_FORMAT = 2
_SECTION = re.compile(r"^\s*\.section\s+\.text\.([A-Za-z_$][\w$]*),", re.MULTILINE)
_memo: dict[str, dict[str, dict[str, Any]]] = {}


def split_functions(sass: str) -> dict[str, str]:
    """nvdisasm text -> {kernel name: its code}, cut at each ``.section .text.<name>`` header."""
    marks = [(m.start(), m.group(1)) for m in _SECTION.finditer(sass)]
    return {name: sass[start:nxt[0]] for (start, name), nxt in zip(marks, marks[1:] + [(len(sass), "")])}


def _summarize_text(code: str) -> dict[str, Any]:
    ops = opcodes(code)
    return {"mma": {op: n for op, n in ops.items() if is_mma(op)},
            "unpack": sorted(op for op in ops if op.startswith(("F2FP", "I2F")) and "UNPACK" in op),
            "loop_local": loop_spill_accesses(code)}


def summaries(cubin: bytes) -> dict[str, dict[str, Any]]:
    """{kernel: {"mma": {opcode: count}, "unpack": [...], "loop_local": LDL / STL in its MMA loop}} of a cubin;
    cached on disk by its sha256.

    nvdisasm costs about 0.3 s a cubin, so a rerun reads the summary from the kernel cache's folder instead
    (``<HUMMING_CACHE_DIR>/sass-v1``; nothing is written when HUMMING_DISABLE_CACHE is set).
    """
    from humming.core import cache

    digest = hashlib.sha256(cubin).hexdigest()
    hit = _memo.get(digest)
    if hit is not None:
        return hit
    path = cache.cache_root() / f"sass-v{SUMMARY_FORMAT}" / digest[:2] / f"{digest}.json"
    if cache.enabled():
        try:
            hit = json.loads(path.read_text())
        except (OSError, ValueError):
            hit = None
    if hit is None:
        hit = {name: _summarize_text(code) for name, code in split_functions(disassemble(cubin)).items()}
        if cache.enabled():
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_text(json.dumps(hit))
            os.replace(tmp, path)  # atomic: a reader sees the old file or the whole new one
    _memo[digest] = hit
    return hit


# ---- the verdict ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SassFinding:
    """What the machine code holds for one promised instruction."""

    status: str  # "native" | "emulated" | "absent"
    expected: Expectation
    found: tuple[str, ...]  # the MMA opcodes seen, most frequent first
    message: str

    @property
    def ok(self) -> bool:
        return self.status == "native"


def _matches(op: str, want: Expectation) -> str:
    """'native' when ``op`` is the expected form, 'other' when it is the class with other operands, '' otherwise."""
    parts = op.split(".")
    if parts[0] != want.opcode or any(f not in parts[1:] for f in want.flags):
        return ""
    if want.opcode not in _CARRIES_OPERANDS:
        return "native"
    # HMMA/HGMMA name a shared type once (HMMA.16816.F32.BF16), IMMA/QMMA twice (IMMA.16832.S8.S8): compare sets.
    tokens = {p for p in parts[1:] if p in _OPERAND_TOKENS}
    return "native" if tokens == set(want.operands) else "other"


def judge_summary(instr: MmaInstruction, summary: dict[str, Any], *, arch: str = "") -> SassFinding | None:
    """Whether a kernel's summary (``summaries``) holds ``instr`` natively; None when no map exists for its family."""
    want = expectation(instr)
    if want is None:
        return None
    found = Counter(summary.get("mma", {}))
    ranked = tuple(op for op, _ in found.most_common())
    where = f" on {arch}" if arch else ""
    if any(_matches(op, want) == "native" for op in ranked):
        return SassFinding("native", want, ranked, f"{instr.describe()}{where}: SASS holds {want.describe()}")
    if ranked:
        unpack = summary.get("unpack") or []
        how = f" after {', '.join(unpack)}" if unpack else ""
        return SassFinding("emulated", want, ranked,
                           f"{instr.describe()}{where}: ptxas emulates it with {', '.join(ranked)}{how}; the tensor "
                           f"cores here have no {want.describe()}, so the capability must not declare this form")
    return SassFinding("absent", want, ranked,
                       f"{instr.describe()}{where}: the machine code holds no MMA instruction at all "
                       f"(expected {want.describe()})")


def judge(instr: MmaInstruction, sass: str, *, arch: str = "") -> SassFinding | None:
    """``judge_summary`` of one kernel's SASS text."""
    return judge_summary(instr, _summarize_text(sass), arch=arch)
