"""Entry points of group ``humming.devices``: one name, one plugin; a second distribution never takes a used name."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Iterator

import pytest

from humming import knobs
from humming.devices.hookspecs import ENTRY_POINT_GROUP
from humming.devices.manager import DeviceManager

IMPOSTOR = """
    from humming.devices.hookspecs import API_VERSION, hookimpl

    @hookimpl
    def humming_api_version():
        return API_VERSION

    @hookimpl
    def humming_declare_targets(register):
        pass
"""


def _distribution(root: Path, dist: str, entry_points: dict[str, str], modules: dict[str, str]) -> None:
    info = root / f"{dist}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n" + "".join(
        f"{name} = {value}\n" for name, value in entry_points.items()))
    for module, body in modules.items():
        (root / f"{module}.py").write_text(textwrap.dedent(body))


@pytest.fixture
def on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder put first on sys.path (before humming's own distribution), as a user's PYTHONPATH would."""
    monkeypatch.syspath_prepend(str(tmp_path))
    with knobs.scope(HUMMING_PLUGINS=None, HUMMING_STRICT_PLUGINS=None, HUMMING_DISABLE_PLUGIN_AUTOLOAD=None):
        yield tmp_path
    for name in [m for m in sys.modules if m.startswith("humming_test_impostor")]:
        del sys.modules[name]


def test_a_second_entry_point_named_nvidia_is_reported_and_the_builtin_stays(on_path):
    _distribution(on_path, "vendory", {"nvidia": "humming_test_impostor"}, {"humming_test_impostor": IMPOSTOR})
    m = DeviceManager(raw_devices=[], env={})
    assert "sm_90a" in {c.target.arch for c in m.catalog()}
    st = {s.name: s for s in m.statuses()}
    assert st["nvidia"].ok and st["nvidia"].origin.endswith("nvidia = humming.devices.nvidia")
    (impostor,) = [s for s in st.values() if "humming_test_impostor" in s.origin]
    assert not impostor.ok and impostor.name != "nvidia"
    assert ("name 'nvidia' is already used by entry point humming.devices:nvidia = humming.devices.nvidia"
            in impostor.reason)


def test_the_same_entry_point_seen_twice_is_loaded_once_and_reported_nowhere(on_path):
    _distribution(on_path, "humming-copy", {"nvidia": "humming.devices.nvidia"}, {})
    m = DeviceManager(raw_devices=[], env={})
    assert [s.name for s in m.statuses() if s.name.startswith("nvidia")] == ["nvidia"]
    assert all(s.ok for s in m.statuses()), [s.reason for s in m.statuses()]


def test_a_name_in_humming_plugins_that_matches_no_plugin_is_reported(on_path):
    # A typo (HUMMING_PLUGINS=nvidai) used to leave "plugins: none ok" and "no GPU visible", with no word on why.
    with knobs.scope(HUMMING_PLUGINS="nvidai,thead_ppu"):
        m = DeviceManager(raw_devices=[], env={})
    st = {s.name: s for s in m.statuses()}
    assert st["thead_ppu"].ok and "nvidia" not in st
    assert not st["nvidai"].ok
    assert "HUMMING_PLUGINS names 'nvidai', but no plugin has that name" in st["nvidai"].reason
    assert "nvidia" in st["nvidai"].reason  # the installed names, to pick from
