"""JIT figures: cold compile (one kernel, a layer's set), warm cache hit, host cost of a launch; CPU or GPU.

    python benchmarks/jit_compile.py [--target sm_90a] [--json out.json] [--skip-gemm]

Each cold or warm figure is measured in a fresh process (``python benchmarks/jit_compile.py --worker ...``) on
a cache folder of its own, so that it includes what a user's first call pays: importing cuda.bindings,
loading NVRTC, hashing the headers. With CUDA_CACHE_DISABLE=1: where a driver is present, NVRTC 12.9+ keeps its own
PTX and cubins in the driver's compute cache (~/.nv/ComputeCache) and serves a kernel compiled by any earlier
process from there, so on a GPU machine that had run the tests a "cold" W4A16 kernel took 0.07 s (2026-12-06,
NOTES-wna16 run 38) where a real compile takes ~0.7. Kernels:

- ``toy``: humming.kernels.toy_axpy (f32, 4 x 256), the kernel that tests the JIT alone;
- ``W4A16``: the dense GEMM the target's tuner plans for GPTQ int4 g128 weights, f16, N = K = 8192: one kernel
  (M = 1, the decode tile) and the whole set a layer needs over M = 1..65536 (every power of two; the tuner
  maps them onto a few distinct specs).

Without a GPU the target defaults to sm_90a (the H200's), the warm hit has no module load, and the launch
figure is the Python side only (a driver that returns at once). Targets: one W4A16 kernel <= 1.0 s cold, the
layer's set <= 2 s cold, a warm hit <= 5 ms per kernel with the module load, a launch <= 10 us of host time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
LAYER_M = tuple(2**i for i in range(17))  # 1 .. 65536


def _gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def _target(arch: str | None) -> Any:
    import humming.devices

    if arch:
        return humming.devices.target(arch)
    if _gpu():
        return humming.devices.current().capabilities
    return humming.devices.target("sm_90a")


def _specs(kernel: str, caps: Any) -> list[Any]:
    """The specs of one benchmark kernel set: "toy", "gemm-one" (M = 1) or "gemm-layer" (M = 1..65536)."""
    if kernel in ("toy", "toy-set"):
        from humming.core import dtypes
        from humming.kernels.toy_axpy import ToyAxpySpec

        if kernel == "toy":
            return [ToyAxpySpec(target=caps.target)]
        return [ToyAxpySpec(target=caps.target, dtype=d, vec=v) for d in (dtypes.f16, dtypes.bf16, dtypes.f32)
                for v in (1, 2, 4, 8)]
    from humming.core import dtypes, presets
    from humming.core.problem import GemmProblem
    from humming.devices.manager import get_manager

    tuner = get_manager().tuner(caps.target)
    if tuner is None:  # the plugin's humming_tuner hook not wired yet: its tuning module, found by vendor name
        import importlib

        tuner = getattr(importlib.import_module(f"humming.devices.{caps.target.vendor}.tuning"), "TUNER", None)
    if tuner is None:
        raise RuntimeError(f"no tuner for {caps.target}")
    weight = presets.get("gptq_int4").weight
    sm_count = next((s.sm_count for s in caps.skus if s.sm_count), 132)
    ms = (1,) if kernel == "gemm-one" else LAYER_M  # gemm-layer and gemm-layer-procs
    specs = [tuner.plan(GemmProblem(m, 8192, 8192, weight, dtypes.f16, dtypes.f16), caps, sm_count).spec for m in ms]
    return list(dict.fromkeys(specs))


# ---- workers: one measurement in this (fresh) process ----------------------------------------------------------
def _worker(mode: str, kernel: str, arch: str | None) -> dict[str, Any]:
    t0 = time.perf_counter()
    from humming.core import build

    caps = _target(arch)
    specs = _specs(kernel, caps)
    gpu = _gpu()
    out: dict[str, Any] = {"kernels": len(specs), "import_s": time.perf_counter() - t0}
    if gpu:  # the CUDA context is the application's, made before any kernel is asked for
        import torch

        torch.empty(1, device="cuda")
    if mode == "cold":
        start = time.perf_counter()
        if len(specs) > 1:
            kernels = build.compile_many(specs, processes=kernel.endswith("-procs"))
        else:
            kernels = [build.compile_spec(specs[0])]
        out["seconds"] = time.perf_counter() - start
        out["workers"] = min(build.workers(), len(specs))
        out["per_kernel_compile_s"] = [k.compile_seconds for k in kernels]
        out["registers"] = [k.resources.registers for k in kernels]
        if not kernel.endswith("-procs"):  # worker processes publish; this process then reads the cache
            assert not any(k.from_cache for k in kernels), "the cold cache was not empty"
    elif mode == "warm":
        start = time.perf_counter()  # once per process: import cuda.bindings, load NVRTC (its version keys)
        build.toolchain_for(caps.target).version()
        out["once_ms"] = (time.perf_counter() - start) * 1e3
        times = []
        for spec in specs:  # as a model's first forward pass would: each kernel from disk, then loaded
            start = time.perf_counter()
            k = build.compile_spec(spec)
            if gpu:
                k.prepare()  # the module load
            times.append(time.perf_counter() - start)
            assert k.from_cache, f"{spec.describe()} was not in the cache"
        out["first_ms"] = times[0] * 1e3
        out["rest_ms"] = [t * 1e3 for t in times[1:]]
        out["module_load"] = gpu
    return out


def measuring_env(cache_dir: str) -> dict[str, str]:
    """The environment of a measuring process: this humming, the cache folder given (empty for a cold compile), no
    progress bar, and the driver's compute cache off (the module docstring says why)."""
    return dict(os.environ, HUMMING_CACHE_DIR=cache_dir, HUMMING_PROGRESS="0", CUDA_CACHE_DISABLE="1",
                PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))


