"""bench_wna16's parts that need no GPU: a case's row (its figures from the times), the table, the JSON's run
metadata, and what the --check parent reads from its children (CheckTally).

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

import re
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


# ---- --check: what the parent reads from its children --------------------------------------------------------
#: A child's line per (format, act): the format id, the act, an "M:ok" / "M:FAIL" mark per M, and a note where a
#: CUDA error ended the child.
_PAIR = re.compile(r"^  (?P<fmt>\S+) +(?P<act>f16|bf16) +(?P<marks>(?:\d+:(?:ok|FAIL) ?)+)(?P<cuda> +\(CUDA error.*)?$")


def pair_line(fmt_id: str, act: str, marks: list[str], cuda_error: bool = False) -> str:
    """The child's line for one (format, act), as CheckTally reads it."""
    return f"  {fmt_id:<22} {act:<5} {' '.join(marks)}" + ("  (CUDA error: restarting)" if cuda_error else "")


class CheckTally:
    """Reads the children's lines: ``START i`` as a child begins format i, a pair_line per (format, act), and
    ``NEXT j`` (``FAILED i`` after a CUDA error in format i) as it stops; says where the next child starts, and
    sums up (summary) which (format, act) pairs passed, failed a tolerance, met a CUDA error, died with their
    process, or never ran."""

    def __init__(self, names: list[str], only: tuple[str, ...] = ()) -> None:
        self.names = list(names)
        self.selected = [i for i, name in enumerate(self.names) if not only or name in only]
        self.pairs: dict[tuple[int, str], list[str]] = {}  # (format index, act) -> the Ms that failed
        self.cuda_errors: list[int] = []
        self.died: list[int] = []
        self.stopped = ""  # the parent was stopped (the step's timeout)
        self._started: int | None = None
        self._next: tuple[int, int | None] | None = None

    def feed(self, line: str) -> None:
        line = line.rstrip("\n")
        if m := re.match(r"START (\d+)$", line):
            self._started = int(m[1])
        elif m := re.match(r"NEXT (\d+)(?: FAILED (\d+))?$", line):
            self._next = (int(m[1]), None if m[2] is None else int(m[2]))
        elif (m := _PAIR.match(line)) and m["fmt"] in self.names:
            index = self.names.index(m["fmt"])
            if m["cuda"]:
                self.cuda_errors.append(index)
            else:
                self.pairs[(index, m["act"])] = [mark[:-5] for mark in m["marks"].split() if mark.endswith(":FAIL")]

    def child_ended(self, first: int, stderr: str = "") -> tuple[int | None, str]:
        """(where the next child starts, None when done; a line to print) after the child started at ``first``."""
        nxt, started = self._next, self._started
        self._next = self._started = None
        if nxt is not None:
            if nxt[1] is not None and nxt[1] not in self.cuda_errors:
                self.cuda_errors.append(nxt[1])
            return (nxt[0] if first < nxt[0] < len(self.names) else None), ""
        lines = stderr.strip().splitlines()
        last = (lines or ["(nothing on stderr)"])[-1].strip()
        tail = "".join("\n    " + line for line in lines[-15:-1])  # the rest of its stderr's end, under the line
        if started is None:
            return None, f"  the check process (from format {first}) died before its first format: {last}{tail}"
        self.died.append(started)
        return (started + 1 if started + 1 < len(self.names) else None), (
            f"  the check process died in format {started} ({self.names[started]}), the next starts after it: "
            f"{last}{tail}")

    def failed_pairs(self) -> list[str]:
        return [f"{self.names[i]} {act} M={','.join(ms)}" for (i, act), ms in sorted(self.pairs.items()) if ms]

    def summary(self) -> tuple[list[str], int]:
        """The closing lines and the exit status (1 on any failure or any pair not run)."""
        total = 2 * len(self.selected)
        ok = sum(1 for (i, _), ms in self.pairs.items() if not ms and i in self.selected)
        blamed = set(self.cuda_errors) | set(self.died)
        not_run = [i for i in self.selected if i not in blamed and any((i, a) not in self.pairs for a in ("f16", "bf16"))]
        lines = [f"check stopped early ({self.stopped})"] if self.stopped else []
        lines.append(f"check: {ok} / {total} (format x act) ok")
        failed = self.failed_pairs()
        if ok == total:
            return lines + ["check failures: none"], 0
        listed = lambda xs: ", ".join(xs) or "none"  # noqa: E731
        names = lambda idx: listed([self.names[i] for i in idx])  # noqa: E731
        lines.append(f"check failures: tolerance [{listed(failed)}]; CUDA error [{names(self.cuda_errors)}]; "
                     f"process died [{names(self.died)}]; not run [{names(not_run)}]")
        return lines, 1
