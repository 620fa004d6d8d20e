"""The kernel cache: the disk layout, atomic publish under a file lock, and the in-process memo.

A key (humming.core.cache_keys, re-exported here) hashes everything that shapes the binary: the unit's source,
the bytes of every header the compiler will read, the compile options (include folders left out: the headers'
contents stand for them), the name expressions, the toolchain's version and the target. Never a file time.

Layout under ``$HUMMING_CACHE_DIR`` (default: the user's cache directory, e.g. ``~/.cache/humming``)::

    v1/<key[:2]>/<key>.cubin   the binary
    v1/<key[:2]>/<key>.json    what it is: target, toolchain, options, lowered names, log, sha256 of the binary
    v1/<key[:2]>/<key>.cu      the unit (with HUMMING_KEEP_SOURCE=1)
    v1/<key[:2]>/<key>.lock    the lock compilers of this key take
    failed/<key>/kernel.cu     a unit that did not compile, with meta.json, for ``python -m humming.tools.compile``

The binary is published first and the JSON last, each through a temporary file and ``os.replace``, under a
``filelock`` lock: a reader sees a whole entry or none. An entry that does not parse or whose binary does not
match its recorded sha256 is reported with a CacheWarning and compiled again.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Hashable, Iterator

import filelock

from humming import knobs
from humming.core import cache_keys
from humming.core.cache_keys import FORMAT as FORMAT, UnitKey as UnitKey  # the keys: humming.core.cache_keys
from humming.core.cache_keys import scan_headers as scan_headers, unit_key as unit_key
from humming.errors import InvalidInputError

LAYOUT = f"v{FORMAT}"
#: How long a compiler waits for another process compiling the same key before giving up.
LOCK_TIMEOUT_S = 900.0

_CACHEDIR_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# humming kernel cache (https://bford.info/cachedir/)\n"


class CacheWarning(UserWarning):
    """A cache entry was unreadable or corrupt and is being compiled again, or the cache cannot be written."""


def cache_root() -> Path:
    """``$HUMMING_CACHE_DIR``, else the user's cache directory for humming."""
    configured = knobs.cache_dir.get()
    if configured:
        return Path(configured).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("humming", appauthor=False))


def enabled() -> bool:
    return not knobs.disable_cache.get()


# ---- entries -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Entry:
    """One published cache entry: the binary and its metadata."""

    key: str
    binary: bytes
    meta: dict[str, Any]


def _entry_dir(key: str) -> Path:
    return cache_root() / LAYOUT / key[:2]


def paths(key: str) -> dict[str, Path]:
    d = _entry_dir(key)
    return {ext: d / f"{key}.{ext}" for ext in ("cubin", "json", "cu", "lock")}


class Corrupt(Exception):
    """An entry exists but cannot be used (the reason is the message)."""


def read(key: str) -> Entry | None:
    """The entry for ``key``; None when there is none; Corrupt when one exists but is unusable."""
    p = paths(key)
    try:
        text = p["json"].read_text()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise Corrupt(f"cannot read {p['json']}: {exc}") from None
    try:
        meta = json.loads(text)
        if meta.get("format") != FORMAT or meta.get("key") != key:
            raise Corrupt(f"{p['json']} is not a format-{FORMAT} entry for this key")
        binary = p["cubin"].read_bytes()
    except (ValueError, AttributeError) as exc:
        raise Corrupt(f"{p['json']} does not parse ({exc})") from None
    except OSError as exc:
        raise Corrupt(f"cannot read {p['cubin']}: {exc}") from None
    if len(binary) != meta.get("binary_size") or hashlib.sha256(binary).hexdigest() != meta.get("binary_sha256"):
        raise Corrupt(f"{p['cubin']} does not match the sha256 recorded in {p['json'].name}")
    return Entry(key, binary, meta)


def warn_corrupt(key: str, reason: str) -> None:
    warnings.warn(f"humming kernel cache entry {key} is corrupt ({reason}); compiling it again",
                  CacheWarning, stacklevel=3)


