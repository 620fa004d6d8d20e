"""Instruction probes for conformance: ask the plugin for one micro-kernel per declared MMA, compile them in batches.

The hook contract (``humming_instruction_probe``) gives one translation unit per instruction defining
``extern "C" __global__ void humming_probe(...)``. Compiling and disassembling each alone costs about 50 ms of
NVRTC and 250 ms of nvdisasm (NVRTC 13.5, nvdisasm 13.5, measured on the CPU machine): 1045 instructions over the
NVIDIA catalog would take five minutes. So probes are compiled in batches: each source goes into its own C++
namespace with ``humming_probe`` renamed by the preprocessor, so a batch is one compile and one disassembly
(sm_100a, 140 probes: 3.7 s and 1.5 s), both cached by content for the next run. A batch that does not compile
is split in halves until the failing probes stand alone, so each failure is reported against its own instruction
with its own compiler log.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from humming.capabilities.model import MmaInstruction
from humming.devices.toolchain import Toolchain
from conformance.runner import TimedOut, run_bounded

KERNEL = "humming_probe"  # the entry name the hook contract fixes


def instruction_id(instr: MmaInstruction) -> str:
    """A stable, readable id of a declared form: ``mma.sync.m16n8k16.bf16.bf16.f32`` (+ ``.ue8m0x32``)."""
    m, n, k = instr.shape
    text = f"{instr.family.name}.m{m}n{n}k{k}.{instr.a}.{instr.b}.{instr.acc}"
    if instr.block_scale is not None:
        text += f".{instr.block_scale.scale}x{instr.block_scale.vector_size}"
    return text


@dataclass
class Probe:
    """One declared instruction and what became of its probe."""

    instruction: MmaInstruction
    id: str
    source: str | None = None  # the plugin's micro-kernel; None: the plugin supplies none
    launch: Any = None  # the plugin's launch description when the hook returned one (threads, words, increment)
    kernel: str = KERNEL  # the entry name inside ``binary``
    binary: bytes | None = None
    log: str = ""
    error: BaseException | None = None  # the hook's or the compiler's exception


def collect(manager: Any, caps: Any) -> list[Probe]:
    """Ask the declaring plugin for every instruction's probe (a raise is recorded, never propagated).

    Only None means "no probe"; any other answer that is neither a str nor an object with a str ``source`` (an
    InstructionProbe) is the plugin's bug, recorded as a TypeError so that the instruction's case fails.
    """
    out = []
    for instr in caps.mma:
        p = Probe(instr, instruction_id(instr))
        try:
            got = manager.instruction_probe(instr, caps.target)
        except Exception as exc:  # a plugin's bug belongs to its instruction's case
            p.error = exc
            out.append(p)
            continue
        if isinstance(got, str):
            p.source = got
        elif got is not None and isinstance(getattr(got, "source", None), str):
            p.source, p.launch = got.source, got  # a richer answer: source plus how to launch and check it
            p.kernel = getattr(got, "kernel", KERNEL) or KERNEL
        elif got is not None:
            what = type(got).__name__ + (f" with a {type(got.source).__name__} source" if hasattr(got, "source")
                                         else "")
            p.error = TypeError(f"humming_instruction_probe returned a {what} for {instr.describe()}; it must return "
                                "the CUDA source as a str, a humming.devices.probe.InstructionProbe, or None when "
                                "the plugin has no probe for the instruction")
        out.append(p)
    return out


def _wrapped(index: int, source: str, kernel: str) -> str:
    return (f"#define {kernel} humming_conformance_probe_{index}\n"
            f"namespace humming_conformance_ns_{index} {{\n{source}\n}}\n#undef {kernel}\n")


def batch_name(index: int) -> str:
    return f"humming_conformance_probe_{index}"


def _batchable(source: str) -> bool:
    # A header included inside a namespace breaks; such probes compile alone.
    return "#include" not in source


def _compile(toolchain: Toolchain, target: Any, source: str, name: str, entry: str) -> Any:
    """One unit through humming's kernel cache (a rerun compiles nothing); CompileError with the log on failure."""
    from humming.core.build import compile_source

    return compile_source(source, target=target, name=name, toolchain=toolchain, entry=entry)


def _compile_group(toolchain: Toolchain, target: Any, group: Sequence[tuple[int, Probe]]) -> None:
    """Compile ``group`` as one unit; on failure split it until each failing probe is alone."""
    if len(group) == 1:
        index, p = group[0]
        try:
            built = _compile(toolchain, target, p.source or "", f"probe_{index}.cu", p.kernel)
        except Exception as exc:
            p.error = exc
            return
        p.binary, p.log = built.binary, built.log
        return
    source = "".join(_wrapped(i, p.source or "", p.kernel) for i, p in group)
    try:
        built = _compile(toolchain, target, source, f"probes_{group[0][0]}_{group[-1][0]}.cu", batch_name(group[0][0]))
    except Exception:
        half = len(group) // 2
        _compile_group(toolchain, target, group[:half])
        _compile_group(toolchain, target, group[half:])
        return
    for i, p in group:
        p.binary, p.log, p.kernel = built.binary, built.log, batch_name(i)


def compile_all(toolchain: Toolchain, target: Any, probes: Sequence[Probe], workers: int = 1,
                chunk: int = 48, timeout_s: float = 900.0) -> None:
    """Compile every probe that has a source, in batches of up to ``chunk``, ``workers`` batches at a time.

    NVRTC releases the GIL while it compiles, so threads run batches in parallel. A batch still compiling after
    ``timeout_s`` gives each of its probes a TimedOut error.
    """
    ready = [(i, p) for i, p in enumerate(probes) if p.source is not None and p.error is None]
    alone = [[item] for item in ready if not _batchable(item[1].source or "")]
    together = [item for item in ready if _batchable(item[1].source or "")]
    groups = alone + [together[j:j + chunk] for j in range(0, len(together), chunk)]
    done = run_bounded(lambda g: _compile_group(toolchain, target, g), groups, workers, timeout_s)
    for group, got in zip(groups, done):
        if isinstance(got, TimedOut):
            for _i, p in group:
                p.binary, p.error = None, got
