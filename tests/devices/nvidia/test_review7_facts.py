"""Facts corrected after review 7 (/tmp/review-7.md): each test failed on the tables before the fix.

A2 TMA multicast on client Blackwell, A3 tcgen05 N choices, A4 compute capability 8.8, B1/B2 Thor's SM count and
threads per SM, C4 feature probes that prove nothing (setmaxnreg optimised away, TMA through a driver syscall).
"""

from __future__ import annotations

import pytest

from humming.capabilities.model import Provenance
from humming.cli import main
from humming.core import dtypes as dt
from humming.devices.device import DeviceMatch, RawDevice
from humming.devices.manager import reset_manager
from humming.devices.nvidia import archs, detect, probes, skus
from humming.devices.nvidia.families import TCGEN05
from humming.devices.nvidia.target import toolchain_for

T = archs.BY_ARCH
KiB = 1024
STEP8 = tuple(range(8, 257, 8))
STEP16 = tuple(range(16, 257, 16))


def sass_opcodes(arch: str, source: str) -> list[str]:
    sass = pytest.importorskip("conformance.sass")
    cubin = toolchain_for(T[arch].target).compile(source, target=T[arch].target, name="feature.cu").binary
    try:
        return list(sass.opcodes(sass.disassemble(cubin)))
    except sass.SassUnavailable as exc:
        pytest.skip(str(exc))


# ---- A2: TMA multicast is a driver syscall on sm_120a / sm_121a -----------------------------------------------
@pytest.mark.parametrize("arch", ["sm_120a", "sm_121a"])
def test_client_blackwell_claims_no_hardware_tma_multicast(arch):
    mem = T[arch].memory
    assert mem.tma_multicast is False
    assert mem.bulk_tensor_copy is True and mem.clusters is True  # TMA into the CTA's own shared memory is native
    assert any("__cuda_syscall_cp_async_bulk_tensor" in n and "peer" in n for n in T[arch].notes)


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a", "sm_103a", "sm_110a"])
def test_hopper_and_datacenter_blackwell_keep_hardware_tma_multicast(arch):
    assert T[arch].memory.tma_multicast is True


@pytest.mark.parametrize("arch, hardware", [("sm_90a", True), ("sm_100a", True), ("sm_120a", False),
                                            ("sm_121a", False)])
def test_the_multicast_probe_is_judged_by_its_sass_not_by_compiling(arch, hardware):
    ops = sass_opcodes(arch, probes.feature_source("tma_multicast"))
    assert probes.feature_in_sass("tma_multicast", ops) is hardware, ops
    if not hardware:
        assert "CALL.ABS.NOINC" in ops  # __cuda_syscall_cp_async_bulk_tensor_2d_tile_multicast


# ---- A3: tcgen05 N choices, cta_group::1 ----------------------------------------------------------------------
def _kind(i) -> str:
    return i.ptx.split(".kind::", 1)[1].split(".", 1)[0]


@pytest.mark.parametrize("arch", ["sm_100a", "sm_103a", "sm_110a", "sm_107a"])
def test_tcgen05_n_runs_from_8_in_steps_of_8_and_i8_takes_8_or_a_multiple_of_16(arch):
    forms = T[arch].instructions(family=TCGEN05)
    assert forms
    for i in forms:
        kind = _kind(i)
        if kind == "i8":
            assert i.n_values == (8,) + STEP16, i.describe()
        elif kind in ("mxf4", "mxf4nvf4") and arch in ("sm_103a", "sm_107a"):
            assert i.n_values == STEP16, i.describe()  # CUTLASS's SM103 FP4 atoms assert N % 16; Rubin: no source
        else:
            assert i.n_values == STEP8, i.describe()
        assert max(i.n_values) == i.n == 256 and i.m == 128


def test_a_tcgen05_probe_at_n_8_compiles_to_the_tensor_op():
    i = T["sm_100a"].instructions(family=TCGEN05, a=dt.e4m3, b=dt.e2m1, acc=dt.f32, block_scaled=False)[0]
    assert probes.probe_n(i) == 8
    ops = sass_opcodes("sm_100a", probes.probe_source(i))
    assert any(op.startswith("UTCQMMA") for op in ops), ops


