"""Every HUMMING_* environment variable, declared once: type, default and a one-line doc.

Read a knob with ``knobs.<name>.get()``; tests change them with ``knobs.scope(NAME=value)``.
No other module reads ``os.environ`` for humming settings.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import Callable, Generic, Iterator, TypeVar

from humming.errors import InvalidInputError

T = TypeVar("T")

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _parse_bool(name: str, text: str) -> bool:
    low = text.strip().lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise InvalidInputError(f"{name}={text!r}: expected one of 1/0, true/false, yes/no, on/off")


def _parse_int(name: str, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise InvalidInputError(f"{name}={text!r}: expected an integer") from None


def _parse_str(name: str, text: str) -> str:
    return text


def _parse_list(name: str, text: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in text.split(",") if item.strip())


@dataclass(frozen=True)
class Knob(Generic[T]):
    """One environment variable: its name, how to parse it, its default and what it does."""

    name: str
    parse: Callable[[str, str], T]
    default: T
    doc: str

    def get(self) -> T:
        text = os.environ.get(self.name)
        if text is None:
            return self.default
        return self.parse(self.name, text)

    def is_set(self) -> bool:
        return self.name in os.environ


cache_dir: Knob[str] = Knob("HUMMING_CACHE_DIR", _parse_str, "", "kernel cache folder (default: the user's cache directory)")
disable_cache: Knob[bool] = Knob("HUMMING_DISABLE_CACHE", _parse_bool, False, "compile every kernel afresh, read and write no cache")
compile_workers: Knob[int] = Knob("HUMMING_COMPILE_WORKERS", _parse_int, 0, "parallel compile workers (0: one per CPU core)")
keep_source: Knob[bool] = Knob("HUMMING_KEEP_SOURCE", _parse_bool, False, "save every generated .cu beside its cubin")
plugins: Knob[tuple[str, ...]] = Knob("HUMMING_PLUGINS", _parse_list, (), "allow-list of device plugin names (empty: all)")
disable_plugin_autoload: Knob[bool] = Knob(
    "HUMMING_DISABLE_PLUGIN_AUTOLOAD", _parse_bool, False, "load no entry-point plugins; only those registered in code"
)
strict_plugins: Knob[bool] = Knob("HUMMING_STRICT_PLUGINS", _parse_bool, False, "a broken device plugin raises instead of being reported")
trace_plugins: Knob[bool] = Knob("HUMMING_TRACE_PLUGINS", _parse_bool, False, "log every plugin hook call")
programmatic_launch: Knob[bool] = Knob(
    "HUMMING_PDL", _parse_bool, True,
    "launch GEMMs with programmatic dependent launch where the device has it: a GEMM may start while the kernel "
    "before it finishes")
progress: Knob[bool] = Knob("HUMMING_PROGRESS", _parse_bool, True, "show a progress bar for long compiles and conformance runs")
kernel_defines: Knob[tuple[str, ...]] = Knob(
    "HUMMING_KERNEL_DEFINES", _parse_list, (),
    "NAME=VALUE macros put before every kernel a spec renders (the templates' experiment switches, e.g. HM_ABLATE=5)"
)

# Vendor SDK locations a built-in plugin reads (not HUMMING_*: these names are the vendors' own).
ppu_sdk: Knob[str] = Knob("PPU_SDK", _parse_str, "", "T-Head PPU SDK root; the PPU plugin compiles with $PPU_SDK/CUDA_SDK/bin/nvcc")

ALL: tuple[Knob, ...] = tuple(v for v in list(globals().values()) if isinstance(v, Knob))


@contextlib.contextmanager
def scope(**values: object) -> Iterator[None]:
    """Set knobs for the duration of a ``with`` block (tests): ``scope(HUMMING_CACHE_DIR="/tmp/x")``.

    A value of None removes the variable.
    """
    known = {k.name for k in ALL}
    saved: dict[str, str | None] = {}
    for name, value in values.items():
        if name not in known:
            raise InvalidInputError(f"unknown knob {name!r}; known: {', '.join(sorted(known))}")
        saved[name] = os.environ.get(name)
        if value is None:
            os.environ.pop(name, None)
        elif isinstance(value, bool):
            os.environ[name] = "1" if value else "0"
        elif isinstance(value, (tuple, list)):
            os.environ[name] = ",".join(str(v) for v in value)
        else:
            os.environ[name] = str(value)
    try:
        yield
    finally:
        for name, old in saved.items():
            if old is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = old
