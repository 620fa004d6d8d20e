"""Plugin managers the conformance tests share: the built-in plugins with the example vendor's, and an NVIDIA
table stripped of its 'emulated' marks."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from humming.devices.manager import DeviceManager

EXAMPLE_SRC = Path(__file__).resolve().parents[1] / "plugins" / "example_vendor" / "src"


@pytest.fixture(scope="module")
def manager() -> DeviceManager:
    if str(EXAMPLE_SRC) not in sys.path:
        sys.path.insert(0, str(EXAMPLE_SRC))
    import humming_example_vendor

    return DeviceManager(plugins=[("example_vendor", humming_example_vendor)])


@pytest.fixture(scope="module")
def unmarked() -> DeviceManager:
    """The NVIDIA plugin with its 'emulated' marks stripped: a table that claims emulated forms as native."""
    import dataclasses

    import humming.devices.nvidia as nv
    from humming.devices.hookspecs import hookimpl

    class Unmarked:
        humming_api_version = staticmethod(nv.humming_api_version)
        humming_toolchain = staticmethod(nv.humming_toolchain)
        humming_instruction_probe = staticmethod(nv.humming_instruction_probe)

        @hookimpl
        def humming_declare_targets(self, register):  # noqa: ANN001, ANN201
            got: list = []
            nv.humming_declare_targets(got.append)
            for caps in got:
                register(dataclasses.replace(caps, mma=tuple(dataclasses.replace(i, emulated=False, emulation="")
                                                             for i in caps.mma)))

    return DeviceManager(autoload=False, plugins=[("nvidia", Unmarked())])
