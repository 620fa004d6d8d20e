"""Level ``compile``: every kernel the selector would choose over the case list compiles, fits, and holds its MMA.

For each case ``compile/<case id>`` (conformance.cases), in order:

1. the capability's answer for (activation, weight): no path is ``unsupported`` with what is missing;
2. the selector's choice (conformance.gemm_api): no kernel family yet is ``skipped`` ("no kernel for W8A8
   yet"), and so is a toolchain that cannot run here (with its availability() reason);
3. the chosen kernel compiles (each distinct kernel once, in parallel, through humming's cache);
4. its resources fit the capability's limits: registers per thread, threads per block, one CTA's registers per
   SM, static + dynamic shared memory per block; and the twin's own shared-memory figure agrees with the cubin's;
5. its SASS holds the MMA the kernel's twin requires, natively (conformance.sass): HMMA.*.BF16 for a bf16
   mma.sync kernel, and not an emulation. Without an nvdisasm that reads the cubin the case is ``skipped``
   ("compiles and fits; SASS not checked: ..."), never a pass.

A failure after step 2 is always ``fail``: the selector chose a kernel the target cannot build or run; so is a
compile that does not finish within ``Suite.compile_timeout_s``.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from typing import Any

from conformance import cases as cases_mod
from conformance import sass
from conformance.runner import CaseResult, Progress, Skip, Status, Suite, error_text, outcome_of, run_bounded

LEVEL = "compile"
ID_FORMS = (f"{LEVEL}/<preset>.<activation>/m<M>n<N>k<K>",)


@dataclasses.dataclass
class Built:
    """What became of one distinct kernel: its compiled form, or the failure, and the checks' findings."""

    kernel: Any = None
    error: BaseException | None = None
    problems: list[str] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)
    unchecked: str = ""  # why a check could not run here (no nvdisasm): the case is skipped, not passed
    details: dict[str, Any] = dataclasses.field(default_factory=dict)


def required_instructions(spec: Any, caps: Any) -> list[Any]:
    """The declared MMA forms a spec's requirements are about, found without knowing the twin.

    Each requirement's ``check`` is asked of a copy of the capability table holding one instruction at a time:
    the instructions that satisfy it alone are the forms the kernel issues. A requirement that holds with no
    instruction at all (shared memory, a copy engine) is not about the MMA; one that every declared form meets
    still is (a table with a single form).
    """
    found = []
    for req in getattr(spec, "requirements", lambda: ())():
        if _holds(req, dataclasses.replace(caps, mma=())):
            continue
        alone = [i for i in caps.mma if _holds(req, dataclasses.replace(caps, mma=(i,)))]
        if alone:
            found.append(alone)
    return [group[0] for group in found]


def _holds(req: Any, caps: Any) -> bool:
    try:
        return req.check(caps) is True
    except Exception:
        return False


