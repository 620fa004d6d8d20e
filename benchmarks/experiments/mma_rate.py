"""The mma.sync rate of this device: cycles an m16n8k16 (or m16n8k32) takes one SM sub-partition.

Runs mma_rate.cuh's kernel (register operands, CHAINS independent accumulators a warp, one CTA an SM) for five
operand kinds, 1 / 2 / 4 warps a sub-partition and 1..8 chains, and prints cycles per MMA per sub-partition (the
longest warp's clock64 span over the MMAs its sub-partition issued) and the dense TFLOP/s that implies.

    PYTHONPATH=. python3 benchmarks/experiments/mma_rate.py [--iters 4096]
    PYTHONPATH=. python3 benchmarks/experiments/mma_rate.py --compile-only   # no GPU: build for sm_90a
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
KINDS = {0: ("bf16 m16n8k16 f32", 16), 1: ("f16 m16n8k16 f32", 16), 2: ("f16 m16n8k16 f16", 16),
         3: ("s8 m16n8k32 s32", 32), 4: ("e4m3 m16n8k32 f32", 32)}
CHAINS = (1, 2, 4, 8)
WARPS = (4, 8, 16)


def experiment_target(compile_only: bool) -> Any:
    """sm_90a for a compile on the CPU machine, else device 0's target (torch imported first: torch imported after
    an NVRTC build failed to start on the device)."""
    if compile_only:
        from humming.devices.nvidia import archs
        return archs.capabilities("sm_90a").target
    import torch  # noqa: F401
    import humming.devices
    return humming.devices.get(0).target


def span_and_time(launch: Callable[[], None], out: Any) -> tuple[int, float]:
    """One warm-up launch, then one timed: the longest span the kernel recorded in out[2..3] and the event ms."""
    import torch
    launch()
    torch.cuda.synchronize()
    out.zero_()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    launch()
    end.record()
    torch.cuda.synchronize()
    return int(out[2:4].view(torch.int64).item()), start.elapsed_time(end)


def names() -> list[str]:
    return [f"mmarate::mma_rate<{k}, {c}>" for k in KINDS for c in CHAINS]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iters", type=int, default=4096)
    ap.add_argument("--compile-only", action="store_true")
    args = ap.parse_args()
    target = experiment_target(args.compile_only)
    from humming.core.build import toolchain_for
    from humming.core.launcher import CompiledKernel
    binary = toolchain_for(target).compile('#include "mma_rate.cuh"\n', target=target, name=str(HERE / "mma_rate.cu"),
                                           extra_options=[f"-I{HERE}"], name_expressions=names())
    kernels = {n: CompiledKernel(key=f"mmarate-{i}", binary=binary.binary, target=target,
                                 function=binary.lowered_names[n]) for i, n in enumerate(names())}
    if args.compile_only:
        for n, k in kernels.items():
            print(f"{n:32s} regs {k.resources.registers}")
        return

    import torch
    props = torch.cuda.get_device_properties(0)
    sms = props.multi_processor_count
    out = torch.zeros(4, dtype=torch.int32, device="cuda")
    print(f"{sms} SMs; cycles per MMA per sub-partition (longest warp) and the dense TFLOP/s of the launch")
    print(f"{'operands':20s} " + " ".join(f"{f'{w // 4}w x {c}ch':>16s}" for w in WARPS for c in CHAINS))
    for kind, (label, k) in KINDS.items():
        cells = []
        for warps in WARPS:
            for chains in CHAINS:
                kernel = kernels[f"mmarate::mma_rate<{kind}, {chains}>"]
                cycles, ms = span_and_time(lambda: kernel.launch(sms, 32 * warps, 0, (args.iters, out)), out)
                per_smsp = args.iters * chains * warps / 4
                flops = 2 * 16 * 8 * k * args.iters * chains * warps * sms
                cells.append(f"{cycles / per_smsp:6.2f} {flops / ms / 1e9:6.0f}TF")
        print(f"{label:20s} " + " ".join(f"{c:>16s}" for c in cells), flush=True)


if __name__ == "__main__":
    main()
