"""Kernel arguments packed for a launch: one ``struct`` layout per argument-type signature, at the cubin's parameter
offsets, checked against the spec's declared parameter kinds (codegen.PARAM_KINDS) where it has them.

What fills what (launcher's docstring has the user's view): a tensor (anything with ``data_ptr()``) or None a
pointer, an int too (a raw address; a bool never); an int an integer slot, a negative one no declared unsigned slot;
a float an f32/f64 slot by its size, a 2-byte slot only where it is declared f16 or bf16 (rounded to nearest even);
``bytes`` a by-value struct of exactly its size (a TMA descriptor).
"""

from __future__ import annotations

import ctypes
import numbers
import struct
from typing import Any, Callable, Sequence

from humming.core.codegen import PARAM_KINDS as KIND_SIZES
from humming.core.resources import ParamSlot
from humming.errors import InvalidInputError, LaunchError


def is_pointer_like(t: type) -> bool:
    return hasattr(t, "data_ptr")


class ArgumentPacker:
    """Packs one argument-type signature into a fixed buffer whose parameter pointers are prepared."""

    __slots__ = ("struct", "buffer", "pointers", "address", "convert", "kernel", "kinds")

    _INT = {1: "b", 2: "h", 4: "i", 8: "q"}
    _UINT = {1: "B", 2: "H", 4: "I", 8: "Q"}  # declared u*: struct refuses a negative value, _pack_wrapped says so
    _FLOAT = {2: "e", 4: "f", 8: "d"}

    def __init__(self, kernel: str, slots: Sequence[ParamSlot], types: Sequence[type],
                 kinds: Sequence[str] = ()) -> None:
        self.kernel = kernel
        if len(types) != len(slots):
            sizes = ", ".join(str(s.size) for s in slots) or "none"
            raise InvalidInputError(f"kernel {kernel} takes {len(slots)} parameters (sizes in bytes: {sizes}); "
                                    f"got {len(types)} arguments")
        if kinds and len(kinds) != len(slots):
            raise LaunchError(f"kernel {kernel}: its spec declares {len(kinds)} parameters ({', '.join(kinds)}) "
                              f"but the binary has {len(slots)}")
        fmt, pos, convert = "<", 0, []
        for i, (slot, t) in enumerate(zip(slots, types)):
            if slot.offset < pos:
                raise LaunchError(f"kernel {kernel}: parameter {i} at offset {slot.offset} overlaps the previous one")
            fmt += "x" * (slot.offset - pos)
            code, conv = self._code(i, slot, t, kinds[i] if kinds else None)
            fmt += code
            convert.append(conv)
            pos = slot.offset + slot.size
        self.struct = struct.Struct(fmt)
        self.buffer = ctypes.create_string_buffer(max(self.struct.size, 1))
        base = ctypes.addressof(self.buffer)
        self.pointers = (ctypes.c_void_p * max(len(slots), 1))(*[base + s.offset for s in slots])
        self.address = ctypes.addressof(self.pointers) if slots else 0
        self.convert, self.kinds = tuple(convert), tuple(kinds)

    def _code(self, i: int, slot: ParamSlot, t: type, kind: str | None) -> tuple[str, Callable[[Any], Any] | None]:
        where = f"kernel {self.kernel}, argument {i} ({t.__name__})"
        if kind is not None and KIND_SIZES.get(kind, slot.size) != slot.size:
            raise LaunchError(f"kernel {self.kernel}: parameter {i} is declared {kind} ({KIND_SIZES[kind]} bytes) "
                              f"but is {slot.size} bytes in the binary")
        pointer = t is type(None) or is_pointer_like(t)
        integer = issubclass(t, numbers.Integral)  # bool included
        real = issubclass(t, numbers.Real) and not integer
        if kind == "ptr" or (kind is None and pointer):
            if slot.size != 8:
                raise InvalidInputError(f"{where} is a pointer (8 bytes) but the parameter is {slot.size} bytes")
            if t is type(None):
                return "Q", lambda a: 0
            if pointer:
                return "Q", device_pointer
            if integer and t is not bool:
                return "Q", int  # a raw device address
            raise InvalidInputError(f"{where}: parameter {i} is a pointer; pass a tensor, None or an address")
        if kind in ("f16", "bf16", "f32", "f64") or (kind is None and real):
            if not (integer or real) or slot.size not in self._FLOAT:
                raise InvalidInputError(f"{where} cannot fill a {slot.size}-byte float parameter")
            if slot.size == 2 and kind is None:
                raise InvalidInputError(f"{where}: a 2-byte float parameter is f16 or bf16: declare its kind in the "
                                        "spec's signature, or pass its 2 bytes (struct.pack('<e', v) for f16)")
            if kind == "bf16":
                return "H", bf16_bits
            return self._FLOAT[slot.size], (None if t is float else float)
        if kind is not None and kind[0] in "su" or (kind is None and integer):
            if not integer or slot.size not in self._INT:
                raise InvalidInputError(f"{where} cannot fill a {slot.size}-byte integer parameter"
                                        + ("; pass an int" if real else ""))
            codes = self._UINT if kind is not None and kind[0] == "u" else self._INT
            return codes[slot.size], (None if t is int else int)
        if issubclass(t, (bytes, bytearray, memoryview)):
            size = slot.size

            def raw(a: Any) -> bytes:
                data = bytes(a)
                if len(data) != size:
                    raise InvalidInputError(f"{where}: {len(data)} bytes for a {size}-byte parameter")
                return data
            return f"{size}s", raw
        raise InvalidInputError(f"{where}: pass a tensor, None, an int, a float or bytes")

    def pack(self, args: Sequence[Any]) -> None:
        try:
            values = [a if c is None else c(a) for c, a in zip(self.convert, args)]
        except OverflowError as exc:  # a float past bf16's range, an int past a float's
            raise InvalidInputError(f"kernel {self.kernel}: the arguments do not fit its parameters ({exc})") from None
        try:
            self.struct.pack_into(self.buffer, 0, *values)
        except (struct.error, OverflowError):
            self._pack_wrapped(values)

    def _pack_wrapped(self, values: list[Any]) -> None:
        # An int beyond the signed range fits an undeclared or unsigned slot (u32 sizes, masks), not a declared signed
        # one (s32); a negative int fits no declared unsigned one (packed with struct's unsigned codes).
        codes = [c for c in self.struct.format if c not in "<x0123456789"]
        fixed = []
        for i, (code, v) in enumerate(zip(codes, values)):
            if code in "bhiqBHIQ" and isinstance(v, int):
                bits, kind = struct.calcsize(code) * 8, self.kinds[i] if self.kinds else ""
                if code.isupper() and v < 0:  # a declared u* (or ptr)
                    raise InvalidInputError(f"kernel {self.kernel}, argument {i}: {v} is negative; the parameter is "
                                            f"declared {kind}")
                signed = kind[:1] == "s"
                if not -(1 << (bits - 1)) <= v < (1 << (bits - 1 if signed else bits)):
                    raise InvalidInputError(f"kernel {self.kernel}, argument {i}: {v} does not fit the {bits // 8}-"
                                            f"byte {'signed ' if signed else 'unsigned ' * code.isupper()}parameter")
                if code.islower():
                    v = v - (1 << bits) if v >= (1 << (bits - 1)) else v
            fixed.append(v)
        try:
            self.struct.pack_into(self.buffer, 0, *fixed)
        except (struct.error, OverflowError) as exc:  # e.g. 1e6 for an f16 parameter
            raise InvalidInputError(f"kernel {self.kernel}: the arguments do not fit its parameters ({exc})") from None


