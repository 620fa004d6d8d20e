"""The PPU claim rule, as data: which evidence makes a CUDA-listed device a PPU, and how strongly it out-ranks NVIDIA.

A PPU is listed by the CUDA driver and reports compute capability 8.0, so the NVIDIA plugin would claim it as
sm_80 (its generic claim has specificity 10). The PPU plugin claims it on vendor evidence, with a higher
specificity, so that the choice never depends on plugin load order:

- device name starts with PPU or ZW, and PPU_SDK is set: 120
- device name starts with PPU or ZW: 100
- PPU_SDK is set, the device reports compute capability 8.0, and its name is a known PPU model code ("810E"): 50
- none of these: no claim

The SDK is weaker evidence (a machine may carry the SDK and an NVIDIA GPU), so it counts only for a device whose own
name says PPU (its prefix, or a known model code). The absence of "NVIDIA" in a name is no such evidence: older
drivers name an A100 "A100-SXM4-40GB".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from humming.devices.device import DeviceMatch, RawDevice
from humming.devices.thead_ppu import archs, skus

#: The environment variable that names the PPU SDK root (FlagGems and vllm-plugin-FL test for it).
SDK_ENV = "PPU_SDK"
#: The compute capability a PPU reports (vllm-plugin-FL: a "CC 8.0 device").
REPORTED_CC: tuple[int, int] = (8, 0)


@dataclass(frozen=True)
class ClaimRule:
    """One row of the claim table: which evidence is present, and the specificity it earns."""

    name_prefix: bool  # the device name starts with PPU or ZW
    sdk_with_cc: bool  # PPU_SDK is set and the device reports compute capability 8.0 (and its name says PPU)
    specificity: int


#: Highest first; the first row whose evidence is all present decides. NVIDIA's generic claim is 10.
RULES: tuple[ClaimRule, ...] = (
    ClaimRule(name_prefix=True, sdk_with_cc=True, specificity=120),
    ClaimRule(name_prefix=True, sdk_with_cc=False, specificity=100),
    ClaimRule(name_prefix=False, sdk_with_cc=True, specificity=50),
)


def _sdk_root(env: Mapping[str, str]) -> str:
    return env.get(SDK_ENV, "").strip()


def probe(raw: RawDevice, env: Mapping[str, str]) -> DeviceMatch | None:
    """Claim ``raw`` as a PPU, or return None.

    :param raw: the device as the CUDA driver reported it.
    :param env: the process environment (tests pass a simulated one).
    :return: a DeviceMatch with the specificity of the first rule of RULES whose evidence holds.
    """
    if raw.api != "cuda":
        return None  # a PPU is seen through the CUDA driver; other drivers' devices are not ours
    by_name = skus.has_ppu_prefix(raw.name)
    sdk = _sdk_root(env)
    sku = skus.sku_for_name(raw.name)
    # The SDK counts only with a positive PPU signal from the device itself: its name's prefix, or a name that is
    # exactly a known model code. A mere name without NVIDIA would take an A100 that an older driver reports as
    # "A100-SXM4-40GB" (CC 8.0 too).
    by_sdk = bool(sdk) and raw.compute_capability == REPORTED_CC and (by_name or sku is not None)
    rule = next((r for r in RULES if (by_name or not r.name_prefix) and (by_sdk or not r.sdk_with_cc)), None)
    if rule is None:
        return None

    evidence = []
    if by_name:
        evidence.append(f"device name {raw.name!r} starts with {'/'.join(skus.NAME_PREFIXES)}")
    if by_sdk:
        evidence.append(f"{SDK_ENV}={sdk} is set and the device reports compute capability "
                        f"{REPORTED_CC[0]}.{REPORTED_CC[1]}")
        if not by_name:
            evidence.append(f"{raw.name!r} is the PPU model code {skus.model_code(raw.name)!r}")

    if sku is not None:
        return DeviceMatch(specificity=rule.specificity, capabilities=archs.capabilities_for(sku.arch),
                           sku=sku.facts, evidence="; ".join(evidence))
    # The evidence says PPU but not which one. The 810E table (the part known to report CC 8.0) is the honest
    # default: sm_80 binaries from NVRTC would not run on any PPU, so the NVIDIA plugin must not win it.
    default = skus.ZW810E
    note = (f"model code {skus.model_code(raw.name)!r} of {raw.name!r} is not a known PPU; the {default.arch} "
            "table is assumed: run the conformance suite to confirm it")
    return DeviceMatch(specificity=rule.specificity, capabilities=archs.capabilities_for(default.arch), sku=None,
                       evidence="; ".join(evidence), notes=(note,))
