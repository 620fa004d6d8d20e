"""humming: quantized-inference GEMM kernels, specialised from Python and compiled at run time.

Public surface only; importing humming starts no compile, touches no GPU and loads no plugin.
"""

from __future__ import annotations

from humming import devices, errors
from humming.core import dtypes

__version__ = "0.1.0"

__all__ = ["devices", "dtypes", "errors", "__version__"]
