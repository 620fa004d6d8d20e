"""humming.nn.QuantLinear: an nn.Linear whose weight is quantized and packed for humming's dense GEMM.

    layer = QuantLinear.from_linear(linear, "gptq_int4")          # quantize a float layer (on its device)
    layer = QuantLinear.from_quantized(qweight, bias=b)           # an already quantized canonical tensor
    y = layer(x)                                                  # humming.gemm(x, packed, bias)
    quantize_linears(model, "gptq_int4")                          # every nn.Linear of a model, in place
    load_quantized_linears(model, tensors, quantization_config)   # the layers a GPTQ / AWQ / ... checkpoint holds

The packed tensors are registered buffers, so ``.to(device)``, ``.cuda()`` and ``state_dict()`` carry them (dtype
casts such as ``model.half()`` leave them as packed); the state dict also records the packing (``_extra_state``),
and a layer loads only a checkpoint packed its own way. The forward is one custom op, usable in CUDA graphs and
under torch.compile.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import torch
from torch import nn

from humming.core import dtypes
from humming.core.dtypes import DType
from humming.core.formats import QuantFormat
from humming.core.packing import PackedWeight, pack
from humming.core.quantized import FormatLike, QuantizedTensor, as_quant_format, quantize
from humming.errors import InvalidInputError

_PARTS = ("data", "scales", "zeros", "chscale", "gscale", "perm")
_ACT = {torch.float16: dtypes.f16, torch.bfloat16: dtypes.bf16}
#: Floating buffers whose dtype pack (or the activation dtype) fixed: the kernel reads their bits as stored.
_FIXED_DTYPE = ("scales", "zeros", "chscale", "gscale", "bias")
_SAME_SIZE_INT = {2: torch.int16, 4: torch.int32}


class QuantLinear(nn.Module):
    """y = x @ W^T + b with W quantized (any format the dense kernel decodes) and f16/bf16 activations."""

    # The registered buffers (_PARTS and bias), declared for the type checker: nn.Module's __getattr__ says
    # only "Tensor | Module". Annotations alone, no class attributes, so lookups still reach the buffers.
    data: torch.Tensor
    scales: torch.Tensor | None
    zeros: torch.Tensor | None
    chscale: torch.Tensor | None
    gscale: torch.Tensor | None
    perm: torch.Tensor | None
    bias: torch.Tensor | None

    def __init__(self, packed: PackedWeight, bias: torch.Tensor | None = None) -> None:
        super().__init__()
        if not isinstance(packed, PackedWeight):
            raise InvalidInputError(f"QuantLinear: expected a PackedWeight, got {type(packed).__name__}")
        from humming.ops import check_k  # importing humming.ops registers the torch op (before any torch.compile)

        check_k(packed.shape[1], "QuantLinear")  # here, rather than at every forward
        self._meta = replace(packed, data=packed.data[:0], scales=None, zeros=None, chscale=None, gscale=None,
                             perm=None)
        for name in _PARTS:
            self.register_buffer(name, getattr(packed, name))
        out_features = packed.shape[0]
        if bias is not None:
            if bias.shape != (out_features,):
                raise InvalidInputError(f"QuantLinear: bias must have {out_features} elements, got {list(bias.shape)}")
            bias = bias.detach().to(device=packed.device, dtype=torch.float16 if packed.activation is dtypes.f16
                                    else torch.bfloat16).contiguous()
        self.register_buffer("bias", bias)
        self.in_features = packed.shape[1]
        self.out_features = out_features

    @classmethod
    def from_linear(cls, linear: nn.Linear, fmt: FormatLike, *, activation: DType | str | None = None) -> "QuantLinear":
        """Quantize ``linear.weight`` (round to nearest) into ``fmt`` and pack it where the layer lives."""
        if not isinstance(linear, nn.Linear):
            raise InvalidInputError(f"QuantLinear.from_linear: expected an nn.Linear, got {type(linear).__name__}")
        act = _activation(activation, linear.weight.dtype)
        quant_format = as_quant_format(fmt)
        _warn_if_activations_quantized(quant_format, act)
        return cls._quantized(linear, quant_format, act)

    @classmethod
    def _quantized(cls, linear: nn.Linear, quant_format: QuantFormat, activation: DType) -> "QuantLinear":
        """from_linear's work, without its warning (quantize_linears warns once for a whole model)."""
        if linear.weight.is_meta:
            raise InvalidInputError("QuantLinear: the layer's weight is on the meta device (no values to quantize); "
                                    "load the model's weights first, or read a quantized checkpoint with "
                                    "load_quantized_linears")
        q = quantize(linear.weight.detach(), quant_format)
        return cls(pack(q, activation), None if linear.bias is None else linear.bias.detach())

    @classmethod
    def from_quantized(cls, qweight: QuantizedTensor, bias: torch.Tensor | None = None, *,
                       activation: DType | str = dtypes.bf16) -> "QuantLinear":
        """Pack an already quantized canonical weight (on its device) for ``activation`` inputs."""
        act = DType.parse(activation)
        if isinstance(qweight, QuantizedTensor):
            _warn_if_activations_quantized(qweight.format, act)
        return cls(pack(qweight, act), bias)

    def _apply(self, fn: Any, recurse: bool = True) -> "QuantLinear":
        # model.half(), .float() or .to(dtype) cast every floating buffer of a module. The packed scales, zero points,
        # channel / global scales and the bias keep the dtypes the kernel reads them in (f16 bits read as bf16, or bf16
        # as f32, would be silently wrong outputs), so the casts skip them: each goes through fn as an integer view of
        # its bits, which casts leave alone and device moves (.cuda(), .to(device)) still move.
        # Module.type(dtype) casts integer tensors too, which would turn the codes into their values: refused, found
        # by what fn makes of an empty uint8 tensor (a move or a floating cast leaves its dtype).
        probe = fn(torch.empty(0, dtype=torch.uint8, device=self.data.device))
        if isinstance(probe, torch.Tensor) and probe.dtype is not torch.uint8:
            raise InvalidInputError(f"QuantLinear: a cast of every tensor to {probe.dtype} (Module.type) would turn "
                                    "the packed codes into numbers; QuantLinear keeps its packed dtypes: use .to(device) "
                                    "or .half() / .to(dtype), which leave them alone")
        kept = {}
        for name in _FIXED_DTYPE:
            t = self._buffers.get(name)
            if t is not None and t.is_floating_point():
                kept[name] = t.dtype
                self._buffers[name] = t.view(_SAME_SIZE_INT[t.element_size()])
        try:
            super()._apply(fn, recurse)
        finally:
            for name, dtype in kept.items():
                self._buffers[name] = self._buffers[name].view(dtype)  # type: ignore[union-attr]
        return self

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict, strict: bool,
                              missing_keys: list, unexpected_keys: list, error_msgs: list) -> None:
        # load_state_dict copies values across dtypes: bf16 scales into this layer's f16 ones would load as numbers,
        # but a weight packed for other activations differs in more than its scales' dtype (e2m1 codes are swizzled
        # per activation dtype), so the packed parts must come in the dtypes this layer was packed with. The packing
        # itself is checked by set_extra_state.
        record = state_dict.get(prefix + "_extra_state")
        if record is not None:
            self._their_packing(record)  # refused before anything of this layer changes
        if not self._meta.format.global_scale:
            # Here gscale only carries the power of two pack moved out of out-of-range scales (PackedWeight.scale_shift):
            # present or not depending on the data, so the layer takes the checkpoint's (with its shift, set_extra_state).
            theirs = state_dict.get(prefix + "gscale")
            if isinstance(theirs, torch.Tensor):
                if self._buffers.get("gscale") is None:
                    self._buffers["gscale"] = torch.empty_like(theirs, device=self.data.device)
            elif prefix + "_extra_state" in state_dict:
                self._buffers["gscale"] = None
        for name in (*_PARTS, "bias"):
            mine, theirs = self._buffers.get(name), state_dict.get(prefix + name)
            if mine is not None and isinstance(theirs, torch.Tensor) and theirs.dtype != mine.dtype:
                error_msgs.append(f"QuantLinear {prefix + name}: the checkpoint holds {theirs.dtype}, this layer "
                                  f"{mine.dtype}; it was packed for other activations ({self._meta.activation} here): "
                                  "build the layer for the checkpoint's activation dtype")
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def _packing(self) -> dict[str, Any]:
        m = self._meta
        return {"layout": m.layout, "format": m.format_key, "activation": m.activation.name, "shape": list(m.shape),
                "scale_shift": m.scale_shift}

    def get_extra_state(self) -> torch.Tensor:
        """How the buffers were packed, saved beside them (as a uint8 tensor of JSON, so safetensors takes it)."""
        return torch.tensor(list(json.dumps(self._packing(), sort_keys=True).encode()), dtype=torch.uint8)

    def set_extra_state(self, state: Any) -> None:
        """Refuse buffers packed another way than this layer: their bits would be read under this layer's packing."""
        self._meta = replace(self._meta, scale_shift=self._their_packing(state)["scale_shift"])

    def _their_packing(self, state: Any) -> dict[str, Any]:
        """A checkpoint's packing record, checked against this layer's (InvalidInputError naming what differs)."""
        try:
            theirs = json.loads(bytes(state.tolist()).decode()) if isinstance(state, torch.Tensor) else None
        except (ValueError, UnicodeDecodeError):
            theirs = None
        mine = self._packing()
        if not isinstance(theirs, dict) or not isinstance(theirs.get("scale_shift"), int):
            raise InvalidInputError("QuantLinear: the checkpoint's packing record (_extra_state) is not one humming "
                                    "wrote; save the layer with this version's state_dict()")
        # The scale shift depends on the weight's values, not on how the layer was built: it comes with the checkpoint.
        diffs = [f"{key} {theirs.get(key)!r} there, {value!r} here" for key, value in mine.items()
                 if key != "scale_shift" and theirs.get(key) != value]
        if diffs:
            raise InvalidInputError("QuantLinear: the checkpoint was packed another way than this layer (" +
                                    "; ".join(diffs) + "); build the layer with the checkpoint's format, activation "
                                    "dtype and shape (QuantLinear.from_quantized(..., activation=...))")
        return theirs

    @property
    def packed(self) -> PackedWeight:
        """The PackedWeight view of the current buffers (follows .to() and load_state_dict)."""
        parts = {name: getattr(self, name) for name in _PARTS}
        return replace(self._meta, **parts)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        from humming.ops import check_parts, gemm_dense_op, output_code, validate_parts

        meta = self._meta
        check_parts(meta, self.data.device, self.data, self.scales, self.zeros, self.chscale, self.gscale, self.perm,
                    "QuantLinear")
        out = validate_parts(x, meta, self.data.device, self.bias, owner="layer")
        return gemm_dense_op(x, self.data, self.scales, self.zeros, self.chscale, self.gscale, self.bias, self.perm,
                             meta.format_key, meta.shape[0], meta.shape[1], output_code(out))

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"weight={self._meta.format.describe()}, activation={self._meta.activation}, bias={self.bias is not None}")


