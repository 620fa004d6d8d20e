"""The vendor contract: the pluggy hook specifications a device plugin implements.

A plugin is a module (or object) with ``@hookimpl`` functions, registered through the entry-point group
``humming.devices``. The built-in NVIDIA and T-Head plugins register exactly so. No hook is ``firstresult``:
humming collects every plugin's answer and decides by explicit rules (specificity for device claims; the
declaring plugin for a target's compiler), never by load order.

Hooks must not touch a GPU at import time; ``humming_enumerate_devices`` is the only hook that talks to a driver.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Mapping

import pluggy

from humming.capabilities.model import DeviceCapabilities, MmaInstruction, Target
from humming.devices.device import DeviceDecline, DeviceMatch, RawDevice
from humming.devices.probe import InstructionProbe
from humming.devices.toolchain import Toolchain

if TYPE_CHECKING:  # for annotations only: the contract module stays free of the kernel layer
    from humming.core.plan import GemmTuner

PROJECT = "humming"
ENTRY_POINT_GROUP = "humming.devices"
#: The contract version. A plugin declares the version it was written against; a mismatch is reported.
API_VERSION = 1

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def humming_api_version() -> int:
    """Say which version of this contract the plugin implements.

    :return: the ``API_VERSION`` the plugin was written against (currently 1).
    """
    # A specification only: pluggy reads its signature and calls the plugins' implementations, never this.
    # Raising (rather than an empty body) keeps the ``-> int`` contract true for the type checker.
    raise NotImplementedError("humming_api_version is a hook specification; plugins implement it")


@hookspec
def humming_declare_targets(register: Callable[[DeviceCapabilities], None]) -> None:
    """Declare every compile target the plugin knows, present or not (the catalog).

    :param register: call once per target with its full DeviceCapabilities. Each target's
        (vendor, arch) must be unique across all plugins.
    """


@hookspec
def humming_enumerate_devices(register: Callable[[RawDevice], None]) -> None:
    """Report the physical devices a driver this plugin owns can see (NVIDIA: the CUDA driver).

    Called lazily, by ``humming.devices.list()``, never at import. Without a driver or a device, register nothing.
    A device that several vendors' drivers would list (a PPU seen through a CUDA-compatible driver) is
    reported once, by whichever plugin owns that driver; other plugins claim it in ``humming_probe_device``.

    :param register: call once per device with a RawDevice.
    """


@hookspec
def humming_probe_device(raw: RawDevice, env: Mapping[str, str]) -> DeviceMatch | DeviceDecline | None:
    """Claim a RawDevice, decline it with a reason, or return None (not this plugin's kind of device).

    :param raw: the device as its driver reported it (name, compute capability, attributes).
    :param env: the process environment (so that tests can simulate an SDK being installed).
    :return: a DeviceMatch with an explicit specificity, under a target this plugin declared. The highest
        specificity wins; equal specificities from two plugins leave the device unclaimed with the tie as its reason
        (strict mode: a PluginError naming both). A DeviceDecline says the device is of this plugin's kind but humming
        cannot use it, and why; the reason is shown beside the unclaimed device.
    """


@hookspec
def humming_toolchain(target: Target) -> Toolchain | None:
    """Supply the compiler for a target this plugin declared.

    :param target: one of the targets the plugin registered in ``humming_declare_targets``.
    :return: a Toolchain (which may report itself unavailable, with a reason), or None for other plugins' targets.
    """


@hookspec
def humming_instruction_probe(instruction: MmaInstruction, target: Target) -> InstructionProbe | str | None:
    """Render a micro-kernel that executes one declared MMA instruction once, for conformance.

    :param instruction: an entry of the target's DeviceCapabilities.mma.
    :param target: the target it was declared for.
    :return: an InstructionProbe (source plus how to launch and check it: conformance compiles it at ``declare``
        and runs it at ``numeric``), or plain CUDA C++ source defining ``extern "C" __global__ void
        humming_probe(const unsigned*, unsigned*)`` (compiled only), or None for other plugins' targets.
    """


@hookspec
def humming_tuner(target: Target) -> GemmTuner | None:
    """Supply the tuning rules for a target this plugin declared.

    :param target: one of the plugin's targets.
    :return: an object with ``plan(problem, capabilities, sm_count)`` that returns the kernel parameters for a
        GemmProblem and ``grid_sizes(plan)`` (a humming.core.plan.GemmTuner), or None when the plugin has no
        GEMM kernels for the target (``humming.gemm`` then raises UnsupportedError naming this hook).
    """
