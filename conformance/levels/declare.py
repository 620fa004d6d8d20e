"""Level ``declare``: the capability table is self-consistent, and every declared MMA compiles as a probe natively.

Cases, with stable ids:

- ``declare/capability/<check>``: the model's own validation (``check_capabilities``) and the suite's further
  rules: every dtype is a known interned dtype; a block-scaled form's scale is a scale type whose vector divides
  K; a family that reads operands from shared-memory descriptors has the bulk tensor copy and known shared
  memory; the N choices contain the declared N; the limits agree with each other; each SKU's facts are sane;
  with a device, the driver grants at least the shared memory and registers the table promises.
- ``declare/probe/<instruction id>``: the plugin's micro-kernel for the instruction compiles for the target;
  where the target's binaries are NVIDIA cubins and the family is a PTX one, its SASS holds the instruction's
  own opcode class with its operand types (``conformance.sass``). An instruction ptxas only *emulates* (e4m3
  mma.sync on sm_90a becomes F2FP unpacks + HMMA) fails, unless the table marks it ``emulated``; one the table
  marks ``emulated`` fails when the SASS shows it native. Without an nvdisasm that reads the cubin (none
  installed, or one older than the architecture) the probe is ``skipped``: a pass always means the SASS was read.
"""

from __future__ import annotations

import functools
import time
from typing import Callable

from humming.capabilities.model import DeviceCapabilities, check_capabilities
from humming.core.dtypes import DType
from conformance import probes as probe_mod
from conformance import sass
from conformance.runner import CaseResult, Progress, Skip, Status, Suite, error_text, outcome_of

LEVEL = "declare"
ID_FORMS = (f"{LEVEL}/capability/<check>", f"{LEVEL}/probe/<instruction id>")


# ---- the capability checks -------------------------------------------------------------------------------------
def _known_dtypes(caps: DeviceCapabilities) -> list[str]:
    out = []
    for i in caps.mma:
        types = [("a", i.a), ("b", i.b), ("acc", i.acc)] + ([("block scale", i.block_scale.scale)] if i.block_scale else [])
        for role, d in types:
            try:
                known = DType.parse(d.name) is d
            except Exception:
                known = False
            if not known:
                out.append(f"mma: {i.describe()}: {role} dtype {d!r} is not an interned humming dtype")
    return out


def _block_scales(caps: DeviceCapabilities) -> list[str]:
    out = []
    for i in caps.mma:
        bs = i.block_scale
        if bs is None:
            continue
        if not bs.scale.is_scale_only:
            out.append(f"mma: {i.describe()}: block scale {bs.scale} is not a scale type (expected ue8m0 or ue4m3)")
        if bs.vector_size > 0 and i.k % bs.vector_size:
            out.append(f"mma: {i.describe()}: block-scale vector {bs.vector_size} does not divide K={i.k}")
    return out


def _families(caps: DeviceCapabilities) -> list[str]:
    out = []
    for fam in caps.families:
        if fam.operand_from_smem:
            if caps.memory.bulk_tensor_copy is not True:
                out.append(f"family {fam}: reads operands from shared-memory descriptors, but memory.bulk_tensor_copy "
                           f"is {caps.memory.bulk_tensor_copy} (it must be True)")
            if caps.limits.shared_memory_per_block_optin is None and \
                    "limits.shared_memory_per_block_optin" not in caps.unknown:
                out.append(f"family {fam}: stages operands in shared memory, but limits.shared_memory_per_block_optin "
                           "is None and not listed in unknown")
    for i in caps.mma:
        if i.n_values:
            if i.n not in i.n_values:
                out.append(f"mma: {i.describe()}: the declared N={i.n} is not among its n_values")
            if max(i.n_values) != i.n:
                out.append(f"mma: {i.describe()}: shape N={i.n} must be the largest of n_values ({max(i.n_values)})")
    return out


def _limits(caps: DeviceCapabilities) -> list[str]:
    lim, out = caps.limits, []
    if lim.max_threads_per_block and lim.max_threads_per_sm and lim.max_threads_per_block > lim.max_threads_per_sm:
        out.append(f"limits: max_threads_per_block {lim.max_threads_per_block} > max_threads_per_sm "
                   f"{lim.max_threads_per_sm}")
    if lim.max_registers_per_thread and lim.registers_per_sm and lim.max_registers_per_thread > lim.registers_per_sm:
        out.append(f"limits: max_registers_per_thread {lim.max_registers_per_thread} > registers_per_sm "
                   f"{lim.registers_per_sm}")
    if lim.warp_size and lim.max_threads_per_block and lim.max_threads_per_block % lim.warp_size:
        out.append(f"limits: max_threads_per_block {lim.max_threads_per_block} is not a multiple of the warp "
                   f"size {lim.warp_size}")
    for name in ("shared_memory_per_sm", "shared_memory_per_block_optin", "registers_per_sm",
                 "max_registers_per_thread", "max_threads_per_sm", "max_threads_per_block", "warp_size"):
        value = getattr(lim, name)
        if value is not None and value <= 0:
            out.append(f"limits: {name} is {value}")
    if caps.memory.tensor_memory and not caps.memory.tensor_memory_bytes:
        out.append("memory: tensor_memory is claimed but tensor_memory_bytes is not given")
    return out


