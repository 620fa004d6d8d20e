"""``python -m conformance``: the same suite and options as ``humming conformance``."""

from __future__ import annotations

import argparse
import sys

from humming.cli.conformance import add_arguments, run
from humming.errors import HummingError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance",
                                     description="humming's conformance suite (same options as `humming conformance`)")
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except HummingError as exc:
        print(f"conformance: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
