"""The read ceiling: how fast an SM kernel streams a buffer of a weight matrix's size on this device.

Times read_ceiling.cuh's three readers (plain loads, cp.async rings, bulk-copy rings) over buffers the size of
the issue's packed W4A16 weights, with bench_wna16's Timer (CUDA-graph replay, L2 flushed by read, median), next
to the copy bandwidth the roofline uses. Prints one line a variant: bytes, us, TB/s, % of copy bandwidth.

    PYTHONPATH=. python3 benchmarks/experiments/read_ceiling.py [--mb 121.2,60.6] [--reps 20]
    PYTHONPATH=. python3 benchmarks/experiments/read_ceiling.py --compile-only   # no GPU: build for sm_90a
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from humming.capabilities.model import Target
    from humming.core.launcher import CompiledKernel

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

# (entry, CTAs an SM (a float: a whole grid of that many CTAs, e.g. 224 = the decode tile's 28672 / 128), threads,
# dynamic smem bytes, bytes a CTA's chunk must be a multiple of)
VARIANTS = [
    ("ceiling::read_cp_async<4, 8, true>", 224.0, 128, 4 * 8 * 128 * 16, 8 * 128 * 16),  # the decode tile's grid
    ("ceiling::read_rows<4, 1024>", 224.0, 128, 4 * 16384, 16384),  # and its rows of 2 x 512-byte blocks
    ("ceiling::read_rows<4, 1024>", 448.0, 128, 4 * 16384, 16384),   # 448 x 1 KB columns (two CTAs a tile)
    # the same ring in a larger dynamic shared-memory allocation (the s4 decode kernel's 108544 bytes: two CTAs
    # leave ~12 KB of an SM's 256 KB L1/shared array to L1)
    ("ceiling::read_rows<4, 1024>", 224.0, 128, 92 * 1024, 16384),
    ("ceiling::read_rows<4, 1024>", 224.0, 128, 108544, 16384),
    # the CTAs out of step: each starts 7 (then 1) stages after its left neighbour, wrapping around its column
    ("ceiling::read_rows<4, 1024, 7>", 224.0, 128, 4 * 16384, 16384),
    ("ceiling::read_rows<4, 1024, 1>", 224.0, 128, 4 * 16384, 16384),
    # the same 224 columns under Stream-K's 264 equal ranges (two CTAs an SM): plain, with a fence at each
    # segment change, and ordered by quarters of K
    ("ceiling::read_sk<4, 1024, 1, false>", 2, 128, 4 * 16384, 16384),
    ("ceiling::read_sk<4, 1024, 1, true>", 2, 128, 4 * 16384, 16384),
    ("ceiling::read_sk<4, 1024, 4, false>", 2, 128, 4 * 16384, 16384),
    ("ceiling::read_rows<4, 2048>", 112.0, 256, 4 * 32768, 32768),   # 256-column tiles, one CTA an SM on 112
    ("ceiling::read_ldg<4>", 4, 256, 0, 16 * 256 * 4),
    ("ceiling::read_ldg<8>", 4, 256, 0, 16 * 256 * 8),
    ("ceiling::read_ldg<8>", 8, 256, 0, 16 * 256 * 8),
    ("ceiling::read_cp_async<4, 4, true>", 2, 128, 4 * 4 * 128 * 16, 4 * 128 * 16),    # 8 KB stages
    ("ceiling::read_cp_async<4, 8, true>", 2, 128, 4 * 8 * 128 * 16, 8 * 128 * 16),    # 16 KB: the decode tile's
    ("ceiling::read_cp_async<4, 8, false>", 2, 128, 4 * 8 * 128 * 16, 8 * 128 * 16),
    ("ceiling::read_cp_async<8, 8, true>", 1, 128, 8 * 8 * 128 * 16, 8 * 128 * 16),
    ("ceiling::read_cp_async<6, 8, true>", 2, 128, 6 * 8 * 128 * 16, 8 * 128 * 16),
    ("ceiling::read_bulk<4, 16384>", 2, 128, 4 * 16384, 16384),
    ("ceiling::read_bulk<8, 16384>", 1, 128, 8 * 16384, 16384),
    ("ceiling::read_bulk<6, 16384>", 2, 128, 6 * 16384, 16384),
    ("ceiling::read_bulk<8, 8192>", 2, 128, 8 * 8192, 8192),
]


#: CTAs that record their own span (read_ceiling.cuh's HM_TIMESTAMP_CTAS).
CTAS = 1100
#: read_sk's columns: the decode kernel's 224 tiles of 128 columns (N = 28672).
SK_TILES = 224


def build(target: "Target") -> dict[str, "CompiledKernel"]:
    """The readers of read_ceiling.cuh compiled in one unit for ``target``, by entry name."""
    from humming.core.build import toolchain_for
    from humming.core.launcher import CompiledKernel

    source = '#include "read_ceiling.cuh"\n'
    names = sorted({v[0] for v in VARIANTS})
    binary = toolchain_for(target).compile(source, target=target, name=str(HERE / "read_ceiling.cu"),
                                           extra_options=[f"-I{HERE}"], name_expressions=names)
    return {n: CompiledKernel(key=f"ceiling-{i}", binary=binary.binary, target=target,
                              function=binary.lowered_names[n]) for i, n in enumerate(names)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", default="121.2,60.6", help="buffer sizes in MB (10^6 bytes), comma-separated")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--compile-only", action="store_true", help="build for sm_90a and stop (no GPU needed)")
    args = ap.parse_args()
    if args.compile_only:
        from humming.devices.nvidia import archs

        kernels = build(archs.capabilities("sm_90a").target)
        for name, k in kernels.items():
            print(f"{name:40s} regs {k.resources.registers}")
        return

    import torch

    import humming.devices
    from timing import Timer, copy_bandwidth, replay_span

    target = humming.devices.get(0).target
    kernels = build(target)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    timer = Timer(args.reps)
    copy = copy_bandwidth(timer)
    print(f"copy bandwidth {copy / 1e12:.3f} TB/s ({sms} SMs)")
    # [0]: the fold's sink; [2..5]: the run span; then three int64 a CTA (read_ceiling.cuh's HM_TIMESTAMP_CTAS)
    out = torch.zeros(6 + 6 * CTAS, dtype=torch.int32, device="cuda")
    for mb in (float(x) for x in args.mb.split(",")):
        want = int(mb * 1e6)
        buf = torch.randint(-2**31, 2**31 - 1, (want // 4 + (1 << 20),), dtype=torch.int32, device="cuda")
        for name, per_sm, threads, smem, unit in VARIANTS:
            grid = int(per_sm) if isinstance(per_sm, float) else sms * per_sm
            chunk = max(1, round(want / grid / unit)) * unit  # bytes a CTA
            kernel = kernels[name]
            if chunk * grid > buf.numel() * 4:
                continue
            # read_rows takes rows of the whole grid's width (16 a stage); read_sk rows of SK_TILES columns (a
            # multiple of 64 rows: four parts of whole stages); the others a CTA's chunk in uint4
            args: tuple = (buf, chunk // (unit // 16) if "read_rows" in name else chunk // 16, out)
            if "read_sk" in name:
                rows = max(64, round(want / (SK_TILES * 1024) / 64) * 64)
                if rows * SK_TILES * 1024 > buf.numel() * 4:
                    continue
                args, chunk = (buf, rows, SK_TILES, out), rows * SK_TILES * 1024 // grid
            def fn():
                kernel.launch(grid, threads, smem, args)
            us = timer(fn)
            ctas = min(grid, CTAS)
            replay, kernel_us, split = replay_span(timer, fn, out[2:6 + 6 * ctas].view(torch.int64), ctas)
            nbytes = rows * SK_TILES * 1024 if "read_sk" in name else chunk * grid
            print(f"{mb:7.1f} MB  {name:36s} {per_sm:>5} CTA/SM x {threads:3d}  {nbytes / 1e6:7.1f} MB  {us:7.2f} us  "
                  f"{nbytes / us / 1e6:5.3f} TB/s  {100 * nbytes / us / 1e6 / (copy / 1e12):5.1f}% of copy  (one replay {replay:.2f}, kernel span "
                  f"{kernel_us:.2f} us; " + " ".join(f"{k} {v:.2f}" for k, v in split.items()) + ")", flush=True)
        del buf


if __name__ == "__main__":
    main()