#: Fields that only mean something when another field (a feature flag) is not False.
_APPLIES_IF = {"max_cluster_size": "clusters", "tensor_memory_bytes": "tensor_memory"}


def _unknowns(caps: DeviceCapabilities) -> list[str]:
    """The model's rule: a fact that is not known is None *and* named in ``unknown``, never silently absent."""
    out = []
    for group, obj in (("memory", caps.memory), ("limits", caps.limits)):
        for name in obj.__dataclass_fields__:
            parent = _APPLIES_IF.get(name)
            if parent is not None and getattr(obj, parent) is False:
                continue  # a size of a feature the target does not have is not an unknown fact
            if getattr(obj, name) is None and f"{group}.{name}" not in caps.unknown:
                out.append(f"{group}.{name} is None but '{group}.{name}' is not listed in unknown")
    return out


def _skus(caps: DeviceCapabilities) -> list[str]:
    out = []
    for s in caps.skus:
        for name in ("memory_bytes", "memory_bandwidth", "l2_bytes"):
            value = getattr(s, name)
            if value is not None and value <= 0:
                out.append(f"skus: {s.name}: {name} is {value}")
        for d, tflops in s.peak_dense_tflops.items():
            if not any(i.a is d or i.b is d for i in caps.mma):
                out.append(f"skus: {s.name}: a peak rate for {d}, which no declared MMA takes")
            if tflops <= 0:
                out.append(f"skus: {s.name}: peak rate for {d} is {tflops}")
    return out


def _device_limits(suite: Suite) -> list[str]:
    """The driver must grant at least what the table promises (kernels are sized from the table)."""
    if suite.device is None:
        raise Skip("no device: the driver's limits are compared only with --device")
    attrs, lim, out = suite.device.raw.attributes, suite.caps.limits, []
    for key in ("shared_memory_per_block_optin", "shared_memory_per_sm", "registers_per_sm", "max_threads_per_sm"):
        claimed, granted = getattr(lim, key, None), attrs.get(key)
        if claimed is not None and granted is not None and int(granted) < claimed:
            out.append(f"limits.{key}: the table claims {claimed}, the driver grants {granted}")
    sku, sms = suite.device.sku, attrs.get("sm_count")
    if sku is not None and sku.sm_count is not None and sms is not None and int(sms) != sku.sm_count:
        out.append(f"skus: {sku.name} has sm_count {sku.sm_count}, the driver reports {sms}")
    return out


CHECKS: dict[str, Callable[[DeviceCapabilities], list[str]]] = {
    "schema": check_capabilities, "dtypes": _known_dtypes, "block-scales": _block_scales,
    "families": _families, "limits": _limits, "unknowns": _unknowns, "skus": _skus,
}


def _capability_cases(suite: Suite) -> list[CaseResult]:
    out = []
    checks: dict[str, Callable[[], list[str]]] = {name: functools.partial(fn, suite.caps)
                                                  for name, fn in CHECKS.items()}
    checks["device-limits"] = lambda: _device_limits(suite)
    for name, fn in checks.items():
        case_id = f"{LEVEL}/capability/{name}"
        if not suite.selected(case_id):
            continue
        t0 = time.monotonic()
        try:
            problems = fn()
        except Exception as exc:
            status, reason = outcome_of(exc)
            out.append(suite.result(case_id, LEVEL, status, reason, params={"check": name}))
            continue
        if problems:
            r = suite.result(case_id, LEVEL, Status.FAIL, problems[0] + (f" (+{len(problems) - 1} more)"
                             if len(problems) > 1 else ""), params={"check": name}, details={"problems": problems})
        else:
            r = suite.result(case_id, LEVEL, Status.PASS, f"{name}: consistent", params={"check": name})
        r.duration_s = time.monotonic() - t0
        out.append(r)
    return out


# ---- the probes ----------------------------------------------------------------------------------------------
def _params(p: probe_mod.Probe) -> dict:
    return {"instruction": p.instruction.to_json(), "describe": p.instruction.describe()}


