"""The plugin manager: plugins are validated one by one, claims are decided by specificity, problems are reported."""

from __future__ import annotations

import dataclasses
import types

import pytest

from humming.capabilities.model import ExecutionLimits, Target, check_capabilities
from humming.devices.device import DeviceMatch, RawDevice
from humming.devices.hookspecs import API_VERSION, hookimpl
from humming.devices.manager import DeviceManager
from humming.errors import InvalidInputError, PluginError
from tests.capabilities.synthetic import NEW, OLD


def make_plugin(targets=(OLD,), claim=None, version=API_VERSION, **extra):
    """A plugin object as a vendor would write it, built from a few answers."""

    class Plugin:
        @hookimpl
        def humming_api_version(self):
            return version

        @hookimpl
        def humming_declare_targets(self, register):
            for t in targets:
                register(t)

        @hookimpl
        def humming_probe_device(self, raw, env):
            return claim(raw, env) if claim else None

    for name, fn in extra.items():
        setattr(Plugin, name, fn)
    return Plugin()


RAW = RawDevice(api="cuda", index=0, name="Synthetic X", compute_capability=(9, 0), attributes={"sm_count": 7})


def manager(*plugins, raw=(RAW,), strict=False):
    return DeviceManager(autoload=False, plugins=plugins, raw_devices=raw, strict=strict)


def test_catalog_and_device_come_from_the_most_specific_claim():
    generic = make_plugin((OLD,), claim=lambda r, e: DeviceMatch(10, OLD, evidence="cc 9.0"))
    special = make_plugin((NEW,), claim=lambda r, e: DeviceMatch(100, NEW, evidence="name"))
    for order in ((("generic", generic), ("special", special)), (("special", special), ("generic", generic))):
        m = manager(*order)
        assert {c.target.arch for c in m.catalog()} == {"old", "new"}
        (dev,) = m.devices()
        assert dev.plugin == "special" and dev.target.arch == "new"  # load order changes nothing
        assert any("over generic (10)" in n for n in dev.notes)


def test_equal_specificity_is_an_error_naming_both_plugins_in_strict_mode():
    a = make_plugin((OLD,), claim=lambda r, e: DeviceMatch(10, OLD))
    b = make_plugin((NEW,), claim=lambda r, e: DeviceMatch(10, NEW))
    with pytest.raises(PluginError) as err:
        manager(("alpha", a), ("beta", b), strict=True).devices()
    assert "alpha" in str(err.value) and "beta" in str(err.value) and "specificity 10" in str(err.value)


def test_equal_specificity_leaves_the_device_unclaimed_with_the_tie_as_its_reason():
    a = make_plugin((OLD,), claim=lambda r, e: DeviceMatch(10, OLD))
    b = make_plugin((NEW,), claim=lambda r, e: DeviceMatch(10, NEW))
    m = manager(("alpha", a), ("beta", b))
    assert m.devices() == [] and m.unclaimed == [RAW]
    why = m.unclaimed_reason(RAW)
    assert "alpha" in why and "beta" in why and "specificity 10" in why
    assert all(s.ok for s in m.statuses())  # a tie is no plugin's fault: both keep their other devices
    assert {c.target.arch for c in m.catalog()} == {"old", "new"}


def test_a_claim_for_a_target_the_plugin_did_not_declare_is_reported():
    liar = make_plugin((OLD,), claim=lambda r, e: DeviceMatch(10, NEW))
    m = manager(("liar", liar))
    assert m.devices() == [] and m.unclaimed == [RAW]
    (status,) = m.statuses()
    assert not status.ok and "did not declare" in status.reason
    assert "did not declare" in m.unclaimed_reason(RAW)


def test_contract_version_mismatch_and_unknown_hooks_are_reported_by_name():
    old = make_plugin(version=API_VERSION + 1)
    typo = make_plugin(humming_declare_target=hookimpl(lambda self, register: None))
    m = manager(("old", old), ("typo", typo), raw=())
    st = {s.name: s for s in m.statuses()}
    assert "plugin API" in st["old"].reason
    assert "unknown hooks ['humming_declare_target']" in st["typo"].reason


def test_an_unmarked_hook_function_is_reported():
    class Forgetful:
        @hookimpl
        def humming_api_version(self):
            return API_VERSION

        def humming_declare_targets(self, register):  # no @hookimpl: pluggy would ignore it silently
            register(OLD)

    (status,) = manager(("forgetful", Forgetful()), raw=()).statuses()
    assert not status.ok and "not marked with @hookimpl" in status.reason


