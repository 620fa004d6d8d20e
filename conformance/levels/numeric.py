"""Level ``numeric`` (a device): every declared MMA's probe runs on the silicon, and every case matches the reference.

Cases:

- ``numeric/probe/<instruction id>``: the plugin's micro-kernel for the instruction, compiled for the device's
  target and launched once. A plugin that claims an instruction the silicon lacks fails here, loudly (an illegal
  instruction, a launch error, or wrong values), and only that case fails: device cases run in a worker
  process (conformance.worker). The check: C is fresh random small integers, A and B hold ones (the probe's
  contract), so every accumulator element of D must be C + ``increment`` (K for a multiply-add).
- ``numeric/<case id>``: the GEMM on the device against ``humming.core.reference.reference_gemm`` (float64, on
  the CPU) with the tolerance of ``humming.core.tolerances`` for (activation, weight, output). The error
  statistics go into the report: max abs and max relative error, and the margin, the worst |diff| / allowed
  (a pass is a margin <= 1).

Without a device every case is skipped, with that reason.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

from humming.errors import InternalError
from conformance import cases as cases_mod
from conformance import probes as probe_mod
from conformance import worker
from conformance.runner import CaseResult, Skip, Status, Suite, error_text, outcome_of

LEVEL = "numeric"
PROBE = f"{LEVEL}/probe/"
ID_FORMS = (f"{PROBE}<instruction id>", f"{LEVEL}/<preset>.<activation>/m<M>n<N>k<K>")


def case_ids(suite: Suite) -> list[str]:
    ids = [PROBE + probe_mod.instruction_id(i) for i in suite.caps.mma]
    ids += [f"{LEVEL}/{c.id}" for c in cases_mod.gemm_cases(suite.case_set)]
    return [i for i in ids if suite.selected(i)]


def run(suite: Suite) -> list[CaseResult]:
    return worker.run_device_level(suite, LEVEL, case_ids(suite))


# ---- in the worker -----------------------------------------------------------------------------------------------
def run_one(suite: Suite, case_id: str) -> CaseResult:
    """One case, in the worker process (the device is the worker's)."""
    t0 = time.monotonic()
    try:
        r = _probe_case(suite, case_id) if case_id.startswith(PROBE) else _gemm_case(suite, case_id)
    except Exception as exc:
        status, reason = outcome_of(exc)
        r = suite.result(case_id, LEVEL, status, reason, details={"error": error_text(exc)})
    r.duration_s = time.monotonic() - t0
    return r


#: The probes of a target, collected once per worker process.
_PROBE_CACHE: dict[tuple[str, str], dict[str, probe_mod.Probe]] = {}


def _probe(suite: Suite, pid: str) -> probe_mod.Probe:
    key = (suite.caps.target.vendor, suite.caps.target.arch)
    table = _PROBE_CACHE.get(key)
    if table is None:
        table = {p.id: p for p in probe_mod.collect(suite.manager, suite.caps)}
        _PROBE_CACHE[key] = table
    if pid not in table:
        raise Skip(f"{pid} is not declared for {suite.caps.target.arch}")
    return table[pid]


def _encode(values: Any, acc: Any, per_word: float) -> Any:
    """Accumulator values (small integers, int64) -> the int32 words a probe reads.

    ``per_word`` elements share a 32-bit word: 2 for packed f16, 1 for 32-bit types (and for a 16-bit type kept
    in the low half of its own word, as TMEM columns hold f16), 0.5 for f64 (one element over two words).
    """
    import torch

    from humming.core import dtypes as dt

    if acc is dt.s32:
        return values.to(torch.int32)
    if acc is dt.f32:
        return values.to(torch.float32).view(torch.int32)
    if acc is dt.f64:
        return values.to(torch.float64).view(torch.int32)
    if acc is dt.f16 and per_word == 2:
        return values.to(torch.float16).view(torch.int32)
    if acc is dt.f16 and per_word == 1:
        return values.to(torch.float16).view(torch.int16).to(torch.int32) & 0xFFFF
    raise Skip(f"the probe harness cannot encode {acc} accumulators at {per_word} per 32-bit word")


def _decode(words: Any, acc: Any, per_word: float) -> Any:
    """The inverse of ``_encode``: int32 words -> accumulator values as float64 (exact for these integers)."""
    import torch

    from humming.core import dtypes as dt

    if acc is dt.s32:
        return words.to(torch.float64)
    if acc is dt.f32:
        return words.view(torch.float32).to(torch.float64)
    if acc is dt.f64:
        return words.view(torch.float64)
    if acc is dt.f16 and per_word == 2:
        return words.view(torch.float16).to(torch.float64)
    return (words & 0xFFFF).to(torch.int16).view(torch.float16).to(torch.float64)  # low half of each word


def _seed(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")


def _probe_case(suite: Suite, case_id: str) -> CaseResult:
    import torch

    from humming.core.launcher import CompiledKernel

    device = suite.device
    if device is None:
        raise InternalError(f"{case_id} reached the worker without a device: run_device_level skips such cases")
    p = _probe(suite, case_id[len(PROBE):])
    params = {"instruction": p.instruction.to_json(), "describe": p.instruction.describe()}
    if p.error is not None:
        raise p.error
    if p.source is None:
        raise Skip(f"the plugin supplies no probe for {p.instruction.describe()}")
    launch = p.launch
    if launch is None or not all(hasattr(launch, f) for f in ("threads", "words", "increment")):
        raise Skip("the plugin's probe gives its source only; to run it on the device, humming_instruction_probe "
                   "must also say how to launch and check it (threads, words, increment)")
    chain = suite.manager.toolchain(suite.caps.target)
    built = chain.compile(p.source, target=suite.caps.target, name=f"probe_{p.id}.cu")
    kernel = CompiledKernel(key=f"probe-{p.id}", binary=built.binary, target=suite.caps.target, function=p.kernel,
                            log=built.log, options=built.options, toolchain=built.toolchain)
    acc = p.instruction.acc
    threads, words, inc = int(launch.threads), int(launch.words), int(launch.increment)
    per_word = float(getattr(launch, "values_per_word", 0) or 32 / acc.bits)
    count = int(threads * words * per_word)
    gen = torch.Generator().manual_seed(_seed(case_id))
    c = torch.randint(-512, 513, (count,), generator=gen)  # small integers: exact in every accumulator type
    c[0] = 5  # never all zeros
    c_in = _encode(c, acc, per_word).contiguous().cuda(device.index)
    d_out = torch.full_like(c_in, 0x7FBADBAD)
    with torch.cuda.device(device.index):
        kernel.launch(1, threads, 0, (c_in, d_out))
        torch.cuda.synchronize()
    d = _decode(d_out.cpu(), acc, per_word)
    expected = (c + inc).to(torch.float64)
    wrong = int((d != expected).sum())
    details = {"threads": threads, "words": words, "increment": inc, "sample": [float(x) for x in d[:4]]}
    if wrong:
        first = int((d != expected).nonzero()[0])
        return suite.result(case_id, LEVEL, Status.FAIL,
                            f"{p.instruction.describe()} ran but computed wrong values: {wrong} of {count} accumulator "
                            f"elements are not C + {inc} (first at {first}: {float(d[first])} != {float(expected[first])})",
                            params=params, details=details)
    return suite.result(case_id, LEVEL, Status.PASS, f"{p.instruction.describe()} ran on {device.name}: "
                        f"all {count} elements are C + {inc}", params=params, details=details)


def _gemm_case(suite: Suite, case_id: str) -> CaseResult:
    from conformance import gemm_api

    case = cases_mod.find(case_id[len(LEVEL) + 1:], suite.case_set)
    params = case.params()
    selection = gemm_api.select(suite, case)
    if selection.status is not None:
        return suite.result(case_id, LEVEL, selection.status, selection.reason, params=params)
    got = gemm_api.run_numeric(suite, case, seed=_seed(case_id))
    status = Status.PASS if got["margin"] <= 1.0 and not got["nonfinite"] else Status.FAIL
    worst = f"at {got['worst_at']} (out {got['worst_out']:.6g}, ref {got['worst_ref']:.6g})"
    if status is Status.PASS:
        reason = f"within tolerance (worst error {got['margin']:.3g} of the allowed)"
    elif got["nonfinite"]:
        reason = (f"{got['nonfinite']} of {got['count']} outputs are NaN or inf, the first {worst}; "
                  f"{got['bad'] - got['nonfinite']} finite outputs outside tolerance (worst {got['margin']:.3g}x "
                  "the allowed)")
    else:
        reason = (f"{got['bad']} of {got['count']} outputs outside tolerance; worst {got['margin']:.3g}x the allowed "
                  + worst)
    stats = {k: got[k] for k in ("max_abs", "max_rel", "margin", "bad", "nonfinite", "count")}
    stats["tolerance"] = got["tolerance"]
    return suite.result(case_id, LEVEL, status, reason, params=params, error=stats,
                        details={"kernel": selection.describe(), "reference": "float64 on the CPU"})
