"""benchmarks/profile_wna16.py's tile variants (no GPU): a variant built with an experiment switch plans with the
sizes that switch gives its cubin, so that the tuner fits its CTAs an SM to what the kernel really takes."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))

import profile_wna16  # noqa: E402
from bench_wna16 import FORMATS  # noqa: E402

import humming.devices  # noqa: E402
from humming import knobs  # noqa: E402
from humming.core import dtypes  # noqa: E402
from humming.core.build import compile_spec  # noqa: E402
from humming.core.problem import GemmProblem  # noqa: E402
from humming.devices.nvidia import tuning  # noqa: E402


def test_a_variant_with_a_switch_plans_with_the_sizes_its_cubin_exports(tmp_path: Path) -> None:
    problem = GemmProblem(1, 28672, 8192, FORMATS["w4a16 s4 g128"], dtypes.bf16, dtypes.bf16)
    caps = humming.devices.target("sm_90a")
    three = "1,1,2,1,2,256,3,8,3,1,0,0,1"
    text = f"tuner; tuner +HM_ZERO_ON_SUMS=0; {three}; {three} +HM_ZERO_ON_SUMS=0,HM_FIX_ON_ACT=0"
    tuner, *plans = profile_wna16.variant_plans(problem, caps, tuning.TUNER, 132, text)
    with knobs.scope(HUMMING_CACHE_DIR=str(tmp_path)):
        for plan in plans:
            assert compile_spec(plan.spec).exports["smem_bytes"] == plan.smem, plan.spec.describe()
    assert [p.smem for p in plans[:2]] == [tuner.smem, tuner.smem]
    assert [p.spec.defines for p in plans] == ["", "HM_ZERO_ON_SUMS=0", "", "HM_ZERO_ON_SUMS=0,HM_FIX_ON_ACT=0"]
    # each build is its own kernel: the switch reaches the source
    assert plans[1].spec.render() != plans[0].spec.render()


def test_plan_only_prints_each_variant_its_resources_and_the_variants_that_do_not_apply(
        tmp_path: Path, capsys) -> None:
    args = argparse.Namespace(
        format="w4a16 s4 g128", n=4096, k=4096, m="1", act="bf16", define="", ablate=0, arch="sm_90a", sms=132,
        tiles="tuner data-parallel; 1,1,2,1,2,96,3,8,2")
    with knobs.scope(HUMMING_CACHE_DIR=str(tmp_path)):
        profile_wna16.plan_only(args)
    lines = capsys.readouterr().out.splitlines()
    rows = [line for line in lines if " M=1 " in line]
    assert [row.split(" M=1 ")[1].split()[0] for row in rows] == ["tuner", "v1"], lines
    assert all("regs " in row and "(0 LDL/STL in the loop)" in row and "CTAs/SM " in row for row in rows), rows
    assert "data-parallel" in rows[1]
    assert any(line.startswith("  skip ") and "bk=96" in line for line in lines), lines
