"""Reproduce one kernel compile: ``python -m humming.tools.compile <cache key | unit.cu> [-o out.cubin]``.

With a key (the repro line of a CompileError, or a cache entry kept with HUMMING_KEEP_SOURCE=1) the unit is
recompiled exactly as it was: same target, options, include folders, name expressions and program name (its
folder is where the unit's quoted includes resolve). With a ``.cu`` path, those come from a ``meta.json`` (or
``<key>.json``) beside it, else from ``--target`` and ``-I``. It never reads or writes the cache: it always runs
the compiler, then prints the log and the resource report.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Sequence

from humming.capabilities.model import Target
from humming.core import cache
from humming.core.codegen import CORE_INCLUDE_DIR
from humming.core.resources import entry_functions, kernel_resources, parse_elf
from humming.devices.toolchain import Toolchain
from humming.errors import CompileError, HummingError, InvalidInputError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m humming.tools.compile", description=__doc__.splitlines()[0])
    p.add_argument("unit", help="a cache key (32 hex digits) or the path of a .cu unit")
    p.add_argument("--target", help="arch to compile for, e.g. sm_90a (default: the one recorded with the unit)")
    p.add_argument("--vendor", default=None, help="the target's vendor when --target is given (default: nvidia)")
    p.add_argument("-I", dest="include", action="append", default=[], help="an extra include folder")
    p.add_argument("-o", "--output", help="write the cubin here")
    return p


def _load(unit: str) -> tuple[str, Path, dict[str, Any]]:
    """(source, its path, the recorded metadata) of a key or a .cu path."""
    path = Path(unit)
    if path.suffix == ".cu" or path.exists():
        if not path.is_file():
            raise InvalidInputError(f"{unit}: no such file")
        meta: dict[str, Any] = {}
        for candidate in (path.with_name("meta.json"), path.with_suffix(".json")):
            if candidate.is_file():
                meta = cache.read_meta(candidate)
                break
        return path.read_text(), path, meta
    src, meta = cache.find_unit(unit)
    if src is None:
        raise InvalidInputError(f"cache entry {unit} was stored without its source; run the program that compiled "
                                "it again with HUMMING_KEEP_SOURCE=1 (a cache hit then keeps the source too), with "
                                "the same HUMMING_CACHE_DIR, then rerun this")
    return src.read_text(), src, meta


def _program_name(path: Path, meta: dict[str, Any]) -> str:
    """The program name the unit was compiled under: its quoted includes resolve beside it, and the log names it.
    ``main_dir`` (absolute) keeps a relative name right from another working folder."""
    if not meta.get("name"):
        return str(path)
    if meta.get("main_dir"):
        return str(Path(meta["main_dir"]) / Path(meta["name"]).name)
    return str(meta["name"])


def main(argv: Sequence[str] | None = None, *, toolchain: Toolchain | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        source, path, meta = _load(args.unit)
        if args.target:
            target = Target(args.vendor or meta.get("target", {}).get("vendor", "nvidia"), args.target)
        elif meta.get("target"):
            t = meta["target"]
            if not isinstance(t, dict) or not {"vendor", "arch"} <= t.keys():
                raise InvalidInputError(f"{path}: its recorded target {t!r} names no vendor and arch; pass --target")
            target = Target(t["vendor"], t["arch"], t.get("family", ""))
        else:
            raise InvalidInputError(f"{path} has no recorded target; pass --target (e.g. --target sm_90a)")
        if toolchain is None:
            from humming.core.build import toolchain_for

            toolchain = toolchain_for(target)
        dirs = [Path(d) for d in args.include] + [Path(d) for d in meta.get("include_dirs", [])]
        if not dirs:
            dirs = [CORE_INCLUDE_DIR.parent, CORE_INCLUDE_DIR]
        extra = [f"-I{d}" for d in dirs] + [o for o in meta.get("extra_options", []) if not o.startswith("-I")]
        names = meta.get("name_expressions", [])
        name = _program_name(path, meta)
        shown = str(path) if name == str(path) else f"{path} (as {name})"
        print(f"compiling {shown} for {target} with {toolchain.version()}", file=sys.stderr)
        out = toolchain.compile(source, target=target, name=name, extra_options=extra, name_expressions=names)
    except CompileError as exc:
        print(f"compile failed: {exc}", file=sys.stderr)
        return 1
    except HummingError as exc:
        print(f"humming.tools.compile: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    if out.log.strip():
        print(out.log.rstrip())
    image = parse_elf(out.binary)
    for fn in entry_functions(image):
        print(kernel_resources(out.binary, fn, out.log).describe())
    if args.output:
        Path(args.output).write_bytes(out.binary)
        print(f"wrote {args.output} ({len(out.binary)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
