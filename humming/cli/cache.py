"""``humming cache info`` (where the kernel cache is, what it holds) and ``humming cache clear`` (empty it)."""

from __future__ import annotations

import argparse
import json

from humming.core import cache


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("cache", help="the kernel cache: where it is and what it holds; clear it",
                                   description="The compiled-kernel cache ($HUMMING_CACHE_DIR).")
    sub = parser.add_subparsers(dest="cache_command", required=True)
    info = sub.add_parser("info", help="print the cache folder, its entries and their size")
    info.add_argument("--json", action="store_true", help="print the figures as JSON")
    sub.add_parser("clear", help="remove every cached kernel and kept failure (asks nothing)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.cache_command == "info":
        found = cache.info()
        if args.json:
            print(json.dumps({"root": str(found.root), "entries": found.entries, "bytes": found.entry_bytes,
                              "failed": found.failed, "other_formats": list(found.other_layouts),
                              "disabled": found.disabled}, indent=1))
        else:
            print(found.describe())
        return 0
    removed = cache.clear()
    if removed:
        for line in removed:
            print(f"removed {line}")
    else:
        print(f"nothing to remove under {cache.cache_root()}")
    return 0
