"""`humming devices` and `humming explain` through main(), as a user runs them, on a machine without a GPU."""

from __future__ import annotations

import dataclasses
import json

import pytest

import humming.devices.manager as manager_module
from humming import knobs
from humming.capabilities.model import Target
from humming.cli import main
from humming.devices.device import DeviceMatch, RawDevice
from humming.devices.hookspecs import API_VERSION, hookimpl
from humming.devices.manager import DeviceManager, get_manager, reset_manager
from humming.devices.nvidia import archs as nvidia_archs

NVIDIA_TARGETS = ["sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90a", "sm_100a", "sm_103a", "sm_110a", "sm_120a",
                  "sm_121a"]
COMBINATIONS = {  # (weights, activations) per W/A combination the brief names
    "WnA16": [("s4", "f16"), ("u4", "bf16"), ("e2m1", "bf16"), ("s8", "f16"), ("e4m3", "bf16"), ("u2", "f16")],
    "W8A8": [("s8", "s8"), ("e4m3", "e4m3")],
    "W4A8": [("s4", "s8"), ("e2m1", "e4m3"), ("s4", "e4m3")],
    "W4A4": [("s4", "s4"), ("e2m1", "e2m1")],
}
CASES = [(w, a) for pairs in COMBINATIONS.values() for w, a in pairs]


@pytest.fixture(autouse=True)
def fresh_manager():
    reset_manager()
    yield
    reset_manager()


def run_json(capsys, *argv: str) -> tuple[int, object]:
    code = main(list(argv))
    return code, json.loads(capsys.readouterr().out)


def test_devices_all_json_lists_every_target_with_its_facts(capsys):
    code, data = run_json(capsys, "devices", "--all", "--json")
    assert code == 0
    by_arch = {d["arch"]: d for d in data}
    for arch in NVIDIA_TARGETS + ["ppu-810e", "ppu-m890"]:
        assert arch in by_arch, f"{arch} missing from the catalog"
    assert any(d["preview"] and d["vendor"] == "nvidia" for d in data), "Rubin preview target missing"
    for d in data:
        assert {"id", "name", "vendor", "plugin", "arch", "present", "mma", "features", "hidden_formats", "notes"} <= d.keys()
        assert d["mma"], f"{d['arch']} declares no MMA"
        for m in d["mma"]:
            assert {"instr", "shape", "a", "b", "acc"} <= m.keys() and len(m["shape"]) == 3
    h = by_arch["sm_90a"]
    assert h["plugin"] == "nvidia" and h["features"]["bulk_tensor_copy"] is True
    assert not any(m["instr"] == "wgmma" and "s4" in (m["a"], m["b"]) for m in h["mma"])
    assert {f["dtype"] for f in by_arch["sm_100a"]["hidden_formats"]} == {"e3m4", "e0m3"}


def test_devices_without_a_gpu_is_an_empty_list_not_an_error(capsys):
    if get_manager().devices():
        pytest.skip("a GPU is visible here")
    code, data = run_json(capsys, "devices", "--json")
    assert code == 0 and data == []
    assert main(["devices"]) == 0
    assert "no devices present" in capsys.readouterr().out


@pytest.mark.parametrize("arch", NVIDIA_TARGETS + ["ppu-810e"])
def test_explain_answers_every_combination_on_every_target(arch, capsys):
    for weights, activations in CASES:
        code = main(["explain", "--target", arch, "--weights", weights, "--activations", activations, "--json"])
        verdict = json.loads(capsys.readouterr().out)
        assert code == (0 if verdict["supported"] else 2)
        if verdict["supported"]:
            assert verdict["chosen"]["instruction"]["instr"]
        else:
            assert verdict["missing"], f"{arch} {weights}/{activations}: a 'no' must name what is missing"


def test_explain_w4a4_fp4_on_hopper_says_no_fp4_mma_and_offers_w4a8_and_w4a16(capsys):
    code = main(["explain", "--target", "sm_90a", "--weights", "e2m1", "--activations", "e2m1"])
    out = capsys.readouterr().out
    assert code == 2
    assert "none takes e2m1" in out
    assert "W4A8 with e4m3 activations" in out and "W4A16 with bf16 activations" in out
    assert "sm_100a" in out  # a target that would run it


