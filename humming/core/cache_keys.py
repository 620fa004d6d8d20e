"""Cache keys: a unit's content key, over its source, the bytes of every header the compiler will read, the
options, the name expressions, the toolchain's version and the target (humming.core.cache keeps the entries).

Headers are found by following ``#include`` lines through the same search the compiler makes: quoted includes
beside the including file as it was opened (a symlink's own folder), then the include folders; pre-included
headers from the working folder, then the include folders. Headers in inactive ``#if`` branches are hashed too,
which can only make keys more specific. Never a file time.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from humming.capabilities.model import Target

#: Bump when the entry format or the meaning of a key changes; old entries are then simply not found.
FORMAT = 1

_INCLUDE_RE = re.compile(rb'#[ \t]*include[ \t]*([<"])([^>"\r\n]+)[>"]')


@dataclass(frozen=True)
class UnitKey:
    """A unit's cache key and the headers it was computed over."""

    key: str
    headers: tuple[tuple[str, str], ...]  # (path the include resolved to, sha256 of its bytes)
    unresolved: tuple[str, ...]  # includes found on no search folder (compiler built-ins, inactive branches)


_scan_memo: dict[str, tuple[int, int, str, tuple[tuple[str, str], ...]]] = {}


@dataclass(frozen=True)
class _Closure:
    """A remembered scan: what to re-check before trusting it again, and what it found."""

    opened: tuple[tuple[str, int, int], ...]  # every header as the compiler opens it, with its time and size
    absent: tuple[str, ...]  # every place looked at first and found empty: a header put there later shadows
    headers: tuple[tuple[str, str], ...]
    unresolved: tuple[str, ...]

    def still_valid(self) -> bool:
        return all(_same(p, m, z) for p, m, z in self.opened) and not any(map(os.path.isfile, self.absent))


_closure_memo: dict[tuple, _Closure] = {}


def _directives(data: bytes) -> tuple[tuple[str, str], ...]:
    """The ``#include`` lines of a file: (``"`` or ``<``, name). A search without ``^`` is 13x faster."""
    out = []
    for m in _INCLUDE_RE.finditer(data):
        start = data.rfind(b"\n", 0, m.start()) + 1
        if data[start:m.start()].strip(b" \t") == b"":  # only blanks before the '#': a directive
            out.append((m.group(1).decode(), m.group(2).decode().strip()))
    return tuple(out)


def _scan(path: str) -> tuple[int, int, str, tuple[tuple[str, str], ...]]:
    """(time, size, sha256, include directives) of a header; re-read when its size or time changes (memo only)."""
    st = os.stat(path)
    hit = _scan_memo.get(path)
    if hit is not None and hit[0] == st.st_mtime_ns and hit[1] == st.st_size:
        return hit
    with open(path, "rb") as f:
        data = f.read()
    entry = (st.st_mtime_ns, st.st_size, hashlib.sha256(data).hexdigest(), _directives(data))
    _scan_memo[path] = entry
    return entry


def _resolve(kind: str, name: str, here: str | None, search: Sequence[str], absent: dict[str, None]) -> str | None:
    """The path the compiler opens for an include (as opened: a symlink is not followed), each miss on the way
    noted in ``absent``. The C preprocessor's rule, as NVRTC applies it: "x" looks beside the including file
    first, <x> does not."""
    candidates = [os.path.join(here, name)] if kind == '"' and here is not None else []
    for candidate in candidates + [os.path.join(d, name) for d in search]:
        if os.path.isfile(candidate):
            return candidate
        absent[candidate] = None
    return None


