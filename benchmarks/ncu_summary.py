"""Summarise an ncu SASS source page: stall reasons over all samples, instruction mix, hottest instructions.

    ncu -i REPORT.ncu-rep --page source --print-source sass --csv > sass.csv
    python3 benchmarks/ncu_summary.py sass.csv [--top 25]
"""

from __future__ import annotations

import argparse
import collections
import csv
import re


def _int(text: str) -> int:
    return int((text or "0").replace(",", "") or 0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    with open(args.csv, newline="") as fh:
        rows = list(csv.reader(fh))
    start = next(i for i, r in enumerate(rows) if "Address" in r and "Source" in r)
    hdr, data = rows[start], rows[start + 1:]
    col = {h: i for i, h in enumerate(hdr)}
    stalls = [h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
    total = collections.Counter()
    mix = collections.Counter()
    for r in data:
        for h in stalls:
            total[h] += _int(r[col[h]])
        op = re.sub(r"^@!?U?P\w+\s+", "", r[col["Source"]].strip()).split(" ")[0]
        mix[op] += _int(r[col["Instructions Executed"]])
    samples = sum(total.values()) or 1
    print(f"stall reasons ({samples} samples):")
    for h, v in total.most_common(12):
        print(f"  {h[6:]:<20} {100 * v / samples:5.1f}%")
    executed = sum(mix.values()) or 1
    print(f"instruction mix ({executed} warp instructions executed):")
    for op, v in mix.most_common(20):
        print(f"  {op:<24} {100 * v / executed:5.1f}%")
    print("hottest instructions (samples, top three stall reasons):")
    for r in sorted(data, key=lambda r: -_int(r[col["# Samples"]]))[:args.top]:
        top = sorted(((_int(r[col[h]]), h[6:]) for h in stalls), reverse=True)[:3]
        print(f"  {_int(r[col['# Samples']]):6} {r[col['Source']].strip()[:64]:<64} {top}")


if __name__ == "__main__":
    main()