def test_explain_int8_on_b300_takes_mma_sync_and_warns(capsys):
    code = main(["explain", "--target", "sm_103a", "--weights", "s8", "--activations", "s8"])
    out = capsys.readouterr().out
    assert code == 0 and "mma.sync" in out
    assert "warning:" in out and "tcgen05" in out
    code = main(["explain", "--target", "sm_100a", "--weights", "s8", "--activations", "s8"])
    out = capsys.readouterr().out
    assert code == 0 and "tcgen05" in out and "warning:" not in out


def test_explain_rejects_an_unknown_target_and_dtype_with_the_known_names(capsys):
    assert main(["explain", "--target", "sm_99", "--weights", "s4", "--activations", "f16"]) == 2
    err = capsys.readouterr().err
    assert "unknown target 'sm_99'" in err and "sm_90a" in err
    assert main(["explain", "--target", "sm_90a", "--weights", "int5x", "--activations", "f16"]) == 2
    assert "unknown dtype 'int5x'" in capsys.readouterr().err


def test_sm75_wna16_bf16_is_refused_but_f16_runs(capsys):
    assert main(["explain", "--target", "sm_75", "--weights", "s4", "--activations", "bf16"]) == 2
    out = capsys.readouterr().out
    assert "bf16" in out and "W4A16 with f16 activations" in out
    assert main(["explain", "--target", "sm_75", "--weights", "s4", "--activations", "f16"]) == 0


