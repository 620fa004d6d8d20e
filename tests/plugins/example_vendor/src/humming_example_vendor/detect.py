"""The example vendor's claim rule: a device its driver reports by the exact name EXA-1 is an exa-1."""

from __future__ import annotations

from typing import Mapping

from humming.devices.device import DeviceMatch, RawDevice
from humming_example_vendor import archs

#: The driver API the example vendor's devices come through (what its enumerate hook would report).
API = "example"
#: Higher than any generic claim: the evidence is the vendor's own driver and an exact product name.
SPECIFICITY = 100


def probe(raw: RawDevice, env: Mapping[str, str]) -> DeviceMatch | None:
    """Claim ``raw`` when the example driver reports it by the exact name of a known SKU; else None."""
    if raw.api != API:
        return None
    sku = archs.CAPABILITIES.sku(raw.name)
    if sku is None:
        return None
    return DeviceMatch(specificity=SPECIFICITY, capabilities=archs.CAPABILITIES, sku=sku,
                       evidence=f"the {API} driver reports the device by the name {raw.name!r}")