_warned: set[tuple[str, int | None]] = set()


def warn_unusable(exc: OSError) -> None:
    """Say (once per cache folder and kind of error) that the cache cannot be written and kernels are not kept."""
    root = cache_root()
    if (str(root), exc.errno) in _warned:
        return
    _warned.add((str(root), exc.errno))
    warnings.warn(f"humming kernel cache {root} cannot be written ({type(exc).__name__}: {exc}); kernels compile "
                  "but are kept in this process only. Point HUMMING_CACHE_DIR at a folder this user can write, or "
                  "set HUMMING_DISABLE_CACHE=1 to compile without a cache", CacheWarning, stacklevel=4)


def _atomic_write(path: Path, data: bytes) -> None:
    # Not mkstemp: its 0600 would keep a cache warmed by one user (an image build) from every other user. Mode
    # 0666 less the umask is what any other file written here gets.
    while True:
        tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _ensure_root() -> Path:
    root = cache_root()
    (root / LAYOUT).mkdir(parents=True, exist_ok=True)
    tag = root / "CACHEDIR.TAG"
    if not tag.exists():
        try:
            _atomic_write(tag, _CACHEDIR_TAG.encode())
        except OSError:
            pass  # the tag only tells backup tools to skip the folder
    return root


def lock(key: str) -> filelock.BaseFileLock:
    """The cross-process lock compilers of ``key`` hold while they check, compile and publish."""
    _ensure_root()
    p = paths(key)["lock"]
    p.parent.mkdir(parents=True, exist_ok=True)
    return filelock.FileLock(str(p), timeout=LOCK_TIMEOUT_S)


def require_writable(what: str) -> Path:
    """The cache root, for work whose only product is the cache (``cache warm``, ``precompile(target=...)``);
    InvalidInputError when nothing could be kept there, rather than compiling every kernel for nothing."""
    root = cache_root()
    if not enabled():
        raise InvalidInputError(f"{what} fills the kernel cache, but HUMMING_DISABLE_CACHE is set, so every kernel "
                                "would be compiled and thrown away; unset HUMMING_DISABLE_CACHE")
    try:
        probe = _ensure_root() / LAYOUT / f".probe.{secrets.token_hex(6)}.tmp"
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        os.unlink(probe)
    except OSError as exc:
        raise InvalidInputError(f"{what}: the kernel cache {root} cannot be written ({type(exc).__name__}: {exc}); "
                                "point HUMMING_CACHE_DIR at a folder this user can write") from None
    return root


def writable() -> bool:
    """Whether kernels compiled now would be kept: the cache is on and its folder can be written."""
    try:
        require_writable("compile")
    except InvalidInputError:
        return False
    return True


def try_lock(key: str) -> filelock.BaseFileLock | None:
    """``lock(key)``, acquired; None, with a CacheWarning, when the cache folder cannot hold it (or it timed out)."""
    try:
        held = lock(key)
        held.acquire()
    except OSError as exc:  # read-only, a file where the folder should be, a full disk; filelock.Timeout too
        warn_unusable(exc)
        return None
    return held


def publish(key: str, binary: bytes, meta: dict[str, Any], source: str | None = None) -> Entry:
    """Write an entry (call under ``lock(key)``): binary, then source, then the JSON that makes it visible."""
    p = paths(key)
    p["cubin"].parent.mkdir(parents=True, exist_ok=True)
    full = dict(meta, format=FORMAT, key=key, binary_size=len(binary),
                binary_sha256=hashlib.sha256(binary).hexdigest())
    _atomic_write(p["cubin"], binary)
    if source is not None:
        _atomic_write(p["cu"], source.encode())
    _atomic_write(p["json"], json.dumps(full, indent=1, sort_keys=True).encode())
    return Entry(key, binary, full)


