"""compile_many in threads against worker processes, cold, on sets of a few to many kernels.

Each measurement is a fresh process with an empty humming cache and the driver's compute cache off
(CUDA_CACHE_DISABLE=1: NVRTC 12.9+ reads it wherever a driver is present), compiling one set for sm_90a with one
worker a core. The modes alternate (threads, processes, processes, threads) so that neither gains from running
second. Sets: "layer" (one W4A16 layer's kernels over M = 1..65536, as jit_compile.py) and "formats" (the same for
several weight formats: the size of a precompile of a mixed model, or of a test run).

    python benchmarks/experiments/compile_scaling.py [--sets layer,formats] [--rounds 1]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from jit_compile import LAYER_M, measuring_env  # noqa: E402

FORMATS = {"layer": ("gptq_int4",),
           "formats": ("gptq_int4", "awq_int4", "mxfp4", "nvfp4_w4a16", "fp8_channel_w8a16", "gptq_int8")}


def _specs(which: str) -> list[Any]:
    import humming.devices
    from humming.core import dtypes, presets
    from humming.core.problem import GemmProblem
    from humming.devices.manager import get_manager

    caps = humming.devices.target("sm_90a")
    tuner = get_manager().tuner(caps.target)
    specs = []
    for name in FORMATS[which]:
        weight = presets.get(name).weight
        for m in LAYER_M:
            specs.append(tuner.plan(GemmProblem(m, 8192, 8192, weight, dtypes.bf16, dtypes.bf16), caps, 132).spec)
    return list(dict.fromkeys(specs))


def _worker(which: str, mode: str) -> dict[str, Any]:
    from humming.core import build

    specs = _specs(which)
    start = time.perf_counter()
    kernels = build.compile_many(specs, processes=(mode == "processes"))
    seconds = time.perf_counter() - start
    each = [k.compile_seconds for k in kernels]
    return {"kernels": len(specs), "workers": min(build.workers(), len(specs)), "seconds": seconds,
            "sum_s": sum(each), "max_s": max(each)}


def _measure(which: str, mode: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="humming-scaling-") as cache_dir:
        done = subprocess.run([sys.executable, __file__, "--worker", which, mode], env=measuring_env(cache_dir),
                              capture_output=True, text=True, timeout=1200)
    if done.returncode != 0:
        raise RuntimeError(f"{which} {mode} failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sets", default="layer,formats")
    p.add_argument("--rounds", type=int, default=1, help="ABBA rounds per set")
    p.add_argument("--json")
    p.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        print(json.dumps(_worker(*args.worker)))
        return 0
    rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for which in args.sets.split(","):
        for _ in range(args.rounds):
            for mode in ("threads", "processes", "processes", "threads"):
                r = _measure(which, mode)
                rows.setdefault((which, mode), []).append(r)
                print(f"  {which:8s} {mode:9s} {r['kernels']:3d} kernels, {r['workers']:2d} workers: "
                      f"{r['seconds']:6.2f} s (each: sum {r['sum_s']:6.1f} s, slowest {r['max_s']:5.2f} s)", flush=True)
    print(f"\n| set | mode | kernels | workers | seconds (median of {2 * args.rounds}) | runs |")
    print("|---|---|---|---|---|---|")
    for (which, mode), rs in rows.items():
        secs = [r["seconds"] for r in rs]
        print(f"| {which} | {mode} | {rs[0]['kernels']} | {rs[0]['workers']} | {statistics.median(secs):.2f} | "
              f"{', '.join(f'{s:.2f}' for s in secs)} |")
    if args.json:
        Path(args.json).write_text(json.dumps({f"{w}/{m}": rs for (w, m), rs in rows.items()}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
