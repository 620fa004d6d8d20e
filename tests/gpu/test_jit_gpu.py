"""On a CUDA device: the toy kernel is right for odd sizes, runs from the cache in a fresh process, inside a CUDA
graph and under torch.compile(fullgraph=True), launches with clusters where the target has them, and costs
little host time per launch. Expected values come from torch on the same inputs, computed in float64."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import humming.devices  # noqa: E402
from humming import knobs  # noqa: E402
from humming.core import cache, dtypes  # noqa: E402
from humming.core.build import compile_spec  # noqa: E402
from humming.kernels import toy_axpy  # noqa: E402
from humming.kernels.toy_axpy import ToyAxpySpec  # noqa: E402

pytestmark = pytest.mark.gpu

REPO = Path(__file__).resolve().parents[2]
TORCH_DTYPES = {dtypes.f32: torch.float32, dtypes.f16: torch.float16, dtypes.bf16: torch.bfloat16}
#: Rounding of one f32 fma result to the output type, with headroom (f32 math, one rounding at the store).
TOLERANCE = {dtypes.f32: 1e-6, dtypes.f16: 1e-3, dtypes.bf16: 8e-3}


@pytest.fixture(scope="module")
def device():
    return humming.devices.current()


def expected(x, y, alpha):
    return (alpha * x.double() + y.double()).to(x.dtype)


def close(got, want, dtype) -> None:
    err = ((got.double() - want.double()).abs() / (want.double().abs() + 1)).max().item()
    assert err <= TOLERANCE[dtype], f"max relative error {err:.3g} over the {dtype} tolerance {TOLERANCE[dtype]}"


@pytest.mark.parametrize("dtype", [dtypes.f32, dtypes.f16, dtypes.bf16])
@pytest.mark.parametrize("n", [1, 37, 1023, 100_003])
@pytest.mark.parametrize("async_copy", [False, True])
def test_the_toy_kernel_is_right_for_odd_sizes(device, dtype, n, async_copy):
    if async_copy and not device.capabilities.memory.cp_async:
        pytest.skip(f"{device.target.arch} has no cp.async (memory.cp_async)")
    spec = ToyAxpySpec(target=device.target, dtype=dtype, vec=2, block=128, async_copy=async_copy)
    x = torch.randn(n, device="cuda", dtype=TORCH_DTYPES[dtype])
    y = torch.randn(n, device="cuda", dtype=TORCH_DTYPES[dtype])
    out = torch.full_like(y, float("nan"))
    alpha = float(torch.rand(()).item() * 4 - 2)
    toy_axpy.run(out, x, y, alpha, spec=spec)
    torch.cuda.synchronize()
    close(out, expected(x, y, alpha), dtype)


def test_a_kernel_over_48_kib_of_shared_memory_opts_in_and_runs(device):
    spec = ToyAxpySpec(target=device.target, dtype=dtypes.f32, vec=8, block=1024)  # 2 x 32 KiB tiles
    kernel = compile_spec(spec)
    assert kernel.exports["smem_bytes"] == 65536
    if (device.capabilities.limits.shared_memory_per_block_optin or 0) < 65536:
        pytest.skip(f"{device.target.arch} allows less than 64 KiB of shared memory per block")
    x, y = torch.randn(300_001, device="cuda"), torch.randn(300_001, device="cuda")
    out = torch.empty_like(x)
    toy_axpy.run(out, x, y, 0.75, spec=spec)
    torch.cuda.synchronize()
    close(out, expected(x, y, 0.75), dtypes.f32)


_FRESH = textwrap.dedent("""
    import json, sys, time
    t0 = time.perf_counter()
    import torch
    from humming.core import build
    from humming.kernels.toy_axpy import ToyAxpySpec, device_target, run
    target = device_target(0)
    spec = ToyAxpySpec(target=target, vec=4, block=256)
    x = torch.arange(1000, device="cuda", dtype=torch.float32)
    y = torch.ones(1000, device="cuda")
    out = torch.empty_like(x)
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    kernel = build.compile_spec(spec)
    kernel.prepare()
    t2 = time.perf_counter()
    run(out, x, y, 3.0, spec=spec)
    torch.cuda.synchronize()
    ok = bool(torch.equal(out, 3 * x + y))
    print(json.dumps({"from_cache": kernel.from_cache, "ok": ok, "hit_and_load_ms": (t2 - t1) * 1e3,
                      "process_ms": (time.perf_counter() - t0) * 1e3}))
