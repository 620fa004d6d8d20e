"""Dense GEMM plans for NVIDIA targets: a tile from the tables by M (tile_rules.py), a shared-memory fit, and the
Stream-K grid rule.

``TUNER.plan(problem, caps, sm_count)`` returns a KernelPlan. Tiles come from the table that fits the target's
shared memory per block; the first row whose ``max_m`` covers M, whose format filter takes the format and whose
kernel's MMA instruction the target has (wgmma rows are skipped on targets without wgmma) wins. The grid is
data-parallel (one CTA per tile) when the tiles nearly fill one wave of resident CTAs or make many waves, else
Stream-K over (tile, k-step) iterations with one CTA per resident slot: a decode-sized GEMM (M <= 16: a few dozen
tiles) still streams weights on every SM, and a large one has no tail wave. Numbers in the tables were measured on
one H200 (benchmarks/NOTES-wna16.md).
"""

from __future__ import annotations

from dataclasses import replace

from humming.capabilities.model import DeviceCapabilities
from humming.core.compiler import nvrtc_version
from humming.core.packing import padded_shape
from humming.core.plan import KernelPlan
from humming.core.problem import GemmProblem
from humming.devices.nvidia.target import refuse_defective_nvrtc
from humming.devices.nvidia.tile_rules import (_INF, DP_MANY_WAVES, DP_WAVE_FILL, SHORT_SPLIT_STEPS,
                                               SHORT_STREAM_K_SHARERS, KiB, TileRule, table_for)
from humming.errors import InvalidInputError, UnsupportedError
from humming.kernels.dense_decode import DecodeParams
from humming.kernels.gemm_dense import ACTIVATIONS, GemmDenseSpec, Tile, groups_fit_stage


