"""``humming devices [--all] [--json]``: the present devices, or the whole catalog, and the plugins' health."""

from __future__ import annotations

import argparse
import json

from humming.capabilities.explain import CATALOG_HEADER, catalog_rows, mma_summary, table
from humming.devices.device import RawDevice
from humming.devices.manager import DeviceManager, get_manager
from humming.errors import HummingError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("devices", help="list present devices (--all: every declared target)")
    p.add_argument("--all", action="store_true", help="the catalog: every target every plugin declares")
    p.add_argument("--json", action="store_true", help="print a JSON array instead of a table")
    p.set_defaults(func=run)


def _present(manager: DeviceManager) -> tuple[set[tuple[str, str]] | None, HummingError | None]:
    """The (vendor, arch) of every claimed device; None (and the error) when the claims could not be decided.

    Keyed by vendor too: two vendors may declare the same arch name (``vx:sm_90a`` beside ``nvidia:sm_90a``).
    """
    try:
        return {(d.target.vendor, d.target.arch) for d in manager.devices()}, None
    except HummingError as exc:  # strict mode: the catalog does not depend on claims, so it is listed first
        return None, exc


def catalog_json(manager: DeviceManager, present: set[tuple[str, str]] | None) -> list[dict]:
    out = []
    for caps in manager.catalog():
        body = caps.to_json()
        key = (caps.target.vendor, caps.target.arch)
        out.append({
            "id": f"{caps.target.vendor}:{caps.target.arch}",
            "name": caps.name,
            "vendor": caps.target.vendor,
            "plugin": manager.plugin_of(caps.target),
            "arch": caps.target.arch,
            "family": caps.target.family,
            "present": None if present is None else key in present,  # None: claims could not be decided
            "preview": caps.preview,
            "mma": body["mma"],
            "features": body["features"],
            "hidden_formats": body["hidden_formats"],
            "skus": body["skus"],
            "notes": body["notes"],
            "unknown": body["unknown"],
        })
    return out


def unclaimed_json(raw: RawDevice, reason: str) -> dict:
    """A present device no plugin claims, in the shape of Device.to_json where the fields exist."""
    return {"id": f"unclaimed:{raw.index}", "index": raw.index, "name": raw.name, "vendor": None, "plugin": None,
            "arch": None, "present": True, "claimed": False, "reason": reason, "api": raw.api,
            "compute_capability": None if raw.compute_capability is None else list(raw.compute_capability),
            "attributes": dict(raw.attributes)}


def _catalog_table(manager: DeviceManager, present: set[tuple[str, str]] | None) -> str:
    catalog = manager.catalog()
    plugin_of = {(c.target.vendor, c.target.arch): manager.plugin_of(c.target) for c in catalog}
    return table(catalog_rows(catalog, plugin_of, present), CATALOG_HEADER)


def run(args: argparse.Namespace, manager: DeviceManager | None = None) -> int:
    manager = manager or get_manager()
    if args.all:
        present, error = _present(manager)
        if args.json:
            print(json.dumps(catalog_json(manager, present), indent=2))
        else:
            print(_catalog_table(manager, present))
            if present is not None:
                _print_unclaimed(manager)
            _print_plugins(manager)
        if error is not None:
            raise error  # after the catalog: strict mode still fails on what it found
        return 0
    devices = manager.devices()
    unclaimed = [(raw, manager.unclaimed_reason(raw)) for raw in manager.unclaimed]
    if args.json:
        print(json.dumps([d.to_json() for d in devices] + [unclaimed_json(r, why) for r, why in unclaimed], indent=2))
        return 0
    if devices:
        rows = [[str(d.index), d.name, d.target.arch, d.sku.name if d.sku else "?",
                 str(d.raw.attributes.get("sm_count", "?")), d.plugin, mma_summary(d.capabilities)] for d in devices]
        print(table(rows, ("index", "name", "target", "sku", "SMs", "plugin", "mma")))
        for d in devices:
            for note in d.notes:
                print(f"  note [{d.index}]: {note}")
    elif not unclaimed:
        print("no devices present (no GPU visible through any plugin's driver); `humming devices --all` lists the catalog")
    _print_unclaimed(manager)
    _print_plugins(manager)
    return 0


def _print_unclaimed(manager: DeviceManager) -> None:
    for raw in manager.unclaimed:
        cc = raw.compute_capability
        seen = raw.api + ("" if cc is None else f", compute capability {cc[0]}.{cc[1]}")
        print(f"unclaimed device [{raw.index}] {raw.name!r} ({seen}): {manager.unclaimed_reason(raw)}")


def _print_plugins(manager: DeviceManager) -> None:
    statuses = manager.statuses()
    broken = [s for s in statuses if not s.ok]
    ok = [s.name for s in statuses if s.ok]
    print(f"\nplugins: {', '.join(ok) or 'none'} ok" + (f"; {len(broken)} broken" if broken else ""))
    for s in broken:
        print(f"  BROKEN {s.name} ({s.origin}): {s.reason}")
