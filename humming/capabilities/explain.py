"""Renders capability answers for people: a Verdict as text, and the device / catalog tables of ``humming devices``."""

from __future__ import annotations

from typing import Mapping, Sequence

from humming.capabilities.model import DeviceCapabilities
from humming.capabilities.query import Verdict


def render_verdict(verdict: Verdict) -> str:
    """The text ``humming explain`` prints: the chosen path and why, or what is missing and what would work."""
    lines = [verdict.message()]
    if verdict.ok:
        lines += [f"  why: {r}" for r in verdict.reasons]
        if len(verdict.paths) > 1:
            lines.append("  other paths:")
            lines += [f"    - {p.describe()}" for p in verdict.paths[1:]]
        lines += [f"  warning: {w}" for w in verdict.warnings]
    else:
        lines += [f"  missing: {m}" for m in verdict.missing]
        if verdict.alternatives:
            lines.append("  would work instead:")
            lines += [f"    - {a}" for a in verdict.alternatives]
        else:
            lines.append("  nothing on this target runs these weights with another activation format either")
    return "\n".join(lines)


def mma_summary(caps: DeviceCapabilities) -> str:
    """One cell: each MMA family with the operand dtypes it takes, fastest family first."""
    parts = []
    for fam in caps.families:
        operands = sorted({d.name for i in caps.mma if i.family == fam for d in (i.a, i.b)})
        scaled = any(i.block_scale for i in caps.mma if i.family == fam)
        parts.append(f"{fam.name}[{' '.join(operands)}{' +block-scaled' if scaled else ''}]")
    return " ".join(parts) or "-"


def _kib(value: int | None) -> str:
    return "?" if value is None else f"{value // 1024} KiB"


def table(rows: Sequence[Sequence[str]], header: Sequence[str]) -> str:
    """A plain fixed-width table (no dependency: the CLI must work on a bare install)."""
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
    fmt = "  ".join("{:<%d}" % w for w in widths)
    out = [fmt.format(*header), fmt.format(*("-" * w for w in widths))]
    out += [fmt.format(*(str(c) for c in r)) for r in rows]
    return "\n".join(line.rstrip() for line in out)


def catalog_rows(catalog: Sequence[DeviceCapabilities], plugin_of: Mapping[tuple[str, str], str],
                 present: set[tuple[str, str]] | None) -> list[list[str]]:
    """One row per target (CATALOG_HEADER). ``plugin_of`` and ``present`` are keyed by (vendor, arch): two vendors
    may declare the same arch name. ``present`` None: the claims could not be decided ("?")."""
    rows = []
    for caps in catalog:
        key = (caps.target.vendor, caps.target.arch)
        features = [n for n, v in (("ldmatrix", caps.memory.ldmatrix), ("cp.async", caps.memory.cp_async),
                                   ("tma", caps.memory.bulk_tensor_copy), ("clusters", caps.memory.clusters),
                                   ("setmaxnreg", caps.memory.setmaxnreg), ("tmem", caps.memory.tensor_memory),
                                   ("pdl", caps.memory.programmatic_launch)) if v]
        rows.append([
            caps.target.arch + (" (preview)" if caps.preview else ""),
            caps.name,
            plugin_of.get(key, "?"),
            "?" if present is None else "yes" if key in present else "no",
            _kib(caps.limits.shared_memory_per_block_optin),
            ",".join(features) or "-",
            ",".join(h.dtype.name for h in caps.hidden_formats) or "-",
            mma_summary(caps),
        ])
    return rows


CATALOG_HEADER = ("target", "name", "plugin", "present", "smem/block", "features", "hidden", "mma")