def check_resources(kernel: Any, spec: Any, caps: Any) -> tuple[list[str], list[str], dict[str, Any]]:
    """(problems, notes, figures) of a compiled kernel against the capability's limits."""
    lim, res = caps.limits, kernel.resources
    exports = dict(getattr(kernel, "exports", {}) or {})
    threads = exports.get("threads") or getattr(getattr(spec, "tile", None), "threads", None)
    dynamic = exports.get("smem_bytes", 0)
    static = res.static_smem or 0
    problems, notes = [], []
    figures = {"registers": res.registers, "threads": threads, "dynamic_smem": dynamic, "static_smem": static,
               "spill_stores": res.spill_stores, "spill_loads": res.spill_loads, "stack_frame": res.stack_frame}
    if res.registers is not None and lim.max_registers_per_thread is not None and \
            res.registers > lim.max_registers_per_thread:
        problems.append(f"{res.registers} registers per thread > the limit {lim.max_registers_per_thread}")
    if threads is not None and lim.max_threads_per_block is not None and threads > lim.max_threads_per_block:
        problems.append(f"{threads} threads per block > the limit {lim.max_threads_per_block}")
    if threads and res.registers and lim.registers_per_sm and res.registers * threads > lim.registers_per_sm:
        problems.append(f"one CTA needs {res.registers} x {threads} = {res.registers * threads} registers > "
                        f"{lim.registers_per_sm} per SM")
    limit = lim.shared_memory_per_block_optin
    if limit is not None and static + dynamic > limit:
        problems.append(f"{static} static + {dynamic} dynamic bytes of shared memory per block > the limit {limit}")
    mirror = getattr(spec, "smem_bytes", None)
    if callable(mirror) and "smem_bytes" in exports and mirror() != dynamic:
        problems.append(f"the twin plans with smem_bytes() = {mirror()} but the cubin exports {dynamic}: "
                        "selection checks the wrong figure against the limit")
    blocks = getattr(spec, "min_blocks", 1) or 1
    if blocks > 1 and threads and res.registers and lim.registers_per_sm and \
            blocks * res.registers * threads > lim.registers_per_sm:
        notes.append(f"min_blocks={blocks} CTAs per SM do not fit the register file ({res.registers} registers "
                     f"x {threads} threads each)")
    if res.spills:
        notes.append(f"spills: {res.spill_stores} B stored, {res.spill_loads} B loaded per thread")
    return problems, notes, figures


def check_sass(kernel: Any, spec: Any, caps: Any) -> tuple[list[str], list[str], dict[str, Any]]:
    """(problems, notes, details): the SASS must hold every MMA form the kernel's twin requires, natively.

    Raises Skip when the binary is an NVIDIA cubin but its SASS cannot be read here (no nvdisasm, or one too
    old for the architecture): the check did not run, so the case must not pass.
    """
    wanted = required_instructions(spec, caps)
    if not wanted:
        return [], ["no requirement of the twin singles out a declared MMA form; SASS not checked"], {}
    try:
        per_kernel = sass.summaries(kernel.binary)
    except sass.NotACubin as exc:  # a PPU image: no SASS check applies
        return [], [f"SASS not checked: {str(exc).splitlines()[0]}"], {}
    except sass.SassUnavailable as exc:
        raise Skip(f"SASS not checked: {exc.reason}") from exc
    summary = per_kernel.get(getattr(kernel, "function", ""))
    if summary is None:  # the entry's name not found: judge the whole binary
        summary = {"mma": dict(sum((Counter(v["mma"]) for v in per_kernel.values()), Counter())),
                   "unpack": sorted({u for v in per_kernel.values() for u in v["unpack"]}),
                   "loop_local": sum(v["loop_local"] for v in per_kernel.values())}
    problems, notes, found = [], [], {}
    if summary["loop_local"]:  # slow, not wrong: a note for the vendor's table, not a failure
        notes.append(f"{summary['loop_local']} local-memory loads / stores (LDL / STL) inside the MMA loop: spilled "
                     "registers or an array indexed at run time on the hot path")
    for instr in wanted:
        finding = sass.judge_summary(instr, summary, arch=caps.target.arch)
        if finding is None:
            notes.append(f"no SASS map for {instr.family}; SASS not checked")
            continue
        found[instr.describe()] = {"status": finding.status, "expected": finding.expected.describe(),
                                   "found": list(finding.found)}
        if not finding.ok:
            problems.append(finding.message)
        else:
            notes.append(finding.message)
    return problems, notes, {"sass": found, "loop_local_accesses": summary["loop_local"]}


def _build(spec: Any, chain: Any, caps: Any) -> Built:
    from humming.core.build import compile_spec

    b = Built()
    t0 = time.monotonic()
    try:
        b.kernel = compile_spec(spec, toolchain=chain, caps=caps)
    except Exception as exc:
        b.error = exc
        return b
    b.details["compile_s"] = round(time.monotonic() - t0, 3)
    b.details["from_cache"] = bool(getattr(b.kernel, "from_cache", False))
    for check in (check_resources, check_sass):
        try:
            problems, notes, details = check(b.kernel, spec, caps)
        except Skip as exc:
            b.unchecked = str(exc)
            continue
        except Exception as exc:  # a broken check is this kernel's failure, said plainly
            problems, notes, details = [f"{check.__name__} raised {outcome_of(exc)[1]}"], [], {}
        b.problems += problems
        b.notes += notes
        b.details.update(details if check is check_sass else {"resources": details})
    return b