def _fit(spec: GemmDenseSpec, caps: DeviceCapabilities) -> GemmDenseSpec:
    """Shrink a tile until it fits the target's shared memory: stages down to 3, then 128-deep stages (wide
    codes: 8-bit weights double the stage), then to min_stages(), then fewer k-warps; then CTAs per SM."""
    limit = caps.limits.shared_memory_per_block_optin or 48 * KiB
    per_sm = caps.limits.shared_memory_per_sm or limit
    while spec.total_smem_bytes() > limit:  # static bytes too: the opt-in limit caps both
        if spec.stages > 3:
            spec = replace(spec, stages=spec.stages - 1)
        elif spec.bk > 128:
            spec = replace(spec, bk=spec.bk // 2, stages=4, warp_k=min(spec.warp_k, spec.bk // 32))
        elif spec.stages > spec.min_stages():
            spec = replace(spec, stages=spec.stages - 1)
        elif spec.warp_k > 1:  # the k-warp reduction buffer is the next largest part
            spec = replace(spec, warp_k=spec.warp_k // 2)
        else:
            break
    while spec.min_blocks > 1 and spec.min_blocks * (spec.total_smem_bytes() + 1 * KiB) > per_sm:
        spec = replace(spec, min_blocks=spec.min_blocks - 1)
    return spec


def _loaded_nvrtc() -> tuple[int, int] | None:
    """The NVRTC version loaded here, or None where none loads: planning alone needs no compiler, and compiling
    will say what is missing."""
    try:
        return nvrtc_version()
    except Exception:  # noqa: BLE001 - no usable NVRTC: the compile step reports it
        return None


def check_compiler(caps: DeviceCapabilities) -> None:
    """UnsupportedError, before anything is compiled or launched, when the NVRTC loaded here miscompiles the dense
    kernels for ``caps``' target (target.CP_ASYNC_MISCOMPILES; the toolchain refuses the same at compile time);
    nothing when no NVRTC loads."""
    version = _loaded_nvrtc()
    if version is not None:
        refuse_defective_nvrtc(caps.target, version)


def compiler_builds(rule: TileRule) -> bool:
    """Whether the NVRTC loaded here is new enough for the rule's kernel (True where no NVRTC loads)."""
    if rule.min_nvrtc is None:
        return True
    version = _loaded_nvrtc()
    return version is None or version >= rule.min_nvrtc


def split_count(tiles: int, k_iters: int, resident: int) -> int:
    """The most even K splits (dividing k_iters) with tiles x splits <= resident, if that fills DP_WAVE_FILL of
    the resident CTAs; else 1."""
    best = 1
    for s in range(2, k_iters + 1):
        if tiles * s > resident:
            break
        if k_iters % s == 0:
            best = s
    return best if best > 1 and tiles * best >= DP_WAVE_FILL * resident else 1


def _no_rule(problem: GemmProblem, caps: DeviceCapabilities, candidates: list[TileRule],
             fits: list[TileRule]) -> UnsupportedError:
    """Why no rule of the target's table serves ``problem``: the requirements the kernels of its ``candidates`` (the
    rules for its M and format) miss (bf16 MMAs on sm_75, say) and what would work instead, or the NVRTC version the
    ``fits`` (the candidates whose requirements hold) need."""
    if fits:  # every fitting kernel needs a newer NVRTC than the one loaded here
        need = ".".join(map(str, max(r.min_nvrtc or () for r in fits)))
        return UnsupportedError(f"{problem.describe()}: on {caps.target.arch} every kernel that serves it needs NVRTC "
                                f">= {need}", missing=[f"NVRTC >= {need}"],
                                alternatives=["pip install -U nvidia-cuda-nvrtc"])
    failed = {q.what: q for r in candidates for q in r.kernel.target_requirements(problem.activation)
              if not q.check(caps)}
    alternatives = dict.fromkeys(a for q in failed.values() for a in q.alternatives)
    return UnsupportedError(f"{problem.describe()}: no dense kernel runs it on {caps.target.arch}",
                            missing=list(failed) or ["a tile rule for this problem"], alternatives=list(alternatives))


class DenseTuner:
    """The NVIDIA dense WnA16 tuner (``humming_tuner`` hook object)."""

    def plan(self, problem: GemmProblem, caps: DeviceCapabilities, sm_count: int, *,
             tile: Tile | None = None, schedule: str | None = None,
             kernel: type[GemmDenseSpec] = GemmDenseSpec, splits: int | None = None) -> KernelPlan:
        """Choose the kernel and grid; ``tile``/``schedule``/``kernel`` override the choice, and ``splits`` the K
        split of ``schedule="split-k"`` (at most the CTAs that run at once where the fix-up waits for the sharers: decode
        tiles and the wgmma form's; the last-arrival form may launch more, benchmarks and tests)."""
        if problem.kind != "dense":
            raise UnsupportedError(f"{problem.describe()}: the dense tuner plans dense GEMMs only",
                                   missing=["an MoE kernel"])
        if problem.activation not in ACTIVATIONS:
            raise UnsupportedError(f"{problem.describe()}: humming's dense kernels take f16 / bf16 activations "
                                   f"(WnA16); no kernel for W{problem.weight.dtype.bits}A{problem.activation.bits} yet",
                                   missing=[f"a dense kernel for {problem.activation} activations"],
                                   alternatives=["f16 or bf16 activations (the WnA16 kernels)"])
        if problem.out not in ACTIVATIONS:
            raise UnsupportedError(f"{problem.describe()}: humming's dense kernels write f16 / bf16 outputs",
                                   missing=[f"a dense kernel with {problem.out} output"],
                                   alternatives=["an f16 or bf16 output"])
        problem.check_dense_shape()  # what gemm and pack refuse, refused at every M
        check_compiler(caps)
        decode = DecodeParams.of(problem.weight)
        reasons: list[str] = []
        if by_rule := tile is None:
            act = problem.activation
            candidates = [r for r in table_for(caps)
                          if problem.m <= r.max_m and (r.when is None or r.when(decode, act))]
            fits = [r for r in candidates if all(q.check(caps) for q in r.kernel.target_requirements(act))]
            rule = next((r for r in fits if compiler_builds(r)), None)
            if rule is None:
                raise _no_rule(problem, caps, candidates, fits)
            if rule is not fits[0]:
                reasons.append(f"{fits[0].why}: skipped, NVRTC {'.'.join(map(str, nvrtc_version()))} miscompiles it "
                               f"(needs {'.'.join(map(str, fits[0].min_nvrtc or ()))}: pip install -U "
                               "nvidia-cuda-nvrtc)")
            tile, kernel, preferred, tail_fill = rule.tile, rule.kernel, rule.schedule, rule.dp_tail_fill
            sk_from = rule.stream_k_from
            reasons.append(f"M={problem.m} <= {rule.max_m if rule.max_m < _INF else 'any'}: {rule.why}")
        else:
            reasons.append("tile given by the caller")
            preferred = tail_fill = sk_from = None
        if tile.max_m is not None and problem.m > tile.max_m:
            raise InvalidInputError(f"{tile.describe()}: serves M <= {tile.max_m}, not M={problem.m}")
        n_pad, k_pad = padded_shape(problem.n, problem.k, problem.weight)
        # Shallower stages until bk divides K_pad (a multiple of 128) and fits the groups (64 fits 16 x 2^i, 64 x j k)
        while (k_pad % tile.bk or not groups_fit_stage(decode, tile.bk)) and tile.bk > 64:
            tile = replace(tile, bk=tile.bk // 2, warp_k=min(tile.warp_k, tile.bk // 32))
            reasons.append(f"K_pad={k_pad}, groups of {decode.gs} / {decode.zgs} k: bk={tile.bk}")
        if k_pad % tile.bk:
            raise InvalidInputError(f"tile bk={tile.bk} does not divide the packed K={k_pad}")
        if not groups_fit_stage(decode, tile.bk):
            raise UnsupportedError(f"{problem.describe()}: groups of {decode.gs or decode.zgs} k fit no stage depth",
                                   missing=["a stage depth the group divides or is a multiple of"],
                                   alternatives=["groups of 16, 32 or a multiple of 64 k"])
        # Built for any row (an output view's odd row stride too), unless that costs the form code (the wgmma N = 16
        # form's element stores) and N is even: ops.launch then checks the row stride (check_output).
        spec = kernel.build(caps.target, problem.activation, problem.out, decode, tile)
        if spec.odd_n_changes_code() and problem.n % 2 == 0:
            spec = replace(spec, odd_n=0)
        spec = _fit(spec, caps)
        if by_rule:  # what compile refuses (bf16 output on sm_75, unknown smem limit); callers may plan to emulate
            spec.check_supported(caps)
        if spec.tile != tile:
            reasons.append(f"shared memory: {spec.tile.describe()}, {spec.min_blocks} CTA(s) per SM fit this target")
        t = spec.tile
        m_tiles = -(-problem.m // t.block_m)
        n_tiles = -(-n_pad // t.block_n)
        k_iters = k_pad // t.bk
        tiles = m_tiles * n_tiles
        resident = max(sm_count, 1) * spec.min_blocks
        if splits is not None:
            if schedule != "split-k" or splits < 2 or k_iters % splits:
                raise InvalidInputError(f"splits={splits}: a split-k schedule of 2 or more parts dividing the "
                                        f"{k_iters} k-steps of a tile")
        else:
            splits = split_count(tiles, k_iters, resident)
            if splits > 1 and k_iters // splits < SHORT_SPLIT_STEPS and spec.waits_for_sharers():
                fewer = split_count(tiles, k_iters, max(sm_count, 1))
                if fewer > 1:
                    reasons.append(f"a split of {splits} leaves {k_iters // splits} k-steps a CTA (< "
                                   f"{SHORT_SPLIT_STEPS}): split over one CTA an SM, whose tiles have fewer sharers "
                                   "and finish closer to the other CTAs (measured)")
                    splits = fewer
        by_tuner = schedule is None  # the short-split rules below apply only to the tuner's own choice
        if schedule is None and preferred is not None and tiles <= resident:
            schedule = preferred
            reasons.append(f"{tiles} tiles on {resident} resident CTAs: {preferred}, measured best for this tile")
        if schedule is None and sk_from is not None and DP_WAVE_FILL * resident <= tiles < resident:
            per_sm = problem.weight_bytes() / max(sm_count, 1)
            if per_sm >= sk_from:
                schedule = "stream-k"
                reasons.append(f"{tiles} tiles on {resident} resident CTAs, {per_sm / KiB:.0f} KiB of weights an SM "
                               f"(>= {sk_from // KiB}): Stream-K's tile fix-up costs less than the uneven SMs of one "
                               "CTA a tile (measured)")
        by_tail_fill = False
        if schedule is None and tail_fill is not None and tiles > resident:
            waves = -(-tiles // resident)
            if tiles >= tail_fill * waves * resident:
                schedule, by_tail_fill = "data-parallel", True
                reasons.append(f"{tiles} tiles fill {tiles / (waves * resident):.0%} of {waves} waves of {resident} "
                               f"resident CTAs (>= {tail_fill:.0%}): one CTA a tile, measured best for this tile")
        if schedule is None:
            # Measured on the H200 (2026-12-02): one CTA a tile won when the tiles nearly filled one wave (112 tiles
            # on 132 SMs, 16 k-steps each); Stream-K on one CTA per resident slot won above it (M = 1024: 896 tiles,
            # 12% over one CTA a tile: no tail wave, no re-launch). Below one wave an even split of every tile's K keeps
            # the CTAs' k ranges aligned (Stream-K's arbitrary ranges cost 14% without the arithmetic: 44 / 38.7 us).
            if DP_WAVE_FILL * resident <= tiles <= resident or tiles >= DP_MANY_WAVES * resident:
                schedule = "data-parallel"
            elif splits > 1:
                schedule = "split-k"
            else:
                schedule = "stream-k"
        if spec.cluster_n > 1 and (schedule != "data-parallel" or n_tiles % spec.cluster_n):
            raise InvalidInputError(f"{spec.describe()}: clusters of {spec.cluster_n} CTAs need one CTA a tile "
                                    f"(schedule='data-parallel') and a multiple of {spec.cluster_n} n tiles (here "
                                    f"{schedule}, {n_tiles} n tiles of {t.block_n} columns)")
        if schedule == "split-k":
            if splits < 2:
                raise InvalidInputError(f"schedule='split-k': {tiles} tiles of {k_iters} k-steps have no even split "
                                        f"that fills {DP_WAVE_FILL:.0%} of {resident} resident CTAs")
            # The Stream-K kernel with tiles x splits CTAs: CTA g's range [g T/G, (g+1) T/G) is exactly 1/splits
            # of one tile (T = tiles x k_iters), so every CTA has one partial tile and no CTA spans two.
            grid = tiles * splits
            reasons.append(f"{tiles} tiles on {resident} resident CTAs: K split {splits} ways, {grid} CTAs of "
                           f"{k_iters // splits} k-steps")
            ws = 2 * grid * t.block_m * t.block_n
        elif schedule == "data-parallel":
            grid = tiles
            if not by_tail_fill:  # that branch said why already
                reasons.append(f"{tiles} tiles fill {tiles / resident:.0%} of one wave of {resident} resident CTAs "
                               f"({sm_count} SMs x {spec.min_blocks}): one CTA a tile" if tiles <= resident else
                               f"{tiles} tiles are {tiles / resident:.1f} waves of {resident} resident CTAs: one CTA "
                               "a tile (the tail wave is a small share)")
            ws = 0
        elif schedule == "stream-k":
            grid = min(resident, tiles * k_iters)
            if (by_tuner and spec.waits_for_sharers() and sm_count < grid
                    and tiles * k_iters < SHORT_SPLIT_STEPS * grid and grid > SHORT_STREAM_K_SHARERS * tiles):
                reasons.append(f"Stream-K over {grid} CTAs leaves {tiles * k_iters / grid:.1f} k-steps a CTA (< "
                               f"{SHORT_SPLIT_STEPS}) and {grid / tiles:.1f} CTAs a tile (> {SHORT_STREAM_K_SHARERS}): "
                               "over one CTA an SM instead, whose tiles have fewer sharers (measured)")
                grid = min(max(sm_count, 1), tiles * k_iters)
            reasons.append(f"{tiles} tiles on {resident} resident CTAs: Stream-K, {grid} CTAs share "
                           f"{tiles * k_iters} k-steps ({tiles * k_iters / grid:.1f} each)")
            ws = 2 * grid * t.block_m * t.block_n
        else:
            raise InvalidInputError(f"schedule={schedule!r}; allowed: data-parallel, split-k, stream-k")
        waits = ws > 0 and spec.waits_for_sharers()
        spreads = ws > 0 and spec.spreads_split_tiles()
        if (waits or spreads) and grid > resident:
            # A decode tile's first CTA waits for its sharers' partials, and a spread tile's finishing CTAs for the
            # whole count (epilogue/finish.cuh): all must run at once.
            raise InvalidInputError(f"schedule={schedule!r}: {grid} CTAs share tiles whose fix-up waits for every "
                                    f"sharer, more than the {resident} that run at once ({sm_count} SMs x "
                                    f"{spec.min_blocks}); use fewer splits")
        if spreads:
            reasons.append("split tiles finished by every sharer whose CTA ends on them, each a share of the columns "
                           "(a cooperative launch: they wait for the tile's count)")
        # Tile counters only for the counter forms: the decode form's first CTA waits on the slots.
        counters = tiles if ws and not waits else 0
        return KernelPlan(problem, spec, grid, spec.cta_threads(), spec.smem_bytes(), ws, counters, schedule,
                          tuple(reasons), cooperative=waits or spreads, sentinel=waits)

    @staticmethod
    def grid_sizes(plan: KernelPlan) -> tuple[int, int, int]:
        """(m_tiles, n_tiles, k_pad) the launch passes to the kernel."""
        p, t = plan.problem, plan.spec.tile  # type: ignore[attr-defined]
        n_pad, k_pad = padded_shape(p.n, p.k, p.weight)
        return -(-p.m // t.block_m), -(-n_pad // t.block_n), k_pad


TUNER = DenseTuner()
