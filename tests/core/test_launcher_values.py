"""Values the launcher must refuse rather than pack into something else (no GPU): a negative int for a declared
unsigned parameter, a bool for a pointer, a float for a 2-byte parameter whose kind (f16 or bf16) nothing declares;
and a cluster given as a list, normalised like grid and block."""

from __future__ import annotations

import struct

import pytest

from humming.core.kernel_args import ArgumentPacker as _Packer
from humming.core.resources import ParamSlot
from humming.errors import InvalidInputError
from humming.kernels.toy_axpy import ToyAxpySpec
from tests.core.test_launcher import SM90, FakeTensor, driven, unpack  # noqa: F401 - driven: the fixture

FOUR = [ParamSlot(0, 0, 4)]


@pytest.mark.parametrize("kind, size", [("u8", 1), ("u16", 2), ("u32", 4), ("u64", 8)])
def test_a_negative_int_for_a_declared_unsigned_parameter_is_refused(kind: str, size: int) -> None:
    slots = [ParamSlot(0, 0, size)]
    with pytest.raises(InvalidInputError, match=rf"argument 0: -1 is negative; the parameter is declared {kind}"):
        _Packer("k", slots, (int,), (kind,)).pack((-1,))
    packer = _Packer("k", slots, (int,), (kind,))
    packer.pack(((1 << 8 * size) - 1,))  # the largest unsigned value still fits
    assert unpack(packer, slots)[0] == b"\xff" * size
    with pytest.raises(InvalidInputError, match=rf"{1 << 8 * size} does not fit the {size}-byte unsigned parameter"):
        packer.pack((1 << 8 * size,))
    undeclared = _Packer("k", slots, (int,))  # without a declared kind both spellings of the bits still go in
    undeclared.pack((-1,))
    assert unpack(undeclared, slots)[0] == b"\xff" * size


def test_a_bool_is_not_a_pointer() -> None:
    slots = [ParamSlot(0, 0, 8)]
    with pytest.raises(InvalidInputError, match="argument 0 .bool.: parameter 0 is a pointer; pass a tensor, None or"):
        _Packer("k", slots, (bool,), ("ptr",))
    packer = _Packer("k", slots, (int,), ("ptr",))  # a raw address stays allowed
    packer.pack((0x7000,))
    assert struct.unpack("<Q", unpack(packer, slots)[0])[0] == 0x7000


def test_a_float_for_an_undeclared_two_byte_parameter_is_refused_as_f16_or_bf16() -> None:
    two = [ParamSlot(0, 0, 2)]
    with pytest.raises(InvalidInputError, match="2-byte float parameter is f16 or bf16: declare its kind in the "
                                                "spec's signature, or pass its 2 bytes"):
        _Packer("k", two, (float,))
    declared = _Packer("k", two, (float,), ("f16",))
    declared.pack((1.5,))
    assert struct.unpack("<e", unpack(declared, two)[0])[0] == 1.5
    raw = _Packer("k", two, (bytes,))  # bf16 1.0 as its two bytes
    raw.pack((b"\x80\x3f",))
    assert unpack(raw, two)[0] == b"\x80\x3f"


def test_a_cluster_given_as_a_list_launches_like_the_tuple_and_shares_its_config(driven):  # noqa: F811
    kernel, drv = driven(ToyAxpySpec(target=SM90, block=128))
    args = (FakeTensor(16), FakeTensor(32), FakeTensor(48), 1.0, 10)
    kernel.launch((4, 2), 128, 0, args, cluster=[2, 1])
    kernel.launch((4, 2), 128, 0, args, cluster=(2, 1, 1))
    kernel.launch((4, 2), 128, 0, args, cluster=2)
    configs = [a[0] for n, a in drv.calls if n == "cuLaunchKernelEx"]
    assert len(configs) == 3 and configs[0] is configs[1] is configs[2]
    assert configs[0].attrs[0].value.clusterDim.x == 2
    with pytest.raises(InvalidInputError, match=r"cluster=\[0, 1\]: expected a positive int"):
        kernel.launch((4, 2), 128, 0, args, cluster=[0, 1])