def keep_source(key: str, source: str) -> None:
    """Add the unit to an entry published without it (HUMMING_KEEP_SOURCE=1 on a hit); a CacheWarning if it cannot."""
    p = paths(key)["cu"]
    if not p.is_file():
        try:
            _atomic_write(p, source.encode())
        except OSError as exc:
            warn_unusable(exc)


def save_failure(key: str, source: str, meta: dict[str, Any]) -> Path:
    """Keep a unit that failed to compile (and how it was compiled); returns the saved .cu path: under the cache's
    ``failed/<key>/``, or in a temporary folder when the cache is off or cannot be written."""
    if enabled():
        try:
            return _save_failure(_ensure_root() / "failed" / key, key, source, meta)
        except OSError as exc:
            warn_unusable(exc)
    return _save_failure(Path(tempfile.mkdtemp(prefix=f"humming-failed-{key[:8]}-")), key, source, meta)


def _save_failure(folder: Path, key: str, source: str, meta: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    src = folder / "kernel.cu"
    _atomic_write(src, source.encode())
    _atomic_write(folder / "meta.json", json.dumps(dict(meta, key=key), indent=1, sort_keys=True).encode())
    return src


def read_meta(path: Path) -> dict[str, Any]:
    """The record humming wrote at ``path`` (a failed unit's meta.json, an entry's JSON); InvalidInputError, naming
    the file, when it does not parse."""
    try:
        meta = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        meta = exc
    if not isinstance(meta, dict):
        why = str(meta) if isinstance(meta, Exception) else f"a JSON {type(meta).__name__}, not an object"
        raise InvalidInputError(f"{path} does not parse as humming's record of a unit ({why}); it was damaged or "
                                "written by something else: delete it, or give the .cu with --target and -I")
    return meta


def find_unit(key: str) -> tuple[Path | None, dict[str, Any]]:
    """Where the source and metadata of ``key`` are kept: a failed unit, or a cached entry (source if kept)."""
    failed = cache_root() / "failed" / key
    if (failed / "meta.json").is_file():
        return failed / "kernel.cu", read_meta(failed / "meta.json")
    p = paths(key)
    if p["json"].is_file():
        return (p["cu"] if p["cu"].is_file() else None), read_meta(p["json"])
    raise InvalidInputError(f"no cache entry or failed unit with key {key} under {cache_root()} "
                            "(is HUMMING_CACHE_DIR the one the key was printed under?)")


# ---- the in-process memo -----------------------------------------------------------------------------------
_memo: dict[tuple[str, Hashable], Any] = {}


def memo_get(key: Hashable) -> Any:
    """What this process found or compiled for ``key`` (a cache key, or a spec) under the current cache root."""
    return _memo.get((knobs.cache_dir.get(), key))


def memo_put(key: Hashable, value: Any) -> None:
    _memo[(knobs.cache_dir.get(), key)] = value


def clear_memo() -> None:
    """Forget every kernel this process has looked up or compiled (tests; after editing a header)."""
    _memo.clear()
    _warned.clear()
    cache_keys.forget()


# ---- info and clear ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CacheInfo:
    root: Path
    entries: int
    entry_bytes: int
    failed: int
    other_layouts: tuple[str, ...]  # entry folders of other formats (from other humming versions)
    disabled: bool
    problem: str | None = None  # why kernels cannot be kept there (not a folder, not writable), else None

    def describe(self) -> str:
        lines = [f"kernel cache: {self.root}" + (" (HUMMING_DISABLE_CACHE is set: not used)" if self.disabled else ""),
                 f"  entries: {self.entries} ({self.entry_bytes / 2**20:.1f} MiB)",
                 f"  failed units kept: {self.failed}"]
        if self.other_layouts:
            lines.append(f"  folders of other cache formats: {', '.join(self.other_layouts)}")
        if self.problem:
            lines.append(f"  cannot be used: {self.problem}")
        return "\n".join(lines)


def _files(folder: Path, pattern: str) -> Iterator[Path]:
    return folder.glob(pattern) if folder.is_dir() else iter(())


def info() -> CacheInfo:
    root = cache_root()
    entries, size = 0, 0
    for meta in _files(root / LAYOUT, "*/*.json"):
        entries += 1
        for ext in ("json", "cubin", "cu"):
            f = meta.with_suffix("." + ext)
            if f.is_file():
                size += f.stat().st_size
    failed = sum(1 for d in _files(root / "failed", "*") if d.is_dir())
    others = tuple(sorted(d.name for d in _files(root, "v*") if d.is_dir() and d.name != LAYOUT))
    return CacheInfo(root, entries, size, failed, others, not enabled(), _problem(root))


def _problem(root: Path) -> str | None:
    """Why kernels cannot be kept under ``root`` (the first folder of it that exists decides), or None."""
    there = root
    while not there.exists() and there.parent != there:
        there = there.parent
    if there.exists() and not there.is_dir():
        what = "is not a folder" if there == root else f"is below {there}, which is not a folder"
    elif not os.access(there, os.W_OK | os.X_OK):
        what = "is not writable by this user" if there == root else f"cannot be made in {there} (not writable)"
    else:
        return None
    return (f"{root} {what}: kernels compile but are not kept; point HUMMING_CACHE_DIR at a folder this user can "
            "write, or set HUMMING_DISABLE_CACHE=1")


# The names humming writes under v<n>/<key[:2]>/ and failed/<key>/ (and their temporaries): clear removes these only,
# so a cache folder that is also someone's project (HUMMING_CACHE_DIR=. ) loses nothing else.
_ENTRY_FILE = re.compile(r"[0-9a-f]{32}\.(cubin|json|cu|lock)|\.[0-9a-f]{32}\.(cubin|json|cu)\.\w+\.tmp")
_FAILED_FILE = re.compile(r"kernel\.cu|meta\.json|\.(kernel\.cu|meta\.json)\.\w+\.tmp")


def _ours(top: str, rel: tuple[str, ...]) -> bool:
    if top == "failed":
        return len(rel) == 2 and bool(re.fullmatch(r"[0-9a-f]{32}", rel[0]) and _FAILED_FILE.fullmatch(rel[1]))
    if len(rel) == 1:
        return bool(re.fullmatch(r"\.probe\.\w+\.tmp", rel[0]))
    return len(rel) == 2 and bool(re.fullmatch(r"[0-9a-f]{2}", rel[0]) and _ENTRY_FILE.fullmatch(rel[1]))


@dataclass
class Cleared:
    """What clear did: folders emptied of humming's files (with counts), files left because humming did not write
    them, and removals that failed (with the reason)."""

    removed: list[str]
    kept: list[str]
    failed: list[str]


def clear() -> Cleared:
    """Remove every entry, failed unit and lock under the cache root (every format's), and nothing else."""
    root = cache_root()
    done = Cleared([], [], [])
    for name in sorted(p.name for p in _files(root, "*")):
        top = root / name
        if not (name == "failed" or re.fullmatch(r"v\d+", name)) or top.is_symlink() or not top.is_dir():
            continue
        count = 0
        for folder, dirs, files in os.walk(top, topdown=False):  # bottom-up: a folder is emptied before its rmdir
            rel = Path(folder).relative_to(top).parts
            done.kept.extend(str(Path(folder, d)) for d in dirs if Path(folder, d).is_symlink())
            for f in files:
                path = Path(folder, f)
                if not _ours(name, rel + (f,)):
                    done.kept.append(str(path))
                    continue
                try:
                    path.unlink()
                    count += 1
                except OSError as exc:
                    done.failed.append(f"{path}: {exc.strerror or exc}")
            try:
                os.rmdir(folder)
            except OSError:
                pass  # not empty: it holds what was kept or could not be removed
        if count:
            done.removed.append(f"{top} ({count} files)")
    clear_memo()
    return done
