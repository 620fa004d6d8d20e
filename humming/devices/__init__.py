"""Devices: ``list()`` the present ones, ``catalog()`` every declared target, ``get(index)``, ``current()``.

Thin: the work is in ``humming.devices.manager``; nothing loads until the first call.
"""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from humming.capabilities.model import DeviceCapabilities
    from humming.devices.device import Device
    from humming.devices.manager import PluginStatus


def list() -> "builtins.list[Device]":  # noqa: A001 - the public name the brief asks for
    """The devices present on this machine, each claimed by one plugin (an empty list without a GPU)."""
    from humming.devices.manager import get_manager

    return get_manager().devices()


def catalog() -> "builtins.list[DeviceCapabilities]":
    """Every target every loaded plugin declares, present or not."""
    from humming.devices.manager import get_manager

    return get_manager().catalog()


def target(arch: str, vendor: str | None = None) -> "DeviceCapabilities":
    """The declared capabilities of one catalog target, by arch name (``"sm_90a"``, ``"ppu-810e"``)."""
    from humming.devices.manager import get_manager

    return get_manager().capabilities(arch, vendor)


def get(index: int) -> "Device":
    """The present device with this index."""
    from humming.devices.manager import get_manager

    return get_manager().device(index)


def current() -> "Device":
    """The present device torch's current CUDA device index points at."""
    from humming.devices.manager import get_manager

    return get_manager().current_device()


def plugins() -> "builtins.list[PluginStatus]":
    """Every plugin humming tried to load, with its status (ok, or broken and why)."""
    from humming.devices.manager import get_manager

    return get_manager().statuses()


__all__ = ["list", "catalog", "target", "get", "current", "plugins"]