def _run_worker(mode: str, kernel: str, arch: str | None, cache_dir: str) -> dict[str, Any]:
    env = measuring_env(cache_dir)
    cmd = [sys.executable, __file__, "--worker", mode, "--kernel", kernel] + (["--target", arch] if arch else [])
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1200)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"{' '.join(cmd[2:])} failed: {last}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# ---- launch overhead -------------------------------------------------------------------------------------------
#: The driver calls the null driver answers with (CUDA_SUCCESS, a value); every other call gets (CUDA_SUCCESS,).
#: A call humming unpacks as a pair must be here (cuThreadExchangeStreamCaptureMode, since launcher.relaxed_capture).
_NULL_DRIVER_PAIRS = ("cuCtxGetCurrent", "cuLibraryLoadData", "cuLibraryGetKernel", "cuKernelGetFunction",
                      "cuThreadExchangeStreamCaptureMode")


def _launch_overhead(caps: Any) -> dict[str, float]:
    from humming.core.build import compile_spec
    from humming.kernels import toy_axpy
    from humming.kernels.toy_axpy import ToyAxpySpec

    kernel = compile_spec(ToyAxpySpec(target=caps.target, vec=1, block=32))
    if not _gpu():
        from humming.core import launcher

        class NullDriver:  # answers every call at once: what is left is humming's Python and the bindings' types
            def __getattr__(self, name: str) -> Any:
                from cuda.bindings import driver

                if name.startswith("cu") and name[2:3].isupper():
                    return lambda *a: (0, 1) if name in _NULL_DRIVER_PAIRS else (0,)
                return getattr(driver, name)

        class Ptr:
            is_cuda = True

            def data_ptr(self) -> int:
                return 1 << 20

        launcher._driver = lambda: NullDriver()  # type: ignore[assignment]
        launcher._torch_hooks = lambda: ((lambda: 0), (lambda d: 0))  # type: ignore[assignment]
        args: tuple = (Ptr(), Ptr(), Ptr(), 1.0, 32)
        sync = lambda: None  # noqa: E731
        op = None
    else:
        import torch

        x, y = torch.randn(32, device="cuda"), torch.randn(32, device="cuda")
        args = (torch.empty_like(x), x, y, 1.0, 32)
        sync = torch.cuda.synchronize
        op = toy_axpy.axpy.op()
        op(x, y, 1.0)
    kernel.launch(1, 32, None, args)
    sync()

    def median_us(fn: Any, batches: int = 30, per: int = 200) -> float:
        samples = []
        for _ in range(batches):
            start = time.perf_counter()
            for _ in range(per):
                fn()
            samples.append((time.perf_counter() - start) / per * 1e6)
            sync()  # a short queue, so that the driver never waits for room
        return statistics.median(samples)

    out = {"launch_us": median_us(lambda: kernel.launch(1, 32, None, args))}
    if op is not None:
        x, y = args[1], args[2]
        out["torch_op_us"] = median_us(lambda: op(x, y, 1.0))
    return out


