"""The NVIDIA device plugin: hookimpls only (targets in archs, parts in skus, the driver in detect, probes in probes).

Registered through the entry point ``humming.devices: nvidia``, exactly as a vendor's package would be. Importing
it touches no GPU and compiles nothing; ``humming_enumerate_devices`` is the only hook that calls the driver.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Mapping

from humming.capabilities.model import DeviceCapabilities, MmaInstruction, Target
from humming.devices.device import DeviceDecline, DeviceMatch, RawDevice
from humming.devices.hookspecs import API_VERSION, hookimpl
from humming.devices.probe import InstructionProbe
from humming.devices.toolchain import Toolchain
from humming.errors import InvalidInputError

if TYPE_CHECKING:  # for annotations only: the tuner (and the kernel layer under it) loads on first use
    from humming.core.plan import GemmTuner

VENDOR = "nvidia"


def _ours(target: Target) -> bool:
    from humming.devices.nvidia import archs

    return target.vendor == VENDOR and target.arch in archs.BY_ARCH


@hookimpl
def humming_api_version() -> int:
    return API_VERSION


@hookimpl
def humming_declare_targets(register: Callable[[DeviceCapabilities], None]) -> None:
    from humming.devices.nvidia import archs

    for caps in archs.ALL:
        register(caps)


@hookimpl
def humming_enumerate_devices(register: Callable[[RawDevice], None]) -> None:
    from humming.devices.nvidia import detect

    detect.enumerate_devices(register)


@hookimpl
def humming_probe_device(raw: RawDevice, env: Mapping[str, str]) -> DeviceMatch | DeviceDecline | None:
    from humming.devices.nvidia import detect

    return detect.probe(raw, env)


@hookimpl
def humming_toolchain(target: Target) -> Toolchain | None:
    if not _ours(target):
        return None
    from humming.devices.nvidia.target import toolchain_for

    return toolchain_for(target)


@hookimpl
def humming_tuner(target: Target) -> GemmTuner | None:
    if not _ours(target):
        return None
    from humming.devices.nvidia.tuning import TUNER

    return TUNER


@hookimpl
def humming_instruction_probe(instruction: MmaInstruction, target: Target) -> InstructionProbe | None:
    if not _ours(target):
        return None
    from humming.devices.nvidia import archs, probes

    if instruction.form not in {i.form for i in archs.BY_ARCH[target.arch].mma}:
        raise InvalidInputError(f"{instruction.describe()} is not declared for {target.arch}; "
                                f"see humming.devices.target({target.arch!r}).mma for the declared forms")
    body, spec = probes.render(instruction)
    # tcgen05.ld moves f16 accumulators out of TMEM one value per 32-bit word.
    per_word = 1 if instruction.family.name == "tcgen05" and instruction.acc.bits == 16 else 0
    return InstructionProbe(source=probes.helpers([instruction]) + body, threads=spec.threads, words=spec.words,
                            increment=spec.increment, kernel=spec.kernel, values_per_word=per_word)
