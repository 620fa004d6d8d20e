"""bench_wna16 --check on the CPU: the parent process as written, its children replaced by a script that prints what
a child prints (tests/gpu/test_gemm_dense_gpu.py's 24 formats, f16 and bf16, seven M each) and fails as told: a
tolerance failure, a child that dies inside one format, a child that dies before its first, the step's timeout.
Also the child's own lines (check_matrix with the cases faked), and --only's unknown ids."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"
sys.path.insert(0, str(BENCH))

import bench_wna16 as B  # noqa: E402

NAMES = list(B._case_module().FORMATS)
MS = (1, 7, 16, 33, 128, 1000, 4096)

CHILD = textwrap.dedent('''
    import os, signal, sys, time
    names = os.environ["FAKE_NAMES"].split(",")
    scenario = os.environ["FAKE_SCENARIO"]
    MS = (1, 7, 16, 33, 128, 1000, 4096)
    first = int(sys.argv[sys.argv.index("--check-from") + 1])
    only = [o for o in sys.argv[sys.argv.index("--only") + 1].split(",") if o]
    print("compiled the test kernels in 1.0 s", flush=True)
    if scenario == "compile":
        raise RuntimeError("NVRTC: out of memory")
    for i in range(first, len(names)):
        if only and names[i] not in only:
            continue
        print(f"START {i}", flush=True)
        if scenario == "crash" and i == 8:  # e5m2_channel: SIGSEGV in the driver, no NEXT line
            os.abort()
        if scenario == "timeout" and i == 10:  # the step's `timeout` signals the parent while this child runs
            time.sleep(1.0)  # the parent has read what came before
            os.kill(os.getppid(), signal.SIGTERM)
            time.sleep(30)
        for act in ("f16", "bf16"):
            fail = scenario == "fail" and i == 5 and act == "bf16"
            marks = " ".join(f"{m}:{'FAIL' if fail and m == 1000 else 'ok'}" for m in MS)
            if fail:
                print(f"    {names[i]} bf16 M=1000: 12 of 200000 outputs outside tolerance", flush=True)
            print(f"  {names[i]:<22} {act:<5} {marks}", flush=True)
    print(f"NEXT {len(names)}", flush=True)
''')

DRIVER = textwrap.dedent('''
    import sys
    sys.path.insert(0, {bench!r})
    import bench_wna16 as B
    mod = B._case_module()
    B._case_module = lambda: mod
    B.__file__ = {child!r}
    B.require_cuda = lambda script: None
    sys.argv = ["bench_wna16.py", "--check", *{argv!r}]
    B.main()
''')


def check(tmp_path: Path, scenario: str, *argv: str) -> tuple[int, list[str]]:
    """(exit status, stdout lines) of `bench_wna16.py --check` with the fake children."""
    child = tmp_path / "child.py"
    child.write_text(CHILD)
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER.format(bench=str(BENCH), child=str(child), argv=list(argv)))
    env = dict(os.environ, FAKE_NAMES=",".join(NAMES), FAKE_SCENARIO=scenario, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, str(driver)], capture_output=True, text=True, env=env, timeout=120)
    return done.returncode, done.stdout.splitlines()


def test_a_tolerance_failure_reaches_the_summary_and_the_exit_status(tmp_path) -> None:
    rc, lines = check(tmp_path, "fail")
    assert rc == 1
    assert lines[-2] == "check: 47 / 48 (format x act) ok"
    assert lines[-1] == ("check failures: tolerance [u8_zp_g128 bf16 M=1000]; CUDA error [none]; process died "
                         "[none]; not run [none]")


def test_all_ok_exits_zero(tmp_path) -> None:
    rc, lines = check(tmp_path, "ok")
    assert rc == 0 and lines[-2:] == ["check: 48 / 48 (format x act) ok", "check failures: none"]


def test_a_child_that_dies_blames_the_format_it_was_in_and_the_next_child_starts_after_it(tmp_path) -> None:
    rc, lines = check(tmp_path, "crash")
    assert rc == 1
    assert lines[-2] == "check: 46 / 48 (format x act) ok"
    assert lines[-1] == ("check failures: tolerance [none]; CUDA error [none]; process died [e5m2_channel]; "
                         "not run [none]")
    # formats 0..7 ran once, in the first child: the second child started at 9
    assert sum(line.startswith("START 0") for line in lines) == 1
    assert [line for line in lines if line.startswith("START")][:10] == [f"START {i}" for i in (*range(9), 9)]


def test_a_child_that_dies_before_its_first_format_stops_the_check_and_names_what_did_not_run(tmp_path) -> None:
    rc, lines = check(tmp_path, "compile")
    assert rc == 1
    assert lines[-2] == "check: 0 / 48 (format x act) ok"
    assert lines[-1].startswith("check failures: tolerance [none]; CUDA error [none]; process died [none]; not run "
                                "[s4_g128, u4_zp_g128,")
    assert any("died before its first format" in line and "NVRTC: out of memory" in line for line in lines)
    assert sum(line.startswith("compiled the test kernels") for line in lines) == 1  # one child, not 24


def test_a_check_stopped_by_its_timeout_still_prints_the_summary(tmp_path) -> None:
    rc, lines = check(tmp_path, "timeout")
    assert rc == 1
    assert lines[-3].startswith("check stopped early (SIGTERM")
    assert lines[-2] == "check: 20 / 48 (format x act) ok"
    assert lines[-1].endswith(f"not run [{', '.join(NAMES[10:])}]")


def test_only_narrows_the_summary_to_its_formats(tmp_path) -> None:
    rc, lines = check(tmp_path, "fail", "--only", "s4_g128,u8_zp_g128")
    assert rc == 1 and lines[-2] == "check: 3 / 4 (format x act) ok"


@pytest.mark.parametrize("extra", [(), ("--plan-only",)])
def test_an_unknown_only_id_is_an_error_naming_it(monkeypatch, capsys, extra) -> None:
    monkeypatch.setattr(sys, "argv", ["bench_wna16.py", "--check", *extra, "--only", "s4_g128,s4_g12"])
    monkeypatch.setattr(B, "require_cuda", lambda script: None)
    monkeypatch.setattr(B, "check_isolated", lambda only: pytest.fail("ran the check"))
    monkeypatch.setattr(B, "check_plan_only", lambda *a: pytest.fail("ran the plan-only check"))
    with pytest.raises(SystemExit) as exc:
        B.main()
    assert exc.value.code == 2
    assert "--only: unknown format id(s) s4_g12; the check matrix's: s4_g128, u4_zp_g128" in capsys.readouterr().err


def test_an_unknown_bench_format_is_an_error_naming_it(monkeypatch, capsys) -> None:
    monkeypatch.setattr(sys, "argv", ["bench_wna16.py", "--formats", "w4a16 s4 g12"])
    with pytest.raises(SystemExit) as exc:
        B.main()
    assert exc.value.code == 2 and "--formats: unknown 'w4a16 s4 g12'" in capsys.readouterr().err


def test_the_childs_lines_carry_what_the_parent_counts(monkeypatch, capsys) -> None:
    mod = B._case_module()

    def run(fmt_id, act, m, shape, bias, out):
        if fmt_id == "u8_zp_g128" and act.name == "bf16" and m == 1000:
            raise AssertionError("12 of 200000 outputs outside tolerance")
        if fmt_id == "e5m2_channel" and m == 16:
            raise RuntimeError("CUDA error: an illegal memory access was encountered")

    monkeypatch.setattr(mod, "compile_all", lambda *a, **k: [])
    monkeypatch.setattr(mod, "_run", run)
    monkeypatch.setattr(B, "_case_module", lambda: mod)
    assert B.check_matrix(4, ()) == 2
    out = capsys.readouterr().out.splitlines()
    tally = B.CheckTally(NAMES)
    for line in out:
        tally.feed(line)
    assert tally.child_ended(4) == (9, "")
    assert out[-1] == "NEXT 9 FAILED 8"
    assert [line for line in out if line.startswith("START")] == [f"START {i}" for i in range(4, 9)]
    assert tally.failed_pairs() == ["u8_zp_g128 bf16 M=1000"] and tally.cuda_errors == [8]
