"""CUDA driver (cuda.bindings.driver) -> RawDevice, and RawDevice -> NVIDIA target and SKU (the claim).

Detection reads the driver, never guesses from names: the compute capability picks the target (``BY_CC``), and the
exact device name only picks the SKU within that target's parts. Without the driver library, without a GPU, or
with CUDA_VISIBLE_DEVICES hiding every GPU, there are no devices and no exception.

An NVIDIA GPU whose compute capability is not in the table is claimed as the nearest older known target of the same
major, at a lower specificity and with a note, only where that target has no ``a`` suffix: a cubin runs only on its
own major, and an ``a`` cubin only on its own architecture. Its limits are then the smallest any known target of that
major has, never the nearest target's own: 8.8 is sm_87's binary but not Orin's 164 KiB of shared memory (CCCL's
arch_traits<sm_88> is sm_86's, 100 KiB and 1536 threads). Otherwise (9.1, 12.2, 13.0 ...), and for a GPU older than
every target, the probe declines the device with the reason (DeviceDecline), so that it is listed as unclaimed and why.
"""

from __future__ import annotations

import re
from dataclasses import fields, replace
from typing import Any, Callable, Mapping

import humming
from humming.capabilities.model import DeviceCapabilities, ExecutionLimits
from humming.devices.device import DeviceDecline, DeviceMatch, RawDevice
from humming.devices.nvidia import archs

#: Specificity of a claim by a known compute capability. The T-Head plugin claims PPUs (which report CC 8.0)
#: above this, on vendor evidence.
SPECIFICITY = 10
#: Specificity of a claim for a compute capability humming does not know (nearest older target).
SPECIFICITY_NEAREST = 5

#: RawDevice.attributes key -> the driver attribute it is read from (CUdevice_attribute member name).
ATTRIBUTES: dict[str, str] = {
    "sm_count": "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT",
    "shared_memory_per_block_optin": "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN",
    "shared_memory_per_sm": "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR",
    "l2_bytes": "CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE",
    "max_threads_per_sm": "CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR",
    "registers_per_sm": "CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR",
    "memory_clock_khz": "CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE",  # peak memory clock
    "memory_bus_width_bits": "CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH",
    "clock_khz": "CU_DEVICE_ATTRIBUTE_CLOCK_RATE",  # peak SM clock
    "integrated": "CU_DEVICE_ATTRIBUTE_INTEGRATED",  # shares memory with the CPU (Orin, Thor, GB10)
}
_CC = ("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR", "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR")


def _load_driver() -> Any | None:
    try:
        from cuda.bindings import driver
    except ImportError:
        return None
    return driver


def _ok(driver: Any, result: Any) -> bool:
    return result == driver.CUresult.CUDA_SUCCESS


def _attribute(driver: Any, dev: Any, name: str) -> int | None:
    member = getattr(driver.CUdevice_attribute, name, None)
    if member is None:
        return None  # an attribute this driver binding does not have
    err, value = driver.cuDeviceGetAttribute(member, dev)
    return int(value) if _ok(driver, err) else None


def _uuid(driver: Any, dev: Any) -> str:
    getter = getattr(driver, "cuDeviceGetUuid", None)
    if getter is None:
        return ""
    err, uuid = getter(dev)
    if not _ok(driver, err):
        return ""
    raw = bytes(getattr(uuid, "bytes", b""))[:16]
    if len(raw) != 16:
        return ""
    h = raw.hex()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"  # nvidia-smi's spelling


def read_device(driver: Any, index: int) -> RawDevice | None:
    """One device as the driver reports it; None when the driver refuses the index."""
    err, dev = driver.cuDeviceGet(index)
    if not _ok(driver, err):
        return None
    err, name = driver.cuDeviceGetName(256, dev)
    name_text = bytes(name).split(b"\0", 1)[0].decode(errors="replace").strip() if _ok(driver, err) else ""
    major, minor = (_attribute(driver, dev, a) for a in _CC)
    attributes: dict[str, Any] = {}
    for key, attr in ATTRIBUTES.items():
        value = _attribute(driver, dev, attr)
        if value is not None:
            attributes[key] = bool(value) if key == "integrated" else value
    err, total = driver.cuDeviceTotalMem(dev)
    if _ok(driver, err):
        attributes["memory_bytes"] = int(total)
    cc = (major, minor) if major is not None and minor is not None else None
    return RawDevice(api="cuda", index=index, name=name_text, compute_capability=cc, attributes=attributes,
                     uuid=_uuid(driver, dev))


def enumerate_devices(register: Callable[[RawDevice], None], driver: Any | None = None) -> None:
    """Register every device the CUDA driver lists. No driver, no GPU: registers nothing, raises nothing.

    :param driver: the ``cuda.bindings.driver`` module, or a stand-in with the same functions (tests).
    """
    driver = _load_driver() if driver is None else driver
    if driver is None:
        return
    try:
        (err,) = driver.cuInit(0)
    except Exception:  # the binding raises when libcuda.so cannot be loaded (no driver installed)
        return
    if not _ok(driver, err):
        return  # CUDA_ERROR_NO_DEVICE, CUDA_ERROR_INSUFFICIENT_DRIVER ...
    err, count = driver.cuDeviceGetCount()
    if not _ok(driver, err):
        return
    for index in range(int(count)):
        raw = read_device(driver, index)
        if raw is not None:
            register(raw)


# ---- the claim -----------------------------------------------------------------------------------------------
#: Why an unknown compute capability gets no nearest target: the two rules a cubin's loading follows.
BINARY_RULES = ("a cubin runs only on devices of its own major compute capability (CUDA C++ Programming Guide, "
                "'Binary Compatibility'), and an 'a' cubin only on the architecture it was built for (PTX ISA, "
                "'Architecture-specific features')")


