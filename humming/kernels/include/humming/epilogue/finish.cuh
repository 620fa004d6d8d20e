// humming/epilogue/finish.cuh -- finishing a tile: k-warp reduction, then its store or its split-tile fix-up.
//
// A tile covered by several CTAs (Stream-K, split-K) is reduced from the sharers' f32 partials in the workspace:
// decode tiles by the CTA holding its first k-step, without fences or counters; the wgmma form's swapped tiles by all
// sharers whose CTA ends there, each a share of the columns; other larger ones by the last to arrive.
// GemmDenseSpec.waits_for_sharers / spreads_split_tiles (humming/kernels/gemm_dense.py) mirror which form a tile takes,
// and the cubin exports the latter (kSpreadsSplitTiles) for the launcher to check.
#pragma once
#include <humming/arch/memory.cuh>
#include <humming/arch/types.cuh>
#include <humming/epilogue/quads.cuh>
#include <humming/epilogue/reduce.cuh>
#include <humming/epilogue/store.cuh>
#include <humming/mma/swapped.cuh>
#include <humming/scheduler/stream_k.cuh>

// Timing experiments only (benchmarks/device_batch.sh sk-bisect, with HM_ABLATE 5): how much of finish_tile runs.
// -1: the accumulators summed, nothing stored (the only one of these that keeps the wgmma kernels' MMAs); -2: the
// same, decided at run time with the whole finish compiled in (so the k-loop is the real kernel's); 0: nothing; 1:
// the k-warp reduction; 2: and the whole tile's store (decode tiles split over CTAs: the partial's write); 3: all
// (the real kernel).
#ifndef HM_FINISH_STEPS
#define HM_FINISH_STEPS 3
#endif
// The part of the finish compiled in: all of it for the negative (run-time) values.
#define HM_FINISH_COMPILED (HM_FINISH_STEPS < 0 ? 3 : HM_FINISH_STEPS)
// The same for the spread form (finish_spread), skipped at run time (timing_skip) so that every build compiles
// the whole finish and keeps the real kernel's k-loop: 0: nothing; 1: the partials' writes; 2: and the counter adds
// (counters left dirty: the last variant of a process only); 3: and the participants' wait and the counter's reset;
// 4 or 5: all (the real kernel: the other sharers' partials read and the tile stored).
#ifndef HM_SPREAD_STEPS
#define HM_SPREAD_STEPS 5
#endif
#define HM_SPREAD_SKIP(step) (HM_SPREAD_STEPS < (step) && epilogue::timing_skip(p))
// The same for the counter form (finish_shared_tile_by_last, tiles larger than decode ones): 0: the partial's write;
// 1: and the counter; 2: and the last arrival's reads of the slots; 3: all (the real kernel).
#ifndef HM_FIXUP_STEPS
#define HM_FIXUP_STEPS 3
#endif
namespace humming {
namespace epilogue {

// True for every real problem (M < 2^30), but only known at run time: the timing switches above skip work with it,
// so that the skipped code stays compiled in and the k-loop keeps the registers it costs.
template <class Args>
HM_DEVICE bool timing_skip(const Args& p) {
  return p.m < (1 << 30);
}

// A workspace word no partial holds (a NaN whose payload arithmetic never produces): "not written yet".
constexpr u32 kSentinel = 0xFFFFFFFFu;

// A partial of the workspace protocol below never holds kSentinel: such a word (no arithmetic result; the
// tensor cores and FFMA give the canonical NaN 0x7FFFFFFF) is written as that canonical NaN.
HM_DEVICE float not_sentinel(float x) {
  return __float_as_uint(x) == kSentinel ? __uint_as_float(0x7FFFFFFFu) : x;
}

HM_DEVICE float4 no_sentinel(const float (&c)[4]) {
  return make_float4(not_sentinel(c[0]), not_sentinel(c[1]), not_sentinel(c[2]), not_sentinel(c[3]));
}

HM_DEVICE float4 sentinel4() {
  const float s = __uint_as_float(kSentinel);
  return make_float4(s, s, s, s);
}

HM_DEVICE bool has_sentinel(const float4& v) {
  return __float_as_uint(v.x) == kSentinel || __float_as_uint(v.y) == kSentinel ||
         __float_as_uint(v.z) == kSentinel || __float_as_uint(v.w) == kSentinel;
}

// A tile split over CTAs, decode-sized (a lane's quads fit registers at once, R <= 8): a segment without the tile's
// first k-step (always its CTA's first segment) writes its f32 partial to workspace slot 2g and goes on; the segment
// with the first k-step (always its CTA's last) adds the later sharers' slots to its own accumulators in CTA order,
// reading each word until it is no longer kSentinel, stores the tile and writes kSentinel back. Workspace words are
// kSentinel between launches and each slot is written at most once a launch, so a word that is not the sentinel is
// the sharer's finished value: no fence, counter or atomic, where the counter protocol below costs two round trips to
// L2 at the end of a launch that all CTAs finish together. The wait needs every sharer resident: the tuner's plans
// for these tiles are cooperative launches, which the driver refuses rather than hang when they do not fit.
template <class Cfg, class Args, class Acc>
HM_DEVICE void finish_shared_tile_by_first(const Args& p, const scheduler::StreamK& sk, char* staging, Acc& acc,
                                           int tile, int mt, int nt, long long seg_begin, int wm, int wn, int lane,
                                           float fix) {
  constexpr int R = Cfg::kFragM * Cfg::kFragN * 8;
  static_assert(R <= 8, "a lane's quads of every sharer in registers at once");
  constexpr long long kSlot = Cfg::kBM * Cfg::kBN / 4;  // float4s a slot
  const long long t0 = static_cast<long long>(tile) * sk.k_iters;
  float4* ws = reinterpret_cast<float4*>(p.ws) + (wm * Cfg::kWarpN + wn) * R * 32 + lane;
  // Only quads with a row inside M travel through the workspace: at M = 1, 4 lanes of 32 in an m16 fragment.
  if (seg_begin != t0) {
    float4* mine = ws + 2 * blockIdx.x * kSlot;
    for_each_quad(acc, [&](float (&c)[4], int r) {
      if (quad_row<Cfg>(acc, r, mt, wm, lane) < p.m) mine[r * 32] = no_sentinel(c);
    });
    return;
  }
  if constexpr (HM_FINISH_COMPILED < 3) return;
  const int g_hi = sk.owner(t0 + sk.k_iters - 1);
  for (int gg = static_cast<int>(blockIdx.x) + 1; gg <= g_hi; ++gg) {
    float4* from = ws + 2 * gg * kSlot;  // the sharer's first segment: its slot 2g
    float4 v[R];
    bool pending;
    do {  // all loads together (one round trip when the sharer is done), again until no word is the sentinel
      pending = false;
      for_each_quad(acc, [&](float (&)[4], int r) {
        v[r] = quad_row<Cfg>(acc, r, mt, wm, lane) < p.m ? arch::ld_relaxed_f4(from + r * 32) : float4{};
        pending |= has_sentinel(v[r]);
      });
    } while (pending);
    for_each_quad(acc, [&](float (&c)[4], int r) {
      if (quad_row<Cfg>(acc, r, mt, wm, lane) < p.m) {
        add4(c, v[r]);
        from[r * 32] = sentinel4();
      }
    });
  }
  store_tile<Cfg>(p, acc, staging, mt, nt, wm, wn, lane, fix);
}

// The counter forms' first step: this CTA's partial of its segment starting at seg_begin goes to its slot, 2g for
// the CTA's first segment, else 2g + 1 (StreamK::slot's rule), only the quads with a row inside M.
template <class Cfg, class Args, class Acc>
HM_DEVICE void write_own_slot(const Args& p, const scheduler::StreamK& sk, Acc& acc, long long seg_begin, int wmn,
                              int mt, int wm, int lane) {
  constexpr int R = Cfg::kFragM * Cfg::kFragN * 8;
  constexpr long long kSlot = Cfg::kBM * Cfg::kBN / 4;
  const int g = blockIdx.x;
  float4* ws = reinterpret_cast<float4*>(p.ws) + (seg_begin == sk.begin(g) ? 2 * g : 2 * g + 1) * kSlot;
  for_each_quad(acc, [&](float (&c)[4], int r) {
    if (quad_row<Cfg>(acc, r, mt, wm, lane) < p.m) ws[(wmn * R + r) * 32 + lane] = make_float4(c[0], c[1], c[2], c[3]);
  });
}

// A tile split over CTAs, larger tiles (whose quads do not fit registers twice): each sharer writes its partial to its
// slot (2g for its first segment, 2g + 1 for its last) and adds its k-step count to the tile's counter (one thread,
// release and acquire); the CTA that completes the count adds all slots in CTA order, stores the tile and resets the
// counter. No CTA waits for another, so these launches need no co-residency; their workspace is not the decode
// form's (humming/ops.py: a plan that is not cooperative gets one of any content).
template <class Cfg, class Args, class Acc>
HM_DEVICE void finish_shared_tile_by_last(const Args& p, const scheduler::StreamK& sk, char* staging, Acc& acc,
                                          int tile, int mt, int nt, long long seg_begin, long long seg_end, int wm,
                                          int wn, int wk, int lane, float fix) {
  const int wmn = wm * Cfg::kWarpN + wn;
  const long long t0 = static_cast<long long>(tile) * sk.k_iters;
  __shared__ int s_last;
  if (wk == 0) write_own_slot<Cfg>(p, sk, acc, seg_begin, wmn, mt, wm, lane);
  // The barrier orders the partial's writes before thread 0's release add (arch::atomic_add_acq_rel_gpu); after
  // the second, the whole CTA sees what the earlier adds released.
  Cfg::sync_compute();
  if constexpr (HM_FIXUP_STEPS < 1) return;
  if (threadIdx.x == 0) {
    const int add = static_cast<int>(seg_end - seg_begin);
    s_last = arch::atomic_add_acq_rel_gpu(p.counters + tile, add) + add == sk.k_iters;
  }
  Cfg::sync_compute();
  if (!s_last || HM_FIXUP_STEPS < 2) {
    if (threadIdx.x == 0 && s_last) p.counters[tile] = 0;  // timing builds: the next launch starts from zero
    return;
  }
  if (wk == 0) {
    constexpr int R = Cfg::kFragM * Cfg::kFragN * 8;
    constexpr long long kSlot = Cfg::kBM * Cfg::kBN / 4;
    acc.zero();
    const int g_lo = sk.owner(t0), g_hi = sk.owner(t0 + sk.k_iters - 1);
    const float4* ws = reinterpret_cast<const float4*>(p.ws) + wmn * R * 32 + lane;
    for (int gg = g_lo; gg <= g_hi; ++gg) {
      const float4* from = ws + sk.slot(gg, t0) * kSlot;
      for_each_quad(acc, [&](float (&c)[4], int r) {
        if (quad_row<Cfg>(acc, r, mt, wm, lane) < p.m) add4(c, arch::ldcg_f4(from + r * 32));
      });
    }
    if constexpr (HM_FIXUP_STEPS < 3) {
      float sum = 0.0f;  // keeps the reads (timing builds only)
      for_each_quad(acc, [&](float (&c)[4], int) { sum += c[0] + c[1] + c[2] + c[3]; });
      if (sum == 12345.0f) p.counters[tile] = 1;
    } else {
      store_tile<Cfg>(p, acc, staging, mt, nt, wm, wn, lane, fix);
    }
  }
  if (threadIdx.x == 0) p.counters[tile] = 0;
}

// Whether a split tile of accumulators Acc is finished by finish_spread: the swapped accumulators that reach
// finish_tile unconverted (the wgmma form's) when a lane's quads do not fit registers twice (R > 8). Such plans wait
// for one another and must be launched cooperatively (GemmDenseSpec.spreads_split_tiles).
template <class Cfg, class Acc>
struct SpreadsSplitTiles {
  static constexpr bool value = false;
};
template <class Cfg, int FN, int NB>
struct SpreadsSplitTiles<Cfg, mma::SwapAccumulators<FN, NB>> {
  static constexpr bool value = Cfg::kFragM * Cfg::kFragN * 8 > 8;
};

// The counter form with the reduction spread over the tile's sharers. Every sharer adds its k-steps to the tile's
// counter as in finish_shared_tile_by_last; those for which this segment is their CTA's last (the owner of the
// tile's first k-step, always, and interior ones: np in all) wait for the count to complete, and participant jp
// reduces and stores the column groups u = (warp, block, m16 fragment) with u % np == jp: its own partial, kept in
// registers, plus the other sharers' slots in CTA order (deterministic). Slots hold what other CTAs reduce: all of a
// passing sharer's partial, a participant's other groups. One SM takes slots in at ~40 GB/s (NOTES-wna16 run 15):
// the last arrival alone read ~8 slots of 128 KB at 8192 x 28672, M = 64, and ran 25 us past the others; spread,
// the tail is gone (run 16: 89.7 -> 73.7 us there). The last of the np departures resets the counter. Sharers
// whose segment is their first (and not last) never wait, so a cooperative launch (all CTAs resident) cannot
// deadlock.
// The tile's stores go through each warp's kStagedGroupBytes<Cfg::kStagedBlocks> of `staging`
// (store_swapped_group_staged).
template <class Cfg, class Args, int FN, int NB>
HM_DEVICE void finish_spread(const Args& p, const scheduler::StreamK& sk, char* staging,
                             mma::SwapAccumulators<FN, NB>& acc, int tile, int mt, int nt, long long seg_begin,
                             long long seg_end, int wm, int wn, int wk, int lane, float fix) {
  const int wmn = wm * Cfg::kWarpN + wn;
  const long long t0 = static_cast<long long>(tile) * sk.k_iters;
  const int g = blockIdx.x;
  constexpr int R = FN * 4 * NB;
  constexpr long long kSlot = Cfg::kBM * Cfg::kBN / 4;
  // A whole tile (this CTA ran all its k-steps) is stored by the same loop as one participant with no sharers: the
  // unrolled store is compiled once, not again in store_tile (26-32% of a W4A16 layer's swapped wgmma kernels' SASS).
  const bool whole = seg_begin == t0 && seg_end == t0 + sk.k_iters;
  int g_lo = g, g_hi = g, np = 1, jp = 0, lo_slot = 0;
  if (!whole) {
    const int add = static_cast<int>(seg_end - seg_begin);
    if (HM_SPREAD_SKIP(1)) return;
    if (seg_end != sk.end(g)) {  // this CTA goes on to its next tile; the participants finish this one
      if constexpr (Cfg::kWarpK == 1) {
        write_own_slot<Cfg>(p, sk, acc, seg_begin, wmn, mt, wm, lane);
      } else {  // each k-warpgroup its own fragments
        float4* const to = reinterpret_cast<float4*>(p.ws) + sk.slot(g, t0) * kSlot + wmn * R * 32 + lane;
#pragma unroll
        for (int fn = 0; fn < FN; ++fn)
#pragma unroll
          for (int f = 0; f < 4; ++f) {
            if (!owns_fragment<Cfg>(f, wk)) continue;
#pragma unroll
            for (int h = 0; h < NB; ++h) {
              const int r = (fn * 4 + f) * NB + h;
              const float(&c)[4] = acc.d[fn][f][h];
              if (quad_row<Cfg>(acc, r, mt, wm, lane) < p.m) to[r * 32] = make_float4(c[0], c[1], c[2], c[3]);
            }
          }
      }
      Cfg::sync_compute();  // the slot's writes before thread 0's release add
      if (threadIdx.x == 0 && !HM_SPREAD_SKIP(2)) arch::atomic_add_acq_rel_gpu(p.counters + tile, add);
      return;
    }
    g_lo = sk.owner(t0);
    g_hi = sk.owner(t0 + sk.k_iters - 1);
    const int g_p = sk.end(g_hi) <= t0 + sk.k_iters ? g_hi : g_hi - 1;  // the last participant
    np = g_p - g_lo + 1;
    jp = g - g_lo;
    // A participant's own column groups stay in its registers: only the other participants' go through its slot,
    // and it reads the other sharers' slots alone (run 16: 1.5-3.8 us faster at M = 64 than all through the slot).
    // Not write_own_slot with a per-quad filter: that form compiles to more spills (48 / 116 bytes against 36 / 76)
    // and other SASS than the kernel measured.
    float4* const mine = reinterpret_cast<float4*>(p.ws) + sk.slot(g, t0) * kSlot + wmn * R * 32 + lane;
#pragma unroll
    for (int fn = 0; fn < FN; ++fn)
#pragma unroll
      for (int f = 0; f < 4; ++f) {
        if (((wmn * FN + fn) * 4 + f) % np == jp || !owns_fragment<Cfg>(f, wk)) continue;  // warp-uniform
#pragma unroll
        for (int h = 0; h < NB; ++h) {
          const int r = (fn * 4 + f) * NB + h;
          const float(&c)[4] = acc.d[fn][f][h];
          if (quad_row<Cfg>(acc, r, mt, wm, lane) < p.m) mine[r * 32] = make_float4(c[0], c[1], c[2], c[3]);
        }
      }
    Cfg::sync_compute();  // the slot's writes before thread 0's release add
    if (HM_SPREAD_SKIP(2)) return;
    if (threadIdx.x == 0) {
      arch::atomic_add_acq_rel_gpu(p.counters + tile, add);
      if (!HM_SPREAD_SKIP(3)) {
        arch::wait_count_acquire_gpu(p.counters + tile, sk.k_iters);
        if (atomicAdd(p.counters + tile, 1) == sk.k_iters + np - 1) p.counters[tile] = 0;  // the last departure
      }
    }
    Cfg::sync_compute();  // every thread sees the slots thread 0's acquire made visible
    if (HM_SPREAD_SKIP(4)) return;
    // StreamK::slot without its range arithmetic (a double multiply and conversion each call, which the loop below
    // paid a slot): every sharer after g_lo starts its range in this tile (slot 2gg); g_lo's holds t0 or began
    // earlier.
    lo_slot = sk.slot(g_lo, t0);
  }
  // A column group at a time: the accumulators of the groups this CTA does not store are dead after their writes
  // (one loop over all quads with a per-quad test kept every one live and spilled 120 bytes).
  const float4* ws = reinterpret_cast<const float4*>(p.ws) + wmn * R * 32 + lane;
  const float gs = (p.gscale != nullptr ? __ldg(p.gscale) : 1.0f) * fix;
  const int row0 = mt * Cfg::kBM + wm * Cfg::kFragM * 16;
  const u32 buf = warp_staging<Cfg>(staging, Cfg::kWarpK > 1 ? wk * Cfg::kWarpM * Cfg::kWarpN + wmn : wmn);
#pragma unroll
  for (int fn = 0; fn < FN; ++fn)
#pragma unroll
    for (int f = 0; f < 4; ++f) {
      if (((wmn * FN + fn) * 4 + f) % np != jp || !owns_fragment<Cfg>(f, wk)) continue;  // warp-uniform
      float(&d)[NB][4] = acc.d[fn][f];  // this CTA's own partial
      // The other sharers' slots by index, without a branch, two at a time: both slots' quads are loaded before
      // either is added (16 loads in flight; run 16: 1-3 us faster than one slot at a time, though it spills 36
      // bytes outside the k-loop); the sums in a fixed order: its own partial, then the others in CTA order.
      const int n_read = g_hi - g_lo;
      const auto slot_at = [&](int i) {
        const int gg = g_lo + i + (i >= jp ? 1 : 0);
        return ws + (gg == g_lo ? lo_slot : 2 * gg) * kSlot;
      };
      int i = 0;
      for (; i + 1 < n_read; i += 2) {
        const float4* a = slot_at(i);
        const float4* b = slot_at(i + 1);
        float4 va[NB], vb[NB];
#pragma unroll
        for (int h = 0; h < NB; ++h) {
          const int r = (fn * 4 + f) * NB + h;
          const bool in = quad_row<Cfg>(acc, r, mt, wm, lane) < p.m;
          va[h] = in ? arch::ldcg_f4(a + r * 32) : float4{};
          vb[h] = in ? arch::ldcg_f4(b + r * 32) : float4{};
        }
#pragma unroll
        for (int h = 0; h < NB; ++h) {
          add4(d[h], va[h]);
          add4(d[h], vb[h]);
        }
      }
      for (; i < n_read; ++i) {
        const float4* from = slot_at(i);
#pragma unroll
        for (int h = 0; h < NB; ++h) {
          const int r = (fn * 4 + f) * NB + h;
          if (quad_row<Cfg>(acc, r, mt, wm, lane) < p.m) add4(d[h], arch::ldcg_f4(from + r * 32));
        }
      }
      store_swapped_group_staged<Cfg, Cfg::kStagedBlocks>(p, d, nt * Cfg::kBN + (wn * FN + fn) * 64 + 16 * f, row0, gs,
                                                          buf, lane);
    }
}

// Finish this CTA's segment [seg_begin, seg_end) of `tile`: the k-warp reduction, then the tile's store (a whole
// tile) or its share of a split tile.
template <class Cfg, class Args, class Acc>
HM_DEVICE void finish_tile(const Args& p, const scheduler::StreamK& sk, char* red_smem, Acc& acc, int tile, int mt,
                           int nt, long long seg_begin, long long seg_end, int wm, int wn, int wk, int lane,
                           float fix) {
  constexpr int R = Cfg::kFragM * Cfg::kFragN * 8;
  // timing only: the accumulators summed (their MMAs kept), nothing stored; -2: the same at run time with the real
  // finish still compiled in (timing_skip), so that the k-loop keeps the registers the finish costs it
  if constexpr (HM_FINISH_STEPS == -1 || HM_FINISH_STEPS == -2) {
    if (HM_FINISH_STEPS == -1 || timing_skip(p)) {
      float sum = 0.0f;
      for_each_quad(acc, [&](float(&c)[4], int) { sum += c[0] + c[1] + c[2] + c[3]; });
      if (p.m < 0) reinterpret_cast<float*>(p.ws)[threadIdx.x] = sum;  // never (M >= 1): ptxas cannot drop the sum
      return;
    }
  }
  if constexpr (HM_FINISH_COMPILED < 1) return;
  if constexpr (SpreadsSplitTiles<Cfg, Acc>::value) {  // whole tiles too (finish_spread says why)
    if constexpr (Cfg::kWarpK > 1) reduce_k_groups<Cfg>(red_smem, acc, wm * Cfg::kWarpN + wn, wk, lane);
    if constexpr (HM_FINISH_COMPILED < 2) return;
    finish_spread<Cfg>(p, sk, red_smem, acc, tile, mt, nt, seg_begin, seg_end, wm, wn, wk, lane, fix);
    return;
  }
  if constexpr (Cfg::kWarpK > 1) reduce_k_warps<Cfg>(red_smem, acc, wm * Cfg::kWarpN + wn, wk, lane);
  if constexpr (HM_FINISH_COMPILED < 2) return;
  const long long t0 = static_cast<long long>(tile) * sk.k_iters;
  // Not so for the counter form: the wide wgmma kernel with one store for a whole tile and the last sharer's sum (3000
  // fewer SASS lines) ran 1.5-3% slower at M = 1024 (NOTES-wna16 run 40).
  if (seg_begin == t0 && seg_end == t0 + sk.k_iters) {  // this CTA ran the whole tile
    if (wk == 0) store_tile<Cfg>(p, acc, red_smem, mt, nt, wm, wn, lane, fix);
    return;
  }
  if constexpr (R <= 8) {
    if (wk == 0) finish_shared_tile_by_first<Cfg>(p, sk, red_smem, acc, tile, mt, nt, seg_begin, wm, wn, lane, fix);
  } else {
    finish_shared_tile_by_last<Cfg>(p, sk, red_smem, acc, tile, mt, nt, seg_begin, seg_end, wm, wn, wk, lane, fix);
  }
}

}  // namespace epilogue
}  // namespace humming
