"""The wgmma rate of this device for the WnA16 kernels' register-A form (m64nNk16 bf16 -> f32).

Runs wgmma_rate.cuh's kernel (one CTA an SM, 1..3 warpgroups, no global memory) for the variants below and prints
MACs per clock per SM (the longest warpgroup's clock64 span) and the dense TFLOP/s of the launch. DEQ = 1 puts the
s4 bf16 dequantisation of the four-fragment kernel (gemm_dense_wgmma.cuh) in front of every wgmma: the k-loop of
the M = 64 kernel without its loads. The H200's bf16 peak is 2048 MACs a clock an SM (989 TFLOP/s at 1.83 GHz).

    PYTHONPATH=. python3 benchmarks/experiments/wgmma_rate.py [--iters 2048]
    PYTHONPATH=. python3 benchmarks/experiments/wgmma_rate.py --compile-only   # no GPU: build for sm_90a
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from mma_rate import experiment_target, span_and_time  # noqa: E402
ROOT = HERE.parent.parent
# (N, G accumulators (wgmmas a k16 step), P groups left pending, DEQ, S k16 steps a group), warpgroups per CTA
VARIANTS = [
    ((64, 4, 1, 0, 1), (2,)),     # the M = 64 kernel's wgmmas alone
    ((64, 4, 1, 1, 1), (1, 2)),   # with its dequantisation (the kernel's order: all G accumulators a k16 step)
    ((64, 4, 1, 2, 1), (1, 2)),   # the same ALU work into a sink
    ((64, 4, 1, 3, 1), (2,)),     # interleaved with the wgmma issues, three A buffers
    ((64, 4, 1, 5, 1), (2,)),     # B moving each stage, its descriptor per thread to the compiler (R2UR), as the kernel
    ((64, 4, 1, 6, 1), (2,)),     # B moving each stage, uniform descriptor
    ((64, 4, 1, 0, 2), (2,)),     # S = 2 / 4 k16 steps back to back on each accumulator
    ((64, 4, 1, 2, 2), (1, 2)),
    ((64, 4, 1, 1, 2), (1, 2)),
    ((64, 4, 0, 1, 2), (2,)),
    ((64, 4, 1, 0, 4), (2,)),
    ((64, 4, 1, 2, 4), (1, 2)),
    ((64, 4, 0, 1, 4), (1,)),
    ((64, 2, 1, 1, 1), (2, 4)),
    ((64, 2, 1, 1, 2), (2, 4)),
    ((64, 2, 1, 1, 4), (2, 3)),
    ((64, 1, 1, 2, 4), (2, 4)),
    ((64, 1, 1, 1, 4), (2, 4)),
    ((128, 2, 1, 1, 1), (2,)),
    ((128, 2, 1, 1, 2), (2,)),
    ((32, 4, 1, 1, 1), (2,)),
    ((32, 4, 1, 1, 4), (2,)),
    ((16, 4, 1, 1, 4), (2, 4)),
]

# the weights dequantised to shared memory, both operands shared (wgmma_ss_rate): (N, DEQ, C consumers, P producers)
SS_VARIANTS = [
    (256, 0, 1, 0), (256, 0, 2, 0),   # the tensor pipe alone, one / two warpgroups
    (256, 1, 1, 0), (256, 1, 2, 0),   # each consumer dequantises its own next stage
    (256, 2, 1, 1), (256, 2, 1, 2), (256, 2, 2, 1),   # producer warpgroups dequantise
    (256, 3, 1, 2), (256, 3, 2, 1),   # producers store the words as read (no ALU work)
    (128, 0, 2, 0), (128, 1, 2, 0), (128, 2, 2, 2),
]


def name(v: tuple[int, int, int, int, int], w: int) -> str:
    n, g, p, deq, s = v
    return f"wgrate::wgmma_rate<{n}, {g}, {p}, {deq}, {w}, {s}>"


def ss_name(v: tuple[int, int, int, int]) -> str:
    return "wgrate::wgmma_ss_rate<{}, {}, {}, {}>".format(*v)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iters", type=int, default=2048)
    ap.add_argument("--compile-only", action="store_true")
    args = ap.parse_args()
    target = experiment_target(args.compile_only)
    from humming.core.build import toolchain_for
    from humming.core.launcher import CompiledKernel
    names = [name(v, w) for v, wgs in VARIANTS for w in wgs] + [ss_name(v) for v in SS_VARIANTS]
    inc = [f"-I{HERE}", f"-I{ROOT / 'humming/devices/nvidia/include'}", f"-I{ROOT / 'humming/kernels/include'}"]
    binary = toolchain_for(target).compile('#include "wgmma_rate.cuh"\n', target=target, name=str(HERE / "wgmma_rate.cu"),
                                           extra_options=inc, name_expressions=names)
    kernels = {n: CompiledKernel(key=f"wgrate-{i}", binary=binary.binary, target=target,
                                 function=binary.lowered_names[n]) for i, n in enumerate(names)}
    if args.compile_only:
        for n, k in kernels.items():
            print(f"{n:40s} regs {k.resources.registers}")
        print("\n".join(ln for ln in binary.log.splitlines() if "spill" in ln))
        return

    import torch
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    out = torch.zeros(4, dtype=torch.int32, device="cuda")
    smem = 65536 + 1024
    print(f"{sms} SMs; MACs a clock an SM (longest warpgroup's span) and the launch's dense TFLOP/s")
    print(f"{'N, G, P, DEQ, S':19s} {'WGs':>4s} {'MAC/clk/SM':>11s} {'TFLOP/s':>8s} {'clk/wgmma':>10s}")
    for v, wgs in VARIANTS:
        n, g = v[0], v[1]
        for w in wgs:
            kernel = kernels[name(v, w)]
            cycles, ms = span_and_time(lambda: kernel.launch(sms, 128 * w, smem, (args.iters, out)), out)
            wgmmas = args.iters * 4 * g * w
            macs = wgmmas * 64 * n * 16
            print(f"{str(v):19s} {w:4d} {macs / cycles:11.0f} {2 * macs * sms / ms / 1e9:8.0f} "
                  f"{cycles / wgmmas:10.1f}", flush=True)
    print(f"\nboth operands shared (A 64 x 16 activations, B 16 x N weights); stage = 4 k16 steps\n"
          f"{'N, DEQ, C, P':19s} {'WGs':>4s} {'MAC/clk/SM':>11s} {'TFLOP/s':>8s} {'clk/wgmma':>10s}")
    for v in SS_VARIANTS:
        n, _, c, p = v
        kernel = kernels[ss_name(v)]
        smem_ss = 1024 + 8192 + 32768 + c * 2 * n * 128
        cycles, ms = span_and_time(lambda: kernel.launch(sms, 128 * (c + p), smem_ss, (args.iters, out)), out)
        wgmmas = args.iters * 4 * c
        macs = wgmmas * 64 * n * 16
        print(f"{str(v):19s} {c + p:4d} {macs / cycles:11.0f} {2 * macs * sms / ms / 1e9:8.0f} "
              f"{cycles / wgmmas:10.1f}", flush=True)


if __name__ == "__main__":
    main()
