"""formats: value objects that refuse nonsense, naming the field and the allowed values, and a strict dict form."""

from __future__ import annotations

import json
import random

import pytest

from humming.core import dtypes
from humming.core.formats import (
    ActivationFormat,
    ActScaling,
    Granularity,
    QuantFormat,
    ScaleSpec,
    WeightFormat,
    ZeroPointSpec,
)
from humming.errors import InvalidInputError

G128 = ScaleSpec(Granularity.GROUP, dtypes.f16, 128)


def test_formats_are_frozen_values_with_interned_dtypes() -> None:
    a = WeightFormat("int4", ScaleSpec("group", "fp16", 64))
    b = WeightFormat(dtypes.s4, ScaleSpec(Granularity.GROUP, dtypes.f16, 64))
    assert a == b and hash(a) == hash(b)
    assert a.dtype is dtypes.s4 and a.scale.dtype is dtypes.f16
    with pytest.raises(AttributeError):
        a.dtype = dtypes.s8  # type: ignore[misc]


def test_scale_shapes_per_granularity() -> None:
    assert ScaleSpec(Granularity.TENSOR).shape(300, 512) == (1, 1)
    assert ScaleSpec(Granularity.CHANNEL).shape(300, 512) == (300, 1)
    assert G128.shape(300, 512) == (300, 4)
    assert ScaleSpec(Granularity.BLOCK, block=(128, 128)).shape(300, 520) == (3, 5)  # partial last blocks


def test_a_group_that_does_not_divide_k_names_the_field() -> None:
    with pytest.raises(InvalidInputError, match=r"scale.group=128 does not divide K=200"):
        G128.shape(64, 200)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: WeightFormat(dtypes.e2m1, ScaleSpec(Granularity.GROUP, dtypes.e4m3, 16), ZeroPointSpec.INT),
         r"weight.zero_point=int with float elements \(e2m1\): allowed with e2m1: none"),
        (lambda: WeightFormat(dtypes.e4m3, G128, ZeroPointSpec.FLOAT), r"zero_point=float with float elements"),
        (lambda: WeightFormat(dtypes.s4, G128, ZeroPointSpec.INT), r"integer zero points need unsigned elements; allowed: u4"),
        (lambda: WeightFormat(dtypes.u4, G128), r"u4 with zero_point=none holds nonnegative weights only; allowed: s4"),
        (lambda: WeightFormat(dtypes.u1, G128), r"u1 with zero_point=none .* only; allowed: u1 with zero_point=int"),
        (lambda: WeightFormat(dtypes.u4, ScaleSpec(Granularity.GROUP, dtypes.e4m3, 32), ZeroPointSpec.FLOAT),
         r"allowed scale dtypes with float zero points: f16, bf16, f32"),
        (lambda: WeightFormat(dtypes.u4, ScaleSpec(Granularity.GROUP, dtypes.ue8m0, 32), ZeroPointSpec.INT), r"ue8m0\) scales take no zero point"),
        (lambda: WeightFormat(dtypes.f16, G128), r"weight.dtype=f16: a weight element is an integer of 1..8 bits"),
        (lambda: WeightFormat(dtypes.ue8m0, G128), r"weight.dtype=ue8m0"),
        (lambda: WeightFormat(dtypes.e4m3, ScaleSpec(Granularity.TENSOR), global_scale=True), r"global_scale=true with a per-tensor scale"),
        (lambda: WeightFormat(dtypes.s4, ScaleSpec(Granularity.CHANNEL), act_order=True), r"act_order=true needs per-group scales"),
        (lambda: ScaleSpec(Granularity.GROUP, dtypes.e2m1, 32), r"scale.dtype=e2m1: allowed: f16, bf16, f32, e4m3, ue8m0, ue4m3"),
        (lambda: ScaleSpec(Granularity.GROUP, dtypes.s8, 32), r"scale.dtype=s8: allowed"),
        (lambda: ScaleSpec(Granularity.GROUP, dtypes.f16), r"scale.group=None: expected a positive integer"),
        (lambda: ScaleSpec(Granularity.GROUP, dtypes.f16, 0), r"scale.group=0: expected a positive integer"),
        (lambda: ScaleSpec(Granularity.CHANNEL, dtypes.f16, 64), r"only group takes a group size"),
        (lambda: ScaleSpec(Granularity.BLOCK, dtypes.f32, block=(128,)), r"scale.block=\(128,\): expected \(bn, bk\)"),
        (lambda: ScaleSpec("rows", dtypes.f32), r"scale.granularity='rows': allowed: tensor, channel, group, block"),
        (lambda: ScaleSpec(Granularity.TENSOR, "fp9"), r"scale.dtype: unknown dtype 'fp9'"),
        (lambda: ActivationFormat(dtypes.e5m2, ActScaling.TOKEN), r"activation.dtype=e5m2: allowed: s8, e4m3, s4, e2m1"),
        (lambda: ActivationFormat(dtypes.e4m3), r"activation.dtype=e4m3 with scaling=none"),
        (lambda: ActivationFormat(None, ActScaling.TOKEN), r"activation.dtype is none with scaling=token; allowed: s8"),
        (lambda: ActivationFormat(dtypes.e4m3, ActScaling.GROUP), r"activation.group=None: expected a positive integer"),
        (lambda: ActivationFormat(dtypes.e4m3, ActScaling.TOKEN, scale_dtype=dtypes.ue8m0), r"activation.scale_dtype=ue8m0: allowed: f16, bf16, f32"),
        (lambda: ActivationFormat(dtypes.e4m3, ActScaling.TOKEN, global_scale=True), r"global_scale=true with scaling=token"),
        (lambda: ActivationFormat(dtypes.s8, ActScaling.STATIC, 32), r"only scaling=group takes a group"),
        (lambda: WeightFormat(dtypes.e2m1, ScaleSpec(Granularity.GROUP, dtypes.ue8m0, 32), global_scale=True),
         r"global_scale=true with ue8m0 scales: .*allowed scale dtypes with a global scale: e4m3, ue4m3"),
        (lambda: ActivationFormat(dtypes.e2m1, ActScaling.GROUP, 16, dtypes.f32, True), r"allowed scale dtypes with a global scale"),
    ],
)
def test_nonsense_combinations_raise_naming_the_field_and_the_allowed_values(make, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidInputError, match=message):
        make()


