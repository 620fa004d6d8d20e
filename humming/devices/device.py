"""Device identity: what an enumerator saw (RawDevice), what a plugin claims of it (DeviceMatch, or a DeviceDecline
that says why it cannot), and the Device."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from humming.capabilities.model import DeviceCapabilities, SkuFacts, Target


@dataclass(frozen=True)
class RawDevice:
    """A physical device as a driver reports it, before any plugin has claimed it.

    ``api`` says which driver saw it ("cuda" for anything the CUDA driver lists, PPUs included);
    ``attributes`` holds the driver's answers (sm_count, shared memory, memory bytes, l2 bytes ...).
    """

    api: str
    index: int
    name: str
    compute_capability: tuple[int, int] | None = None
    attributes: Mapping[str, Any] = field(default_factory=dict)
    uuid: str = ""


@dataclass(frozen=True)
class DeviceMatch:
    """A plugin's claim on a RawDevice. The claim with the highest ``specificity`` wins; a tie is an error.

    Specificity is explicit, never load order: a generic claim by compute capability is low (NVIDIA: 10), a claim
    on vendor evidence (a PPU's device name or SDK) is higher.
    """

    specificity: int
    capabilities: DeviceCapabilities
    sku: SkuFacts | None = None
    evidence: str = ""  # why the plugin claims it: "compute capability 9.0", "device name starts with PPU"
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class DeviceDecline:
    """A plugin's answer that a RawDevice is of its kind but humming cannot use it, and why.

    Returned from ``humming_probe_device`` instead of None, so that the unclaimed device is listed with the reason
    (``"compute capability 7.0 is older than sm_75, the oldest NVIDIA target humming has"``).
    """

    reason: str


def check_match(match: DeviceMatch) -> list[str]:
    """Fields of a plugin's DeviceMatch that have the wrong type; an empty list means it can be used."""
    problems = []
    # bool is an int subclass: True would pass as specificity 1.
    if not isinstance(match.specificity, int) or isinstance(match.specificity, bool):
        problems.append(f"specificity must be an int, got {type(match.specificity).__name__} {match.specificity!r}")
    if not isinstance(match.capabilities, DeviceCapabilities):
        problems.append(f"capabilities must be a DeviceCapabilities (one the plugin declared), got "
                        f"{type(match.capabilities).__name__} {match.capabilities!r:.60}")
    if match.sku is not None and not isinstance(match.sku, SkuFacts):
        problems.append(f"sku must be a SkuFacts or None, got {type(match.sku).__name__} {match.sku!r:.60}")
    if not isinstance(match.evidence, str):
        problems.append(f"evidence must be a str, got {type(match.evidence).__name__}")
    if not isinstance(match.notes, tuple) or not all(isinstance(n, str) for n in match.notes):
        problems.append(f"notes must be a tuple of str, got {match.notes!r:.60}")
    return problems


@dataclass(frozen=True)
class Device:
    """A present device, claimed by one plugin: identity, capability, and product facts."""

    index: int
    name: str
    vendor: str
    plugin: str
    capabilities: DeviceCapabilities
    raw: RawDevice
    sku: SkuFacts | None = None
    evidence: str = ""
    notes: tuple[str, ...] = ()

    @property
    def target(self) -> Target:
        return self.capabilities.target

    @property
    def id(self) -> str:
        return f"{self.vendor}:{self.index}"

    def describe(self) -> str:
        sm = self.raw.attributes.get("sm_count")
        sku = f", {self.sku.name}" if self.sku else ""
        sms = f", {sm} SMs" if sm else ""
        return f"[{self.index}] {self.name} ({self.target.arch}{sku}{sms}) via plugin {self.plugin}"

    def to_json(self) -> dict:
        caps = self.capabilities.to_json()
        return {
            "id": self.id,
            "index": self.index,
            "name": self.name,
            "vendor": self.vendor,
            "plugin": self.plugin,
            "arch": self.target.arch,
            "present": True,
            "claimed": True,
            "sku": None if self.sku is None else self.sku.to_json(),
            "attributes": dict(self.raw.attributes),
            "evidence": self.evidence,
            "mma": caps["mma"],
            "features": caps["features"],
            "hidden_formats": caps["hidden_formats"],
            "notes": list(self.notes) + caps["notes"],
            "unknown": caps["unknown"],
        }