def quantize_linears(model: nn.Module, fmt: FormatLike, *, activation: DType | str | None = None,
                     include: Callable[[str, nn.Linear], bool] | None = None, skip_unsupported: bool = False,
                     progress: bool | None = None) -> list[str]:
    """Replace the nn.Linear layers of ``model`` (those ``include(name, layer)`` accepts; all by default) by
    QuantLinear layers of ``fmt``, each quantized on its own device, in place. Returns the names replaced.

    Every layer is quantized and packed before any is replaced: one that the format or the dense kernel cannot take
    (K not a multiple of 8 or of the format's group, ...) raises an InvalidInputError naming each such layer and
    why, with ``model`` unchanged, unless ``skip_unsupported`` leaves those as they are. ``progress``: a progress
    line while quantizing (default: HUMMING_PROGRESS, on a terminal).
    """
    from humming.core.build import Progress
    from humming.errors import HummingError

    _refuse_a_bare_linear(model, "quantize_linears", "QuantLinear.from_linear")
    quant_format = as_quant_format(fmt)
    _warn_if_activations_quantized(quant_format, activation or "16-bit")  # once for the model, at the caller's line
    owned = _read_by_their_owner(model)
    if owned:
        warnings.warn(f"quantize_linears: {', '.join(owned)} left as they are: their nn.MultiheadAttention reads the "
                      "layer's weight directly instead of calling it, which a QuantLinear cannot serve", stacklevel=2)
    chosen = [(name, layer) for name, layer in model.named_modules()
              if isinstance(layer, nn.Linear) and name not in owned and (include is None or include(name, layer))]
    bar = Progress(len(chosen), what=f"{len(chosen)} linear layers", enabled=progress, doing="quantizing")
    made: dict[str, QuantLinear] = {}
    refused: list[str] = []
    try:
        for name, layer in chosen:
            try:
                made[name] = QuantLinear._quantized(layer, quant_format, _activation(activation, layer.weight.dtype))
            except HummingError as exc:
                refused.append(f"{name or '(the model)'} ({layer.in_features} -> {layer.out_features}): {exc}")
            bar.step()
    finally:
        bar.close()
    if refused and not skip_unsupported:
        raise InvalidInputError(f"quantize_linears: {len(refused)} of {len(chosen)} layers cannot take "
                                f"{quant_format.name or quant_format.weight.describe()}; nothing was replaced. "
                                "Leave them out with include=, or as they are with skip_unsupported=True:\n  " +
                                "\n  ".join(refused))
    return _install(model, made)


