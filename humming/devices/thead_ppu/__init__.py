"""The T-Head Zhenwu PPU plugin: hookimpls only (targets in archs, the claim rule in detect, the compiler in target).

Registered through the entry point ``humming.devices: thead_ppu``, exactly as a vendor's package would be.
It enumerates nothing: a PPU is listed by the CUDA driver, which the NVIDIA plugin enumerates, and this plugin
claims it in ``humming_probe_device`` with a higher specificity than NVIDIA's generic claim.
"""

from __future__ import annotations

from typing import Callable, Mapping

from humming.capabilities.model import DeviceCapabilities, MmaInstruction, Target
from humming.devices.device import DeviceMatch, RawDevice
from humming.devices.hookspecs import API_VERSION, hookimpl
from humming.devices.thead_ppu import archs, detect, target as _target
from humming.devices.toolchain import Toolchain


@hookimpl
def humming_api_version() -> int:
    return API_VERSION


@hookimpl
def humming_declare_targets(register: Callable[[DeviceCapabilities], None]) -> None:
    for caps in archs.ALL:
        register(caps)


@hookimpl
def humming_probe_device(raw: RawDevice, env: Mapping[str, str]) -> DeviceMatch | None:
    return detect.probe(raw, env)


@hookimpl
def humming_toolchain(target: Target) -> Toolchain | None:
    return _target.toolchain_for(target)


@hookimpl
def humming_instruction_probe(instruction: MmaInstruction, target: Target) -> str | None:
    """No probe for PPU targets yet, on purpose.

    A probe must execute exactly the declared instruction, and the PPU's ISA is not public: only the
    ``ppu.mma.sync`` prefix and its N=16 tile are known, not the full mnemonic, the operand order or the
    fragment layout (its accumulators enumerate N before M). A probe rendered from guesses would test the
    guess, not the hardware, so conformance reports these instructions as having no probe until someone
    with the PPU SDK documentation writes one.
    """
    return None
