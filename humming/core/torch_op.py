"""Registering humming launches as torch custom ops, so torch.compile(fullgraph=True) and CUDA graphs see one node.

A twin wraps its Python launcher in a ``HummingOp``; registration happens on first use, or when the module defining
the op calls ``.op()`` at its import (humming.ops does: it is imported on the first use of gemm or QuantLinear;
importing humming registers nothing)::

    def _fake(x: Tensor, y: Tensor, alpha: float) -> Tensor:
        return torch.empty_like(y)

    toy_axpy = HummingOp("toy_axpy", _run, schema="(Tensor x, Tensor y, float alpha) -> Tensor", fake=_fake)
    out = toy_axpy(x, y, 2.0)              # registers humming::toy_axpy, then calls it
    torch.ops.humming.toy_axpy(x, y, 2.0)  # the same op, as torch.compile's graphs name it

The implementation runs only on CUDA tensors (``device_types="cuda"``) and launches on torch's current stream,
so it is captured by ``torch.cuda.graph`` like any other CUDA op. The fake (meta) implementation gives
torch.compile the output's shape and dtype without running anything. Register before ``torch.compile`` traces
(call ``.op()`` once), so that dynamo sees a registered op rather than the registration.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Sequence

#: The torch.library namespace of every humming op: torch.ops.humming.<name>.
NAMESPACE = "humming"

_registered: dict[str, Any] = {}
_lock = threading.Lock()


class HummingOp:
    """A torch custom op ``humming::<name>``, registered the first time it is used.

    :param name: the op's name inside the ``humming`` namespace.
    :param impl: the CUDA implementation (it launches a CompiledKernel).
    :param schema: the torch schema, e.g. ``"(Tensor x, Tensor(a!) out) -> ()"``; mark mutated tensors ``(a!)``.
    :param fake: the meta implementation: allocate outputs with the right shape and dtype, compute nothing.
    :param mutates_args: names of the arguments the op writes in place (must match the ``(a!)`` marks).
    """

    def __init__(self, name: str, impl: Callable[..., Any], *, schema: str, fake: Callable[..., Any],
                 mutates_args: Sequence[str] = ()) -> None:
        self.name = name
        self.qualname = f"{NAMESPACE}::{name}"
        self._impl = impl
        self._schema = schema
        self._fake = fake
        self._mutates = tuple(mutates_args)
        self._op: Any = None

    def op(self) -> Any:
        """The registered torch op (a ``torch._library.custom_ops.CustomOpDef``); registers it if needed."""
        if self._op is not None:
            return self._op
        with _lock:
            existing = _registered.get(self.qualname)
            if existing is None:
                import torch

                existing = torch.library.custom_op(self.qualname, self._impl, mutates_args=self._mutates,
                                                   device_types="cuda", schema=self._schema)
                existing.register_fake(self._fake)
                _registered[self.qualname] = existing
            self._op = existing
        return self._op

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.op()(*args, **kwargs)

    def __repr__(self) -> str:
        state = "registered" if self._op is not None else "not registered yet"
        return f"<HummingOp {self.qualname} {self._schema} ({state})>"
