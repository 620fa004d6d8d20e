"""What a compiled kernel uses (registers, spills, stack, shared memory) and exports, read from its binary and log.

Everything here works on bytes, without a GPU: the cubin is an ELF file, and ptxas's verbose log (NVRTC's
``-Xptxas=-v``) states per entry function the registers, the stack frame, spill stores/loads and static shared
memory. From the ELF we read:

- the symbol table: entry functions (``STT_FUNC`` in a ``.text.<name>`` section) and the exported constants the
  codegen stub defines (``extern "C" __constant__ long long humming_export_<name>``, whose bytes sit in a
  ``.nv.constant*`` section at the symbol's offset);
- the ``.nv.info`` attribute records: a 4-byte header (u8 format, u8 attribute, u16 value or payload size),
  followed for the "sized" format (4) by the payload. The attribute numbers used below were checked against
  ptxas's own report for kernels of known shape (NVRTC 13.5, sm_75..sm_120a; tests/core/test_launcher.py):
  0x2f register count, 0x11 frame size, 0x12 minimum stack size, 0x23 maximum stack size, 0x05 maximum
  threads (``__launch_bounds__``), 0x17 one kernel parameter (ordinal, offset, size in bits 18..31 of the
  last word).

Static shared memory is taken from ptxas's log: on sm_90 and later the ``.nv.shared.<name>`` section also
holds 1 KiB that the system reserves per block (measured: 400 declared bytes give a 1424-byte section).
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from typing import Mapping

from humming.errors import InternalError, InvalidInputError

#: Prefix of the symbols the codegen stub exports (humming.core.codegen renders them).
EXPORT_PREFIX = "humming_export_"

_SHT_SYMTAB = 2
_STT_OBJECT = 1
_STT_FUNC = 2
_STB_GLOBAL = 1
_STB_WEAK = 2

_EIFMT_SVAL = 4  # a sized payload follows the 4-byte header
_EIATTR_MAX_THREADS = 0x05
_EIATTR_FRAME_SIZE = 0x11
_EIATTR_MIN_STACK_SIZE = 0x12
_EIATTR_KPARAM_INFO = 0x17
_EIATTR_MAX_STACK_SIZE = 0x23
_EIATTR_REGCOUNT = 0x2F


@dataclass(frozen=True)
class ParamSlot:
    """One kernel parameter as the binary lays it out: its ordinal, byte offset and size in parameter space."""

    ordinal: int
    offset: int
    size: int


@dataclass(frozen=True)
class KernelResources:
    """The resources of one entry function. ``None`` means the binary and log did not say."""

    function: str  # the entry symbol (mangled C++ name or extern "C" name)
    registers: int | None = None  # 32-bit registers per thread
    spill_stores: int | None = None  # bytes
    spill_loads: int | None = None  # bytes
    stack_frame: int | None = None  # bytes of local memory per thread (ptxas "stack frame")
    static_smem: int | None = None  # bytes of __shared__ declared in the kernel (dynamic smem is a launch value)
    max_threads: tuple[int, int, int] | None = None  # __launch_bounds__ / maxntid, when given
    params: tuple[ParamSlot, ...] = ()  # the parameter layout, ordinal order
    barriers: int | None = None  # named barriers used (ptxas)

    @property
    def spills(self) -> bool:
        return bool(self.spill_stores or self.spill_loads)

    @property
    def param_bytes(self) -> int:
        return max((p.offset + p.size for p in self.params), default=0)

    def describe(self) -> str:
        def show(v: object, unit: str = "") -> str:
            return "?" if v is None else f"{v}{unit}"
        return (f"{self.function}: {show(self.registers)} registers, {show(self.spill_stores, ' B')} spill stores, "
                f"{show(self.spill_loads, ' B')} spill loads, {show(self.stack_frame, ' B')} stack, "
                f"{show(self.static_smem, ' B')} static smem, {len(self.params)} params ({self.param_bytes} B)")

    def to_json(self) -> dict:
        return {"function": self.function, "registers": self.registers, "spill_stores": self.spill_stores,
                "spill_loads": self.spill_loads, "stack_frame": self.stack_frame, "static_smem": self.static_smem,
                "max_threads": None if self.max_threads is None else list(self.max_threads),
                "barriers": self.barriers, "params": [[p.ordinal, p.offset, p.size] for p in self.params]}


# ---- ELF -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Section:
    name: str
    type: int
    offset: int
    size: int
    info: int


@dataclass(frozen=True)
class _Symbol:
    name: str
    bind: int
    type: int
    section: int
    value: int
    size: int


@dataclass
class ElfImage:
    """The parts of a 64-bit little-endian device ELF (cubin) that humming reads."""

    data: bytes
    machine: int
    sections: list[_Section] = field(default_factory=list)
    symbols: list[_Symbol] = field(default_factory=list)

    def section(self, name: str) -> _Section | None:
        for s in self.sections:
            if s.name == name:
                return s
        return None

    def section_bytes(self, s: _Section) -> bytes:
        return self.data[s.offset:s.offset + s.size]


def _cstr(data: bytes, start: int) -> str:
    end = data.find(b"\0", start)
    return data[start:end if end >= 0 else len(data)].decode("utf-8", errors="replace")


def parse_elf(binary: bytes) -> ElfImage:
    """Parse section headers and the symbol table; InvalidInputError if ``binary`` is not a 64-bit ELF."""
    if len(binary) < 64 or binary[:4] != b"\x7fELF":
        raise InvalidInputError(f"not an ELF image (first bytes {binary[:4]!r}); expected a cubin")
    if binary[4] != 2 or binary[5] != 1:
        raise InvalidInputError("only 64-bit little-endian ELF images are supported (device cubins are)")
    try:
        (_type, machine, _ver, _entry, _phoff, shoff, _flags, _ehsize, _phentsize, _phnum, shentsize, shnum,
         shstrndx) = struct.unpack_from("<HHIQQQIHHHHHH", binary, 16)
        raw = [struct.unpack_from("<IIQQQQIIQQ", binary, shoff + i * shentsize) for i in range(shnum)]
        names = raw[shstrndx][4]
        image = ElfImage(binary, machine)
        for name_off, typ, _fl, _addr, off, size, _link, info, _al, _es in raw:
            image.sections.append(_Section(_cstr(binary, names + name_off), typ, off, size, info))
        for (_n, typ, _fl, _addr, off, size, link, _info, _al, _es) in raw:
            if typ != _SHT_SYMTAB:
                continue
            strtab = raw[link][4]
            for j in range(size // 24):
                st_name, st_info, _other, shndx, value, sym_size = struct.unpack_from("<IBBHQQ", binary, off + j * 24)
                image.symbols.append(_Symbol(_cstr(binary, strtab + st_name), st_info >> 4, st_info & 0xF,
                                             shndx, value, sym_size))
    except (struct.error, IndexError) as exc:
        raise InvalidInputError(f"truncated or corrupt ELF image ({exc})") from None
    return image


def entry_functions(image: ElfImage) -> list[str]:
    """Names of the kernels (global functions in ``.text.<name>`` sections), in symbol-table order."""
    found = []
    for sym in image.symbols:
        if sym.type != _STT_FUNC or sym.bind not in (_STB_GLOBAL, _STB_WEAK):
            continue
        if 0 < sym.section < len(image.sections) and image.sections[sym.section].name == f".text.{sym.name}":
            if image.section(f".nv.info.{sym.name}") is not None:  # device functions have no per-kernel info
                found.append(sym.name)
    return found


def exported_constants(image: ElfImage) -> dict[str, int]:
    """The ``humming_export_<name>`` constants the codegen stub defined, as signed 64-bit integers."""
    out: dict[str, int] = {}
    for sym in image.symbols:
        if sym.type != _STT_OBJECT or not sym.name.startswith(EXPORT_PREFIX):
            continue
        if sym.size != 8 or not 0 < sym.section < len(image.sections):
            raise InternalError(f"exported constant {sym.name} is {sym.size} bytes in section {sym.section}; "
                                "codegen renders 8-byte __constant__ values")
        sec = image.sections[sym.section]
        (value,) = struct.unpack_from("<q", image.data, sec.offset + sym.value)
        out[sym.name[len(EXPORT_PREFIX):]] = value
    return out


def _records(data: bytes) -> list[tuple[int, int, int, bytes]]:
    """(format, attribute, header value, payload) for each .nv.info record."""
    out = []
    pos = 0
    while pos + 4 <= len(data):
        fmt, attr, value = data[pos], data[pos + 1], struct.unpack_from("<H", data, pos + 2)[0]
        pos += 4
        payload = b""
        if fmt == _EIFMT_SVAL:
            payload = data[pos:pos + value]
            pos += value
        out.append((fmt, attr, value, payload))
    return out


def _elf_resources(image: ElfImage, function: str) -> dict:
    index = next((i for i, s in enumerate(image.symbols) if s.name == function and s.type == _STT_FUNC), None)
    if index is None:
        known = ", ".join(entry_functions(image)) or "none"
        raise InvalidInputError(f"the binary has no kernel {function!r}; its kernels: {known}")
    got: dict = {}
    glob = image.section(".nv.info")
    if glob is not None:
        for fmt, attr, _v, payload in _records(image.section_bytes(glob)):
            if fmt != _EIFMT_SVAL or len(payload) < 8:
                continue
            sym, value = struct.unpack_from("<II", payload)
            if sym != index:
                continue
            if attr == _EIATTR_REGCOUNT:
                got["registers"] = value
            elif attr == _EIATTR_FRAME_SIZE:
                got["frame"] = value
            elif attr == _EIATTR_MAX_STACK_SIZE:
                got["max_stack"] = value
            elif attr == _EIATTR_MIN_STACK_SIZE:
                got["min_stack"] = value
    params: list[ParamSlot] = []
    local = image.section(f".nv.info.{function}")
    if local is not None:
        for fmt, attr, _v, payload in _records(image.section_bytes(local)):
            if fmt == _EIFMT_SVAL and attr == _EIATTR_KPARAM_INFO and len(payload) >= 12:
                _idx, ordinal, offset, packed = struct.unpack_from("<IHHI", payload)
                params.append(ParamSlot(ordinal, offset, (packed >> 18) & 0x3FFF))
            elif fmt == _EIFMT_SVAL and attr == _EIATTR_MAX_THREADS and len(payload) >= 12:
                got["max_threads"] = struct.unpack_from("<III", payload)
    got["params"] = tuple(sorted(params, key=lambda p: p.ordinal))
    return got


# ---- the ptxas log ---------------------------------------------------------------------------------------
_FUNC_RE = re.compile(r"ptxas info\s*: (?:Compiling entry function|Function properties for) '?([^' ]+)'?")
_FRAME_RE = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED_RE = re.compile(r"Used (\d+) registers")
_SMEM_RE = re.compile(r"(\d+) bytes smem")
_BARRIERS_RE = re.compile(r"used (\d+) barriers")


def parse_ptxas_log(log: str) -> dict[str, dict[str, int]]:
    """Per function, what ``ptxas -v`` reported: registers, stack_frame, spill_stores, spill_loads, static_smem."""
    out: dict[str, dict[str, int]] = {}
    current: str | None = None
    for line in log.splitlines():
        m = _FUNC_RE.search(line)
        if m:
            current = m.group(1)
            out.setdefault(current, {})
            continue
        if current is None:
            continue
        entry = out[current]
        m = _FRAME_RE.search(line)
        if m:
            entry["stack_frame"], entry["spill_stores"], entry["spill_loads"] = (int(g) for g in m.groups())
        m = _USED_RE.search(line)
        if m:
            entry["registers"] = int(m.group(1))
            s = _SMEM_RE.search(line)
            entry["static_smem"] = int(s.group(1)) if s else 0
            b = _BARRIERS_RE.search(line)
            if b:
                entry["barriers"] = int(b.group(1))
    return out


def kernel_resources(binary: bytes, function: str, log: str = "", *, image: ElfImage | None = None) -> KernelResources:
    """The resource report of ``function`` in ``binary``; ptxas's log (when given) adds spills and static smem.
    ``image``: ``binary`` already parsed (parse_elf), which a caller that reads it twice passes."""
    if image is None:
        image = parse_elf(binary)
    elf = _elf_resources(image, function)
    ptx: Mapping[str, int] = parse_ptxas_log(log).get(function, {})
    stack = ptx.get("stack_frame", elf.get("frame"))
    return KernelResources(
        function=function,
        registers=ptx.get("registers", elf.get("registers")),
        spill_stores=ptx.get("spill_stores"),
        spill_loads=ptx.get("spill_loads"),
        stack_frame=stack,
        static_smem=ptx.get("static_smem"),
        max_threads=elf.get("max_threads"),
        params=elf["params"],
        barriers=ptx.get("barriers"),
    )