def test_an_invalid_capability_is_dropped_and_reported_while_valid_ones_stay():
    bad = dataclasses.replace(NEW, limits=ExecutionLimits(shared_memory_per_sm=1024, shared_memory_per_block_optin=4096))
    m = manager(("mixed", make_plugin((OLD, bad))), raw=())
    assert [c.target.arch for c in m.catalog()] == ["old"]
    (status,) = m.statuses()
    assert "fails validation" in status.reason and status.targets == ["old"]


def test_the_same_target_from_two_plugins_is_reported_for_the_second():
    m = manager(("a", make_plugin((OLD,))), ("b", make_plugin((OLD,))), raw=())
    st = {s.name: s for s in m.statuses()}
    assert st["a"].ok and "already declared by plugin 'a'" in st["b"].reason


def test_strict_mode_raises_on_the_first_problem():
    def boom(self, register):
        raise RuntimeError("vendor table missing")

    broken = make_plugin(humming_declare_targets=hookimpl(boom))
    with pytest.raises(PluginError) as err:
        manager(("broken", broken), raw=(), strict=True).catalog()
    assert "broken" in str(err.value) and "vendor table missing" in str(err.value)


def test_unknown_target_lists_the_declared_ones():
    with pytest.raises(InvalidInputError) as err:
        manager(("a", make_plugin((OLD, NEW))), raw=()).capabilities("sm_999")
    assert "old" in str(err.value) and "new" in str(err.value)


def test_no_raw_devices_means_an_empty_list_not_an_error():
    assert manager(("a", make_plugin()), raw=()).devices() == []


def test_a_module_registers_like_an_object():
    mod = types.ModuleType("vendor_mod")
    mod.humming_api_version = hookimpl(lambda: API_VERSION)
    mod.humming_declare_targets = hookimpl(lambda register: register(NEW))
    m = manager(("vendor_mod", mod), raw=())
    assert [c.target.arch for c in m.catalog()] == ["new"] and m.statuses()[0].ok


# ---- plugins that answer with the wrong types -------------------------------------------------------------
MALFORMED = {
    "memory and limits None": dataclasses.replace(NEW, target=Target("vx", "vx1"), memory=None, limits=None),
    "an mma entry that is a string": dataclasses.replace(NEW, target=Target("vx", "vx1"), mma=("mma.sync f16",)),
    "a target that is a string": dataclasses.replace(NEW, target="vx:vx1"),
    "a shape of strings": dataclasses.replace(
        NEW, target=Target("vx", "vx1"), mma=(dataclasses.replace(NEW.mma[0], shape=("16", "8", "16")),)),
    "a dtype given by name": dataclasses.replace(
        NEW, target=Target("vx", "vx1"), mma=(dataclasses.replace(NEW.mma[0], a="f16"),)),
    "a limit given as a string": dataclasses.replace(
        NEW, target=Target("vx", "vx1"), limits=ExecutionLimits(shared_memory_per_sm="228 KiB")),
}


@pytest.mark.parametrize("what", MALFORMED)
def test_a_capability_with_wrongly_typed_fields_breaks_only_its_own_plugin(what):
    good = make_plugin((OLD,), claim=lambda r, e: DeviceMatch(10, OLD))
    m = manager(("good", good), ("bad", make_plugin((MALFORMED[what],))))
    assert [c.target.arch for c in m.catalog()] == ["old"]
    assert [d.plugin for d in m.devices()] == ["good"]
    st = {s.name: s for s in m.statuses()}
    assert st["good"].ok and not st["bad"].ok and "fails validation" in st["bad"].reason, st["bad"].reason


def test_check_capabilities_names_the_wrongly_typed_field_and_the_type_it_wants():
    problems = check_capabilities(MALFORMED["memory and limits None"])
    assert any("memory" in p and "MemoryFeatures" in p and "NoneType" in p for p in problems), problems
    assert any("limits" in p and "ExecutionLimits" in p for p in problems), problems
    (problem,) = check_capabilities(MALFORMED["an mma entry that is a string"])
    assert "mma[0]" in problem and "MmaInstruction" in problem and "'mma.sync f16'" in problem
    assert any("DType" in p for p in check_capabilities(MALFORMED["a dtype given by name"]))
    problems = check_capabilities(MALFORMED["a limit given as a string"])
    assert any("shared_memory_per_sm" in p and "int" in p for p in problems), problems