def scan_headers(source: str, *, main_dir: Path | None, include_dirs: Sequence[Path],
                 pre_includes: Sequence[str] = ()) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
    """Every header ``source`` includes, transitively: ((resolved path, sha256), ...) and the unresolved names.

    ``pre_includes`` (``--pre-include`` / ``-include``) are looked up as NVRTC does: in the working folder first,
    then along the search path. A nested quoted include is looked up beside the header as it was opened, which
    for a symlink is the link's folder, not its target's. The closure is remembered; a later call re-checks each
    header's size and time, and every place looked at before the one used, and rescans when one changed.
    """
    search = tuple(str(d) for d in include_dirs)
    top = _directives(source.encode())
    pre = tuple(('"', name) for name in pre_includes)
    here = None if main_dir is None else str(main_dir)
    cwd = os.getcwd()
    memo_key = (top, pre, here, cwd, search)
    hit = _closure_memo.get(memo_key)
    if hit is not None and hit.still_valid():
        return hit.headers, hit.unresolved
    headers: dict[str, str] = {}  # real path -> sha256
    opened: dict[str, tuple[str, int, int]] = {}
    absent: dict[str, None] = {}
    missing: set[str] = set()
    seen: set[tuple[str, str]] = set()
    real: dict[str, str] = {}  # each path's realpath once a scan: the closure reaches most headers and folders often

    def realpath(path: str) -> str:
        if path not in real:
            real[path] = os.path.realpath(path)
        return real[path]

    todo: list[tuple[tuple[tuple[str, str], ...], str | None]] = [(top, here), (pre, cwd)]
    while todo:
        includes, where = todo.pop()
        for kind, name in includes:
            path = _resolve(kind, name, where, search, absent)
            if path is None:
                missing.add(name)
                continue
            # One file reached through two folders may resolve its own quoted includes differently in each.
            state = (realpath(path), realpath(os.path.dirname(path)))
            if state in seen:
                continue
            seen.add(state)
            mtime, size, digest, nested = _scan(path)
            headers[state[0]] = digest
            opened[path] = (path, mtime, size)
            todo.append((nested, state[1]))
    found = _Closure(tuple(opened.values()), tuple(absent), tuple(sorted(headers.items())), tuple(sorted(missing)))
    _closure_memo[memo_key] = found
    return found.headers, found.unresolved


def _same(path: str, mtime: int, size: int) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False
    return st.st_mtime_ns == mtime and st.st_size == size


def _pre_includes(options: Sequence[str]) -> tuple[str, ...]:
    """The headers ``--pre-include=x`` / ``-include=x`` / ``-include x`` options put before the unit."""
    out, take = [], False
    for opt in options:
        if take:
            out.append(opt)
            take = False
        elif opt in ("--pre-include", "-include"):
            take = True
        elif opt.startswith(("--pre-include=", "-include=")):
            out.append(opt.split("=", 1)[1])
    return tuple(out)


def _strip_includes(options: Sequence[str]) -> list[str]:
    out, skip = [], False
    for opt in options:
        if skip:
            skip = False
            continue
        if opt in ("-I", "--include-path"):
            skip = True
            continue
        if opt.startswith(("-I", "--include-path=")):
            continue
        out.append(opt)
    return out


def unit_key(source: str, *, target: Target, toolchain_version: str, options: Sequence[str],
             include_dirs: Sequence[Path], main_dir: Path | None, name_expressions: Sequence[str] = ()) -> UnitKey:
    """The content key of one unit (32 hex digits of a sha256)."""
    headers, unresolved = scan_headers(source, main_dir=main_dir, include_dirs=include_dirs,
                                       pre_includes=_pre_includes(options))
    record = {
        "format": FORMAT,
        "source": hashlib.sha256(source.encode()).hexdigest(),
        # The digest and the file name, not the folder: the same wheel in two environments gives one key.
        "headers": sorted([Path(p).name, d] for p, d in headers),
        "unresolved": list(unresolved),
        "options": _strip_includes(options),
        "name_expressions": list(name_expressions),
        "toolchain": toolchain_version,
        "target": [target.vendor, target.arch, target.family],
    }
    text = json.dumps(record, sort_keys=True, separators=(",", ":"))
    return UnitKey(hashlib.sha256(text.encode()).hexdigest()[:32], headers, unresolved)


def forget() -> None:
    """Drop every remembered scan (humming.core.cache.clear_memo)."""
    _scan_memo.clear()
    _closure_memo.clear()
