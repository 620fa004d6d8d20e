"""The ``humming`` command: one sub-command module each (devices, explain, cache, ...), registered here."""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

from humming.errors import HummingError

#: Sub-command modules; each exposes register(subparsers) and sets ``func`` on its parser.
COMMANDS = ("humming.cli.devices", "humming.cli.explain", "humming.cli.cache", "humming.cli.conformance")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="humming", description="Quantized GEMM kernels compiled at run time.")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue  # a sub-command not built yet in this checkout
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except HummingError as exc:
        print(f"humming: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `humming devices | head`: the reader left; say nothing more
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