# ---- A4: compute capability 8.8 -------------------------------------------------------------------------------
def test_cc_8_8_gets_no_limits_larger_than_sm_86_has():
    caps, note = detect.target_for((8, 8))
    assert caps.target.arch == "sm_87" and note  # the plain 8.x target whose cubin loads there
    lim = caps.limits
    # CCCL arch_traits<sm_88> is arch_traits<sm_86>: 100 KiB shared memory per SM, 1536 threads; not Orin's 164 KiB.
    assert lim.shared_memory_per_sm == 100 * KiB and lim.shared_memory_per_block_optin == 99 * KiB
    assert lim.max_threads_per_sm == 1536
    assert "smallest" in note and "8.x" in note
    assert T["sm_87"].limits.shared_memory_per_sm == 164 * KiB  # the declared Orin target is untouched


@pytest.mark.parametrize("cc", [(8, 1), (8, 8), (7, 6)])
def test_an_unknown_minor_never_takes_a_limit_larger_than_any_known_target_of_its_major(cc):
    caps, _ = detect.target_for(cc)
    same = [T[a].limits for known, a in archs.BY_CC.items() if known[0] == cc[0] and known not in archs.LEGACY_CC]
    for field in ("shared_memory_per_sm", "shared_memory_per_block_optin", "max_threads_per_sm", "registers_per_sm",
                  "max_registers_per_thread", "max_threads_per_block"):
        assert getattr(caps.limits, field) == min(getattr(lim, field) for lim in same), field


def test_a_cc_8_8_device_is_claimed_with_the_smaller_limits():
    raw = RawDevice(api="cuda", index=0, name="NVIDIA Future 8.8", compute_capability=(8, 8))
    match = detect.probe(raw, {})
    assert isinstance(match, DeviceMatch) and match.capabilities.limits.shared_memory_per_sm == 100 * KiB
    assert match.specificity == detect.SPECIFICITY_NEAREST


# ---- B1 / B2: Jetson AGX Thor ---------------------------------------------------------------------------------
def test_thor_lists_its_20_sms_32_mib_l2_reported_by_the_driver_with_the_url():
    (thor,) = skus.BY_ARCH["sm_110a"]
    assert thor.sm_count == 20 and thor.l2_bytes == 32 * 1024 * KiB
    assert thor.source is not None and thor.source.provenance is Provenance.REPORTED
    assert "forums.developer.nvidia.com/t/clarification-on-cuda-core-and-tensor-core-counts-for-jetson-agx-thor/" \
           "356355" in thor.source.citation


def test_thor_limits_228_kib_and_1536_threads_per_sm():
    caps = T["sm_110a"]
    assert caps.limits.max_threads_per_sm == 1536 and "limits.max_threads_per_sm" not in caps.unknown
    assert caps.limits.shared_memory_per_sm == 228 * KiB and caps.limits.shared_memory_per_block_optin == 227 * KiB


def test_explain_plans_on_thor_without_an_sm_count_argument(capsys):
    reset_manager()
    try:
        code = main(["explain", "--target", "sm_110a", "--weights", "gptq_int4", "--m", "16", "--n", "4096",
                     "--k", "4096"])
    finally:
        reset_manager()
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "lists no SM count" not in captured.err


# ---- C4: feature probes that prove something ------------------------------------------------------------------
@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a", "sm_110a", "sm_120a", "sm_121a"])
def test_the_setmaxnreg_probe_keeps_the_instruction(arch):
    ops = sass_opcodes(arch, probes.feature_source("setmaxnreg"))
    assert probes.feature_in_sass("setmaxnreg", ops) is True, ops


def test_a_feature_without_a_sass_map_is_not_judged():
    assert probes.feature_in_sass("ldmatrix", ["LDSM.16.M88"]) is None
