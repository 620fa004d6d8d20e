"""humming: quantized-inference GEMM kernels, specialised from Python and compiled at run time.

Public surface only; importing humming starts no compile, touches no GPU and loads no plugin: ``gemm``,
``nn`` and the format modules load on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from humming import devices, errors
from humming.core import dtypes

__version__ = "0.1.0"

# name -> (module, attribute or None for the module itself), imported on first access
_LAZY = {
    "gemm": ("humming.ops", "gemm"),
    "nn": ("humming.nn", None),
    "formats": ("humming.core.formats", None),
    "presets": ("humming.core.presets", None),
    "quantize": ("humming.core.quantized", "quantize"),
    "dequantize": ("humming.core.quantized", "dequantize"),
    "reference_gemm": ("humming.core.reference", "reference_gemm"),
    "precompile": ("humming.warmup", "precompile"),
    "checkpoints": ("humming.core.checkpoints", None),
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'humming' has no attribute {name!r}")
    module, attr = _LAZY[name]
    value = importlib.import_module(module)
    return value if attr is None else getattr(value, attr)


__all__ = ["devices", "dtypes", "errors", "__version__", *_LAZY]
