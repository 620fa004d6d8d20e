"""An example humming device plugin (a made-up target, exa-1): hookimpls only, wiring archs, detect and target.

humming finds it through the entry point in pyproject.toml (group ``humming.devices``, name ``example_vendor``).
Importing it touches no device: every hook is called lazily by humming's plugin manager.
"""

from __future__ import annotations

from typing import Callable, Mapping

from humming.capabilities.model import DeviceCapabilities, Target
from humming.devices.device import DeviceMatch, RawDevice
from humming.devices.hookspecs import API_VERSION, hookimpl
from humming.devices.toolchain import Toolchain
from humming_example_vendor import archs, detect
from humming_example_vendor.target import ExampleToolchain


@hookimpl
def humming_api_version() -> int:
    return API_VERSION


@hookimpl
def humming_declare_targets(register: Callable[[DeviceCapabilities], None]) -> None:
    register(archs.CAPABILITIES)


@hookimpl
def humming_enumerate_devices(register: Callable[[RawDevice], None]) -> None:
    """A real vendor asks its driver here (and registers nothing when there is no driver or no device).

    The example vendor has no driver, so it registers nothing; tests pass simulated RawDevices instead.
    """


@hookimpl
def humming_probe_device(raw: RawDevice, env: Mapping[str, str]) -> DeviceMatch | None:
    return detect.probe(raw, env)


@hookimpl
def humming_toolchain(target: Target) -> Toolchain | None:
    return ExampleToolchain() if target == archs.TARGET else None
