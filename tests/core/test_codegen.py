"""KernelSpec: parameters are checked on construction, render() is one small deterministic unit, requirements name
what a target lacks."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

import humming.devices
from humming.capabilities.model import Target
from humming.core import dtypes
from humming.core.codegen import KernelSpec, cpp_type, needs, param
from humming.errors import InternalError, InvalidInputError, UnsupportedError
from humming.kernels.toy_axpy import ToyAxpySpec

H100 = Target("nvidia", "sm_90a")


def test_render_includes_the_header_and_instantiates_exactly_the_declared_kernel():
    spec = ToyAxpySpec(target=H100, dtype=dtypes.bf16, vec=2, block=128, async_copy=True)
    unit = spec.render()
    assert "#include <toy_axpy.cuh>" in unit
    assert "&humming::toy::axpy<__nv_bfloat16, 2, 128, true>;" in unit
    assert 'extern "C" __constant__ const long long humming_export_smem_bytes' in unit
    assert "AxpyTraits<__nv_bfloat16, 2, 128>::kTile" in unit
    assert spec.name_expression() == "humming::toy::axpy<__nv_bfloat16, 2, 128, true>"
    assert len(unit.splitlines()) < 12  # a stub, not generated kernel code


def test_render_is_deterministic_and_every_template_parameter_changes_it():
    base = ToyAxpySpec(target=H100)
    assert base.render() == ToyAxpySpec(target=H100).render()
    variants = [ToyAxpySpec(target=H100, dtype=dtypes.f16), ToyAxpySpec(target=H100, vec=8),
                ToyAxpySpec(target=H100, block=1024), ToyAxpySpec(target=H100, async_copy=True)]
    assert len({base.render()} | {v.render() for v in variants}) == 5


def test_specs_are_hashable_values():
    a = ToyAxpySpec(target=H100, vec=2)
    b = ToyAxpySpec(target=Target("nvidia", "sm_90a"), vec=2)
    assert a == b and hash(a) == hash(b)
    assert a != ToyAxpySpec(target=Target("nvidia", "sm_80"), vec=2)
    with pytest.raises(AttributeError):
        a.vec = 4  # type: ignore[misc]


def test_a_value_outside_the_allowed_set_is_rejected_with_the_allowed_values():
    with pytest.raises(InvalidInputError, match=r"ToyAxpySpec.vec=3 is not allowed; allowed: 1, 2, 4, 8"):
        ToyAxpySpec(target=H100, vec=3)
    with pytest.raises(InvalidInputError, match=r"ToyAxpySpec.dtype=dtypes.e4m3 is not allowed"):
        ToyAxpySpec(target=H100, dtype=dtypes.e4m3)


def test_types_are_checked_and_a_bool_is_not_an_int():
    with pytest.raises(InvalidInputError, match="expected an int"):
        ToyAxpySpec(target=H100, vec=True)
    with pytest.raises(InvalidInputError, match="expected True or False"):
        ToyAxpySpec(target=H100, async_copy=1)
    with pytest.raises(InvalidInputError, match="must be a humming Target"):
        ToyAxpySpec(target="sm_90a")  # type: ignore[arg-type]


def test_dtype_names_become_interned_dtypes_at_the_edge():
    spec = ToyAxpySpec(target=H100, dtype="bfloat16")  # type: ignore[arg-type]
    assert spec.dtype is dtypes.bf16
    with pytest.raises(InvalidInputError, match="unknown dtype"):
        ToyAxpySpec(target=H100, dtype="float17")  # type: ignore[arg-type]


def test_async_copy_needs_cp_async_and_the_error_says_what_instead():
    turing = humming.devices.target("sm_75")
    spec = ToyAxpySpec(target=turing.target, async_copy=True)
    with pytest.raises(UnsupportedError, match=r"cp\.async, sm_80 and later") as err:
        spec.check_supported(turing)
    assert err.value.alternatives == ("async_copy=False",)
    ToyAxpySpec(target=turing.target, async_copy=False).check_supported(turing)
    ampere = humming.devices.target("sm_80")
    ToyAxpySpec(target=ampere.target, async_copy=True).check_supported(ampere)


def test_a_capability_that_is_not_known_counts_as_missing():
    ppu = humming.devices.target("ppu-810e")
    assert ppu.memory.cp_async is None
    with pytest.raises(UnsupportedError, match="not known for this target"):
        ToyAxpySpec(target=ppu.target, async_copy=True).check_supported(ppu)


def test_checking_against_another_targets_capabilities_is_refused():
    with pytest.raises(InvalidInputError, match="is built for nvidia:sm_90a, not nvidia:sm_80"):
        ToyAxpySpec(target=H100).check_supported(humming.devices.target("sm_80"))


def test_bounds_and_multiples_are_enforced():
    @dataclass(frozen=True)
    class Tiled(ToyAxpySpec):
        stages: int = param(default=4, bounds=(2, 8), template=False)
        tile_k: int = param(default=64, multiple_of=16, template=False)

    assert Tiled(target=H100).template_args() == ToyAxpySpec(target=H100).template_args()
    with pytest.raises(InvalidInputError, match=r"stages=9 is out of range; allowed: 2 to 8"):
        Tiled(target=H100, stages=9)
    with pytest.raises(InvalidInputError, match="tile_k=40 must be a multiple of 16"):
        Tiled(target=H100, tile_k=40)


def test_a_twin_without_header_or_kernel_is_a_humming_bug():
    @dataclass(frozen=True)
    class NoHeader(KernelSpec):
        n: int = param(default=1)

    with pytest.raises(InternalError, match="must set the class attributes header and kernel"):
        NoHeader(target=H100)


def test_an_unknown_signature_kind_is_refused_when_the_twin_is_defined():
    with pytest.raises(InternalError, match=r"unknown kinds \['float'\]"):
        @dataclass(frozen=True)
        class Bad(ToyAxpySpec):
            signature = ("ptr", "float")


def test_an_export_name_must_be_a_c_identifier():
    @dataclass(frozen=True)
    class BadExport(ToyAxpySpec):
        def exports(self) -> dict[str, str]:
            return {"smem-bytes": "1"}

    with pytest.raises(InternalError, match="not a C identifier"):
        BadExport(target=H100).render()


def test_needs_takes_only_memory_and_limits_fields():
    with pytest.raises(InternalError, match="expected 'memory.<field>'"):
        needs("clusters")
    req = needs("memory.clusters")
    assert req.check(humming.devices.target("sm_90a")) is True
    assert req.check(humming.devices.target("sm_80")) is False


def test_cpp_type_names_the_cuda_types_and_refuses_the_rest():
    assert cpp_type(dtypes.f16) == "__half"
    assert cpp_type(dtypes.e4m3) == "__nv_fp8_e4m3"
    with pytest.raises(InvalidInputError, match="has no CUDA C.. scalar type"):
        cpp_type(dtypes.e2m1)
