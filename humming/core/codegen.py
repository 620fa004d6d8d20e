"""Kernel specs: a frozen dataclass of every compile-time parameter -> one small instantiation unit.

The API a kernel twin and its callers use::

    @dataclass(frozen=True)
    class GemmSpec(KernelSpec):
        header = "gemm_dense.cuh"               # the .cuh beside this twin
        kernel = "humming::gemm_dense"          # the __global__ template it instantiates
        act: DType = param(allowed=(f16, bf16), doc="activation dtype")
        block_n: int = param(allowed=(64, 128, 256), doc="columns per CTA")
        stages: int = param(bounds=(2, 8), doc="smem pipeline depth")
        use_tma: bool = param(default=False, requires=lambda on: on and needs("memory.bulk_tensor_copy"))

        def exports(self) -> dict[str, str]:      # C++ constants the launcher reads back from the cubin
            return {"smem_bytes": f"humming::GemmTraits<{self.cpp_args()}>::kSmemBytes"}

    spec = GemmSpec(target=Target("nvidia", "sm_90a"), act=f16, block_n=128, stages=4)
    spec.render()                      # -> the unit: #include <gemm_dense.cuh> + one instantiation + exports
    spec.check_supported(caps)         # UnsupportedError naming what the target lacks
    k = compile_spec(spec)             # humming.core.build: cached on disk -> launcher.CompiledKernel
    k.resources.registers, k.exports["smem_bytes"]
    k.launch(grid, block, None, (out, a, b, m))      # None: the exported smem_bytes

Template arguments are the parameters in declaration order (``param(template=False)`` keeps one out):
ints as literals, bools as ``true``/``false``, dtypes as their CUDA type (``cpp_type``), or through ``cpp=``.
The unit includes the twin's header by its bare name; its folder and ``humming/kernels/include`` are on
the include path, so one spelling works for every toolchain.
"""

from __future__ import annotations

import dataclasses
import enum
import sys
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterable

from humming.capabilities.model import DeviceCapabilities, Target
from humming.core import dtypes
from humming.core.dtypes import DType
from humming.core.resources import EXPORT_PREFIX
from humming.errors import InternalError, InvalidInputError, UnsupportedError

#: Device blocks shared by every kernel: humming/{mma,memory,dequant,epilogue,scheduler,util}/*.cuh.
CORE_INCLUDE_DIR = Path(__file__).resolve().parent.parent / "kernels" / "include"

#: Kernel parameter kinds a spec's ``signature`` may name (PTX spelling) and their sizes in bytes; "bytes" is
#: a by-value struct of whatever size the binary says (a TMA descriptor).
PARAM_KINDS: dict[str, int] = {"ptr": 8, "s8": 1, "s16": 2, "s32": 4, "s64": 8, "u8": 1, "u16": 2, "u32": 4,
                               "u64": 8, "f16": 2, "bf16": 2, "f32": 4, "f64": 8}

_CPP_TYPES: dict[DType, str] = {
    dtypes.f16: "__half", dtypes.bf16: "__nv_bfloat16", dtypes.f32: "float", dtypes.f64: "double",
    dtypes.s8: "signed char", dtypes.u8: "unsigned char", dtypes.s32: "int",
    dtypes.e4m3: "__nv_fp8_e4m3", dtypes.e5m2: "__nv_fp8_e5m2",
}


def cpp_type(dtype: DType) -> str:
    """The CUDA C++ type of a dtype that has one (``f16`` -> ``__half``; the kernel includes its header)."""
    try:
        return _CPP_TYPES[dtype]
    except KeyError:
        raise InvalidInputError(f"dtype {dtype} has no CUDA C++ scalar type; known: "
                                f"{', '.join(d.name for d in _CPP_TYPES)}; give the parameter cpp=") from None


# ---- required capabilities -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Requirement:
    """A capability a spec needs: ``what`` names it, ``check`` answers True, False or None (not known)."""

    what: str  # "memory.cp_async (cp.async, sm_80 and later)"
    check: Callable[[DeviceCapabilities], bool | None]
    alternatives: tuple[str, ...] = ()  # what the caller can do instead
    if_unknown: tuple[str, ...] | None = None  # what to do instead where check answers None (default: alternatives)


def needs(path: str, *, alternatives: Iterable[str] = (), what: str = "") -> Requirement:
    """A requirement on a boolean capability field by dotted path: ``needs("memory.clusters")``."""
    head, _, attr = path.partition(".")
    if head not in ("memory", "limits") or not attr:
        raise InternalError(f"needs({path!r}): expected 'memory.<field>' or 'limits.<field>'")

    def check(caps: DeviceCapabilities) -> bool | None:
        value = getattr(getattr(caps, head), attr)
        return None if value is None else bool(value)

    return Requirement(what or path, check, tuple(alternatives))


