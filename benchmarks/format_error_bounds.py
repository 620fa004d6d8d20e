"""Per preset: the measured dequantize(quantize(w)) error on random Gaussian weights next to its theoretical bound.

    python benchmarks/format_error_bounds.py [--n 4096] [--k 4096] [--seed 0] [--markdown]

Columns (all relative to ||w||, Frobenius norms, float64):
- measured: ||dequantize(quantize(w)) - w|| / ||w||;
- model:    what uniform rounding noise predicts from the element grid and the stored scales: each element in
            range errs uniformly within +-half a grid step (variance step^2 / 12), a clamped one by its distance
            to the grid's end;
- bound:    the hard bound, sqrt(sum of per-element bound^2) / ||w||, with the per-element bound of
            ``humming.core.reference.quantization_error_bound`` (measured <= bound always holds);
- worst:    max over elements of |error| / per-element bound (<= 1);
- clamped:  the share of elements beyond the grid's end (scale rounding, or OCP MX's floor rule).
"""

from __future__ import annotations

import argparse
import sys

import torch

from humming.core import presets
from humming.core.quantized import dequantize, quantize
from humming.core.reference import quantization_error_bound


def measure(name: str, n: int, k: int, seed: int) -> dict[str, float]:
    """The figures of one preset on an [n, k] standard Gaussian weight."""
    fmt = presets.get(name)
    gen = torch.Generator().manual_seed(seed)
    w = torch.randn(n, k, generator=gen)
    g_idx = None
    if fmt.weight.act_order:
        assert fmt.weight.scale.group is not None
        g_idx = (torch.randperm(k, generator=gen) % (k // fmt.weight.scale.group)).int()
    q = quantize(w, fmt, g_idx=g_idx)
    wd = w.double()
    err = dequantize(q, torch.float64) - wd
    bound, clamped = quantization_error_bound(w, q)
    norm = float(wd.norm())
    return {
        "measured": float(err.norm()) / norm,
        "model": float(torch.where(clamped, bound**2, bound**2 / 3).sum().sqrt()) / norm,
        "bound": float(bound.norm()) / norm,
        "worst": float((err.abs() / bound.clamp_min(1e-300)).max()),
        "clamped": float(clamped.double().mean()),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1024, help="rows (out_features)")
    parser.add_argument("--k", type=int, default=4096, help="columns (in_features); a multiple of 128")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--markdown", action="store_true", help="print a markdown table (for docs/formats.md)")
    args = parser.parse_args(argv)
    by_weight: dict[object, list[str]] = {}  # presets that share a weight format share its figures
    for name in presets.names():
        by_weight.setdefault(presets.get(name).weight, []).append(name)
    rows = [(", ".join(names), measure(names[0], args.n, args.k, args.seed)) for names in by_weight.values()]
    cols = ("measured", "model", "bound", "worst", "clamped")
    if args.markdown:
        print(f"| preset | {' | '.join(cols)} |")
        print("| --- |" + " ---: |" * len(cols))
        for name, r in rows:
            print(f"| {name} | " + " | ".join(f"{r[c]:.4f}" for c in cols) + " |")
    else:
        print(f"W ~ N(0, 1), {args.n} x {args.k}, seed {args.seed}; errors relative to ||W||")
        print(f"{'preset':48s}" + "".join(f"{c:>10s}" for c in cols))
        for name, r in rows:
            print(f"{name:48s}" + "".join(f"{r[c]:10.4f}" for c in cols))
    bad = [name for name, r in rows if r["worst"] > 1 + 1e-5]
    if bad:
        print(f"bound violated by: {', '.join(bad)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