def _random_format(rng: random.Random) -> QuantFormat:
    """A valid format drawn from the whole space the value objects allow."""
    while True:
        elem = rng.choice([dtypes.s2, dtypes.s3, dtypes.s4, dtypes.s8, dtypes.u2, dtypes.u3, dtypes.u4, dtypes.u7, dtypes.u8,
                           dtypes.e2m1, dtypes.e4m3, dtypes.e5m2, dtypes.e3m2, dtypes.e2m3, dtypes.e3m4, dtypes.e0m3])
        gran = rng.choice(list(Granularity))
        sd = rng.choice([dtypes.f16, dtypes.bf16, dtypes.f32, dtypes.e4m3, dtypes.ue8m0, dtypes.ue4m3])
        spec = ScaleSpec(gran, sd, rng.choice([16, 32, 128]) if gran is Granularity.GROUP else None,
                         (rng.choice([1, 64, 128]), rng.choice([32, 128])) if gran is Granularity.BLOCK else None)
        zp = ZeroPointSpec.NONE if elem.is_float or elem.signed else rng.choice([ZeroPointSpec.INT, ZeroPointSpec.FLOAT])
        try:
            w = WeightFormat(elem, spec, zp, rng.random() < 0.3 and gran is not Granularity.TENSOR,
                             rng.random() < 0.5 and gran is Granularity.GROUP)
        except InvalidInputError:
            continue  # e.g. float zero points with an 8-bit scale dtype
        scaling = rng.choice(list(ActScaling))
        if scaling is ActScaling.NONE:
            act = ActivationFormat()
        else:
            group = 32 if scaling is ActScaling.GROUP else None
            sdt = dtypes.f32 if scaling is not ActScaling.GROUP else rng.choice([dtypes.f32, dtypes.e4m3, dtypes.ue8m0])
            act = ActivationFormat(rng.choice([dtypes.s8, dtypes.e4m3, dtypes.s4, dtypes.e2m1]), scaling, group, sdt,
                                   sdt is dtypes.e4m3 and rng.random() < 0.5)
        return QuantFormat(w, act, rng.choice([None, "mine"]))


