"""``humming conformance``: its exit status, its refusals (before any case runs), repro lines that rerun the case,
and reports that are never lost or overwritten."""

from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
from pathlib import Path

import pytest

from humming.cli import build_parser
from humming.cli import conformance as cli
from humming.devices.hookspecs import API_VERSION, hookimpl
from humming.devices.manager import DeviceManager
from humming.errors import InvalidInputError

from conformance import report, runner

# ---- the command ------------------------------------------------------------------------------------------------
def _args(**kw: object) -> argparse.Namespace:
    base = {"device": None, "target": "sm_80", "level": ["declare"], "cases": "core", "case": None, "report": None,
            "json": False, "jobs": 2, "vendor": None}
    base.update(kw)
    return argparse.Namespace(**base)


def test_the_command_exits_zero_when_nothing_failed_and_one_when_something_did(manager: DeviceManager,
                                                                               unmarked: DeviceManager,
                                                                               capsys: pytest.CaptureFixture) -> None:
    assert cli.run(_args(case="declare/capability/*"), manager) == 0
    assert "sm_80 [compile-only]" in capsys.readouterr().out
    assert cli.run(_args(target="sm_90a", case="declare/probe/mma.sync.m16n8k32.e4m3.e4m3.f32", json=True),
                   manager) == 0  # the real table marks it emulated
    capsys.readouterr()
    assert cli.run(_args(target="sm_90a", case="declare/probe/mma.sync.m16n8k32.e4m3.e4m3.f32", json=True),
                   unmarked) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["summary"]["fail"] == 1 and out["cases"][0]["status"] == "fail"


def test_the_command_refuses_a_device_that_is_not_there(manager: DeviceManager) -> None:
    with pytest.raises(InvalidInputError, match="no such device"):
        cli.run(_args(device="7", target=None), DeviceManager(autoload=False, raw_devices=[]))
    with pytest.raises(InvalidInputError, match="--level 'speed'"):
        cli.run(_args(level=["speed"]), manager)


def test_the_command_is_registered_on_the_humming_cli() -> None:
    args = build_parser().parse_args(["conformance", "--target", "sm_103a", "--level", "declare,compile"])
    assert args.func.__module__ == "humming.cli.conformance" and args.target == "sm_103a"


def _again(repro: str) -> argparse.Namespace:
    """The options of a repro line, parsed as the shell and the humming command would."""
    argv = shlex.split(repro)
    assert argv[:2] == ["humming", "conformance"], repro
    return build_parser().parse_args(argv[1:])


# ---- a --case that selects nothing ---------------------------------------------------------------------------------
def test_a_case_pattern_that_matches_nothing_is_refused_showing_the_id_forms(manager: DeviceManager) -> None:
    with pytest.raises(InvalidInputError, match=r"--case 'gptq_int4\.\*' matches no case") as err:
        cli.run(_args(level=["declare", "compile"], case="gptq_int4.*"), manager)
    text = str(err.value)
    assert "declare/probe/<instruction id>" in text and "compile/<preset>.<activation>/m<M>n<N>k<K>" in text
    assert "'compile/gptq_int4.*'" in text  # the level prefix it left out


def test_a_case_pattern_of_a_level_not_selected_says_which_level_to_add(manager: DeviceManager) -> None:
    with pytest.raises(InvalidInputError, match="--level compile"):
        cli.run(_args(level=["declare"], case="compile/gptq_int4.*"), manager)


def test_a_case_pattern_of_the_extended_set_says_to_add_cases_extended(manager: DeviceManager) -> None:
    with pytest.raises(InvalidInputError, match="--cases extended"):
        cli.run(_args(level=["compile"], case="compile/gptq_int4.f16/m2n512k1024"), manager)


def test_the_humming_command_exits_2_when_the_case_pattern_matches_nothing(capsys: pytest.CaptureFixture) -> None:
    from humming.cli import main

    assert main(["conformance", "--target", "sm_80", "--level", "declare", "--case", "compile/gptq_int4.*"]) == 2
    assert "matches no case" in capsys.readouterr().err


# ---- repro lines rerun the same case -------------------------------------------------------------------------------
def test_a_repro_line_carries_the_case_set_and_selects_its_case_again(manager: DeviceManager) -> None:
    case = "compile/gptq_int4.f16/m2n512k1024"  # in the extended set only
    (suite,) = cli.suites(_args(cases="extended", level=["compile"], case=case), manager)
    repro = suite.repro(case, "compile")
    assert "--cases extended" in repro
    (again,) = cli.suites(_again(repro), manager)
    assert runner.case_ids(again, "compile") == [case]


