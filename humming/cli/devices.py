"""``humming devices [--all] [--json]``: the present devices, or the whole catalog, and the plugins' health."""

from __future__ import annotations

import argparse
import json

from humming.capabilities.explain import CATALOG_HEADER, catalog_rows, mma_summary, table
from humming.devices.manager import DeviceManager, get_manager


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("devices", help="list present devices (--all: every declared target)")
    p.add_argument("--all", action="store_true", help="the catalog: every target every plugin declares")
    p.add_argument("--json", action="store_true", help="print a JSON array instead of a table")
    p.set_defaults(func=run)


def catalog_json(manager: DeviceManager) -> list[dict]:
    present = {d.target.arch for d in manager.devices()}
    out = []
    for caps in manager.catalog():
        body = caps.to_json()
        out.append({
            "id": f"{caps.target.vendor}:{caps.target.arch}",
            "name": caps.name,
            "vendor": caps.target.vendor,
            "plugin": manager.plugin_of(caps.target),
            "arch": caps.target.arch,
            "family": caps.target.family,
            "present": caps.target.arch in present,
            "preview": caps.preview,
            "mma": body["mma"],
            "features": body["features"],
            "hidden_formats": body["hidden_formats"],
            "skus": body["skus"],
            "notes": body["notes"],
            "unknown": body["unknown"],
        })
    return out


def run(args: argparse.Namespace, manager: DeviceManager | None = None) -> int:
    manager = manager or get_manager()
    devices = manager.devices()
    statuses = manager.statuses()
    if args.json:
        data = catalog_json(manager) if args.all else [d.to_json() for d in devices]
        print(json.dumps(data, indent=2))
        return 0
    if args.all:
        plugin_of = {c.target.arch: manager.plugin_of(c.target) for c in manager.catalog()}
        print(table(catalog_rows(manager.catalog(), plugin_of, {d.target.arch for d in devices}), CATALOG_HEADER))
    elif devices:
        rows = [[str(d.index), d.name, d.target.arch, d.sku.name if d.sku else "?",
                 str(d.raw.attributes.get("sm_count", "?")), d.plugin, mma_summary(d.capabilities)] for d in devices]
        print(table(rows, ("index", "name", "target", "sku", "SMs", "plugin", "mma")))
        for d in devices:
            for note in d.notes:
                print(f"  note [{d.index}]: {note}")
    else:
        print("no devices present (no GPU visible through any plugin's driver); `humming devices --all` lists the catalog")
    for raw in manager.unclaimed:
        print(f"unclaimed device [{raw.index}] {raw.name!r} (cc {raw.compute_capability}): no plugin claims it")
    broken = [s for s in statuses if not s.ok]
    ok = [s.name for s in statuses if s.ok]
    print(f"\nplugins: {', '.join(ok) or 'none'} ok" + (f"; {len(broken)} broken" if broken else ""))
    for s in broken:
        print(f"  BROKEN {s.name} ({s.origin}): {s.reason}")
    return 0
