// humming/scheduler/pipeline.cuh -- the cp.async ring of the dense kernels over one CTA's Stream-K range.
//
// STAGES shared-memory buffers, filled D stages ahead by the kernel's loaders (16-byte cp.async, one commit
// group per stage, empty past the range so that cp_async_wait<D - 1> always means "this stage is ready"),
// one barrier per stage. An MMA body supplies the rest: Body(p) after the prologue's loads; after_wait()
// between the wait and the barrier (wgmma: the async-proxy fence); compute(stage, wm, wn, wk, lane); and
// finish(...) once per tile segment. kLagStages: stages a body's MMAs still read after compute() returns
// (asynchronous ones): the ring keeps them out of reach of the loads that long, D = STAGES - 1 - lag.
// Kernel: GemmDense<Cfg> (Cfg, S, BK, Stage, Loaders; Loaders::prepare(smem) once before the first copy of the
// all-threads ring, the only one a spread activation row takes); the loop runs one segment per tile, so no tile finish
// (which reads the accumulators) sits inside the k-loop: ptxas serialises every wgmma otherwise (C7518).
#pragma once
#include <humming/arch/bulk.cuh>
#include <humming/arch/cluster.cuh>
#include <humming/arch/grid_dependency.cuh>
#include <humming/arch/memory.cuh>
#include <humming/arch/types.cuh>
#include <humming/scheduler/stream_k.cuh>

// The producer form's compute warps (and the wide wgmma form's warpgroups) take their warp index broadcast from
// lane 0 (see pipeline_with_producer); 0 = tid >> 5, the form before NOTES-wna16 run 20 (timing only).
#ifndef HM_UNIFORM_WARP
#define HM_UNIFORM_WARP 1
#endif
// Timing experiments only: 1 = stage groups (StageGroups below) meet at a barrier after every KG iterations, so that
// their dequantisation and MMAs run in step (NOTES-wna16 run 42, lead 2); 0 = each group at its own pace.
#ifndef HM_KGROUP_LOCKSTEP
#define HM_KGROUP_LOCKSTEP 0
#endif
// Timing experiments only (NOTES-wna16 run 43): 1 = a cluster's compute warps hand slots back to their own CTA
// alone (the producers do not wait for the peer: wrong values; with HM_CLUSTER_MULTICAST=0 each CTA copies its own
// tile and the values are right again).
#ifndef HM_CLUSTER_LOCAL_ONLY
#define HM_CLUSTER_LOCAL_ONLY 0
#endif

