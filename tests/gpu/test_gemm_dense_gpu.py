"""On a CUDA device: the dense WnA16 GEMM matches the float64 reference for every supported weight format, f16 and
bf16 activations, M in {1, 7, 16, 33, 128, 1000, 4096}, and N/K that are not powers of two (N padded inside the
kernel's 64-column blocks, K inside its 128-deep stages). Outputs are poisoned with NaN before every launch and
inputs are fresh random draws each run; tolerances are the one table in humming.core.tolerances."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import pytest

torch = pytest.importorskip("torch")

from humming.core import dtypes, packing, presets, quantized, reference  # noqa: E402
from humming.core.formats import Granularity, QuantFormat, ScaleSpec, WeightFormat, ZeroPointSpec  # noqa: E402
from humming.core.problem import GemmProblem  # noqa: E402

if TYPE_CHECKING:
    from humming.core.launcher import CompiledKernel
    from humming.core.plan import KernelPlan

pytestmark = pytest.mark.gpu

G = Granularity
_TORCH = {dtypes.f16: torch.float16, dtypes.bf16: torch.bfloat16}


def wf(elem: str, gran: str, sdt: str = "f16", group: int | None = None, zp: str = "none", **kw) -> WeightFormat:
    spec = ScaleSpec(G(gran), dtypes.DType.parse(sdt), group, kw.pop("block", None))
    return WeightFormat(dtypes.DType.parse(elem), spec, ZeroPointSpec(zp), **kw)


#: Every weight format the dense kernel supports, by a test id.
FORMATS: dict[str, WeightFormat] = {
    "s4_g128": wf("s4", "group", "f16", 128),
    "u4_zp_g128": presets.get("awq_int4").weight,
    "s4_channel": wf("s4", "channel", "f32"),
    "u4_zp_channel": wf("u4", "channel", "f16", zp="int"),
    "s8_channel": wf("s8", "channel", "f32"),
    "u8_zp_g128": wf("u8", "group", "bf16", 128, zp="int"),
    "e4m3_channel": presets.get("fp8_channel_w8a16").weight,
    "e4m3_block": presets.get("fp8_block").weight,
    "e5m2_channel": wf("e5m2", "channel", "f32"),
    "e3m4_g64": wf("e3m4", "group", "bf16", 64),
    "mxfp4": presets.get("mxfp4").weight,
    "nvfp4": presets.get("nvfp4_w4a16").weight,
    "mxint4": presets.get("mxint4").weight,
    "mxfp6_e3m2": wf("e3m2", "group", "ue8m0", 32),
    "mxfp6_e2m3": wf("e2m3", "group", "ue8m0", 32),
    "gptq_int4_act_order": presets.get("gptq_int4_act_order").weight,
    "gptq_int3": presets.get("gptq_int3").weight,
    "gptq_int2": presets.get("gptq_int2").weight,
    "s3_g64": wf("s3", "group", "f16", 64),
    "s5_channel": wf("s5", "channel", "f16"),
    "s6_g128": wf("s6", "group", "f16", 128),
    "u7_zp_g128": wf("u7", "group", "f16", 128, zp="int"),
    "u1_zp_g64": wf("u1", "group", "f16", 64, zp="int"),
    "s4_tensor": wf("s4", "tensor", "f32"),
}
#: Formats some cases below need beyond the matrix (not in it: each entry there is 42 runs).
EXTRA_FORMATS: dict[str, WeightFormat] = {
    "s4_g64": wf("s4", "group", "bf16", 64),  # kZeroOnSums' parts of four k16 steps
    "s4_g256": wf("s4", "group", "bf16", 256),  # a group over both k-warps of a stage
    "s4_g128_bf16": wf("s4", "group", "bf16", 128),
    "s4_g192": wf("s4", "group", "bf16", 192),  # groups no 128- or 256-deep stage fits (gemm_dense.groups_fit_stage)
    "u4_zp_g192": wf("u4", "group", "f16", 192, zp="int"),
    "u4_zp_g32": wf("u4", "group", "f16", 32, zp="int"),  # GPTQ g32 at M = 1: group columns with zero-point rows
    "s4_g32": wf("s4", "group", "bf16", 32),  # the constant zero in the dequant (parts of two k16 steps)
}
MS = (1, 7, 16, 33, 128, 1000, 4096)
#: (N, K): N not a multiple of 64, K a multiple of 128 (group formats) or only of 64 (padded inside a
#: 128- or 256-deep decode stage); K = 1000 (992 for groups of 32) ends inside a 64-deep wgmma stage and, for
#: per-channel formats, inside a k16 step (zero-filled by the loaders, the producer's included).
SHAPES = ((1000, 1088), (200, 4096), (136, 1000))


def _k_for(fmt: WeightFormat, k: int) -> int:
    g = fmt.scale.group or (fmt.scale.block[1] if fmt.scale.block else None)
    return k if g is None else max(g, k // g * g)


def _quantize(fmt: WeightFormat, n: int, k: int, gen: torch.Generator,
              magnitude: float = 1.0) -> quantized.QuantizedTensor:
    w = torch.randn(n, k, device="cuda", generator=gen) * (0.5 + torch.rand(n, 1, device="cuda", generator=gen))
    w = w * magnitude
    g_idx = None
    if fmt.act_order:
        g_idx = (torch.randperm(k, device="cuda", generator=gen) // fmt.scale.group).to(torch.int32)
    return quantized.quantize(w, QuantFormat(fmt), g_idx=g_idx)


def _chosen_plan(problem: object, kernel: type | None = None, tile: object = None, schedule: str | None = None,
                 paths_of: str | None = None):
    """The device tuner's plan for ``problem`` under a kernel (with its tile) or a schedule it would not choose
    itself, or its plan for the older target ``paths_of`` moved onto this GPU (devices/nvidia/emulation.py); None
    when none is given (launch then asks the tuner)."""
    import humming.devices
    from humming.devices.nvidia import emulation
    from humming.ops import _device

    if kernel is None and schedule is None and paths_of is None:
        return None
    caps, tuner, sms = _device(torch.cuda.current_device())
    chosen = {} if kernel is None else {"tile": tile, "kernel": kernel}
    if paths_of is not None:
        plan = tuner.plan(problem, humming.devices.target(paths_of), sms, schedule=schedule, **chosen)
        return emulation.moved_to(plan, caps)
    return tuner.plan(problem, caps, sms, schedule=schedule, **chosen)


def _code_paths(paths_of: str | None):
    """The context a ``paths_of`` plan compiles and launches in (nothing for the GPU's own plans)."""
    import contextlib

    import humming.devices
    from humming.devices.nvidia import emulation

    if paths_of is None:
        return contextlib.nullcontext()
    return emulation.code_paths_of(humming.devices.target(paths_of).target)


def _run(fmt_id: str, act: dtypes.DType, m: int, shape: tuple[int, int], *, bias: bool, out: dtypes.DType,
         kernel: type | None = None, tile: object = None, schedule: str | None = None,
         row_exponents: tuple[int, int] | None = None, x_offset: float = 0.0, zero_code_rows: bool = False,
         magnitude: float = 1.0, paths_of: str | None = None):
    """Quantize, pack, launch and check one case against the reference; returns the plan launched.

    ``zero_code_rows``: an eighth of the weight rows get codes that are all 0 under their non-zero scales; a plan that
    leaves the zero on its partial sums is then judged with the offsets its sums carry (tolerances.check's carried=).
    ``paths_of``: the kernel the tuner picks for that older target, with its code paths, on this GPU.
    """
    import dataclasses

    from humming.ops import launch

    fmt = FORMATS[fmt_id] if fmt_id in FORMATS else EXTRA_FORMATS[fmt_id]
    gen = torch.Generator(device="cuda")
    gen.seed()  # fresh data every run; the seed is in the failure message
    seed = gen.initial_seed()
    n, k = shape[0], _k_for(fmt, shape[1])
    q = _quantize(fmt, n, k, gen, magnitude)
    if zero_code_rows:
        data = q.data.clone()
        data[torch.randperm(n, device="cuda", generator=gen)[: n // 8]] = 0  # codes of 0 (two's complement nibbles)
        q = dataclasses.replace(q, data=data)
    pw = packing.pack(q, act)
    x = torch.randn(m, k, device="cuda", generator=gen) + x_offset
    if row_exponents is not None:  # row i times 2^e_i, e spread evenly over the range
        lo, hi = row_exponents
        x = x * torch.exp2(torch.linspace(lo, hi, m, device="cuda").round()).unsqueeze(1)
    x = x.to(_TORCH[act])
    b = torch.randn(n, device="cuda", generator=gen).to(_TORCH[out]) if bias else None
    c = torch.full((m, n), float("nan"), device="cuda", dtype=_TORCH[out])
    x2 = x if pw.perm is None else x.index_select(1, pw.perm)
    plan = _chosen_plan(GemmProblem(m, n, k, fmt, act, out, bias), kernel, tile, schedule, paths_of)
    with _code_paths(paths_of):
        plan = launch(c, x2, pw.data, pw.scales, pw.zeros, pw.chscale, pw.gscale, b, fmt, n, k, plan)
        if paths_of is not None:  # the kernel launched (a memo hit here) says which paths it took
            import humming.devices
            from humming.core.build import compile_spec
            from humming.devices.nvidia import emulation

            took = compile_spec(plan.spec).exports["code_paths"]
            assert took == emulation.arch_number(humming.devices.target(paths_of).target), (took, paths_of)
    torch.cuda.synchronize()
    assert not bool(torch.isnan(c).any()), f"seed {seed}: {int(torch.isnan(c).sum())} outputs never written"
    carried = None
    if zero_code_rows and plan.spec.zero_on_sums():  # the MMA took 128 + (c + 8): the sums carry 136 x scale
        carried = (136.0 * q.scales.float()).repeat_interleave(fmt.scale.group, dim=1)
    try:
        reference.check_gemm(c, x, q, b, carried=carried)
    except AssertionError as exc:
        raise AssertionError(f"{fmt_id} {act} M={m} N={n} K={k} seed {seed}: {exc}") from None
    return plan


def compile_all(planner: Callable[[GemmProblem], KernelPlan | None] | None = None,
                only: tuple[str, ...] = ()) -> list[CompiledKernel]:
    """Compile every kernel the module uses (of the format ids ``only``, if given) at once, on all cores: the plans
    of GPU 0, or ``planner``'s (a target planned for without a GPU: bench_wna16 --check --plan-only; None for a
    problem it leaves out)."""
    from humming.core.build import compile_many
    from humming.ops import plan_for

    plan = planner or (lambda problem: plan_for(problem, 0))
    specs = []
    for fmt in (f for name, f in FORMATS.items() if not only or name in only):
        for act in (dtypes.f16, dtypes.bf16):
            for m in MS:
                for n, k in SHAPES:
                    chosen = plan(GemmProblem(m, n, _k_for(fmt, k), fmt, act, act))
                    if chosen is not None:
                        specs.append(chosen.spec)
    return compile_many(specs)


@pytest.fixture(scope="module", autouse=True)
def _compiled() -> None:
    compile_all()


@pytest.mark.parametrize("m", MS)
@pytest.mark.parametrize("act", [dtypes.f16, dtypes.bf16], ids=str)
@pytest.mark.parametrize("fmt_id", list(FORMATS))
def test_dense_gemm_matches_the_reference(fmt_id: str, act: dtypes.DType, m: int) -> None:
    for i, shape in enumerate(SHAPES):
        _run(fmt_id, act, m, shape, bias=(m + i) % 2 == 1, out=act)


#: N = 8192 gives 64 decode tiles: on an H200 (264 resident CTAs) the tuner splits each tile's K evenly
#: (tests/kernels/test_gemm_dense_compile.py checks that plan on CPU); the matrix above never does.
SPLIT_K_SHAPE = (8192, 2048)


# M = 5 and 9: partial tiles carry only the accumulator quads with a row inside M (epilogue/quads.cuh quad_row);
# 9 leaves lanes whose first row is inside M and whose second (8 rows on) is not.
@pytest.mark.parametrize("m", [1, 5, 9, 16])
@pytest.mark.parametrize("fmt_id", ["s4_g128", "u4_zp_g128", "mxfp4"])
def test_split_k_decode_matches_the_reference(fmt_id: str, m: int) -> None:
    _run(fmt_id, dtypes.bf16, m, SPLIT_K_SHAPE, bias=True, out=dtypes.bf16)


@pytest.mark.parametrize("paths_of", [None, "sm_80"])
@pytest.mark.parametrize("m", [1, 16, 64, 300])
@pytest.mark.parametrize("fmt_id", ["s4_g192", "u4_zp_g192"])
def test_groups_that_no_deep_stage_fits_run_on_shallower_stages(fmt_id: str, m: int, paths_of: str | None) -> None:
    # Groups of 192 k: the tuner halves the stage depth until it divides the group (64 here), on this GPU's kernels
    # and on sm_80's (its code paths run here); K = 1152 is six groups and nine 128-k rows of the packing.
    plan = _run(fmt_id, dtypes.bf16, m, (1000, 1152), bias=True, out=dtypes.bf16, paths_of=paths_of)
    assert 192 % plan.spec.bk == 0, plan.spec.describe()


@pytest.mark.parametrize("paths_of", [None, "sm_80"])
@pytest.mark.parametrize("act", [dtypes.bf16, dtypes.f16])
@pytest.mark.parametrize("fmt_id", ["u4_zp_g32", "s4_g32"])
def test_one_token_group_columns_take_integer_codes_and_zero_points(fmt_id: str, act: dtypes.DType,
                                                                    paths_of: str | None) -> None:
    # dequant/route.cuh kGroupColumns at M = 1 beyond the FP4 formats of the matrix: four group parts a warp's stage,
    # each in its own n8 column, with zero-point rows (GPTQ g32) or the constant zero; K = 1056 ends inside a stage,
    # whose zero fill past K goes to the spread rows.
    plan = _run(fmt_id, act, 1, (1000, 1056), bias=True, out=act, paths_of=paths_of)
    assert plan.spec.one_token == 1, plan.spec.describe()


# Split tiles: M = 1 / 16 take the decode form (the tile's first CTA waits for the others' partials: a cooperative
# launch, whose workspace words must all be the sentinel again afterwards, or the next launch would read a stale
# partial as a finished one); M = 64 on sm_90 the spread counter form (cooperative too: the CTAs ending on a tile
# wait for its count), elsewhere the last arrival's (an ordinary launch); counters end at zero.
@pytest.mark.parametrize("m", [1, 16, 64])
def test_split_tiles_leave_the_workspace_as_they_found_it(m: int) -> None:
    import humming.ops as hg

    fmt = FORMATS["s4_g128"]
    plan = hg.plan_for(GemmProblem(m, SPLIT_K_SHAPE[0], SPLIT_K_SHAPE[1], fmt, dtypes.bf16, dtypes.bf16, True))
    assert plan.workspace_floats > 0 and plan.sentinel == (m <= 16), plan.explain()
    assert plan.cooperative == (plan.sentinel or plan.spec.spreads_split_tiles()), plan.explain()
    _run("s4_g128", dtypes.bf16, m, SPLIT_K_SHAPE, bias=True, out=dtypes.bf16)
    ws, counters = hg._workspace(torch.cuda.current_device(), torch.cuda.current_stream().cuda_stream, 0, 0,
                                 plan.sentinel)
    if plan.sentinel:
        words = ws.view(torch.int32)
        assert bool((words == -1).all()), f"{int((words != -1).sum())} workspace words are not the sentinel"
    assert not bool(counters.any()), f"{int(counters.count_nonzero())} tile counters are not zero"


# The spread fix-up (epilogue/finish.cuh finish_spread; the wgmma form at M = 17..128 on sm_90): 2048 x 8192 has 4
# tiles of 512 columns and 128 k-steps, so Stream-K puts ~33 CTAs on each (interior CTAs whose only segment is the
# middle of a tile finish a share of it) and split-K a few; M = 40 leaves rows of the tile outside M, 100 spans two
# m tiles. Run twice: the counters must be back at zero for the second launch. Data-parallel: whole tiles only, which
# take the same store loop as one participant with no sharers.
@pytest.mark.parametrize("schedule", ["stream-k", "split-k", "data-parallel"])
@pytest.mark.parametrize("m", [40, 64, 100])
def test_split_tiles_spread_over_their_sharers_match_the_reference(m: int, schedule: str) -> None:
    for _ in range(2):
        _run("s4_g128", dtypes.bf16, m, (2048, 8192), bias=True, out=dtypes.bf16, schedule=schedule)


# The four-fragment wgmma form as two k-warpgroups taking the ring's stages in turn (warp_k = 2, 256 columns; the
# groups' sums reduced into the fragments each owns before the spread finish): 2048 x 8192 is 8 tiles of 128 k-steps,
# ~16 CTAs a tile under Stream-K (segments of odd length: one group computes a stage more than the other, or the only
# stage), whole tiles data-parallel; 1000 x 1088 leaves columns of the last tile past N and a K tail. MXFP4 takes
# four scale rows a stage. Twice: the counters must be back at zero for the second launch.
@pytest.mark.parametrize("case", [("s4_g128", 40, (2048, 8192), "stream-k"), ("s4_g128", 64, (2048, 8192), "split-k"),
                                  ("s4_g128", 64, (2048, 8192), "data-parallel"),
                                  ("s4_g128", 33, (1000, 1088), "stream-k"), ("mxfp4", 64, (2048, 8192), "stream-k")],
                         ids=str)
def test_k_warpgroups_taking_stages_in_turn_match_the_reference(case: tuple[str, int, tuple[int, int], str]) -> None:
    from humming.kernels.gemm_dense import Tile
    from humming.kernels.gemm_dense_wgmma import GemmDenseWgmmaSpec

    fmt_id, m, shape, schedule = case
    tile = Tile(1, 4, 4, 1, 2, 64, 8, producer=1)
    for _ in range(2):
        plan = _run(fmt_id, dtypes.bf16, m, shape, bias=True, out=dtypes.bf16, kernel=GemmDenseWgmmaSpec, tile=tile,
                    schedule=schedule)
    assert plan.spec.warp_k == 2 and plan.spec.spreads_split_tiles(), plan.explain()


# The wide wgmma form (M > 128 on sm_90) under each schedule, its tiles whole or finished by the last sharer
# (epilogue/finish.cuh): 2048 x 8192 at M = 300 is 32 tiles, data-parallel whole, split-K and Stream-K all split;
# 8192 x 2048 at M = 1000 is 256 tiles of 32 k-steps on 132 CTAs, Stream-K both in one launch.
@pytest.mark.parametrize("case", [(300, (2048, 8192), "data-parallel"), (300, (2048, 8192), "split-k"),
                                  (300, (2048, 8192), "stream-k"), (1000, (8192, 2048), "stream-k")], ids=str)
def test_wide_tiles_whole_and_split_match_the_reference(case: tuple[int, tuple[int, int], str]) -> None:
    m, shape, schedule = case
    for _ in range(2):
        _run("s4_g128", dtypes.f16, m, shape, bias=True, out=dtypes.f16, schedule=schedule)


# The wide TMA form in clusters of two (each CTA copies half of every stage's activation tile, multicast into both;
# one CTA a tile): M = 1000 leaves the second half of the last m tile partly past M (its box reads zeros), M = 300 the
# whole second half of the second m tile; 1280 x 1088 is ten 128-column n tiles (five pairs, the last tile partly past
# N) with a K tail; MXFP4 and u4 with zero points take scale / zero rows beside the weights. Twice: nothing a launch
# leaves behind (barriers, counters) may change the second.
@pytest.mark.parametrize("case", [("s4_g128", dtypes.bf16, 1000, (2048, 8192)), ("s4_g128", dtypes.f16, 300, (1280, 1088)),
                                  ("mxfp4", dtypes.bf16, 512, (2048, 4096)), ("u4_zp_g128", dtypes.f16, 777, (1280, 2048))],
                         ids=str)
def test_wide_tiles_in_clusters_of_two_match_the_reference(case: tuple[str, dtypes.DType, int, tuple[int, int]]) -> None:
    from humming.kernels.gemm_dense_wgmma import GemmDenseWgmmaWideTmaPairSpec, wide_tile

    fmt_id, act, m, shape = case
    for _ in range(2):
        plan = _run(fmt_id, act, m, shape, bias=True, out=act, kernel=GemmDenseWgmmaWideTmaPairSpec,
                    tile=wide_tile(2, 1, 256, 5, producer=1), schedule="data-parallel")
    assert plan.cluster == 2 and plan.schedule == "data-parallel", plan.explain()


# bf16 activations with group-scaled float weights at M = 9..16 (and M <= 8 with groups of 16) carry the weights'
# exponent fix themselves (2^64 on the activations, the rest in the f32 epilogue; dequant/route.cuh kFixOnActivations):
# rows of activations from 2^-40 to 2^60 in magnitude stay within the tolerance, on the split-K shape and an odd one
# (e2m1's 0.5 is a bf16 subnormal operand there). The channel-scaled formats fix every pair, the same range.
@pytest.mark.parametrize("m", [1, 16])
@pytest.mark.parametrize("fmt_id", ["mxfp4", "nvfp4", "e4m3_channel", "e5m2_channel", "mxfp6_e3m2"])
def test_bf16_float_weights_take_activations_across_their_range(fmt_id: str, m: int) -> None:
    for lo, hi in ((-40, 60), (60, 60), (-40, -40)):
        for shape in (SPLIT_K_SHAPE, (1000, 1088)):
            _run(fmt_id, dtypes.bf16, m, shape, bias=shape != SPLIT_K_SHAPE, out=dtypes.bf16, row_exponents=(lo, hi))


# s4 at M = 1 under bf16 takes its zero on the partial sums (dequant/route.cuh kZeroOnSums: operands 128 + c, each
# group's sum minus 136 x the activations' sum). Activations with a common offset (mean 4) are where that subtraction
# cancels most; the results stay within the tolerance on the split-K shape, an odd one and a Stream-K one. f16 runs
# the same cases on its own path (with the zero on the sums, magic 1024, it failed here: the sums cancel 8x deeper).
@pytest.mark.parametrize("fmt_id", ["s4_g128", "s4_g64", "s4_g256"])
@pytest.mark.parametrize("act", [dtypes.f16, dtypes.bf16], ids=str)
def test_one_token_s4_keeps_its_zero_on_the_sums_within_tolerance(act: dtypes.DType, fmt_id: str) -> None:
    for shape in (SPLIT_K_SHAPE, (1000, 1088), (7168, 4096)):
        for offset in (0.0, 4.0):
            _run(fmt_id, act, 1, shape, bias=True, out=act, x_offset=offset)


# Weight rows whose codes are all the zero (value 0) under non-zero scales: the reference is the bias there. The
# one-token s4 kernel's sums carry 136 x scale x sum(a) and take it out again, which leaves a rounding residue
# (2-5e-4 at K = 28672, NOTES-wna16 run 23), judged with tolerances.check's carried=; the paired-FMA route (M = 16)
# subtracts the zero from every operand and stays within the plain table.
@pytest.mark.parametrize("m", [1, 16])
def test_rows_of_zero_codes_under_nonzero_scales(m: int) -> None:
    plan = _run("s4_g128_bf16", dtypes.bf16, m, (4096, 8192), bias=True, out=dtypes.bf16, zero_code_rows=True)
    assert plan.spec.zero_on_sums() == (m == 1)  # the route this test is about


#: Leading dims of the activations: M = 10 (decode), M = 300 (on sm_90a the wide kernel, whose tensor map of the
#: activations is encoded on the host for their address and captured with the launch).
@pytest.mark.parametrize("lead", [(2, 5), (3, 100)])
def test_public_gemm_handles_leading_dims_bias_and_cuda_graphs(lead: tuple[int, int]) -> None:
    import humming.ops as hg

    fmt = FORMATS["u4_zp_g128"]
    gen = torch.Generator(device="cuda")
    gen.seed()
    q = _quantize(fmt, 3000, 1024, gen)
    pw = packing.pack(q, dtypes.bf16)
    m = lead[0] * lead[1]
    x = torch.randn(*lead, 1024, device="cuda", generator=gen).to(torch.bfloat16)
    b = torch.randn(3000, device="cuda", generator=gen).to(torch.bfloat16)
    y = hg.gemm(x, pw, b)
    assert y.shape == (*lead, 3000) and y.dtype is torch.bfloat16
    reference.check_gemm(y.reshape(m, 3000), x.reshape(m, 1024), q, b)
    graph = torch.cuda.CUDAGraph()
    static_x = x.clone()
    hg.gemm(static_x, pw, b)  # warm: compile, load, workspace
    with torch.cuda.graph(graph):
        static_y = hg.gemm(static_x, pw, b)
    static_x.copy_(torch.randn(*lead, 1024, device="cuda", generator=gen).to(torch.bfloat16))
    static_y.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    again = hg.gemm(static_x, pw, b)
    assert torch.equal(static_y, again), "a graph replay differs from an eager call on the same input"


#: (M, N, K) whose plans on the H200 use the scratch workspace: the decode form's sentinel slots (split-K, M = 1) and
#: a split tile's partial slots and counters (M = 64).
WORKSPACE_CASES = [(1, *SPLIT_K_SHAPE), (64, 8192, 8192)]


@pytest.mark.parametrize("m,n,k", WORKSPACE_CASES, ids=lambda v: str(v))
def test_a_workspace_first_needed_in_a_capture_serves_other_graphs_and_eager_launches(m: int, n: int, k: int) -> None:
    # A stream's first launch inside a CUDA graph capture makes that stream's workspace (ops._workspace). Its initial
    # state (sentinel words, zero counters) must be in memory at once, not only in the capturing graph: a second graph
    # captured on the same stream, replayed without the first, and an eager launch on that stream find the workspace
    # made and run on it.
    import humming.ops as hg

    fmt = FORMATS["s4_g128"]
    gen = torch.Generator(device="cuda")
    gen.seed()
    q = _quantize(fmt, n, k, gen)
    pw = packing.pack(q, dtypes.bf16)
    b = torch.randn(n, device="cuda", generator=gen).to(torch.bfloat16)
    xs = [torch.randn(m, k, device="cuda", generator=gen).to(torch.bfloat16) for _ in range(3)]

    plan = hg.plan_for(GemmProblem(m, n, k, fmt, dtypes.bf16, dtypes.bf16, True))
    assert plan.workspace_floats > 0 or plan.counters > 0, f"{plan.schedule}: this case is about the workspace"
    hg.gemm(xs[0], pw, b)  # compile and load on the default stream
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()  # no launch has used it: its workspace is made inside the first capture
    outs, graphs = [], []
    for i in range(2):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=stream):
            outs.append(hg.gemm(xs[i], pw, b))
        graphs.append(g)
    outs[1].fill_(float("nan"))
    graphs[1].replay()  # the second graph alone: the first, whose capture made the workspace, never runs
    torch.cuda.synchronize()
    reference.check_gemm(outs[1], xs[1], q, b)
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        y = hg.gemm(xs[2], pw, b)  # eager on that stream
    torch.cuda.synchronize()
    reference.check_gemm(y, xs[2], q, b)


@pytest.mark.parametrize("m", [1, 16, 64, 300])
def test_a_chain_launched_programmatically_reads_each_input_after_it_is_written(m: int) -> None:
    # With programmatic dependent launch (HUMMING_PDL, where the device has it) each GEMM may start while the one
    # before it still runs, and must wait for it before reading its output (arch/grid_dependency.cuh). A chain of
    # twelve layers, each reading the previous one's output with no other kernel between, gives bit for bit what it
    # gives launched plainly (the kernels are deterministic), eager (five times) and replayed from a CUDA graph.
    import humming.ops as hg
    from humming import knobs
    from humming.core.build import compile_spec

    fmt, n = FORMATS["s4_g128"], 2048
    gen = torch.Generator(device="cuda")
    gen.seed()
    seed = gen.initial_seed()
    qs = [quantized.quantize(torch.randn(n, n, device="cuda", generator=gen) / n**0.5, QuantFormat(fmt))
          for _ in range(12)]
    pws = [packing.pack(q, dtypes.bf16) for q in qs]
    x = torch.randn(m, n, device="cuda", generator=gen).to(torch.bfloat16)

    def chain(src: torch.Tensor) -> list[torch.Tensor]:
        outs = []
        for pw in pws:
            src = hg.gemm(src, pw)
            outs.append(src)
        return outs

    device = torch.cuda.current_device()
    caps = hg._device(device)[0]
    kernel = compile_spec(hg.plan_for(GemmProblem(m, n, n, fmt, dtypes.bf16, dtypes.bf16), device).spec)
    with knobs.scope(HUMMING_PDL=False):
        assert not hg._programmatic(device, kernel)
        plain = chain(x)
    torch.cuda.synchronize()
    reference.check_gemm(plain[0], x, qs[0])
    with knobs.scope(HUMMING_PDL=True):
        assert hg._programmatic(device, kernel) == bool(caps.memory.programmatic_launch)
        for _ in range(5):
            got = chain(x)
            for i, (a, b) in enumerate(zip(got, plain)):
                assert torch.equal(a, b), f"seed {seed} M={m}: layer {i} differs from the plain launches"
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            captured = chain(x)
    for _ in range(3):
        for t in captured:
            t.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        for i, (a, b) in enumerate(zip(captured, plain)):
            assert torch.equal(a, b), f"seed {seed} M={m}: layer {i} of the graph differs from the plain launches"


@pytest.mark.parametrize("m", [16, 300])
def test_gemm_under_torch_compile(m: int) -> None:
    import humming.ops as hg

    fmt = FORMATS["s4_g128"]
    gen = torch.Generator(device="cuda")
    gen.seed()
    q = _quantize(fmt, 512, 1024, gen)
    pw = packing.pack(q, dtypes.f16)
    x = torch.randn(m, 1024, device="cuda", generator=gen).to(torch.float16)
    hg.gemm_dense_op.op()

    @torch.compile(fullgraph=True)
    def f(t):
        return hg.gemm(t * 2, pw) + 1

    eager = hg.gemm(x * 2, pw) + 1
    assert torch.equal(f(x), eager)


@pytest.mark.parametrize("m", [1, 16, 200])
@pytest.mark.parametrize("magnitude, out", [(1e-4, dtypes.f16), (1e6, dtypes.bf16)])
def test_bf16_scales_beyond_f16s_range_run_under_f16_activations(magnitude: float, out: dtypes.DType, m: int) -> None:
    # pack moves a power of two of such scales into the global scale (scale_range.fit_scales): before, they were stored
    # as f16 zeros / subnormals / inf. No bias, so that the weights' part of each output is what the check judges.
    probe = quantized.quantize(torch.randn(64, 128) * magnitude, QuantFormat(EXTRA_FORMATS["s4_g128_bf16"]))
    assert packing.pack(probe, dtypes.f16).scale_shift != 0
    _run("s4_g128_bf16", dtypes.f16, m, SHAPES[0], bias=False, out=out, magnitude=magnitude)


@pytest.mark.parametrize("m", [1, 16, 200])
@pytest.mark.parametrize("fmt_id, magnitude", [("mxfp4", 1e-9), ("mxint4", 1e7)])
def test_ue8m0_scales_beyond_f16s_range_run_under_f16_activations(fmt_id: str, magnitude: float, m: int) -> None:
    # pack now takes a power of two off such codes into the global scale (scale_range.fit_scale_codes): before, the
    # kernels that scale their operands read them as f16 0 or inf, while the ones that scale f32 sums did not.
    probe = quantized.quantize(torch.randn(64, 128) * magnitude, QuantFormat(FORMATS[fmt_id]))
    assert packing.pack(probe, dtypes.f16).scale_shift != 0
    _run(fmt_id, dtypes.f16, m, SHAPES[0], bias=False, out=dtypes.bf16 if magnitude > 1 else dtypes.f16,
         magnitude=magnitude)


def test_quantize_linears_runs_a_model_on_the_kernels() -> None:
    from humming.nn import QuantLinear, quantize_linears

    model = torch.nn.Sequential(torch.nn.Linear(1024, 640), torch.nn.GELU(), torch.nn.Linear(640, 1024, bias=False))
    model = model.to(device="cuda", dtype=torch.bfloat16)
    assert quantize_linears(model, "awq_int4") == ["0", "2"]
    x = torch.randn(9, 1024, device="cuda", dtype=torch.bfloat16)
    for layer, inputs in ((model[0], x), (model[2], model[1](model[0](x)))):
        assert isinstance(layer, QuantLinear)
        reference.check_gemm(layer(inputs), inputs, packing.unpack(layer.packed), layer.bias)
    assert bool(torch.isfinite(model(x)).all())


def test_quant_linear_from_a_float_layer_and_under_torch_compile() -> None:
    from humming.nn import QuantLinear

    lin = torch.nn.Linear(1024, 640, bias=True, device="cuda", dtype=torch.bfloat16)
    layer = QuantLinear.from_linear(lin, "gptq_int4")
    x = torch.randn(7, 1024, device="cuda", dtype=torch.bfloat16)
    y = layer(x)
    q = packing.unpack(layer.packed)
    assert q.format.weight.dtype is dtypes.u4
    reference.check_gemm(y, x, q, layer.bias)
    compiled = torch.compile(layer, fullgraph=True)
    assert torch.equal(compiled(x), y)
    torch.nn.Sequential(layer).half()  # casts leave the packed buffers as packed (QuantLinear._apply)
    assert torch.equal(layer(x), y)


#: The wide wgmma form with TMA activations (GemmDenseWgmmaWideTmaSpec, the tuner's past M = 128 on sm_90a): M tails inside a 256-row box,
#: a K that ends inside a 64-deep stage, and formats with zero points, float codes and 8-bit codes.
TMA_SHAPES = ((1000, 1088), (136, 1000), (4096, 2048))


@pytest.mark.parametrize("m", [129, 300, 1024])
@pytest.mark.parametrize("fmt_id", ["s4_g128", "u4_zp_g128", "s8_channel", "mxfp4"])
def test_tma_activations_match_the_reference(fmt_id: str, m: int) -> None:
    from humming.kernels.gemm_dense_wgmma import GemmDenseWgmmaWideTmaSpec, wide_tile

    for act in (dtypes.bf16, dtypes.f16):
        for i, shape in enumerate(TMA_SHAPES):
            _run(fmt_id, act, m, shape, bias=i % 2 == 1, out=act, kernel=GemmDenseWgmmaWideTmaSpec,
                 tile=wide_tile(2, 1, 256, 5, producer=1))


#: The issue's largest M with N and K large enough that the activations' and the output's byte offsets pass 2^31
#: (65536 x 16512 and 65536 x 16448 bf16 elements: 2.16 GB each), so a 32-bit offset anywhere in a loader, a tensor
#: map or a store would land on the wrong rows. The reference (float64 of the dequantized weights) is computed for
#: sampled rows only, among them those on both sides of 2^31 bytes; every output is checked to have been written.
LARGE_M, LARGE_N, LARGE_K = 65536, 16448, 16512


def _large_m_rows(gen: torch.Generator) -> torch.Tensor:
    over_x = (1 << 31) // (LARGE_K * 2)  # the row of x that holds byte 2^31 (the rows after it lie past it)
    over_c = (1 << 31) // (LARGE_N * 2)  # the same for the output
    fixed = [0, 1, 255, 256, over_x - 1, over_x, over_x + 1, over_c - 1, over_c, over_c + 1, LARGE_M - 1]
    drawn = torch.randint(0, LARGE_M, (21,), device="cuda", generator=gen)
    return torch.cat([torch.tensor(fixed, device="cuda"), drawn]).unique()


@pytest.mark.parametrize("kernel", ["tuner", "mma.sync"])
def test_the_largest_m_with_operands_past_two_gigabytes(kernel: str) -> None:
    """The tuner's kernel for this GEMM on the device (on sm_90a the wide wgmma form with TMA activations) and the
    mma.sync 128 x 256 tile the tuner takes for compute-bound M on targets without wgmma whose blocks have >= 160 KiB
    of shared memory (sm_80, sm_100 ...: GemmDenseSpec, cp.async activations)."""
    from humming.kernels.gemm_dense import GemmDenseSpec, Tile
    from humming.ops import launch

    free, _ = torch.cuda.mem_get_info()
    if free < 12 << 30:
        pytest.skip(f"needs ~12 GiB of free device memory, {free >> 30} GiB free")
    fmt, act = FORMATS["s4_g128"], dtypes.bf16
    gen = torch.Generator(device="cuda")
    gen.seed()
    seed = gen.initial_seed()
    q = _quantize(fmt, LARGE_N, LARGE_K, gen)
    pw = packing.pack(q, act)
    x = torch.empty(LARGE_M, LARGE_K, device="cuda", dtype=torch.bfloat16)
    for r0 in range(0, LARGE_M, 8192):  # drawn in parts: a float32 draw of the whole would take 4.3 GB more
        x[r0:r0 + 8192] = torch.randn(min(8192, LARGE_M - r0), LARGE_K, device="cuda", generator=gen)
    b = torch.randn(LARGE_N, device="cuda", generator=gen).to(torch.bfloat16)
    c = torch.full((LARGE_M, LARGE_N), float("nan"), device="cuda", dtype=torch.bfloat16)
    problem = GemmProblem(LARGE_M, LARGE_N, LARGE_K, fmt, act, act, True)
    plan = (_chosen_plan(problem, kernel=GemmDenseSpec, tile=Tile(2, 4, 4, 1, 1, 64, 4, 8, 1))
            if kernel == "mma.sync" else None)
    plan = launch(c, x, pw.data, pw.scales, pw.zeros, pw.chscale, pw.gscale, b, fmt, LARGE_N, LARGE_K, plan)
    torch.cuda.synchronize()
    assert kernel == "tuner" or type(plan.spec) is GemmDenseSpec, plan.spec
    unwritten = int(torch.isnan(c).sum())
    assert unwritten == 0, f"seed {seed}: {unwritten} outputs never written by {plan.spec}"
    rows = _large_m_rows(gen)
    try:
        reference.check_gemm(c.index_select(0, rows), x.index_select(0, rows), q, b)
    except AssertionError as exc:
        raise AssertionError(f"{plan.spec} M={LARGE_M} seed {seed}, rows {rows.tolist()}: {exc}") from None