def _plain(arch: str) -> bool:
    """True for a target without the ``a``/``f`` suffix (sm_87): its cubin runs on every later minor of its major."""
    return re.fullmatch(r"sm_\d+", arch) is not None


def smallest_limits(major: int) -> ExecutionLimits:
    """Each limit at the smallest value any known target of ``major`` has (None where one of them does not know it):
    what a device of that major with an unknown minor can be planned for without exceeding what it has."""
    same = [archs.BY_ARCH[arch].limits for cc, arch in archs.BY_CC.items()
            if cc[0] == major and cc not in archs.LEGACY_CC]
    values: dict[str, int | None] = {}
    for f in fields(ExecutionLimits):
        known = [getattr(lim, f.name) for lim in same]
        values[f.name] = None if None in known else min(known)
    return ExecutionLimits(**values)


def _kib(n: int | None) -> str:
    return "unknown" if n is None else f"{n // 1024} KiB"


def target_for(cc: tuple[int, int]) -> tuple[DeviceCapabilities, str | None]:
    """The target for a compute capability, and a note when it is only the nearest older known one.

    Raises LookupError, with the reason, when no target humming has can run on the device: older than every target
    (pre-Turing), or unknown with no older plain (suffix-less) target of the same major.
    """
    arch = archs.BY_CC.get(cc)
    if arch is not None:
        return archs.BY_ARCH[arch], None
    oldest = min(archs.BY_CC)
    if cc < oldest:
        raise LookupError(f"compute capability {cc[0]}.{cc[1]} is older than every NVIDIA target humming has "
                          f"(the oldest is {oldest[0]}.{oldest[1]}, sm_75)")
    # Only targets of the same major can load here, and of those only plain ones (not the device's own 'a' target).
    # Legacy aliases name a target of another architecture (10.1 is Thor, an 11.0 binary): never "nearest".
    same_major = [known for known in archs.BY_CC if known[0] == cc[0] and known < cc and known not in archs.LEGACY_CC]
    plain = [known for known in same_major if _plain(archs.BY_CC[known])]
    if not plain:
        if same_major:
            nearest = max(same_major)
            why = (f"{archs.BY_CC[nearest]}, the nearest older target of major {cc[0]} (compute capability "
                   f"{nearest[0]}.{nearest[1]}), is arch-specific and there is no plain target of major {cc[0]}")
        else:
            why = f"there is no target of major {cc[0]}"
        raise LookupError(
            f"compute capability {cc[0]}.{cc[1]} (sm_{cc[0]}{cc[1]}) is not in humming {humming.__version__}'s "
            f"NVIDIA table, and no target there runs on it: {why}; {BINARY_RULES}. A humming release whose NVIDIA "
            f"table lists {cc[0]}.{cc[1]}, with an NVRTC that builds sm_{cc[0]}{cc[1]} (nvrtcGetSupportedArchs), "
            "would claim it")
    nearest = max(plain)
    caps = archs.BY_ARCH[archs.BY_CC[nearest]]
    # Never the nearest target's own limits: a new minor may have less (8.8 has sm_86's 100 KiB, not Orin's 164).
    lim = smallest_limits(cc[0])
    note = (f"compute capability {cc[0]}.{cc[1]} is not in humming's NVIDIA table; using {caps.target.arch}, the "
            f"nearest older known target (compute capability {nearest[0]}.{nearest[1]}), whose cubins run on every "
            f"later {cc[0]}.x device. Its limits are the smallest of the known {cc[0]}.x targets "
            f"({_kib(lim.shared_memory_per_sm)} shared memory per SM, {_kib(lim.shared_memory_per_block_optin)} per "
            f"block, {lim.max_threads_per_sm} threads per SM); its parts are those of {nearest[0]}.{nearest[1]}: run "
            "the conformance suite before trusting this table")
    return (caps if lim == caps.limits else replace(caps, limits=lim)), note


def probe(raw: RawDevice, env: Mapping[str, str]) -> DeviceMatch | DeviceDecline | None:
    """Claim a device the CUDA driver listed, by its compute capability; a DeviceDecline with the reason when no
    humming target runs on it; None for anything else."""
    if raw.api != "cuda" or raw.compute_capability is None:
        return None
    cc = raw.compute_capability
    try:
        caps, nearest_note = target_for(cc)
    except LookupError as no_target:
        return DeviceDecline(str(no_target))  # listed as unclaimed, with this reason
    notes: list[str] = []
    if nearest_note:
        notes.append(nearest_note)
    sku = caps.sku(raw.name.strip())
    if sku is None:
        parts = ", ".join(s.name for s in caps.skus) or "none yet"
        notes.append(f"{raw.name!r} is not a known {caps.target.arch} part (known: {parts}); capabilities follow "
                     f"compute capability {cc[0]}.{cc[1]}, product facts (peak rates, bandwidth) are unknown")
    else:
        driver_sms = raw.attributes.get("sm_count")
        if sku.sm_count is not None and driver_sms is not None and driver_sms != sku.sm_count:
            notes.append(f"the driver reports {driver_sms} SMs; the {sku.name} table says {sku.sm_count} "
                         "(a cut-down or MIG part): the driver's count is used for scheduling")
    evidence = f"compute capability {cc[0]}.{cc[1]}" + (f", device name {raw.name!r}" if sku else "")
    return DeviceMatch(specificity=SPECIFICITY_NEAREST if nearest_note else SPECIFICITY, capabilities=caps, sku=sku,
                       evidence=evidence, notes=tuple(notes))
