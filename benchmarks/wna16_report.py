"""bench_wna16's parts that need no GPU: a case's row (its figures from the times), the table, the JSON's run
metadata.

A row (one dict a (shape, M, format, act) in the JSON's ``rows``; a field absent where not measured):
- ``us``: the median of one replay (L2 flushed before each); None where the tuner's plan failed to launch, and
  ``error`` says why;
- ``roof_us``: the roofline, the longer of the bytes (GemmProblem.bytes_moved) over the copy bandwidth and the FLOPs
  over the bf16 rate; ``bytes_us``: the bytes term alone;
- ``pct_roof`` = 100 roof_us / us (FLOP-capped), ``pct_bytes`` = 100 bytes_us / us (issue 5's "% of roofline");
- ``cublas_us``, ``fp8_us``: torch.matmul bf16, torch._scaled_mm e4m3, same (n, k, m); ``x_cublas`` = cublas_us / us;
- with --chain L: ``chain_us``, per layer of L consecutive layers over distinct weights in one graph;
  ``chain_pct_roof`` = 100 roof_us / chain_us (FLOP-capped, as before 2026-12-05), ``chain_pct_bytes`` = 100 bytes_us
  / chain_us (issue 5's); ``cublas_chain_us`` and ``x_cublas_chain`` the same for cuBLAS.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any


def case_row(*, shape: str, m: int, fmt: str, act: str, us: float, roof_us: float, bytes_us: float,
             base: dict, chained: float | None = None, **extra: Any) -> dict:
    """One timed case's JSON row (module docstring); ``extra``: tile, schedule, verified, ..."""
    cublas = base.get("cublas")
    row = {"shape": shape, "m": m, "format": fmt, "act": act, "us": us, "roof_us": roof_us, "bytes_us": bytes_us,
           "pct_roof": 100 * roof_us / us, "pct_bytes": 100 * bytes_us / us,
           "cublas_us": cublas, "fp8_us": base.get("fp8"), "x_cublas": cublas / us if cublas else None, **extra}
    if chained is not None:
        cc = base.get("cublas_chain")
        row.update(chain_us=chained, chain_pct_roof=100 * roof_us / chained, chain_pct_bytes=100 * bytes_us / chained,
                   cublas_chain_us=cc, x_cublas_chain=cc / chained if cc else None)
    return row


def failed_row(*, shape: str, m: int, fmt: str, act: str, error: str, **extra: Any) -> dict:
    """The row of a case whose tuner plan did not launch: no times, the error's first line."""
    return {"shape": shape, "m": m, "format": fmt, "act": act, "us": None, "error": error, **extra}


def progress_line(row: dict) -> str:
    """The line printed as each case finishes."""
    head = f"  {row['shape']:>11} M={row['m']:<5} {row['format'][:40]:<40} {row['act']:<4}"
    if row["us"] is None:
        return f"{head} failed: {row['error']}"
    text = f"{head} {row['us']:8.1f} us {row['pct_roof']:5.1f}% roof {row['pct_bytes']:5.1f}% bytes"
    if "best" in row:
        text += f"  best {row['best_us']:.1f} us {row['best']}"
    if "chain_us" in row:
        text += f"  chain {row['chain_us']:.1f} us {row['chain_pct_roof']:.1f}% roof {row['chain_pct_bytes']:.1f}% bytes"
    if row.get("verified") is not None:
        text += f"  verify {'ok' if row['verified'] == 'ok' else 'FAIL: ' + row['verified']}"
    return text


def _num(value: float | None, width: int, spec: str = ".1f", suffix: str = "") -> str:
    return f"{value:{spec}}{suffix}".rjust(width) if value else "-".rjust(width)


def table_lines(rows: list[dict], chain: bool) -> list[str]:
    """The table after the run: a header whose every column has its own name, then a line a row ('-': not measured;
    a failed case's line says why)."""
    head = (f"{'shape':>11} {'M':>5} {'format':<44} {'act':<4} {'us':>8} {'%roof':>6} {'%bytes':>6} {'xcuBLAS':>8} "
            f"{'cuBLAS':>8} {'FP8':>8}")
    if chain:
        head += f" {'chain_us':>8} {'chain%roof':>10} {'chain%bytes':>11} {'chain_cuBLAS':>12} {'chain_x':>7}"
    lines = [head]
    for r in rows:
        text = f"{r['shape']:>11} {r['m']:>5} {r['format'][:44]:<44} {r['act']:<4} "
        if r["us"] is None:
            lines.append(text + f"failed: {r['error'][:120]}")
            continue
        text += (f"{r['us']:8.1f} {r['pct_roof']:6.1f} {r['pct_bytes']:6.1f} {_num(r['x_cublas'], 8, '.2f', 'x')} "
                 f"{_num(r['cublas_us'], 8)} {_num(r['fp8_us'], 8)}")
        if chain and "chain_us" in r:
            text += (f" {r['chain_us']:8.1f} {r['chain_pct_roof']:10.1f} {r['chain_pct_bytes']:11.1f} "
                     f"{_num(r['cublas_chain_us'], 12)} {_num(r['x_cublas_chain'], 7, '.2f', 'x')}")
        if "best" in r:
            text += f"  best {r['best_us']:.1f} {r['best']}"
        lines.append(text)
    return lines


def git_commit(root: Path) -> str | None:
    """The checkout's commit (short hash, '+' where the tree differs from it), or None where there is no git (the
    device's copy of the tree has no .git: bench_wna16 then takes HUMMING_COMMIT)."""
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=10)
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if head.returncode:
        return None
    return head.stdout.strip() + ("+" if dirty.stdout.strip() else "")