def test_explain_takes_a_preset_with_its_block_scales_and_activations(capsys):
    assert main(["explain", "--target", "sm_100a", "--weights", "nvfp4", "--json"]) == 0
    v = json.loads(capsys.readouterr().out)
    assert v["combination"] == "W4A4" and v["chosen"]["block_scaled"]
    assert v["chosen"]["instruction"]["block_scale"] == {"scale": "ue4m3", "vector_size": 16}
    assert main(["explain", "--target", "sm_120a", "--weights", "w4a4_mxfp4", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["chosen"]["instruction"]["block_scale"]["scale"] == "ue8m0"
    assert main(["explain", "--target", "sm_90a", "--weights", "mxfp4", "--json"]) == 0  # weight-only: W4A16
    assert json.loads(capsys.readouterr().out)["activations"] == "bf16"
    assert main(["explain", "--target", "sm_90a", "--weights", "nvfp4"]) == 2


def test_explain_refuses_a_preset_with_contradicting_activations(capsys):
    assert main(["explain", "--target", "sm_100a", "--weights", "nvfp4", "--activations", "e4m3"]) == 2
    assert "has e2m1 activations" in capsys.readouterr().err
    assert main(["explain", "--target", "sm_100a", "--weights", "s4"]) == 2
    assert "--activations is required" in capsys.readouterr().err


def test_explain_with_a_shape_shows_the_tuners_kernel_plan_and_why(capsys):
    assert main(["explain", "--target", "sm_90a", "--weights", "gptq_int4", "--activations", "f16",
                 "--m", "16", "--n", "28672", "--k", "8192"]) == 0
    out = capsys.readouterr().out
    assert "kernel plan" in out and "GemmDenseSpec" in out and "CTAs" in out and "why: M=16" in out
    assert main(["explain", "--target", "sm_90a", "--weights", "gptq_int4", "--m", "1", "--n", "4096", "--k", "4096",
                 "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)["plan"]
    assert plan["grid"] and plan["why"] and plan["programmatic"] is True


def test_explain_says_where_the_launch_is_programmatic(capsys):
    args = ["explain", "--weights", "gptq_int4", "--activations", "f16", "--m", "1", "--n", "4096", "--k", "4096"]
    assert main(args + ["--target", "sm_90a"]) == 0
    assert "launch: programmatic" in capsys.readouterr().out
    assert main(args + ["--target", "sm_80"]) == 0
    assert "launch: programmatic" not in capsys.readouterr().out
    with knobs.scope(HUMMING_PDL=False):
        assert main(args + ["--target", "sm_90a"]) == 0
    assert "launch: programmatic" not in capsys.readouterr().out


@pytest.mark.parametrize("m, instruction", [(1, "needs: mma.sync m16n8k16"), (64, "needs: wgmma m64nNk16")])
def test_the_kernel_plan_names_the_instruction_it_is_built_on(m, instruction, capsys):
    # The capability paths above the plan list every MMA the target has (wgmma first on sm_90a); the plan's kernel
    # at M = 1 is the mma.sync decode one, and says so.
    assert main(["explain", "--target", "sm_90a", "--weights", "mxfp4", "--activations", "bf16",
                 "--m", str(m), "--n", "28672", "--k", "8192", "--sm-count", "132"]) == 0
    out = capsys.readouterr().out
    assert instruction in out.split("kernel plan", 1)[1], out


@pytest.mark.parametrize("target, m, note", [("sm_90a", 16, "instruction: mma.sync, not wgmma"), ("sm_90a", 64, None),
                                              ("sm_80", 16, None), ("sm_100a", 64, "instruction: mma.sync, not tcgen05")])
def test_the_plan_says_when_its_mma_family_is_not_the_capabilitys_first(target, m, note, capsys):
    assert main(["explain", "--target", target, "--weights", "gptq_int4", "--activations", "bf16",
                 "--m", str(m), "--n", "28672", "--k", "8192"]) == 0
    plan = capsys.readouterr().out.split("kernel plan", 1)[1]
    if note is None:
        assert "instruction:" not in plan, plan
    else:
        assert note in plan, plan
    assert main(["explain", "--target", target, "--weights", "gptq_int4", "--activations", "bf16",
                 "--m", str(m), "--n", "28672", "--k", "8192", "--json"]) == 0
    family = json.loads(capsys.readouterr().out)["plan"]["mma_family"]
    assert family == ("wgmma" if note is None and target == "sm_90a" else "mma.sync")


def test_explain_shape_options_need_all_three_and_a_preset(capsys):
    assert main(["explain", "--target", "sm_90a", "--weights", "gptq_int4", "--m", "16"]) == 2
    assert "go together" in capsys.readouterr().err
    assert main(["explain", "--target", "sm_90a", "--weights", "s4", "--activations", "f16",
                 "--m", "1", "--n", "256", "--k", "256"]) == 2
    assert "need a format preset" in capsys.readouterr().err


# ---- `humming devices` with plugins that disagree --------------------------------------------------------------
H100 = RawDevice(api="cuda", index=0, name="NVIDIA H100 80GB HBM3", compute_capability=(9, 0),
                 attributes={"sm_count": 132})


def vendor_plugin(caps, claim=None):
    """A third-party plugin declaring ``caps`` and answering every probe with ``claim``."""

    class Vendor:
        @hookimpl
        def humming_api_version(self):
            return API_VERSION

        @hookimpl
        def humming_declare_targets(self, register):
            register(caps)

        @hookimpl
        def humming_probe_device(self, raw, env):
            return claim

    return Vendor()


def use(monkeypatch, manager: DeviceManager) -> DeviceManager:
    """Make ``manager`` the one main() asks (the fixture above forgets it after the test)."""
    monkeypatch.setattr(manager_module, "_default", manager)
    return manager


VX_SM90A = dataclasses.replace(nvidia_archs.SM90A, target=Target("vx", "sm_90a", "hopper"), name="VX Hopper")


def test_devices_all_keys_rows_by_vendor_and_arch_when_two_vendors_use_one_name(monkeypatch, capsys):
    vx = vendor_plugin(VX_SM90A, DeviceMatch(50, VX_SM90A, evidence="vx driver"))
    use(monkeypatch, DeviceManager(plugins=[("vx", vx)], raw_devices=[H100], env={}))
    code, data = run_json(capsys, "devices", "--all", "--json")
    assert code == 0
    by_id = {d["id"]: d for d in data}
    assert by_id["nvidia:sm_90a"]["plugin"] == "nvidia" and by_id["nvidia:sm_90a"]["present"] is False
    assert by_id["vx:sm_90a"]["plugin"] == "vx" and by_id["vx:sm_90a"]["present"] is True
    assert main(["devices", "--all"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if line.startswith("sm_90a ")]
    assert len(rows) == 2, rows
    plugins_present = sorted(tuple(w for w in r if w in ("nvidia", "vx", "yes", "no")) for r in rows)
    assert plugins_present == [("nvidia", "no"), ("vx", "yes")], rows


def test_devices_all_lists_the_catalog_even_when_claims_cannot_be_decided(monkeypatch, capsys):
    tie = vendor_plugin(VX_SM90A, DeviceMatch(10, VX_SM90A, evidence="we like it"))  # nvidia claims at 10 too
    use(monkeypatch, DeviceManager(plugins=[("vx", tie)], raw_devices=[H100], env={}, strict=True))
    assert main(["devices", "--all"]) == 2  # strict mode still reports the tie, after the catalog
    out, err = capsys.readouterr()
    assert "sm_80" in out and "ppu-810e" in out
    assert "PluginError" in err and "nvidia, vx" in err


def test_devices_lists_an_unclaimed_device_with_the_plugins_reason_in_text_and_json(monkeypatch, capsys):
    from humming.devices.device import DeviceDecline

    v100 = RawDevice(api="cuda", index=0, name="Tesla V100-SXM2-16GB", compute_capability=(7, 0))
    decline = vendor_plugin(VX_SM90A, DeviceDecline("compute capability 7.0 is older than sm_75, the oldest target"))
    use(monkeypatch, DeviceManager(autoload=False, plugins=[("vx", decline)], raw_devices=[v100], env={}))
    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    assert "no devices present" not in out and "no GPU visible" not in out
    assert "unclaimed device [0] 'Tesla V100-SXM2-16GB'" in out and "older than sm_75" in out
    code, data = run_json(capsys, "devices", "--json")
    assert code == 0
    (entry,) = data
    assert entry["name"] == "Tesla V100-SXM2-16GB" and entry["present"] is True and entry["claimed"] is False
    assert entry["plugin"] is None and "older than sm_75" in entry["reason"]


def test_devices_shows_a_tie_as_an_unclaimed_device_not_an_error(monkeypatch, capsys):
    tie = vendor_plugin(VX_SM90A, DeviceMatch(10, VX_SM90A, evidence="we like it"))
    use(monkeypatch, DeviceManager(plugins=[("vx", tie)], raw_devices=[H100], env={}, strict=False))
    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    assert "unclaimed device [0]" in out and "nvidia" in out and "vx" in out and "specificity 10" in out


def test_explain_applies_the_accumulator_to_a_preset(capsys):
    # gptq_int4 keeps bf16 activations: s32 accumulation is no path for them anywhere on sm_90a.
    assert main(["explain", "--target", "sm_90a", "--weights", "gptq_int4", "--accumulator", "s32", "--json"]) == 2
    v = json.loads(capsys.readouterr().out)
    assert v["accumulator"] == "s32" and not v["supported"]
    assert main(["explain", "--target", "sm_90a", "--weights", "gptq_int4", "--activations", "f16",
                 "--accumulator", "f16", "--json"]) == 0
    v = json.loads(capsys.readouterr().out)
    assert v["accumulator"] == "f16" and v["chosen"]["instruction"]["acc"] == "f16"


def test_explain_refuses_an_accumulator_the_kernel_plan_cannot_honour(capsys):
    shape = ["--m", "16", "--n", "4096", "--k", "4096"]
    args = ["explain", "--target", "sm_90a", "--weights", "gptq_int4", "--activations", "f16"]
    assert main(args + ["--accumulator", "f16"] + shape) == 2
    err = capsys.readouterr().err
    assert "--accumulator f16" in err and "f32" in err and "leave --accumulator out" in err
    assert main(args + ["--accumulator", "f32"] + shape) == 0  # the plan's own accumulator is fine
    assert "kernel plan" in capsys.readouterr().out


@pytest.mark.parametrize("argv, says", [
    (["--weights", "s4", "--activations", "e2m1", "--m", "16"], "go together"),  # an unsupported verdict too
    (["--weights", "s4", "--activations", "e2m1", "--m", "1", "--n", "256", "--k", "256"], "need a format preset"),
    (["--weights", "gptq_int4", "--m", "16", "--n", "4096", "--k", "4096", "--sm-count", "0"], "--sm-count 0"),
    (["--weights", "gptq_int4", "--m", "16", "--n", "4096", "--k", "4096", "--sm-count", "-4"], "--sm-count -4"),
    (["--weights", "gptq_int4", "--sm-count", "132"], "--sm-count plans"),
])
def test_explain_checks_its_arguments_before_any_verdict(argv, says, capsys):
    assert main(["explain", "--target", "sm_90a", *argv]) == 2
    out, err = capsys.readouterr()
    assert says in err, err
    assert out == ""  # refused before a verdict was printed
