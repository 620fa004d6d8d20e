"""T-Head Zhenwu PPU products (810E, M890): product facts with their sources, and the model code from a device name.

Little about these parts is public. Each figure carries the source it comes from; what no source gives is
``None``. The driver's own answers (SM count, memory size) are read at run time and win over this table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from humming.capabilities.model import Provenance, SkuFacts, Source

# ---- sources -------------------------------------------------------------------------------------------
ZW810E_MEMORY = Source(Provenance.VENDOR_DECLARED,
                       "T-Head Zhenwu 810E product page, as quoted by udn.com (2026-01-30) and servernews.ru: "
                       "96 GB HBM2e")
ZW810E_POWER = Source(Provenance.VENDOR_DECLARED, "CCTV comparison table: 400 W")
ZW810E_LINK = Source(Provenance.REPORTED,
                     "servernews.ru: proprietary ICN, 700 GB/s between chips, seven ICN links per chip; "
                     "PCIe 5.0 x16 to the host")
M890_MEMORY = Source(Provenance.REPORTED, "the-weekly-investor: 144 GB, HBM3 (single source, unverified)")
M890_LINK = Source(Provenance.REPORTED, "press reports: 800 GB/s between chips, ICN Switch 1.0 (unverified)")


@dataclass(frozen=True)
class PpuSku:
    """One PPU product: its facts, the model codes a device name may carry, and the sources of the notes."""

    facts: SkuFacts
    arch: str  # the Target arch this product runs: "ppu-810e"
    model_codes: tuple[str, ...]  # normalized model codes (upper case, no separators), matched exactly
    notes: tuple[tuple[str, Source], ...] = ()  # facts SkuFacts has no field for (memory type, power, links)


ZW810E = PpuSku(
    facts=SkuFacts(
        name="Zhenwu 810E",
        sm_count=None,  # not published; the driver's figure is read at run time
        memory_bytes=96 * 10**9,  # "96 GB" as declared (decimal GB); the driver reports the usable size
        memory_bandwidth=None,  # not published in any source found
        l2_bytes=None,
        peak_dense_tflops={},  # "beats A800, close to H20" (CCTV) gives no figure
        match_names=("ZW810E", "PPU-ZW810E"),  # driver names as seen in public code that tests for them
        source=ZW810E_MEMORY,
    ),
    arch="ppu-810e",
    model_codes=("ZW810E", "810E"),
    notes=(("memory type HBM2e", ZW810E_MEMORY), ("power 400 W", ZW810E_POWER),
           ("ICN 700 GB/s between chips, PCIe 5.0 x16 to the host", ZW810E_LINK)),
)

M890 = PpuSku(
    facts=SkuFacts(
        name="Zhenwu M890",
        sm_count=None,
        memory_bytes=144 * 10**9,  # single report, unverified
        memory_bandwidth=None,  # "compute metrics not published" (SemiAnalysis, as quoted)
        l2_bytes=None,
        peak_dense_tflops={},  # a 0.6 PFLOPS FP16 figure exists in one report only: not taken
        match_names=(),  # the name its driver reports is not public; model_code() still finds "M890"
        source=M890_MEMORY,
    ),
    arch="ppu-m890",
    model_codes=("ZWM890", "M890"),
    notes=(("memory type HBM3 (unverified)", M890_MEMORY), ("800 GB/s between chips (unverified)", M890_LINK)),
)

ALL: tuple[PpuSku, ...] = (ZW810E, M890)

#: Device-name prefixes that mark a PPU (the names the driver reports start with one of these).
NAME_PREFIXES: tuple[str, ...] = ("PPU", "ZW")


def normalize(name: str) -> str:
    """Upper case with every separator removed: ``"PPU-ZW810E"`` -> ``"PPUZW810E"``."""
    return re.sub(r"[^0-9A-Z]", "", name.upper())


def has_ppu_prefix(name: str) -> bool:
    """True when a device name starts with PPU or ZW (case and leading spaces ignored)."""
    head = name.strip().upper()
    return any(head.startswith(p) for p in NAME_PREFIXES)


def model_code(name: str) -> str:
    """The model code of a device name: the normalized name without its ``PPU`` prefix (``"ZW810E"``)."""
    code = normalize(name)
    return code[len("PPU"):] if code.startswith("PPU") else code


def sku_for_name(name: str) -> PpuSku | None:
    """The product whose model code equals this device name's, or None (an exact match, never a substring)."""
    code = model_code(name)
    for sku in ALL:
        if code in sku.model_codes:
            return sku
    return None
