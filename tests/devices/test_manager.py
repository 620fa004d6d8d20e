"""The plugin manager: plugins are validated one by one, claims are decided by specificity, problems are reported."""

from __future__ import annotations

import dataclasses
import types

import pytest

from humming.capabilities.model import ExecutionLimits
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


def test_equal_specificity_is_an_error_naming_both_plugins():
    a = make_plugin((OLD,), claim=lambda r, e: DeviceMatch(10, OLD))
    b = make_plugin((NEW,), claim=lambda r, e: DeviceMatch(10, NEW))
    with pytest.raises(PluginError) as err:
        manager(("alpha", a), ("beta", b)).devices()
    assert "alpha" in str(err.value) and "beta" in str(err.value) and "specificity 10" in str(err.value)


def test_a_claim_for_a_target_the_plugin_did_not_declare_is_reported():
    liar = make_plugin((OLD,), claim=lambda r, e: DeviceMatch(10, NEW))
    m = manager(("liar", liar))
    assert m.devices() == [] and m.unclaimed == [RAW]
    (status,) = m.statuses()
    assert not status.ok and "did not declare" in status.reason


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