@pytest.mark.parametrize("match, words", [
    (DeviceMatch(50, {"arch": "new"}), ("capabilities", "DeviceCapabilities", "dict")),
    (DeviceMatch("high", NEW), ("specificity", "int", "'high'")),
    (DeviceMatch(True, NEW), ("specificity", "int", "True")),
    (DeviceMatch(50, NEW, sku="H100"), ("sku", "SkuFacts")),
    (DeviceMatch(50, NEW, notes="one note"), ("notes", "tuple")),
])
def test_a_malformed_claim_is_reported_against_its_plugin_and_the_others_still_claim(match, words):
    good = make_plugin((OLD,), claim=lambda r, e: DeviceMatch(10, OLD))
    odd = make_plugin((NEW,), claim=lambda r, e: match)
    m = manager(("good", good), ("odd", odd))
    assert [d.plugin for d in m.devices()] == ["good"]
    st = {s.name: s for s in m.statuses()}
    assert st["good"].ok and not st["odd"].ok
    assert all(w in st["odd"].reason for w in words), st["odd"].reason


def test_a_claim_under_a_target_another_plugin_declared_is_refused():
    owner = make_plugin((NEW,), claim=lambda r, e: DeviceMatch(10, NEW, evidence="cc 9.0"))
    squatter = make_plugin((), claim=lambda r, e: DeviceMatch(50, NEW, evidence="we like it"))
    m = manager(("owner", owner), ("squatter", squatter))
    (dev,) = m.devices()
    assert dev.plugin == "owner" and dev.evidence == "cc 9.0"
    st = {s.name: s for s in m.statuses()}
    assert st["owner"].ok and not st["squatter"].ok
    assert "synthetic:new" in st["squatter"].reason and "declared by plugin 'owner'" in st["squatter"].reason


# ---- names and hooks ------------------------------------------------------------------------------------------
def test_registering_in_code_under_a_taken_name_reports_the_newcomer_and_keeps_the_first():
    first = make_plugin((OLD,), claim=lambda r, e: DeviceMatch(10, OLD))
    m = manager(("vendor", first), ("vendor", make_plugin((NEW,))))
    assert [c.target.arch for c in m.catalog()] == ["old"] and [d.plugin for d in m.devices()] == ["vendor"]
    st = {s.name: s for s in m.statuses()}
    assert st["vendor"].ok and st["vendor"].targets == ["old"]
    (newcomer,) = [s for s in st.values() if s is not st["vendor"]]
    assert not newcomer.ok and "name 'vendor' is already used by the plugin registered in code" in newcomer.reason


def test_module_and_value_attributes_named_humming_something_are_not_taken_for_hooks():
    mod = types.ModuleType("humming_acme.plugin")
    mod.humming_acme = types.ModuleType("humming_acme")  # what `import humming_acme.tables` binds
    mod.humming_acme_version = "1.2"
    mod.humming_api_version = hookimpl(lambda: API_VERSION)
    mod.humming_declare_targets = hookimpl(lambda register: register(NEW))
    m = manager(("acme", mod), raw=())
    (status,) = m.statuses()
    assert status.ok, status.reason
    assert [c.target.arch for c in m.catalog()] == ["new"]


def test_an_unknown_humming_function_is_still_reported():
    mod = types.ModuleType("typo_mod")
    mod.humming_api_version = hookimpl(lambda: API_VERSION)
    mod.humming_declare_target = lambda register: None  # a typo, unmarked: pluggy would ignore it silently
    (status,) = manager(("typo", mod), raw=()).statuses()
    assert "unknown hooks ['humming_declare_target']" in status.reason


@pytest.mark.parametrize("version, words", [("1", ("'1'", "str", "int")), (None, ("returned None", "int")),
                                            (True, ("True", "bool", "int"))])
def test_an_api_version_of_the_wrong_type_is_shown_as_such(version, words):
    (status,) = manager(("odd", make_plugin(version=version)), raw=()).statuses()
    assert not status.ok and all(w in status.reason for w in words), status.reason
    assert f"implements {API_VERSION}" in status.reason