def bf16_bits(value: Any) -> int:
    """A float's bf16 bits, rounded to nearest even once, as struct's 'e' rounds f16; a NaN stays a quiet NaN, and a
    finite value past bf16's largest raises OverflowError like 'e' (the packer reports it). The scalar twin of
    codec.cast_rounded_once (float32 rounded to odd, then to nearest even), kept apart because it runs on every
    launch: a 0-d tensor through the codec costs ~50 us a call here against ~0.5 us (tests hold the two equal)."""
    value = float(value)
    f32 = struct.unpack("<I", struct.pack("<f", value))[0]  # OverflowError past f32's range
    if (f32 & 0x7F800000) == 0x7F800000:
        return (f32 >> 16) | (0x0040 if f32 & 0x007FFFFF else 0)
    near = struct.unpack("<f", struct.pack("<I", f32))[0]
    if near != value:  # f32 by rounding to odd (truncate, then set the last bit): no second rounding at a bf16 tie
        f32 = (f32 - (abs(near) > abs(value))) | 1
    bits = (f32 + 0x7FFF + ((f32 >> 16) & 1)) >> 16
    if (bits & 0x7F80) == 0x7F80 and (f32 & 0x7F800000) != 0x7F800000:
        raise OverflowError(f"{value} is past bf16's largest finite value")
    return bits


def device_pointer(t: Any) -> int:
    if getattr(t, "is_cuda", True) is False:
        raise InvalidInputError(f"a tensor on {t.device} was passed to a CUDA kernel; move it to the GPU first")
    return t.data_ptr()