def load_quantized_linears(model: nn.Module, tensors: Mapping[str, torch.Tensor], quantization_config: Mapping[str, Any],
                           *, activation: DType | str | None = None, progress: bool | None = None) -> list[str]:
    """Replace each nn.Linear of ``model`` whose weight ``tensors`` hold quantized (``name + ".qweight"``;
    ``".weight_packed"`` for compressed-tensors; a weight scale for FP8 and ModelOpt) by a QuantLinear read from
    them (checkpoints.read_layer) with the checkpoint's bias, in place; layers the checkpoint keeps in float (an
    lm_head, say) stay. The model may live on the meta device: each QuantLinear lives where its tensors do. Every
    layer is read before any is replaced. Returns the names replaced. ``activation``: the inputs' dtype (default:
    the float layer's, else bf16); ``progress`` as quantize_linears'."""
    from humming.core.build import Progress
    from humming.core.checkpoints import quantized_tensor_names, read_layer

    _refuse_a_bare_linear(model, "load_quantized_linears", "QuantLinear.from_quantized(checkpoints.read_layer(...))")
    marks = quantized_tensor_names(quantization_config)  # raises for a config no reader takes
    chosen = [(name, layer) for name, layer in model.named_modules()
              if isinstance(layer, nn.Linear) and any(f"{name}.{mark}" in tensors for mark in marks)]
    if not chosen:
        linears = [name for name, layer in model.named_modules() if isinstance(layer, nn.Linear)]
        raise InvalidInputError(f"load_quantized_linears: none of the model's {len(linears)} nn.Linear layers (e.g. "
                                f"{linears[:2]}) has a quantized weight in the checkpoint (looked for "
                                f"'<layer>.{marks[0]}'); do the model's module names match the checkpoint's keys?")
    owned_by_mha = set(_read_by_their_owner(model))
    owned = [name for name, _ in chosen if name in owned_by_mha]
    if owned:
        raise InvalidInputError(f"load_quantized_linears: the checkpoint quantizes {', '.join(owned)}, which "
                                "nn.MultiheadAttention reads by its weight instead of calling it, so a QuantLinear "
                                "cannot take its place; nothing was replaced")
    bar = Progress(len(chosen), what=f"{len(chosen)} quantized layers", enabled=progress, doing="reading")
    made: dict[str, QuantLinear] = {}
    try:
        for name, layer in chosen:
            q = read_layer(tensors, name, quantization_config)
            if q.shape != (layer.out_features, layer.in_features):
                raise InvalidInputError(f"load_quantized_linears: {name} is {layer.out_features} x {layer.in_features} "
                                        f"in the model and {q.shape[0]} x {q.shape[1]} in the checkpoint")
            bias = tensors.get(f"{name}.bias")
            if (layer.bias is not None) != (bias is not None):
                raise InvalidInputError(f"load_quantized_linears: {name} has {'a' if layer.bias is not None else 'no'} "
                                        f"bias in the model and the checkpoint has {'no' if bias is None else 'a'} "
                                        f"{name + '.bias'!r}")
            made[name] = QuantLinear.from_quantized(q, bias, activation=_activation(activation, layer.weight.dtype))
            bar.step()
    finally:
        bar.close()
    return _install(model, made)