def _judge_probe(suite: Suite, p: probe_mod.Probe, listings: dict[int, dict[str, dict] | Exception]) -> CaseResult:
    case_id = f"{LEVEL}/probe/{p.id}"
    arch = suite.caps.target.arch
    if p.error is not None:
        status, reason = outcome_of(p.error)
        if status is Status.UNSUPPORTED:
            status = Status.FAIL  # the table declared it; "the compiler says no" is the table being wrong
        what = "does not compile" if p.source is not None else "gets no probe: the plugin's probe hook failed"
        return suite.result(case_id, LEVEL, status, f"{p.instruction.describe()} {what} for {arch}: {reason}",
                            params=_params(p), details={"error": error_text(p.error)})
    assert p.binary is not None, "compile_all left a probe with neither a binary nor an error"
    if sass.expectation(p.instruction) is None:
        return suite.result(case_id, LEVEL, Status.PASS, f"compiles for {arch}; no SASS map for family "
                            f"{p.instruction.family} (not a PTX family)", params=_params(p), details={"sass": None})
    listing = listings.get(id(p.binary))
    if isinstance(listing, sass.NotACubin):
        why = str(listing).splitlines()[0]
        return suite.result(case_id, LEVEL, Status.PASS, f"compiles for {arch}; no SASS check applies ({why})",
                            params=_params(p), details={"sass": None})
    if isinstance(listing, sass.SassUnavailable):
        # Not a pass: the check that catches an emulated form did not run. The reason is the same for every
        # probe of the run, so the summary shows it once ("skipped x40: SASS not checked: ...").
        return suite.result(case_id, LEVEL, Status.SKIPPED, f"compiles; SASS not checked: {listing.reason}",
                            params=_params(p), details={"sass": None})
    if isinstance(listing, Exception) or listing is None:
        why = outcome_of(listing)[1] if listing is not None else "no disassembly was made for its binary"
        return suite.result(case_id, LEVEL, Status.FAIL, f"compiles for {arch}, but reading its SASS failed: {why}",
                            params=_params(p), details={"sass": None})
    finding = sass.judge_summary(p.instruction, listing.get(p.kernel, {}), arch=arch)
    assert finding is not None, "sass.expectation said a map exists, judge_summary found none"
    details = {"sass": {"status": finding.status, "expected": finding.expected.describe(), "found": list(finding.found)}}
    emulated_ok = bool(getattr(p.instruction, "emulated", False))
    if emulated_ok and finding.ok:
        # Selection ranks an emulated form last, so a native one wrongly marked loses to slower paths.
        return suite.result(case_id, LEVEL, Status.FAIL, f"{finding.message}, but the table marks it emulated: "
                            "the tensor cores here run it natively, so drop emulated=True (and its emulation text)",
                            params=_params(p), details=details)
    if finding.ok or (emulated_ok and finding.status == "emulated"):
        note = " (declared emulated)" if emulated_ok else ""
        return suite.result(case_id, LEVEL, Status.PASS, finding.message + note, params=_params(p), details=details)
    return suite.result(case_id, LEVEL, Status.FAIL, finding.message, params=_params(p), details=details)


def _disassemble(binaries: list[bytes], workers: int) -> dict[int, dict[str, dict] | Exception]:
    from concurrent.futures import ThreadPoolExecutor

    def one(b: bytes) -> dict[str, dict] | Exception:
        try:
            return sass.summaries(b)
        except Exception as exc:  # _judge_probe tells "not a cubin" from "nvdisasm missing or failed" from a bug
            return exc

    with ThreadPoolExecutor(max(1, workers)) as pool:
        return {id(b): got for b, got in zip(binaries, pool.map(one, binaries))}


def _probe_cases(suite: Suite) -> list[CaseResult]:
    caps, target = suite.caps, suite.caps.target
    wanted = [p for p in probe_mod.collect(suite.manager, caps) if suite.selected(f"{LEVEL}/probe/{p.id}")]
    if not wanted:
        return []
    progress = Progress(len(wanted), f"declare {target.arch}", suite.progress)
    results: list[CaseResult] = []

    def done(r: CaseResult) -> None:
        results.append(r)
        progress.update(r)

    toolchain, status, why = suite.toolchain()
    for p in [p for p in wanted if p.source is None and p.error is None]:
        done(suite.result(f"{LEVEL}/probe/{p.id}", LEVEL, Status.SKIPPED,
                          f"plugin {suite.manager.plugin_of(target)!r} supplies no probe for {p.instruction.describe()} "
                          "(implement humming_instruction_probe to have this claim checked)", params=_params(p)))
    runnable = [p for p in wanted if p.source is not None or p.error is not None]
    if toolchain is None:
        for p in runnable:
            done(suite.result(f"{LEVEL}/probe/{p.id}", LEVEL, status or Status.FAIL, why, params=_params(p)))
        progress.close()
        return results
    t0 = time.monotonic()
    probe_mod.compile_all(toolchain, target, runnable, workers=suite.workers, timeout_s=suite.compile_timeout_s)
    unique = list({id(p.binary): p.binary for p in runnable if p.binary is not None}.values())
    listings = _disassemble(unique, suite.workers)
    share = (time.monotonic() - t0) / max(len(runnable), 1)
    for p in runnable:
        r = _judge_probe(suite, p, listings)
        r.duration_s = share
        done(r)
    progress.close()
    return results


def case_ids(suite: Suite) -> list[str]:
    """The ids of the selected cases, in run order (the probes' ids come from the table, not from the plugin)."""
    ids = [f"{LEVEL}/capability/{name}" for name in (*CHECKS, "device-limits")]
    ids += [f"{LEVEL}/probe/{probe_mod.instruction_id(i)}" for i in suite.caps.mma]
    return [i for i in ids if suite.selected(i)]


def run(suite: Suite) -> list[CaseResult]:
    """Every ``declare`` case for ``suite``'s target."""
    return _capability_cases(suite) + _probe_cases(suite)
