"""Prints lines of code per folder and every module past the style's 600-line mark (STYLE.md, habit 5)."""

from __future__ import annotations

import collections
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
AIM, SPLIT = 400, 600


def main() -> int:
    per_folder: dict[str, int] = collections.Counter()
    long: list[tuple[int, str]] = []
    for path in sorted(ROOT.glob("**/*")):
        rel = path.relative_to(ROOT)
        if path.suffix not in (".py", ".cuh") or rel.parts[0] in ("tests", ".venv", ".git", ".whl"):
            continue
        n = sum(1 for line in path.read_text(errors="replace").splitlines() if line.strip())
        per_folder[str(rel.parent)] += n
        if n > AIM:
            long.append((n, str(rel)))
    print("lines of code per folder (non-blank):")
    for folder, n in sorted(per_folder.items()):
        print(f"  {n:6d}  {folder}")
    for n, rel in sorted(long, reverse=True):
        print(f"  {'SPLIT' if n > SPLIT else 'long '} {n:5d}  {rel} (aim under {AIM}, split past {SPLIT})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