def _read_by_their_owner(model: nn.Module) -> list[str]:
    """The nn.Linear layers whose parent reads their weight and bias instead of calling them (nn.MultiheadAttention's
    out_proj, passed to F.multi_head_attention_forward as tensors): a QuantLinear in their place breaks the parent."""
    return [f"{name}.{child}" if name else child for name, parent in model.named_modules()
            if isinstance(parent, nn.MultiheadAttention)
            for child, layer in parent.named_children() if isinstance(layer, nn.Linear)]


def _refuse_a_bare_linear(model: nn.Module, where: str, instead: str) -> None:
    """A layer cannot replace itself in place: refused before any work is done."""
    if isinstance(model, nn.Linear):
        raise InvalidInputError(f"{where}: the model is itself an nn.Linear; use {instead}")


def _install(model: nn.Module, made: dict[str, "QuantLinear"]) -> list[str]:
    """Put each new layer in place of the module of its name; the names, in order."""
    for name, quantized_layer in made.items():
        parent_name, _, child = name.rpartition(".")
        setattr(model.get_submodule(parent_name), child, quantized_layer)
    return list(made)


def _warn_if_activations_quantized(quant_format: QuantFormat, activation: DType | str) -> None:
    """A format whose activations are quantized (W8A8, W4A8 ...) runs here on its weights alone: say so (as vLLM does
    when it serves an FP8 checkpoint weight-only), since the layer's outputs are then not those of that format."""
    quantized_to = quant_format.activation.dtype
    if quantized_to is not None:
        name = quant_format.name or quant_format.weight.describe()
        # stacklevel 3: the caller of from_linear / from_quantized / quantize_linears
        warnings.warn(f"QuantLinear: {name} quantizes activations to {quantized_to}, which humming's dense kernels "
                      f"do not yet (they take 16-bit activations: WnA16); the layers keep {activation} activations "
                      f"and use {name}'s weight format alone. Quantize with QuantFormat(<format>.weight) to say so "
                      "and silence this", UserWarning, stacklevel=3)


def _activation(activation: Any, weight_dtype: torch.dtype) -> DType:
    if activation is not None:
        return DType.parse(activation)
    return _ACT.get(weight_dtype, dtypes.bf16)