# ---- what plugins supply -------------------------------------------------------------------------------------
def _supplier(**hooks):
    return make_plugin((OLD,), claim=lambda r, e: DeviceMatch(10, OLD), **hooks)


def test_a_raising_toolchain_or_tuner_hook_is_raised_with_its_cause_and_the_plugin_stays_usable():
    def toolchain(self, target):
        raise RuntimeError("nvrtc not found in /opt/vendor")

    def tuner(self, target):
        raise ModuleNotFoundError("No module named 'vendor.tuning'")

    m = manager(("v", _supplier(humming_toolchain=hookimpl(toolchain), humming_tuner=hookimpl(tuner))))
    with pytest.raises(PluginError) as err:
        m.toolchain(OLD.target)
    assert "humming_toolchain raised RuntimeError" in str(err.value) and "/opt/vendor" in str(err.value)
    assert isinstance(err.value.__cause__, RuntimeError)
    with pytest.raises(PluginError) as err:
        m.tuner(OLD.target)
    assert "ModuleNotFoundError" in str(err.value) and isinstance(err.value.__cause__, ModuleNotFoundError)
    (status,) = m.statuses()
    assert status.ok  # a supply hook failing for one target does not disable the plugin's devices
    assert [d.plugin for d in m.devices()] == ["v"]


def test_a_probe_hooks_refusal_of_the_callers_input_reaches_the_caller_and_breaks_nothing():
    def probe(self, instruction, target):
        raise InvalidInputError(f"{instruction.describe()} is not declared for {target.arch}")

    m = manager(("v", _supplier(humming_instruction_probe=hookimpl(probe))))
    with pytest.raises(InvalidInputError, match="is not declared for old"):
        m.instruction_probe(NEW.mma[-1], OLD.target)
    assert m.statuses()[0].ok and [d.plugin for d in m.devices()] == ["v"]


# ---- target look-up by vendor --------------------------------------------------------------------------------
def _two_vendors():
    other = dataclasses.replace(OLD, target=Target("vx", "old"))
    only_vx = dataclasses.replace(NEW, target=Target("vx", "vx-only"))
    return manager(("syn", make_plugin((OLD,))), ("vx", make_plugin((other, only_vx))), raw=())


def test_a_target_another_vendor_declares_is_named_as_such():
    with pytest.raises(InvalidInputError) as err:
        _two_vendors().capabilities("vx-only", vendor="synthetic")
    text = str(err.value)
    assert "vendor 'synthetic' declares no target 'vx-only'" in text and "declared by vendor 'vx'" in text
    assert "unknown target" not in text


def test_an_unknown_vendor_lists_the_vendors():
    with pytest.raises(InvalidInputError) as err:
        _two_vendors().capabilities("old", vendor="acme")
    assert "no loaded plugin declares targets of vendor 'acme'" in str(err.value)
    assert "synthetic" in str(err.value) and "vx" in str(err.value)


def test_a_name_several_vendors_use_asks_for_vendor_in_python_and_on_the_command_line():
    m = _two_vendors()
    with pytest.raises(InvalidInputError) as err:
        m.capabilities("old")
    assert "synthetic, vx" in str(err.value) and "vendor=" in str(err.value) and "--vendor" in str(err.value)
    assert m.capabilities("old", vendor="vx").target == Target("vx", "old")


# ---- unclaimed devices ----------------------------------------------------------------------------------------
def test_a_plugins_decline_gives_the_unclaimed_device_its_reason():
    from humming.devices.device import DeviceDecline

    old_gpu = RawDevice(api="cuda", index=3, name="Tesla V100", compute_capability=(7, 0))
    decline = make_plugin((OLD,), claim=lambda r, e: DeviceDecline("compute capability 7.0 is older than sm_75"))
    m = manager(("v", decline), raw=(old_gpu,))
    assert m.devices() == [] and m.unclaimed == [old_gpu] and m.statuses()[0].ok
    assert m.unclaimed_reason(old_gpu) == "v: compute capability 7.0 is older than sm_75"
    with pytest.raises(InvalidInputError) as err:
        m.device(3)
    assert "unclaimed" in str(err.value) and "older than sm_75" in str(err.value)


def test_a_device_no_plugin_answers_for_says_so():
    m = manager(("v", make_plugin((OLD,))))
    assert m.devices() == [] and "no plugin claims it" in m.unclaimed_reason(RAW)