@pytest.mark.parametrize("value", [1.0, -2.5, 3.140625, 1e-40, 65504.0, 3.0e38, float("inf"), float("-inf"), -0.0])
def test_a_float_for_a_declared_bf16_parameter_is_rounded_to_nearest_even(value: float) -> None:
    import torch

    two = [ParamSlot(0, 0, 2)]
    packer = _Packer("k", two, (float,), ("bf16",))
    packer.pack((value,))
    expected = torch.tensor([value], dtype=torch.float32).to(torch.bfloat16).view(torch.int16).item() & 0xFFFF
    assert struct.unpack("<H", unpack(packer, two)[0])[0] == expected


def test_bf16_rounding_ties_go_to_even_and_nan_stays_nan() -> None:
    two = [ParamSlot(0, 0, 2)]
    packer = _Packer("k", two, (float,), ("bf16",))
    for f32_bits, bf16 in [(0x3F808000, 0x3F80), (0x3F818000, 0x3F82), (0x3F808001, 0x3F81)]:
        packer.pack((struct.unpack("<f", struct.pack("<I", f32_bits))[0],))
        assert struct.unpack("<H", unpack(packer, two)[0])[0] == bf16
    packer.pack((float("nan"),))
    bits = struct.unpack("<H", unpack(packer, two)[0])[0]
    assert bits & 0x7F80 == 0x7F80 and bits & 0x7F


def test_a_float_past_bf16_range_is_refused_before_any_launch() -> None:
    two = [ParamSlot(0, 0, 2)]
    packer = _Packer("k", two, (float,), ("bf16",))
    for value in (3.4e38, 1e39):  # rounds past bf16's largest finite; past f32's range
        with pytest.raises(InvalidInputError, match="the arguments do not fit its parameters"):
            packer.pack((value,))


def test_bf16_rounds_a_double_once_not_through_f32() -> None:
    two = [ParamSlot(0, 0, 2)]
    packer = _Packer("k", two, (float,), ("bf16",))
    tie = 1.00390625  # halfway between bf16 1.0 (0x3F80) and 1.0078125 (0x3F81), exactly an f32
    for value, bits in [(tie + 2.0 ** -40, 0x3F81), (tie - 2.0 ** -40, 0x3F80), (tie, 0x3F80),
                        (-(tie + 2.0 ** -40), 0xBF81), (1.01171875, 0x3F82)]:  # the last: a tie going up to even
        packer.pack((value,))
        assert struct.unpack("<H", unpack(packer, two)[0])[0] == bits, value


def test_bf16_bits_agrees_with_its_tensor_twin_near_ties_and_everywhere() -> None:
    import random

    import torch

    from humming.core.codec import cast_rounded_once
    from humming.core.kernel_args import bf16_bits

    def twin(v: float) -> int:
        return cast_rounded_once(torch.tensor(v, dtype=torch.float64), torch.bfloat16).view(torch.int16).item() & 0xFFFF

    def value(bits: int) -> float:
        return torch.tensor(bits - (1 << 16) if bits >= 1 << 15 else bits, dtype=torch.int16).view(
            torch.bfloat16).double().item()

    rng = random.Random()  # fresh values each run; the seed is in the message of a failure
    seed = rng.randrange(1 << 30)
    rng.seed(seed)
    for i in range(4000):
        v = rng.uniform(-1, 1) * 2.0 ** rng.randint(-140, 126)
        if i % 2:  # on a bf16 tie, or 2^-30 of a step off it
            lo, hi = value(twin(v)), value(twin(v) + 1)
            v = (lo + hi) / 2 + (hi - lo) * rng.choice([-1, 0, 1]) * 2.0 ** -30
        assert bf16_bits(v) == twin(v), (seed, v)