class Acme:
    """A second plugin declaring exa-1, as a re-vendored copy of the example plugin would."""

    @hookimpl
    def humming_api_version(self) -> int:
        return API_VERSION

    @hookimpl
    def humming_declare_targets(self, register) -> None:  # noqa: ANN001
        from humming_example_vendor import archs

        caps = archs.CAPABILITIES
        register(dataclasses.replace(caps, target=dataclasses.replace(caps.target, vendor="acme")))


def test_a_repro_line_names_the_vendor_when_two_plugins_declare_the_arch(manager: DeviceManager) -> None:
    import humming_example_vendor

    two = DeviceManager(autoload=False, plugins=[("example_vendor", humming_example_vendor), ("acme", Acme())],
                        raw_devices=[])
    exa = [s for s in cli.suites(_args(target="all"), two) if s.caps.target.arch == "exa-1"]
    assert sorted(s.caps.target.vendor for s in exa) == ["acme", "example"]
    for suite in exa:
        repro = suite.repro("declare/capability/schema", "declare")
        assert f"--vendor {suite.caps.target.vendor}" in repro
        (again,) = cli.suites(_again(repro), two)
        assert again.caps.target == suite.caps.target


# ---- reports are never lost ----------------------------------------------------------------------------------------
def test_a_second_report_of_the_same_target_and_day_does_not_overwrite_the_first(manager: DeviceManager,
                                                                                 tmp_path: Path) -> None:
    assert cli.run(_args(case="declare/capability/*", report=str(tmp_path)), manager) == 0
    assert cli.run(_args(case="declare/capability/schema", report=str(tmp_path)), manager) == 0
    reports = sorted(tmp_path.glob("*.json"))
    assert len(reports) == 2 and len(list(tmp_path.glob("*.md"))) == 2
    assert sorted(len(json.loads(p.read_text())["cases"]) for p in reports) == [1, 8]


def test_report_names_tell_vendors_devices_and_runs_apart(manager: DeviceManager, tmp_path: Path) -> None:
    data = report.build(runner.run_suite(runner.Suite(manager, manager.capabilities("sm_80"),
                                                      pattern="declare/capability/schema", progress=False),
                                         ["declare"]))
    device = {"index": 1, "name": "NVIDIA A100", "sku": None, "attributes": {}, "uuid": None}
    acme = {**data, "target": {**data["target"], "vendor": "acme"}}
    paths = [report.write(d, tmp_path)[0] for d in (data, data, acme, {**data, "device": device})]
    assert len({p.name for p in paths}) == 4, paths
    assert "nvidia" in paths[0].name and "acme" in paths[2].name and "device1" in paths[3].name
    assert paths[0].name.startswith("conformance-sm_80-") and data["created"][:10] in paths[0].name


def test_a_report_folder_that_cannot_be_written_is_refused_before_any_case_runs(manager: DeviceManager,
                                                                               tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    a_file = tmp_path / "notadir"
    a_file.write_text("")
    ran: list[str] = []
    monkeypatch.setattr(runner, "run_suite", lambda suite, levels: ran.append(suite.caps.target.arch))
    with pytest.raises(InvalidInputError, match="--report .*notadir.*not a folder"):
        cli.run(_args(case="declare/capability/*", report=str(a_file)), manager)
    assert ran == []


def test_a_report_that_cannot_be_written_after_the_run_keeps_the_results_and_exits_3(
        manager: DeviceManager, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture) -> None:
    def disk_full(rep: dict, folder: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(report, "write", disk_full)
    assert cli.run(_args(case="declare/capability/*", report=str(tmp_path), json=True), manager) == 3
    out = capsys.readouterr()
    assert len(json.loads(out.out)["cases"]) == 8  # the results are printed all the same
    assert "could not write the report for sm_80" in out.err and "No space left on device" in out.err


def test_an_internal_crash_exits_3_not_1_and_says_it_is_a_bug(manager: DeviceManager,
                                                            monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise KeyError("target")

    monkeypatch.setattr(report, "build", broken)
    assert cli.run(_args(case="declare/capability/*"), manager) == 3
    err = capsys.readouterr().err
    assert "KeyError" in err and "humming bug" in err