""")


def test_a_compiled_kernel_runs_from_the_cache_in_a_fresh_process(device, tmp_path):
    with knobs.scope(HUMMING_CACHE_DIR=str(tmp_path)):
        cache.clear_memo()
        compile_spec(ToyAxpySpec(target=device.target, vec=4, block=256))
        cache.clear_memo()
    # Keep the parent's PYTHONPATH after the repository: a carried NVRTC wheel found through it is part of the
    # cache key, and a child that cannot see it would key (and miss) on another NVRTC.
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH", "")]))
    env = dict(os.environ, HUMMING_CACHE_DIR=str(tmp_path), PYTHONPATH=path)
    done = subprocess.run([sys.executable, "-c", _FRESH], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"fresh process: cache hit + module load {got['hit_and_load_ms']:.2f} ms")
    assert got["from_cache"] and got["ok"]


def test_launches_are_captured_and_replayed_by_a_cuda_graph(device):
    spec = ToyAxpySpec(target=device.target, dtype=dtypes.f16, vec=4, block=256)
    n = 77_777
    x = torch.randn(n, device="cuda", dtype=torch.float16)
    y = torch.randn(n, device="cuda", dtype=torch.float16)
    mid, out = torch.empty_like(x), torch.empty_like(x)
    compile_spec(spec).prepare()  # loading is not a stream operation: do it before capturing
    toy_axpy.run(mid, x, y, 1.5, spec=spec)  # one eager run first, as torch advises before capturing
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        toy_axpy.run(mid, x, y, 1.5, spec=spec)
        toy_axpy.run(out, mid, y, 2.0, spec=spec)  # out = 2 * (1.5 x + y) + y: two captured launches
    for _ in range(2):  # new values in the same buffers: the replay must see them
        x.copy_(torch.randn_like(x))
        y.copy_(torch.randn_like(y))
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        want = (2.0 * (1.5 * x.double() + y.double()).half().double() + y.double()).half()
        close(out, want, dtypes.f16)


def test_the_op_works_under_torch_compile_fullgraph(device):
    op = toy_axpy.axpy.op()  # registered before dynamo traces

    def f(x, y):
        return torch.ops.humming.toy_axpy(x * 2, y, 0.5) + op(y, x, -1.0)

    compiled = torch.compile(f, fullgraph=True)
    x = torch.randn(4099, device="cuda", dtype=torch.bfloat16)
    y = torch.randn(4099, device="cuda", dtype=torch.bfloat16)
    got = compiled(x, y)
    want = (0.5 * (x * 2).double() + y.double()).bfloat16().double() + (-1.0 * y.double() + x.double()).bfloat16().double()
    close(got, want.bfloat16(), dtypes.bf16)


def test_the_op_works_under_torch_compile_with_cuda_graphs(device):
    op = toy_axpy.axpy.op()
    compiled = torch.compile(lambda x, y: op(x, y, 3.0), fullgraph=True, mode="reduce-overhead")
    x, y = torch.randn(10_001, device="cuda"), torch.randn(10_001, device="cuda")
    for _ in range(3):  # warm-up, record, replay
        got = compiled(x, y).clone()
    close(got, expected(x, y, 3.0), dtypes.f32)


def test_a_cluster_launch_runs_where_the_target_has_clusters(device):
    if not device.capabilities.memory.clusters:
        pytest.skip(f"{device.target.arch} has no thread-block clusters (memory.clusters)")
    spec = ToyAxpySpec(target=device.target, vec=1, block=128)
    kernel = compile_spec(spec)
    n = 128 * 8 + 5
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    kernel.launch(10, 128, None, (out, x, y, -0.25, n), cluster=2)
    torch.cuda.synchronize()
    close(out, expected(x, y, -0.25), dtypes.f32)


# The host cost of a launch is measured by benchmarks/jit_compile.py (a timed assertion is not a benchmark).


def test_a_kernel_first_launched_inside_a_graph_capture_loads_there_and_replays(device):
    # A first launch loads the kernel's library and opts in to its shared memory (CompiledKernel._state). Inside a CUDA
    # graph capture in torch's default (global) mode those driver calls run under a relaxed capture mode
    # (launcher.relaxed_capture), so the kernel loads and only its launch goes into the graph.
    if (device.capabilities.limits.shared_memory_per_block_optin or 0) < 65536:
        pytest.skip(f"{device.target.arch} allows less than 64 KiB of shared memory per block")
    spec = ToyAxpySpec(target=device.target, dtype=dtypes.f32, vec=8, block=1024)  # 64 KiB: the opt-in too
    with knobs.scope(HUMMING_KERNEL_DEFINES=[f"HM_TEST_FRESH={os.getpid()}{torch.randint(1 << 30, ()).item()}"]):
        kernel = compile_spec(spec)  # a source of its own: a kernel no launch of this process has loaded
    assert not kernel._states
    x, y = torch.randn(70_001, device="cuda"), torch.randn(70_001, device="cuda")
    out = torch.full_like(x, float("nan"))
    blocks = -(-x.numel() // kernel.exports["tile"])
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        kernel.launch(blocks, spec.block, None, (out, x, y, 0.25, x.numel()))
    assert kernel._states and bool(torch.isnan(out).all())  # loaded during the capture; nothing ran yet
    graph.replay()
    torch.cuda.synchronize()
    close(out, expected(x, y, 0.25), dtypes.f32)
