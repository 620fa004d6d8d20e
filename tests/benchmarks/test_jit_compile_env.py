"""benchmarks/jit_compile.py's measuring processes run with the driver's compute cache off: NVRTC 12.9+ keeps PTX and
cubins there wherever a driver is present, and a kernel any earlier process compiled then comes back in ~0.07 s,
which the table would print as a cold compile (NOTES-wna16 run 38)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "benchmarks"))

import jit_compile  # noqa: E402


@pytest.mark.parametrize("mode", ["cold", "warm"])
def test_every_measuring_process_has_the_driver_compute_cache_off(monkeypatch: pytest.MonkeyPatch, tmp_path: Any,
                                                                  mode: str) -> None:
    seen: dict[str, Any] = {}

    def fake_run(cmd: list[str], env: dict[str, str], **kw: Any) -> subprocess.CompletedProcess[str]:
        seen.update(cmd=cmd, env=env)
        return subprocess.CompletedProcess(cmd, 0, stdout=json.dumps({"kernels": 1}) + "\n", stderr="")

    monkeypatch.setenv("CUDA_CACHE_DISABLE", "0")  # a caller's setting does not turn it back on
    monkeypatch.setattr(jit_compile.subprocess, "run", fake_run)
    assert jit_compile._run_worker(mode, "toy", "sm_90a", str(tmp_path)) == {"kernels": 1}
    assert seen["env"]["CUDA_CACHE_DISABLE"] == "1"
    assert seen["env"]["HUMMING_CACHE_DIR"] == str(tmp_path)
    assert seen["cmd"][2:4] == ["--worker", mode]