def case_ids(suite: Suite) -> list[str]:
    """The ids of the selected cases of the suite's case set, in run order."""
    return [i for i in (f"{LEVEL}/{c.id}" for c in cases_mod.gemm_cases(suite.case_set)) if suite.selected(i)]


def run(suite: Suite) -> list[CaseResult]:
    from conformance import gemm_api

    wanted = [c for c in cases_mod.gemm_cases(suite.case_set) if suite.selected(f"{LEVEL}/{c.id}")]
    selections = {c: gemm_api.select(suite, c) for c in wanted}
    results: dict[Any, CaseResult] = {}
    runnable = []
    for c, sel in selections.items():
        if sel.status is not None:
            results[c] = suite.result(f"{LEVEL}/{c.id}", LEVEL, sel.status, sel.reason, params=c.params())
        else:
            runnable.append(c)
    chain = None
    if runnable:
        chain, status, why = suite.toolchain()
        if chain is None:
            for c in runnable:
                results[c] = suite.result(f"{LEVEL}/{c.id}", LEVEL, status or Status.FAIL, why, params=c.params(),
                                          details={"kernel": selections[c].describe()})
            runnable = []
    specs = list(dict.fromkeys(s for c in runnable for s in selections[c].specs))
    built: dict[Any, Built] = {}
    if specs:
        progress = Progress(len(specs), f"compile {suite.caps.target.arch}", suite.progress)

        def one(spec: Any) -> Built:
            b = _build(spec, chain, suite.caps)
            progress.update()
            return b

        got = run_bounded(one, specs, suite.workers, suite.compile_timeout_s)
        built = {spec: b if isinstance(b, Built) else Built(error=b) for spec, b in zip(specs, got)}
        progress.close()
    for c in runnable:
        results[c] = _case_result(suite, c, selections[c], built)
    return [results[c] for c in wanted]


def _case_result(suite: Suite, case: cases_mod.GemmCase, sel: Any, built: dict[Any, Built]) -> CaseResult:
    case_id = f"{LEVEL}/{case.id}"
    details: dict[str, Any] = {"kernel": sel.describe(), "kernels": []}
    problems, notes, unchecked, seconds = [], [], [], 0.0
    for spec in sel.specs:
        b = built[spec]
        details["kernels"].append({"spec": spec.describe(), "key": getattr(b.kernel, "key", None), **b.details})
        seconds += float(b.details.get("compile_s", 0.0))
        if b.error is not None:
            status, reason = outcome_of(b.error)
            prefix = "the selector chose a kernel the capability cannot run" if status is Status.UNSUPPORTED \
                else "the chosen kernel does not compile"
            r = suite.result(case_id, LEVEL, Status.FAIL, f"{prefix}: {reason}", params=case.params(),
                             details={**details, "error": error_text(b.error)})
            r.duration_s = seconds
            return r
        problems += b.problems
        notes += b.notes
        unchecked += [b.unchecked] if b.unchecked else []
    details["notes"] = notes
    if problems:
        r = suite.result(case_id, LEVEL, Status.FAIL, "; ".join(problems), params=case.params(), details=details)
    elif unchecked:
        # The same reason for every kernel of the run, so the summary shows it once.
        r = suite.result(case_id, LEVEL, Status.SKIPPED, f"compiles and fits; {unchecked[0]}", params=case.params(),
                         details=details)
    else:
        r = suite.result(case_id, LEVEL, Status.PASS, f"{sel.describe()}: compiles, fits, "
                         + ("; ".join(n for n in notes if "SASS" in n) or "SASS not checked"),
                         params=case.params(), details=details)
    r.duration_s = seconds
    return r