namespace humming {
namespace scheduler {

// The warp index of thread `tid` (threadIdx.x), broadcast from lane 0 so that ptxas knows it is the same in every
// lane of the warp (with HM_UNIFORM_WARP; tid >> 5 otherwise). All 32 lanes must call it together.
template <class Tid>
HM_DEVICE int uniform_warp_index(Tid tid) {
  return HM_UNIFORM_WARP ? __shfl_sync(0xffffffffu, tid >> 5, 0) : tid >> 5;  // 0: timing only, the old form
}

// A body's stage groups: Body::kStageGroups where it declares one (the wgmma four-fragment form with k-warpgroups),
// else 1 (every compute warp reads every stage).
template <class Body, class = void>
struct StageGroups {
  static constexpr int value = 1;
};
template <class Body>
struct StageGroups<Body, decltype(void(Body::kStageGroups))> {
  static constexpr int value = Body::kStageGroups;
};

// The ring slot before `stage` in a ring of S slots: the one a compute() read last.
template <int S>
HM_DEVICE int stage_before(int stage) {
  return stage == 0 ? S - 1 : stage - 1;
}

// The ring slot `back` (1..KG) before `stage`: stage_before where every warp reads every stage (KG = 1).
template <int S, int KG>
HM_DEVICE int stages_back(int stage, int back) {
  if constexpr (KG == 1) return stage_before<S>(stage);
  else return (stage + S - back) % S;
}

// The producer form (Cfg::kProducer): Cfg::kProducerWarps warps after the compute warps issue every copy of the
// CTA's range, up to STAGES stages ahead of the slowest compute warp (a warpgroup of them can give registers to
// the compute warps: Cfg::producer_registers / compute_registers); stage s is handed over on two mbarriers after
// the stages and the reduction buffer: full[s] (one arrival per producer thread: its
// cp.async.mbarrier.arrive, made when that thread's copies of the stage have landed; a tensor copy adds its bytes
// to the phase's transaction count, memory/tma.cuh) and empty[s] (one arrival per
// compute thread once its reads of the stage are done). The compute warps never meet at a CTA-wide barrier
// inside the k-loop. A body with kLagStages = 1 (asynchronous MMAs still reading the stage after compute()
// returns) hands a stage back after the next compute(), whose first wait retires them, or after drain() at the
// end of a segment.
// Clusters (Cfg::kClusterN > 1, one CTA a tile: the CTAs multicast each stage's activation tile into all of them,
// memory/tma.cuh): a producer writes a slot of every CTA, so each empty[s] also counts one arrival per compute
// warp of each peer CTA (mbarrier_arrive_cluster), and the CTAs meet at a cluster barrier once their barriers are
// initialised and again before they exit (no peer arrives on a barrier of a CTA that is gone).
template <class Kernel, class Body, class Args>
HM_DEVICE void pipeline_with_producer(const Args& p, char* smem) {
  using Cfg = typename Kernel::Config;
  static_assert(Body::kLagStages <= 1, "the producer form hands a stage back at most one compute() late");
  constexpr int S = Kernel::S;
  const int tid = threadIdx.x;
  const int k_iters = p.k_pad / Kernel::BK;
  const scheduler::StreamK sk = scheduler::stream_k_of(p, k_iters);
  const long long begin = sk.begin(blockIdx.x);
  const long long end = sk.end(blockIdx.x);
  if (begin >= end) return;

  const u32 full = arch::smem_u32(smem + S * Kernel::Stage::kBytes + Cfg::kRedBytes);
  const u32 empty = full + 8 * S;
  // Stage groups (Body::kStageGroups, wgmma k-warpgroups): the compute warps split into KG groups, group wk taking
  // the stages of iterations it with it % KG == wk, so each stage has one group's threads to hand it back.
  constexpr int KG = StageGroups<Body>::value;
  static_assert((KG & (KG - 1)) == 0 && S % KG == 0, "stage groups: a power of two sharing the ring evenly");
  constexpr int CL = Cfg::kClusterN;
  static_assert(CL == 1 || KG == 1, "a cluster's CTAs take every stage with all their compute warps");
  constexpr int kPeerArrivals = HM_CLUSTER_LOCAL_ONLY ? 0 : (CL - 1) * (Cfg::kThreads / 32);  // a warp each a peer
  if (tid == 0) {
    for (int s = 0; s < S; ++s) {
      arch::mbarrier_init(full + 8 * s, 32 * Cfg::kProducerWarps);
      arch::mbarrier_init(empty + 8 * s, Cfg::kThreads / KG + kPeerArrivals);
    }
    if constexpr (CL > 1) arch::fence_mbarrier_init_cluster();
  }
  // The barriers are initialised before either side uses them (the last CTA-wide barrier; with clusters, before
  // a peer's copies or arrivals reach them).
  if constexpr (CL > 1) {
    arch::cluster_arrive();
    arch::cluster_wait();
  } else {
    __syncthreads();
  }
  arch::wait_prior_grids();  // activations, workspace and output may be the previous grid's (grid_dependency.cuh)
  arch::release_dependent_grids();

  if (tid >= Cfg::kThreads) {  // the producer's warps
    Cfg::producer_registers();
    const u64 pol_w = arch::policy_evict_first();
    int tile = static_cast<int>(begin / k_iters);
    int kt = static_cast<int>(begin - static_cast<long long>(tile) * k_iters);
    typename Kernel::Loaders ld;
    ld.set_tile(p, tile);
    int stage = 0;
    u32 parity = 0;
    for (long long it = begin; it < end; ++it) {
      // The slot's previous use (one ring ago) must be released by every compute thread first.
      if (it - begin >= S) arch::mbarrier_wait(empty + 8 * stage, parity ^ 1);
      ld.load(smem, stage, kt, pol_w, full + 8 * stage);  // tensor copies complete on it
      arch::cp_async_mbarrier_arrive(full + 8 * stage);
      if (++kt == k_iters && it + 1 < end) {
        kt = 0;
        ld.set_tile(p, ++tile);
      }
      if (++stage == S) {
        stage = 0;
        parity ^= 1;
      }
    }
    if constexpr (CL > 1) arch::cluster_arrive();  // the exit meeting (below): the producer does not wait
    return;  // copies still in flight land in a CTA whose compute warps wait for them
  }

  Cfg::compute_registers();
  const int lane = tid & 31;
  // The warp index broadcast from lane 0, which ptxas then knows is the same in every lane (a plain tid >> 5 made
  // the finish's branches on a warp's column groups count as divergent, and the wgmma kernels' k-loop moved each
  // descriptor into uniform registers before every wgmma: 32 R2UR a stage at M = 64, the loop 392 against 357 SASS
  // lines). H200, 2026-12-04 15:49, verified, us (tid >> 5 -> broadcast): M = 64 28672 x 8192 75.5 -> 70.2,
  // 8192 x 28672 76.3 -> 70.4, 28672 x 4096 47.7 -> 45.0, 8192 x 8192 35.9 -> 33.9, 4096 x 14336 36.3 -> 33.9; M = 33
  // 73.2 -> 67.0, M = 128 137.0 -> 128.2, M = 1024 765 -> 740; M = 64 MXFP4 78.1 -> 72.1, NVFP4 93.8 -> 87.7, s8 90.5 ->
  // 84.3 (NOTES-wna16 run 20).
  const int warp = uniform_warp_index(tid);
  const int wn = warp % Cfg::kWarpN;
  const int wm = (warp / Cfg::kWarpN) % Cfg::kWarpM;
  const int wk = warp / (Cfg::kWarpN * Cfg::kWarpM);
  Body body(p);
  // A compute thread's hand-back of slot s: its own arrival, and with clusters one a warp on each peer's empty[s].
  const u32 rank = CL > 1 ? arch::cluster_ctarank() : 0;
  auto hand_back = [&](int s) {
    arch::mbarrier_arrive(empty + 8 * s);
    if constexpr (CL > 1 && !HM_CLUSTER_LOCAL_ONLY) {
      __syncwarp();
      if (lane == 0)
        for (int r = 1; r < CL; ++r) arch::mbarrier_arrive_cluster(empty + 8 * s, (rank + r) % CL);
    }
  };
  int c_tile = static_cast<int>(begin / k_iters);
  int stage = 0;
  u32 parity = 0;
  for (long long it = begin; it < end;) {
    const long long seg_begin = it;
    const long long seg_end = min(end, static_cast<long long>(c_tile + 1) * k_iters);
    for (; it < seg_end; ++it) {
      if (KG == 1 || static_cast<int>(it & (KG - 1)) == wk) {
        arch::mbarrier_wait(full + 8 * stage, parity);
        body.after_wait();
        body.compute(smem + stage * Kernel::Stage::kBytes, wm, wn, wk, lane);
        // Lagging bodies: this compute()'s first wait retired the MMAs of the stage this group read before (KG slots
        // back; none before a segment).
        if constexpr (Body::kLagStages == 0) hand_back(stage);
        else if (it - KG >= seg_begin) hand_back(stages_back<S, KG>(stage, KG));
      }
      if constexpr (KG > 1 && HM_KGROUP_LOCKSTEP != 0) {
        if (static_cast<int>(it & (KG - 1)) == KG - 1) Cfg::sync_compute();
      }
      if (++stage == S) {
        stage = 0;
        parity ^= 1;
      }
    }
    if constexpr (Body::kLagStages > 0) {
      body.drain();
      // The group's last iteration of the segment is seg_end - back, its slot `back` before the cursor (KG = 1: the
      // one before, always in the segment).
      const int back = 1 + static_cast<int>((seg_end - 1 - wk) & (KG - 1));
      if (KG == 1 || seg_end - back >= seg_begin) hand_back(stages_back<S, KG>(stage, back));
    }
    int mt, nt;
    scheduler::tile_coords<Cfg::kClusterN>(c_tile, p.m_tiles, p.n_tiles, Cfg::kGroupM, mt, nt);
    body.finish(p, sk, smem + S * Kernel::Stage::kBytes, c_tile, mt, nt, seg_begin, it, wm, wn, wk, lane);
    ++c_tile;
  }
  if constexpr (CL > 1) {
    arch::cluster_arrive();
    arch::cluster_wait();
  }
}

// Every thread copies and computes; one CTA-wide barrier per stage.
template <class Kernel, class Body, class Args>
HM_DEVICE void pipeline_all_threads(const Args& p, char* smem) {
  using Cfg = typename Kernel::Config;
  constexpr int D = Kernel::S - 1 - Body::kLagStages;
  static_assert(D >= 1, "too few stages for the body's lag");
  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;  // a broadcast from lane 0 (the producer form's) compiled to more here
  const int wn = warp % Cfg::kWarpN;
  const int wm = (warp / Cfg::kWarpN) % Cfg::kWarpM;
  const int wk = warp / (Cfg::kWarpN * Cfg::kWarpM);

  const int k_iters = p.k_pad / Kernel::BK;
  const scheduler::StreamK sk = scheduler::stream_k_of(p, k_iters);
  const long long begin = sk.begin(blockIdx.x);
  const long long end = sk.end(blockIdx.x);
  if (begin >= end) return;

  const u64 pol_w = arch::policy_evict_first();
  // Bulk weight copies complete on one mbarrier per stage (after the stages and the reduction buffer); the
  // compute cursor waits for the phase of the stage's current use (parity flips each time the ring wraps).
  const u32 bars = arch::smem_u32(smem + Kernel::S * Kernel::Stage::kBytes + Cfg::kRedBytes);
  if constexpr (Cfg::kBulkWeights) {
    if (tid == 0)
      for (int s = 0; s < Kernel::S; ++s) arch::mbarrier_init(bars + 8 * s, 1);
    __syncthreads();
  }
  u32 parity = 0;

  // Load cursor (runs D iterations ahead) and compute cursor, both as (tile, kt): no divisions inside.
  int l_tile = static_cast<int>(begin / k_iters);
  int l_kt = static_cast<int>(begin - static_cast<long long>(l_tile) * k_iters);
  int c_tile = l_tile;
  Kernel::Loaders::prepare(smem);
  typename Kernel::Loaders ld;
  ld.set_tile(p, l_tile);
  long long l_it = begin;
  int l_stage = 0;
  // The activations, the workspace and the output may be the previous grid's: wait for it before the first load
  // (a programmatic launch starts this grid while it finishes; arch/grid_dependency.cuh). Weights issued before the
  // wait lost (NOTES-wna16 run 22, experiments/wna16-weights-ahead.patch): as L2 prefetches everywhere, copied into
  // shared memory at M = 16, and the copies would be right only where the grid before never writes them.
  arch::wait_prior_grids();
  arch::release_dependent_grids();
  // One commit group per call, empty past the end, so that cp_async_wait<D - 1> always means "stage ready".
  auto load_next = [&]() {
    if (l_it < end) {
      ld.load(smem, l_stage, l_kt, pol_w, bars + 8 * l_stage);
      ++l_it;
      if (++l_kt == k_iters && l_it < end) {
        l_kt = 0;
        ld.set_tile(p, ++l_tile);
      }
    }
    arch::cp_async_commit();
    if (++l_stage == Kernel::S) l_stage = 0;
  };
#pragma unroll
  for (int s = 0; s < D; ++s) load_next();

  Body body(p);
  int stage = 0;
  // One segment per tile this CTA touches: the k-loop holds no tile finish, so asynchronous MMAs may stay in
  // flight across its iterations (ptxas serialises wgmma whose registers a divergent path touches).
  for (long long it = begin; it < end;) {
    const long long seg_begin = it;
    const long long seg_end = min(end, static_cast<long long>(c_tile + 1) * k_iters);
    for (; it < seg_end; ++it) {
      arch::cp_async_wait<D - 1>();
      if constexpr (Cfg::kBulkWeights) arch::mbarrier_wait(bars + 8 * stage, parity);
      body.after_wait();
      __syncthreads();
      load_next();  // before the MMAs: loads issued after them measured no faster (wgmma, H200)
      body.compute(smem + stage * Kernel::Stage::kBytes, wm, wn, wk, lane);
      if (++stage == Kernel::S) {
        stage = 0;
        parity ^= 1;
      }
    }
    int mt, nt;
    scheduler::tile_coords<Cfg::kClusterN>(c_tile, p.m_tiles, p.n_tiles, Cfg::kGroupM, mt, nt);
    // The k-warp reduction's buffer, after the stages.
    char* red = smem + Kernel::S * Kernel::Stage::kBytes;
    body.finish(p, sk, red, c_tile, mt, nt, seg_begin, it, wm, wn, wk, lane);
    ++c_tile;
  }
  arch::cp_async_wait<0>();
}

template <class Kernel, class Body, class Args>
HM_DEVICE void pipeline(const Args& p, char* smem) {
  if constexpr (Kernel::Config::kProducer)
    pipeline_with_producer<Kernel, Body>(p, smem);
  else
    pipeline_all_threads<Kernel, Body>(p, smem);
}

}  // namespace scheduler
}  // namespace humming
