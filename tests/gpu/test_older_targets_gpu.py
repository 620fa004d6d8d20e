"""On a CUDA device: the kernels the tuner picks for the older NVIDIA targets (sm_75, sm_80, sm_86, sm_89), with
their own code paths, tiles and stages, run on this GPU (humming/devices/nvidia/emulation.py) and match the float64
reference, for a spread of formats, M in {1, 16, 33, 128, 1000} and the dense matrix's odd shapes. Each launch is
held to the paths its kernel exports (``_run``'s check of ``code_paths``).

The lent GPU runs only its own architecture's machine code, so without this the Turing and Ampere paths (sm_75's
m16n8k8 MMAs and synchronous copies, the software e4m3 conversion before sm_89, the smaller shared-memory tiles)
would run nowhere before a user's. Their machine code is this GPU's, not theirs (ptxas scheduling is not tested),
and the plans take this GPU's SM count (grids and schedules are its own).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import humming.devices  # noqa: E402
from humming.core import dtypes  # noqa: E402
from humming.devices.nvidia import emulation  # noqa: E402
from humming.errors import UnsupportedError  # noqa: E402
from tests.gpu.test_gemm_dense_gpu import FORMATS, SHAPES, _k_for, _run  # noqa: E402

pytestmark = pytest.mark.gpu

#: Integer codes with and without zero points (4, 3 and 8 bits, act order), float codes, the 8-bit scale codes
#: (ue8m0; e4m3, converted in software before sm_89) and a channel scale.
FORMAT_IDS = ("s4_g128", "u4_zp_g128", "gptq_int3", "gptq_int4_act_order", "s8_channel", "u8_zp_g128",
              "e4m3_channel", "e3m4_g64", "mxfp4", "nvfp4")
#: Each target with the formats it is run with. sm_89 plans the tiles sm_86 does (both have ~100 KiB a block) and
#: differs in its paths only where e4m3 codes are converted (NVFP4's scales): that format alone.
CASES = [(arch, fmt_id) for arch in ("sm_75", "sm_80", "sm_86") for fmt_id in FORMAT_IDS] + [("sm_89", "nvfp4")]
TARGETS = tuple(dict.fromkeys(arch for arch, _ in CASES))
MS = (1, 16, 33, 128, 1000)


def _activations(arch: str) -> tuple[dtypes.DType, ...]:
    """The activation dtypes the target's tensor cores take (sm_75 has no bf16 MMA: f16 only)."""
    return (dtypes.f16,) if arch == "sm_75" else (dtypes.f16, dtypes.bf16)


def _paths_run_here(arch: str) -> None:
    gpu = humming.devices.current().capabilities.target
    try:
        emulation.check_emulates(humming.devices.target(arch).target, gpu)
    except UnsupportedError as exc:
        pytest.skip(str(exc).splitlines()[0])


@pytest.fixture(scope="module", autouse=True)
def _compiled() -> None:
    """Every kernel of the module compiled at once on all cores, each target inside its own code paths."""
    from humming.core.build import compile_many
    from humming.core.problem import GemmProblem
    from humming.ops import _device

    caps, tuner, sms = _device(torch.cuda.current_device())
    for arch in TARGETS:
        older = humming.devices.target(arch)
        try:
            emulation.check_emulates(older.target, caps.target)
        except UnsupportedError:
            continue
        specs = []
        for fmt_id in (f for a, f in CASES if a == arch):
            fmt = FORMATS[fmt_id]
            for act in _activations(arch):
                for m in MS:
                    for n, k in SHAPES:
                        plan = tuner.plan(GemmProblem(m, n, _k_for(fmt, k), fmt, act, act), older, sms)
                        specs.append(emulation.moved_to(plan, caps).spec)
        with emulation.code_paths_of(older.target):
            compile_many(specs)


@pytest.mark.parametrize("m", MS)
@pytest.mark.parametrize(("arch", "fmt_id"), CASES)
def test_older_targets_kernels_match_the_reference_on_this_gpu(arch: str, fmt_id: str, m: int) -> None:
    _paths_run_here(arch)
    for act in _activations(arch):
        for i, shape in enumerate(SHAPES):
            _run(fmt_id, act, m, shape, bias=(m + i) % 2 == 1, out=act, paths_of=arch)
