"""benchmarks/bench_wna16.py's rows, table and JSON on the CPU: main() as a device step runs it, with only what needs
a GPU faked (the timer, the copy bandwidth and bf16 rate, the tuner's plans, the weights, the launch), so that the
real row construction, table printing and JSON writing run."""

from __future__ import annotations

import json
import os
import sys
import types
from pathlib import Path

import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "benchmarks"))

import bench_wna16 as B  # noqa: E402
from timing import roofline_us  # noqa: E402

from humming.core import dtypes  # noqa: E402
from humming.core.problem import GemmProblem  # noqa: E402

BW, RATE = 4.263e12, 789e12
SINGLE, CHAIN, CUBLAS = 40.0, 35.0, 118.6
FAILING = (8192, 28672, 16)  # (n, k, m) whose tuner plan fails to launch


class _Torch:
    """torch with device="cuda" dropped (the tensors are small CPU ones) and the CUDA calls answered."""

    cuda = types.SimpleNamespace(empty_cache=lambda: None, get_device_name=lambda: "FAKE GPU (CPU test)")

    def __getattr__(self, name: str):
        return getattr(torch, name)

    @staticmethod
    def randn(*shape, device=None, **kw):
        return torch.randn(*shape, **kw)

    @staticmethod
    def empty(*shape, device=None, **kw):
        return torch.empty(*shape, **kw)


class _Plan:
    schedule = "stream-k"
    spec = types.SimpleNamespace(tile=types.SimpleNamespace(describe=lambda: "tile"))


@pytest.fixture
def bench(monkeypatch, tmp_path):
    """Runs main() with argv; returns (stdout, the JSON written, the state of each output at its first launch)."""
    import humming.core.build as build
    import humming.ops as hg

    first_seen: dict[tuple, bool] = {}

    def launch(out, x, *rest):
        n, k = rest[-3], rest[-2]
        key = (n, k, x.shape[0])
        first_seen.setdefault(key, bool(torch.isnan(out).all()))  # poisoned before the first timed launch?
        if key == FAILING:
            raise RuntimeError("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: too many resources requested for launch")
        out.zero_()

    class Timer:
        def __init__(self, reps, flush="read"):
            pass

        def __call__(self, fn):
            fn()
            return SINGLE

    monkeypatch.setattr(B, "torch", _Torch())
    monkeypatch.setattr(B, "Timer", Timer)
    monkeypatch.setattr(B, "require_cuda", lambda script: None)
    monkeypatch.setattr(B, "unwarmed_then_warmed", lambda timer, *m: [RATE, BW])
    monkeypatch.setattr(B, "read_bandwidth", lambda timer: 4.0e12)
    monkeypatch.setattr(B, "chain_time", lambda timer, fns: CHAIN)
    monkeypatch.setattr(B, "bench_weights", lambda fmt, n, k, keep_q, act=None: (types.SimpleNamespace(
        data=None, scales=None, zeros=None, chscale=None, gscale=None), None))
    monkeypatch.setattr(B, "baseline_cases", lambda shapes, ms, timer, chain=0: {
        (n, k, m): {"cublas": CUBLAS, "fp8": 70.0} for n, k in shapes for m in ms})
    monkeypatch.setattr(hg, "_device", lambda i: (None, types.SimpleNamespace(plan=lambda *a, **kw: _Plan()), 132))
    monkeypatch.setattr(hg, "launch", launch)
    monkeypatch.setattr(build, "compile_many", lambda specs: [])

    def run(*argv: str):
        path = tmp_path / "out.json"
        monkeypatch.setattr(sys, "argv", ["bench_wna16.py", *argv, "--json", str(path)])
        B.main()
        return json.loads(path.read_text()), first_seen
    return run


# the formats step's own arguments (device_batch.sh), one format, M = 1 and 64
FORMATS_STEP = ("--quick", "--m", "1,64", "--reps", "100", "--no-baselines", "--chain", "8", "--formats", "w4a16 s4 g128")


