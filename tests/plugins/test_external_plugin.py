"""Plugins from outside humming: an installed package is discovered, listed and validated; broken ones are reported.

The example package (tests/plugins/example_vendor, its own pyproject) is installed into a temporary folder with
pip, offline, and put on sys.path, so humming finds it through its entry point exactly as a vendor's package.
Broken plugins come from a hand-made distribution whose entry points name modules that fail in each way.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Iterator

import pytest

import humming.devices
from humming import knobs
from humming.capabilities.model import check_capabilities
from humming.cli import main as humming_cli
from humming.devices.device import RawDevice
from humming.devices.hookspecs import ENTRY_POINT_GROUP
from humming.devices.manager import DeviceManager, reset_manager
from humming.errors import PluginError, UnsupportedError

PACKAGE = Path(__file__).resolve().parent / "example_vendor"
EXA = RawDevice(api="example", index=0, name="EXA-1", attributes={"sm_count": 24})

BROKEN_MODULES = {
    # The import fails: a dependency the vendor forgot to declare.
    "humming_broken_import": "import humming_no_such_dependency_xyz\n",
    # A hook raises: the vendor's table is read from a driver that is not there.
    "humming_hook_raises": """
        from humming.devices.hookspecs import API_VERSION, hookimpl

        @hookimpl
        def humming_api_version():
            return API_VERSION

        @hookimpl
        def humming_declare_targets(register):
            raise RuntimeError("vendor driver table /dev/exa0 is missing")
    """,
    # A capability that fails validation: more shared memory per block than per SM.
    "humming_bad_capability": """
        import dataclasses
        from humming.capabilities.model import ExecutionLimits, Target
        from humming.devices.hookspecs import API_VERSION, hookimpl
        from humming_example_vendor import archs

        BAD = dataclasses.replace(
            archs.CAPABILITIES, target=Target("badvendor", "bad-1"),
            limits=ExecutionLimits(shared_memory_per_sm=48 * 1024, shared_memory_per_block_optin=99 * 1024))

        @hookimpl
        def humming_api_version():
            return API_VERSION

        @hookimpl
        def humming_declare_targets(register):
            register(BAD)
    """,
    # A second vendor that claims the example's device just as specifically: a tie.
    "humming_clone_vendor": """
        import dataclasses
        from humming.capabilities.model import Target
        from humming.devices.device import DeviceMatch
        from humming.devices.hookspecs import API_VERSION, hookimpl
        from humming_example_vendor import archs, detect

        CLONE = dataclasses.replace(archs.CAPABILITIES, target=Target("clone", "exa-1-clone"))

        @hookimpl
        def humming_api_version():
            return API_VERSION

        @hookimpl
        def humming_declare_targets(register):
            register(CLONE)

        @hookimpl
        def humming_probe_device(raw, env):
            if raw.name == "EXA-1":
                return DeviceMatch(detect.SPECIFICITY, CLONE, evidence="clone: name EXA-1")
            return None
    """,
}
BROKEN_ENTRY_POINTS = {"broken_import": "humming_broken_import", "hook_raises": "humming_hook_raises",
                       "bad_capability": "humming_bad_capability", "clone_vendor": "humming_clone_vendor"}


def _forget_modules(prefixes: tuple[str, ...]) -> None:
    for name in [m for m in sys.modules if m.startswith(prefixes)]:
        del sys.modules[name]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """pip-install the example package (offline) and a hand-made broken distribution; both on sys.path."""
    # Offline, without build isolation, pip builds with this environment's setuptools, which must have
    # bdist_wheel built in (setuptools 70.1 and later; torch >= 2.13 requires setuptools >= 77).
    try:
        setuptools_version = importlib.metadata.version("setuptools")
    except importlib.metadata.PackageNotFoundError:
        pytest.fail("setuptools is not installed: install setuptools>=70.1 to build the example plugin offline")
    assert tuple(int(p) for p in setuptools_version.split(".")[:2]) >= (70, 1), \
        f"setuptools {setuptools_version} cannot build the example plugin offline: install setuptools>=70.1"
    root = tmp_path_factory.mktemp("plugins")
    source = root / "example_vendor"
    shutil.copytree(PACKAGE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))  # build outside the tree
    site = root / "site"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index",
                           "--disable-pip-version-check", "-q", "--target", str(site), str(source)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"pip install failed:\n{done.stdout}\n{done.stderr}"

    broken = root / "broken"
    info = broken / "humming_broken_vendors-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: humming-broken-vendors\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n" + "".join(
        f"{name} = {module}\n" for name, module in BROKEN_ENTRY_POINTS.items()))
    for module, body in BROKEN_MODULES.items():
        (broken / f"{module}.py").write_text(textwrap.dedent(body))

    sys.path[:0] = [str(site), str(broken)]
    importlib.invalidate_caches()
    try:
        yield site
    finally:
        for p in (str(site), str(broken)):
            sys.path.remove(p)
        _forget_modules(("humming_example_vendor", *BROKEN_MODULES))
        importlib.invalidate_caches()
        reset_manager()


def only(*names: str):
    """Autoload only these entry points (the HUMMING_PLUGINS allow-list), whatever else is installed."""
    return knobs.scope(HUMMING_PLUGINS=",".join(names), HUMMING_STRICT_PLUGINS=None,
                       HUMMING_DISABLE_PLUGIN_AUTOLOAD=None)


# ---- the example package --------------------------------------------------------------------------------
def test_pip_installed_the_package_with_its_entry_point(installed):
    (ep,) = [e for e in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP) if e.name == "example_vendor"]
    assert ep.value == "humming_example_vendor" and ep.dist.name == "humming-example-vendor"
    assert Path(ep.dist.locate_file("humming_example_vendor")).parent == installed


def test_the_example_plugin_is_discovered_listed_and_validated(installed):
    with only("example_vendor"):
        m = DeviceManager(raw_devices=[EXA], env={}, strict=True)
        (status,) = m.statuses()
        assert status.ok and status.name == "example_vendor" and status.targets == ["exa-1"]
        assert status.origin == f"entry point {ENTRY_POINT_GROUP}:example_vendor = humming_example_vendor"
        (caps,) = m.catalog()
        assert caps.target.vendor == "example" and caps.target.arch == "exa-1"
        assert check_capabilities(caps) == [] and "EXAMPLE ONLY" in caps.notes[0]
        assert m.capabilities("exa-1") is caps
        (dev,) = m.devices()
        assert dev.plugin == "example_vendor" and dev.target == caps.target and dev.sku.name == "EXA-1 Example Card"
        chain = m.toolchain(caps.target)
        ok, reason = chain.availability()
        assert not ok and "made-up target" in reason
        with pytest.raises(UnsupportedError):
            chain.compile('extern "C" __global__ void k() {}', target=caps.target)


def test_the_example_answers_only_its_own_devices(installed):
    with only("example_vendor"):
        m = DeviceManager(raw_devices=[RawDevice("example", 1, "EXA-2"), RawDevice("cuda", 2, "EXA-1", (8, 0))],
                          env={})
        assert m.devices() == [] and len(m.unclaimed) == 2


def test_the_public_api_and_the_cli_list_the_installed_plugin(installed, capsys):
    with only("example_vendor"):
        reset_manager()
        try:
            assert [c.target.arch for c in humming.devices.catalog()] == ["exa-1"]
            assert [p.name for p in humming.devices.plugins() if p.ok] == ["example_vendor"]
            assert humming.devices.list() == []  # the example vendor has no driver: nothing present
            assert humming_cli(["devices", "--all"]) == 0
        finally:
            reset_manager()
    out = capsys.readouterr().out
    assert "exa-1" in out and "example_vendor" in out


# ---- broken plugins ---------------------------------------------------------------------------------------
def test_broken_plugins_are_reported_by_name_and_reason_and_listing_goes_on(installed, capsys):
    import humming_bad_capability

    with only("example_vendor", "broken_import", "hook_raises", "bad_capability"):
        m = DeviceManager(raw_devices=[EXA], env={})
        assert [c.target.arch for c in m.catalog()] == ["exa-1"]  # the good plugin still lists
        (dev,) = m.devices()
        assert dev.plugin == "example_vendor"
        st = {s.name: s for s in m.statuses()}
        assert st["example_vendor"].ok
        assert not st["broken_import"].ok and "import failed" in st["broken_import"].reason
        assert "humming_no_such_dependency_xyz" in st["broken_import"].reason
        assert "Traceback" in st["broken_import"].detail
        assert not st["hook_raises"].ok and "humming_declare_targets raised RuntimeError" in st["hook_raises"].reason
        assert "/dev/exa0 is missing" in st["hook_raises"].reason
        (problem, *_) = check_capabilities(humming_bad_capability.BAD)
        assert not st["bad_capability"].ok and "fails validation" in st["bad_capability"].reason
        assert problem in st["bad_capability"].reason and st["bad_capability"].targets == []

        reset_manager()
        try:
            assert humming_cli(["devices"]) == 0
        finally:
            reset_manager()
    out = capsys.readouterr().out
    for name in ("broken_import", "hook_raises", "bad_capability"):
        assert f"BROKEN {name}" in out
    assert "3 broken" in out


@pytest.mark.parametrize("name,reason", [
    ("broken_import", "import failed: ModuleNotFoundError"),
    ("hook_raises", "vendor driver table /dev/exa0 is missing"),
    ("bad_capability", "capability fails validation"),
])
def test_strict_plugins_makes_each_broken_plugin_an_error(installed, name, reason):
    with only(name), knobs.scope(HUMMING_STRICT_PLUGINS=True):
        with pytest.raises(PluginError) as err:
            DeviceManager(raw_devices=[], env={}).catalog()
    assert err.value.plugin == name and reason in str(err.value)


def test_two_plugins_claiming_a_device_equally_leave_it_unclaimed_naming_both(installed):
    # A tie is no plugin's fault: the device stays unclaimed with the tie as its reason (listing goes on), and strict
    # mode raises it, naming both.
    with only("example_vendor", "clone_vendor"):
        m = DeviceManager(raw_devices=[EXA], env={})
        assert {c.target.arch for c in m.catalog()} == {"exa-1", "exa-1-clone"}  # both declare fine
        assert m.devices() == [] and m.unclaimed == [EXA]
        why = m.unclaimed_reason(EXA)
        with pytest.raises(PluginError) as err:
            DeviceManager(raw_devices=[EXA], env={}, strict=True).devices()
    for text in (why, str(err.value)):
        assert "example_vendor" in text and "clone_vendor" in text and "specificity 100" in text, text
    assert "EXA-1" in str(err.value)


def test_a_more_specific_claim_resolves_the_tie(installed):
    import humming_clone_vendor
    from humming.devices.device import DeviceMatch
    from humming.devices.hookspecs import hookimpl

    class Sharper:  # the clone vendor, more sure of itself
        humming_api_version = staticmethod(humming_clone_vendor.humming_api_version)
        humming_declare_targets = staticmethod(humming_clone_vendor.humming_declare_targets)

        @staticmethod
        @hookimpl
        def humming_probe_device(raw, env):
            return DeviceMatch(101, humming_clone_vendor.CLONE, evidence="clone: firmware id")

    with only("example_vendor", "sharper"):
        (dev,) = DeviceManager(plugins=[("sharper", Sharper)], raw_devices=[EXA], env={}).devices()
    assert dev.plugin == "sharper" and dev.target.vendor == "clone"
