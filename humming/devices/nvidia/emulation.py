"""An older NVIDIA target's kernels on the present GPU, for tests: that target's plan and code paths, this GPU's ISA.

The lent GPU is an H200, which runs sm_90 machine code only, so the kernels the tuner picks for sm_75 ... sm_89
would otherwise run nowhere before a user's. Every target-dependent instruction of the arch layer is chosen on
``HM_ARCH`` (``arch/types.cuh``: ``__CUDA_ARCH__`` unless the unit sets it). A plan made with target T's
capabilities, its spec moved to the present GPU's target (``moved_to``) and compiled inside ``code_paths_of(T)``,
runs T's code paths with T's tiles, stages and schedule (sized by its shared memory) on this GPU:

- sm_75: each m16n8k16 MMA as two m16n8k8, copies as synchronous loads and stores in the same pipeline, f16 pairs
  converted one half at a time, no L2 cache policies;
- before sm_89: the software e4m3 conversion; before sm_90: no programmatic dependent launch.

The plan must be one T can run (moved_to checks it against T's capabilities as well as the GPU's), and the kernel
exports the paths it took (``code_paths``: HM_ARCH), so a caller can hold the launch to them. Not reproduced: T's
machine code (ptxas schedules for the GPU it builds for), its SM count (the caller plans with the GPU's, so grids
and schedules are the GPU's) and its speed. Targets newer than the GPU are refused (their paths may use instructions
it lacks), as are arch-specific ones other than the GPU's own (sm_90a's paths are an H200's own).
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Iterator

from humming import knobs
from humming.capabilities.model import DeviceCapabilities, Target
from humming.core.plan import KernelPlan
from humming.devices.nvidia.target import VENDOR, parse_arch
from humming.errors import UnsupportedError

#: The macro the arch layer selects its code paths on (arch/types.cuh).
MACRO = "HM_ARCH"


def arch_number(target: Target) -> int:
    """``sm_75`` -> 750: the target as ``__CUDA_ARCH__`` (and so ``HM_ARCH``) numbers it."""
    number, _suffix = parse_arch(target.arch)
    return number * 10


def check_emulates(target: Target, device: Target) -> None:
    """UnsupportedError unless a GPU of ``device`` can run ``target``'s code paths: both NVIDIA, ``target`` no newer,
    and arch-specific (``a`` / ``f``) only when it is the GPU's own target."""
    if target.vendor != VENDOR or device.vendor != VENDOR:
        raise UnsupportedError(f"{target} on {device}: only NVIDIA targets' code paths run on an NVIDIA GPU here",
                               missing=[f"an emulation of {target.vendor} code paths"])
    if target == device or _older_paths(target, device):
        return
    why = "arch-specific" if parse_arch(target.arch)[1] else "newer than the GPU"
    raise UnsupportedError(
        f"{target.arch}'s code paths cannot run on a {device.arch} GPU ({why}: they may use instructions it lacks)",
        missing=[f"a {target.arch} GPU"],
        alternatives=[f"the targets whose paths run there: {', '.join(emulated_on(device)) or 'none'}"])


def _older_paths(target: Target, device: Target) -> bool:
    """Whether ``target`` is an NVIDIA target without a suffix and no newer than ``device``: its paths run there."""
    return target.vendor == VENDOR and not parse_arch(target.arch)[1] and arch_number(target) <= arch_number(device)


def emulated_on(device: Target) -> list[str]:
    """The catalog's NVIDIA targets whose code paths a GPU of ``device`` runs: those without a suffix no newer."""
    import humming.devices

    return [caps.target.arch for caps in humming.devices.catalog()
            if caps.target != device and _older_paths(caps.target, device)]


def moved_to(plan: KernelPlan, device: DeviceCapabilities) -> KernelPlan:
    """``plan`` (made for an older target) with its spec built for ``device``'s target instead; launch it inside
    ``code_paths_of(plan.spec.target)``. UnsupportedError when the device cannot run that spec."""
    import humming.devices

    source = plan.spec.target
    check_emulates(source, device.target)
    plan.spec.check_supported(humming.devices.target(source.arch, source.vendor))  # a plan the older target runs
    spec = dataclasses.replace(plan.spec, target=device.target)
    spec.check_supported(device)
    return dataclasses.replace(plan, spec=spec, reasons=plan.reasons + (
        f"built for {device.target.arch} with {source.arch}'s code paths ({MACRO}={arch_number(source)}), "
        "to test them on this GPU",))


@contextlib.contextmanager
def code_paths_of(target: Target) -> Iterator[None]:
    """Every kernel compiled inside the block takes ``target``'s code paths: HUMMING_KERNEL_DEFINES gains
    ``HM_ARCH=<number>`` (part of every cache key, so these kernels never stand in for the GPU's own)."""
    kept = tuple(d for d in knobs.kernel_defines.get() if d.partition("=")[0] != MACRO)
    with knobs.scope(HUMMING_KERNEL_DEFINES=(*kept, f"{MACRO}={arch_number(target)}")):
        yield