# ---- parameters ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ParamInfo:
    """What a twin declares about one parameter."""

    allowed: tuple[Any, ...] | None = None  # the only values accepted
    bounds: tuple[int, int] | None = None  # inclusive integer range
    multiple_of: int | None = None
    cpp: Callable[[Any], str] | None = None  # how the value is spelled as a template argument
    template: bool = True  # passed to the kernel template (False: metadata that shapes the choice only)
    requires: Callable[[Any], Requirement | None] | None = None  # the capability a value needs
    doc: str = ""


def param(*, default: Any = dataclasses.MISSING, allowed: Iterable[Any] | None = None,
          bounds: tuple[int, int] | None = None, multiple_of: int | None = None,
          cpp: Callable[[Any], str] | None = None, template: bool = True,
          requires: Callable[[Any], Requirement | None] | None = None, doc: str = "") -> Any:
    """Declare a spec parameter: its default, allowed values or range, C++ spelling and required capability."""
    info = ParamInfo(None if allowed is None else tuple(allowed), bounds, multiple_of, cpp, template, requires, doc)
    return field(default=default, metadata={"humming": info})


def _hints(cls: type) -> dict[str, Any]:
    cached = cls.__dict__.get("_humming_hints")
    if cached is None:
        cached = typing.get_type_hints(cls)  # each class's annotations in its own module's names
        setattr(cls, "_humming_hints", cached)
    return cached


@dataclass(frozen=True, kw_only=True)
class KernelSpec:
    """Base of every kernel twin's spec: ``target`` plus the twin's parameters, all checked on construction."""

    target: Target

    #: The twin's .cuh, by file name, in the twin's folder.
    header: ClassVar[str] = ""
    #: The C++ name of the __global__ template (or extern "C" kernel) the unit instantiates.
    kernel: ClassVar[str] = ""
    #: The kernel's parameter kinds in order (PARAM_KINDS or "bytes"), optional: with it the launcher checks
    #: them against the binary and converts (an int passed for an f32 becomes a float); without it the kinds
    #: follow the Python values.
    signature: ClassVar[tuple[str, ...]] = ()
    #: The MMA family the kernel issues, as the capability model names it ("mma.sync", "wgmma"); None: no MMA.
    mma_family: ClassVar[str | None] = None
    #: CTAs a thread-block cluster along the grid's x the kernel must be launched with (1: no cluster).
    cluster_n: ClassVar[int] = 1

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        bad = [k for k in cls.signature if k not in PARAM_KINDS and k != "bytes"]
        if bad:
            raise InternalError(f"{cls.__name__}.signature: unknown kinds {bad}; known: "
                                f"{', '.join(PARAM_KINDS)}, bytes")

    def __post_init__(self) -> None:
        cls = type(self)
        if not cls.header or not cls.kernel:
            raise InternalError(f"{cls.__name__} must set the class attributes header and kernel")
        if not isinstance(self.target, Target):
            raise InvalidInputError(f"{cls.__name__}.target must be a humming Target, got {self.target!r}")
        hints = _hints(cls)
        for f in dataclasses.fields(self):
            info = f.metadata.get("humming")
            if info is None:
                continue
            value = getattr(self, f.name)
            if hints.get(f.name) is DType and isinstance(value, str):
                value = DType.parse(value)  # the API edge: names become interned dtypes here
                object.__setattr__(self, f.name, value)
            _check_value(cls.__name__, f.name, value, hints.get(f.name), info)
        self.check()

    # ---- for twins to override -------------------------------------------------------------------------
    def check(self) -> None:
        """Rules across parameters; raise InvalidInputError naming the values and the rule."""

    def exports(self) -> dict[str, str]:
        """C++ integer constant expressions to export from the cubin, by name (read back as ``exports``)."""
        return {}

    def check_compiled(self, kernel: Any) -> None:
        """Raise InternalError if the compiled kernel (a CompiledKernel) breaks an assumption its launch relies on,
        such as the register allocation a setmaxnreg split was computed from; compile_spec calls it on every
        kernel it compiles or reads from the disk cache, before any launch."""

    def requirements(self) -> tuple[Requirement, ...]:
        """The capabilities this spec needs; by default those its parameter values declare."""
        found = []
        for f in dataclasses.fields(self):
            info = f.metadata.get("humming")
            if info is not None and info.requires is not None:
                req = info.requires(getattr(self, f.name))
                if req:
                    found.append(req)
        return tuple(found)

    # ---- derived -----------------------------------------------------------------------------------------
    def values(self) -> dict[str, Any]:
        """The declared parameters and their values, in declaration order (``target`` left out)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if "humming" in f.metadata}

    def template_args(self) -> tuple[str, ...]:
        """The C++ template arguments, in declaration order."""
        out = []
        for f in dataclasses.fields(self):
            info = f.metadata.get("humming")
            if info is not None and info.template:
                out.append(_cpp(type(self).__name__, f.name, getattr(self, f.name), info))
        return tuple(out)

    def cpp_args(self) -> str:
        return ", ".join(self.template_args())

    def name_expression(self) -> str:
        """The C++ expression naming the instantiated kernel: ``humming::toy::axpy<float, 4, 256, false>``."""
        args = self.template_args()
        return f"{self.kernel}<{', '.join(args)}>" if args else self.kernel

    def header_path(self) -> Path:
        """The header beside the module of the class that names it (a subclass elsewhere inherits the path)."""
        owner = next(c for c in type(self).__mro__ if "header" in c.__dict__)
        module = sys.modules[owner.__module__]
        return Path(module.__file__ or ".").resolve().parent / self.header

    def include_dirs(self) -> tuple[Path, ...]:
        """Folders the unit needs on its include path: the twin's own, then the shared device blocks."""
        own = self.header_path().parent
        return (own,) if own == CORE_INCLUDE_DIR else (own, CORE_INCLUDE_DIR)

    def unit_name(self) -> str:
        """The program name for the compiler: a path in the header's folder, so quoted includes resolve there."""
        return str(self.header_path().with_suffix(".unit.cu"))

    def describe(self) -> str:
        vals = ", ".join(f"{k}={v}" for k, v in self.values().items())
        return f"{type(self).__name__}({self.target}, {vals})"

    def render(self) -> str:
        """The instantiation unit: the include, one instantiation, the exported constants. Deterministic."""
        if not self.header_path().is_file():
            raise InternalError(f"{type(self).__name__}.header {self.header!r} is not at {self.header_path()}")
        lines = [
            f"// humming unit: {type(self).__name__} (generated by humming.core.codegen; edit the .cuh, not this)",
            f"#include <{self.header}>",
            "",
            "// Taking the address instantiates the kernel; the function itself is never emitted.",
            "[[maybe_unused]] static __device__ void humming_instantiate() { (void)&"
            + self.name_expression() + "; }",
        ]
        for name, expr in sorted(self.exports().items()):
            if not name.isidentifier():
                raise InternalError(f"{type(self).__name__}.exports(): {name!r} is not a C identifier")
            lines.append(f'extern "C" __constant__ const long long {EXPORT_PREFIX}{name} = (long long)({expr});')
        return "\n".join(lines) + "\n"

    def check_output(self, n: int, row_stride: int) -> None:
        """InvalidInputError, before any launch, for an output of ``n`` columns and this row stride (elements) that
        the kernel cannot write; any by default."""

    def launch_extras(self, activations: Any) -> tuple[Any, ...]:
        """Arguments the kernel takes after the ones its caller always passes, derived from the call's activation
        tensor (a TMA form's tensor map); none by default."""
        return ()

    def check_supported(self, caps: DeviceCapabilities) -> None:
        """UnsupportedError naming every requirement ``caps`` lacks (unknown counts as lacking)."""
        if (caps.target.vendor, caps.target.arch) != (self.target.vendor, self.target.arch):
            raise InvalidInputError(f"{self.describe()} is built for {self.target}, not {caps.target}")
        missing: list[str] = []
        instead: list[str] = []
        for req in self.requirements():
            ok = req.check(caps)
            if not ok:
                missing.append(req.what + (" (not known for this target)" if ok is None else ""))
                instead.extend(req.if_unknown if ok is None and req.if_unknown is not None else req.alternatives)
        if missing:
            raise UnsupportedError(f"{self.describe()} needs what {caps.name} does not have",
                                   missing=missing, alternatives=instead)


