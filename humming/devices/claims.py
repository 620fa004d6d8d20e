"""Which plugin owns a device: the checks on a plugin's claim, and the choice among the valid claims.

Claims are decided by explicit specificity, never by load order: the highest wins; a tie at the top leaves the device
unclaimed with the tie as its reason (strict mode: a PluginError naming the plugins). A claim must name a target the
claiming plugin declared itself, in a well-formed DeviceMatch (device.check_match) whose capabilities validate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from humming.capabilities.model import DeviceCapabilities, Target, check_capabilities
from humming.devices.device import Device, DeviceMatch, RawDevice, check_match
from humming.errors import PluginError


@dataclass(frozen=True)
class Declared:
    """A target in the catalog, with the plugin that declared it."""

    plugin: str
    capabilities: DeviceCapabilities


def claim_problem(plugin: str, raw: RawDevice, match: object, catalog: Mapping[tuple[str, str], Declared]) -> str:
    """What is wrong with a plugin's answer to humming_probe_device ('' when it is a valid claim)."""
    if not isinstance(match, DeviceMatch):
        return (f"humming_probe_device returned a {type(match).__name__}, expected DeviceMatch, DeviceDecline "
                "or None")
    bad = check_match(match)
    if bad:
        return (f"humming_probe_device claimed device {raw.index} ({raw.name!r}) with a malformed DeviceMatch: "
                f"{'; '.join(bad)}")
    target = match.capabilities.target
    declared = catalog.get((target.vendor, target.arch)) if isinstance(target, Target) else None
    if declared is None or declared.plugin != plugin:
        # The target's compiler and tuner come from the plugin that declared it, so a claim under another
        # plugin's target would pair this plugin's device facts with that plugin's kernels.
        by = "" if declared is None else f" (it is declared by plugin {declared.plugin!r})"
        return (f"claimed device {raw.name!r} as {target}, a target it did not declare{by}; claim only "
                "targets registered in humming_declare_targets")
    if match.capabilities is not declared.capabilities:
        problems = check_capabilities(match.capabilities)
        if problems:
            return f"claimed device {raw.name!r} with capabilities that fail validation: {problems[0]}"
    return ""


def decide(raw: RawDevice, claims: Sequence[tuple[str, DeviceMatch]], declines: Sequence[str],
           asked: Sequence[str], strict: bool) -> Device | str:
    """The Device the most specific valid claim makes of ``raw``, or why no plugin has it (``declines``: the plugins'
    reasons for not claiming it; ``asked``: the plugins that were asked). A tie raises PluginError when ``strict``."""
    if not claims:
        return "; ".join(declines) or f"no plugin claims it (asked: {', '.join(asked) or 'none'})"
    ranked = sorted(claims, key=lambda c: -c[1].specificity)
    tied = [(p, m) for p, m in ranked if m.specificity == ranked[0][1].specificity]
    if len(tied) > 1:
        names = ", ".join(p for p, _ in tied)
        evidence = " / ".join(m.evidence or "no evidence given" for _, m in tied)
        tie = (f"{'both' if len(tied) == 2 else 'all'} claim device {raw.index} ({raw.name!r}) with "
               f"specificity {tied[0][1].specificity} ({evidence}); one of them must be more specific")
        if strict:
            raise PluginError(names, tie)
        # Neither plugin is broken, and picking one would be load order in disguise: no one gets it.
        return f"plugins {names} {tie} (HUMMING_PLUGINS can load only one of them)"
    plugin, match = ranked[0]
    notes = match.notes
    if len(ranked) > 1:
        others = ", ".join(f"{p} ({m.specificity})" for p, m in ranked[1:])
        notes = notes + (f"claimed by {plugin} at specificity {match.specificity} over {others}",)
    return Device(index=raw.index, name=raw.name, vendor=match.capabilities.target.vendor, plugin=plugin,
                  capabilities=match.capabilities, raw=raw, sku=match.sku, evidence=match.evidence, notes=notes)