def test_any_format_round_trips_through_json() -> None:
    rng = random.Random(7)
    for _ in range(300):
        fmt = _random_format(rng)
        back = QuantFormat.from_dict(json.loads(json.dumps(fmt.to_dict())))
        assert back == fmt and back.name == fmt.name
        assert back.weight.dtype is fmt.weight.dtype


def test_dict_form_is_plain_and_readable() -> None:
    fmt = QuantFormat(WeightFormat(dtypes.u4, G128, ZeroPointSpec.INT, act_order=True))
    assert fmt.to_dict() == {
        "weight": {"dtype": "u4", "scale": {"granularity": "group", "dtype": "f16", "group": 128}, "zero_point": "int",
                   "global_scale": False, "act_order": True},
        "activation": {"dtype": None, "scaling": "none"},
    }
    # Optional keys may be left out; user spellings of dtypes are accepted at this edge.
    short = QuantFormat.from_dict({"weight": {"dtype": "uint4", "scale": {"granularity": "group", "dtype": "float16", "group": 128},
                                              "zero_point": "int", "act_order": True}})
    assert short == fmt


@pytest.mark.parametrize(
    "patch, message",
    [
        (lambda d: d.update(bits=4), r"format: unknown key\(s\) 'bits'; allowed keys: weight, activation, name"),
        (lambda d: d["weight"].update(group_size=128), r"weight: unknown key\(s\) 'group_size'; allowed keys: dtype, scale"),
        (lambda d: d["weight"]["scale"].update(sym=True), r"weight.scale: unknown key\(s\) 'sym'"),
        (lambda d: d["activation"].update(dynamic=True), r"activation: unknown key\(s\) 'dynamic'"),
        (lambda d: d["weight"].pop("scale"), r"weight: missing key\(s\) 'scale'"),
        (lambda d: d.pop("weight"), r"format: missing key\(s\) 'weight'"),
        (lambda d: d["weight"]["scale"].update(group="128"), r"scale.group='128': expected a positive integer"),
        (lambda d: d["weight"].update(global_scale="yes"), r"weight.global_scale='yes': expected true or false"),
        (lambda d: d["weight"].update(dtype="int9"), r"weight.dtype: unknown dtype 'int9'"),
        (lambda d: d["weight"].update(zero_point="asym"), r"weight.zero_point='asym': allowed: none, int, float"),
        (lambda d: d.update(weight=[1, 2]), r"weight: expected a dict"),
    ],
)
def test_bad_dicts_raise_naming_the_key(patch, message) -> None:  # type: ignore[no-untyped-def]
    d = QuantFormat(WeightFormat(dtypes.u4, G128, ZeroPointSpec.INT), ActivationFormat(dtypes.e4m3, ActScaling.TOKEN)).to_dict()
    patch(d)
    with pytest.raises(InvalidInputError, match=message):
        QuantFormat.from_dict(d)


def test_describe_uses_ptx_dtype_names() -> None:
    fmt = QuantFormat(WeightFormat(dtypes.e2m1, ScaleSpec(Granularity.GROUP, dtypes.e4m3, 16), global_scale=True),
                      ActivationFormat(dtypes.e4m3, ActScaling.TOKEN), "x")
    assert fmt.describe() == ("x: e2m1 weights, e4m3 scales per group of 16, f32 global scale; "
                              "e4m3 activations, f32 scales per token")