def _check_value(owner: str, name: str, value: Any, hint: Any, info: ParamInfo) -> None:
    where = f"{owner}.{name}={value!r}"
    if hint is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise InvalidInputError(f"{where}: expected an int")
    if hint is bool and not isinstance(value, bool):
        raise InvalidInputError(f"{where}: expected True or False")
    if hint is DType and not isinstance(value, DType):
        raise InvalidInputError(f"{where}: expected a dtype (humming.core.dtypes)")
    if isinstance(hint, type) and issubclass(hint, enum.Enum) and not isinstance(value, hint):
        raise InvalidInputError(f"{where}: expected one of {', '.join(str(m.value) for m in hint)}")
    if info.allowed is not None and value not in info.allowed:
        raise InvalidInputError(f"{where} is not allowed; allowed: {', '.join(str(v) for v in info.allowed)}")
    if info.bounds is not None:
        lo, hi = info.bounds
        if not lo <= value <= hi:
            raise InvalidInputError(f"{where} is out of range; allowed: {lo} to {hi}")
    if info.multiple_of is not None and value % info.multiple_of:
        raise InvalidInputError(f"{where} must be a multiple of {info.multiple_of}")


def _cpp(owner: str, name: str, value: Any, info: ParamInfo) -> str:
    if info.cpp is not None:
        return info.cpp(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, DType):
        return cpp_type(value)
    if isinstance(value, enum.Enum) and isinstance(value.value, int):
        return str(value.value)
    raise InternalError(f"{owner}.{name}: no C++ spelling for {value!r}; declare the parameter with cpp=")