def _rows(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.strip().startswith(("28672x8192", "8192x28672", "28672x4096"))
            and " M=" not in line]


def test_a_chain_without_a_cublas_baseline_prints_a_dash_not_zero(bench, capsys) -> None:
    bench(*FORMATS_STEP)
    rows = _rows(capsys.readouterr().out)
    assert rows
    for row in rows:
        if "failed" in row:
            continue
        assert "0.00x" not in row and " 0.0 " not in row, row
        assert row.split()[-2:] == ["-", "-"], row  # the chain's cuBLAS and its x: not measured


def test_the_chain_has_a_bytes_only_percentage_beside_the_flop_capped_one(bench, capsys) -> None:
    data, _ = bench(*FORMATS_STEP)
    header = next(line for line in capsys.readouterr().out.splitlines() if line.lstrip().startswith("shape"))
    names = header.split()
    assert len(names) == len(set(names)), f"two columns share a name: {header}"
    assert "chain%bytes" in names and "chain%roof" in names
    by = {(r["shape"], r["m"]): r for r in data["rows"] if r["us"] is not None}
    for (shape, m), r in by.items():
        n, k = map(int, shape.split("x"))
        problem = GemmProblem(m, n, k, B.FORMATS["w4a16 s4 g128"], dtypes.bf16, dtypes.bf16)
        assert r["chain_pct_bytes"] == pytest.approx(100 * roofline_us(problem, BW) / CHAIN)
        assert r["chain_pct_roof"] == pytest.approx(100 * roofline_us(problem, BW, RATE) / CHAIN)  # kept as it was
    # M = 64 on 28672 x 8192: the FLOPs are the longer term, the two differ (RESULTS' 55.3 against 42.9)
    m64 = by[("28672x8192", 64)]
    assert m64["chain_pct_bytes"] < 0.9 * m64["chain_pct_roof"]


def test_a_case_whose_plan_fails_to_launch_stays_in_the_table_and_the_json(bench, capsys) -> None:
    data, _ = bench("--quick", "--m", "1,16", "--reps", "25", "--formats", "w4a16 s4 g128")
    failed = [r for r in data["rows"] if r["us"] is None]
    assert [(r["shape"], r["m"]) for r in failed] == [("8192x28672", 16)]
    assert "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES" in failed[0]["error"]
    table = _rows(capsys.readouterr().out)
    assert any(line.split()[:2] == ["8192x28672", "16"] and "failed" in line for line in table)
    assert len(table) == 6  # every (shape, M) has its line


def test_the_json_says_which_device_and_how_it_was_timed(bench) -> None:
    data, _ = bench(*FORMATS_STEP)
    assert data["device"] == "FAKE GPU (CPU test)"
    assert (data["reps"], data["flush"], data["chain"]) == (100, "read", 8)
    assert "commit" in data and "torch" in data and data["argv"][:2] == ["--quick", "--m"]


def test_every_timed_output_is_poisoned_with_nan_before_its_first_launch(bench) -> None:
    _, first_seen = bench("--quick", "--m", "1,16", "--reps", "25", "--no-baselines", "--formats", "w4a16 s4 g128")
    assert first_seen and all(first_seen.values()), first_seen


def test_verify_counts_the_outputs_never_written() -> None:
    from humming.core import quantized
    from humming.core.formats import QuantFormat

    torch.manual_seed(0)
    q = quantized.quantize(torch.randn(64, 256), QuantFormat(B.FORMATS["w4a16 s4 g128"]))
    x = torch.randn(4, 256).to(torch.bfloat16)
    from humming.core import reference

    xd, wd = reference.reference_operands(x, q)
    out = (xd @ wd.T).to(torch.bfloat16)
    assert B.verified(out, x, q) == "ok"
    out[2, 8:24] = float("nan")  # a tile the kernel skipped: still the poison
    assert B.verified(out, x, q).startswith("16 of 256 outputs never written (NaN)")