# ---- the report ------------------------------------------------------------------------------------------------
def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--target", help="arch to compile for (default: the GPU's, else sm_90a)")
    p.add_argument("--json", help="also write the figures here")
    p.add_argument("--skip-gemm", action="store_true", help="only the toy kernel")
    p.add_argument("--worker", choices=("cold", "warm"), help=argparse.SUPPRESS)
    p.add_argument("--kernel", default="toy", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        print(json.dumps(_worker(args.worker, args.kernel, args.target)))
        return 0

    from humming.core.compiler import nvrtc_version

    caps = _target(args.target)
    gpu = _gpu()
    where = "GPU " + __import__("torch").cuda.get_device_name() if gpu else "CPU only"
    info = {"machine": f"{where}, {os.cpu_count()} CPU cores, {platform.processor() or platform.machine()}",
            "nvrtc": "%d.%d" % nvrtc_version(), "target": caps.target.arch, "rows": []}
    rows: list[tuple[str, str, str, str]] = []

    def row(what: str, kernels: str, value: str, goal: str) -> None:
        rows.append((what, kernels, value, goal))
        print(f"  {what:<44} {kernels:<34} {value:>12}   {goal}", flush=True)

    print(f"JIT figures on {info['machine']}; NVRTC {info['nvrtc']}; target {caps.target.arch}")
    sets = [("toy", "toy_axpy f32 4x256"), ("toy-set", "toy_axpy, 12 variants")]
    if not args.skip_gemm:
        sets += [("gemm-one", "W4A16 gemm_dense, M=1 tile"), ("gemm-layer", "W4A16 gemm_dense, M=1..65536"),
                 ("gemm-layer-procs", "the same set, worker processes")]
    for kernel, label in sets:
        with tempfile.TemporaryDirectory(prefix="humming-bench-") as folder:
            try:
                cold = _run_worker("cold", kernel, args.target, folder)
                warm = _run_worker("warm", kernel, args.target, folder)
            except RuntimeError as exc:
                row("skipped", label, "-", str(exc).splitlines()[0][:80])
                continue
        n = cold["kernels"]
        goal = "<= 2 s" if kernel.startswith("gemm-layer") else ("<= 1.0 s" if kernel == "gemm-one" else "")
        what = f"cold compile, fresh process ({n} kernels, {cold['workers']} workers)" if n > 1 else \
            "cold compile, fresh process"
        row(what, label, f"{cold['seconds']:.2f} s", goal)
        if n > 1:
            row("  slowest single kernel of the set", label, f"{max(cold['per_kernel_compile_s']):.2f} s", "")
        load = " + module load" if warm["module_load"] else ""
        row("once per process: import cuda.bindings, load NVRTC", label, f"{warm['once_ms']:.1f} ms", "")
        row(f"warm hit, first kernel in a fresh process{load}", label, f"{warm['first_ms']:.1f} ms",
            "<= 5 ms" if not warm["rest_ms"] else "")
        if warm["rest_ms"]:
            row(f"warm hit, each further kernel{load} (median)", label,
                f"{statistics.median(warm['rest_ms']):.2f} ms", "<= 5 ms")
        info["rows"].append({"kernel": kernel, "cold": cold, "warm": warm})
    launch = _launch_overhead(caps)
    side = "" if gpu else " (Python side, null driver)"
    row(f"launch, CompiledKernel.launch{side}", "toy_axpy", f"{launch['launch_us']:.2f} us", "<= 10 us")
    if "torch_op_us" in launch:
        row("launch, torch op humming::toy_axpy (eager)", "toy_axpy", f"{launch['torch_op_us']:.2f} us", "")
    info["launch"] = launch
    print("\n| measurement | kernels | " + where + " | target |\n|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    if args.json:
        Path(args.json).write_text(json.dumps(info, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
