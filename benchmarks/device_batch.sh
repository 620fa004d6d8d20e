#!/usr/bin/env bash
# One call on the GPU machine: install humming (for its entry points), then every GPU check and benchmark.
#   run: bash benchmarks/device_batch.sh [steps...]   (carry .whl: ml_dtypes, nvidia-cuda-nvrtc >= 13.5; outputs in $OUT)
#   the device's copy has no .git: put the commit in the call, HUMMING_COMMIT=<hash> bash benchmarks/device_batch.sh ...,
#   so that the bench's JSON records it (wna16_report.git_commit)
# Steps: devices gpu-tests older-targets output-rows jit compile-scaling wna16 wna16-full wna16-big formats check ncu ncu-wgmma ncu-wide ncu-tma producer wgmma-producer wgmma-tiles wide2 shapes preload stages loaders tma decode-k4 decode-occ decode-loader span sk-decode m64-dp split-waves m64-tail w8-sched
# m64-tiles sk-cost sk-bisect sk-formats sk-settle sk-first m16-wgmma occ34 m64-diag m64-fixup spread wgmma-rate few-tiles small-decode one-per-sm short-splits short-sk uniform-preload ncu-m64-a2 no-a short-sk2 fold fixup-floor cluster finish-split fixup-bulk spread-steps one-token uniform-warp w8-m16 w8-m16b wide-uniform few-tiles64 wide-confirm near-lines fix-act zero-sub s8-direct zero-sums zero-sums2 big-verify clock-watch placement big-seq launch-gap pdl zero-rows fn2 verify-paths verify-repro zero-rows-q zero-rows-bench zero-mma zero-power ws-capture interleave producer-today producer-fp4 k4-m16 k4-long a-rows group-cols m1-floor f16-decode msync-big msync-formats f8-prmt preload-wide preload-u8 fine-stages sk-today large-m ncu-decode store-ab staged-ab ksplit ksplit-lockstep pair whole-tiles l2-proxy ncu-l2 conformance (default: all but the ncu steps and the experiments: producer .. shapes). Each step's log is
# $OUT/<step>.txt; wna16/formats also write JSON tables, ncu writes reports (benchmarks/ncu_wna16.sh).
# PLAN_ONLY=1 bash benchmarks/device_batch.sh STEP...: a dry run on a machine without a GPU, before device time goes
# to a step: nothing is installed; profile_wna16 and bench_wna16 --check plan and compile the step's variants for the
# H200 (sm_90a, 132 SMs) and print each one's launch, registers, spills (in the MMA loop too) and CTAs an SM; what
# needs a GPU says so and stops, or skips (pytest -m gpu).
set -uo pipefail
export PYTHONUNBUFFERED=1 HUMMING_CACHE_DIR=${HUMMING_CACHE_DIR:-/tmp/humming-cache}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
PROFILE="python3 benchmarks/profile_wna16.py${PLAN_ONLY:+ --plan-only}"
CHECK="python3 benchmarks/bench_wna16.py --check${PLAN_ONLY:+ --plan-only}"
if [ -n "${PLAN_ONLY:-}" ]; then :
elif ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
  # A carried NVRTC (the image has 13.0, whose ptxas miscompiles the wgmma kernels: devices/nvidia/tuning.py)
  # must be loaded before cuda.bindings looks: cuda-pathfinder searches the site dirs, not PYTHONPATH, but
  # takes a libnvrtc that is already loaded.
  if [ -f /tmp/site/nvidia/cu13/lib/libnvrtc.so.13 ]; then export LD_PRELOAD=/tmp/site/nvidia/cu13/lib/libnvrtc.so.13; fi
fi
[ -n "${PLAN_ONLY:-}" ] || python3 -m pip install -q --no-deps --no-build-isolation -e . >"$OUT/install.txt" 2>&1 \
  || { cat "$OUT/install.txt"; exit 1; }
python3 -c "from humming.core.compiler import nvrtc_version; print('NVRTC', nvrtc_version())"
# The experiment steps that patch the tree do it on the device's copy; a dry run would edit this checkout.
tree_patch() {
  if [ -n "${PLAN_ONLY:-}" ]; then echo "  not in a dry run: this step patches the tree"; return 1; fi
  patch -p1 -s "$@"
}
steps=${*:-devices gpu-tests jit wna16 formats check conformance}
for step in $steps; do
  echo "=== $step ($(date -u +%H:%M:%S))"
  case $step in
    devices) { python3 -m humming devices; python3 -m humming devices --json >"$OUT/devices.json"; } 2>&1 | tee "$OUT/devices.txt" ;;
    # the dense matrix is the `check` step's (isolated processes); everything else GPU-marked runs here
    # test_cache imports platformdirs, which the image lacks (and which has no GPU test)
    gpu-tests) timeout 360 python3 -m pytest -q -m gpu tests -rs -p no:cacheprovider --ignore=tests/core/test_cache.py \
                 --ignore=tests/gpu/test_older_targets_gpu.py \
                 -k "not test_dense_gemm_matches_the_reference" 2>&1 | tee "$OUT/gpu-tests.txt" | tail -25 ;;
    # the tuner's kernels for sm_75 / sm_80 / sm_86 (10 formats) and sm_89 (NVFP4) with those targets' code paths on
    # this GPU (run 27: devices/nvidia/emulation.py), M = 1..1000 x odd shapes against the reference; ~170 kernels
    older-targets) timeout 420 python3 -m pytest -q -m gpu tests/gpu/test_older_targets_gpu.py -rs -p no:cacheprovider \
                     2>&1 | tee "$OUT/older-targets.txt" | tail -25 ;;
    # run 26's GPU tests alone (written without a device): checkpoint layers, ue8m0 codes shifted for f16, models
    gpu-tests-26) timeout 300 python3 -m pytest -q -m gpu tests -rs -p no:cacheprovider --ignore=tests/core/test_cache.py \
                 -k "checkpoint or ue8m0 or quantize_linears or encodes_and_decodes or exactly_as_cpu" 2>&1 | tee "$OUT/gpu-tests-26.txt" | tail -25 ;;
    jit) timeout 150 python3 benchmarks/jit_compile.py --json "$OUT/jit_compile_gpu.json" 2>&1 | tee "$OUT/jit.txt" | tail -25 ;;
    # odd and even N through the kernels with and without element stores (odd_n), without the dense matrix's compile
    output-rows) timeout 200 python3 -m pytest -q -m gpu tests/gpu/test_output_rows_gpu.py -rs -p no:cacheprovider \
      2>&1 | tee "$OUT/output-rows.txt" | tail -5 ;;
    # compile_many's threads against worker processes, cold, on a layer's kernels and on six formats' (27 kernels)
    compile-scaling) timeout 300 python3 benchmarks/experiments/compile_scaling.py --json "$OUT/compile-scaling.json" \
      2>&1 | tee "$OUT/compile-scaling.txt" ;;
    # --chain 8: each line also as one of eight consecutive layers in one graph (the figure a captured decode step sees)
    wna16) timeout 300 python3 benchmarks/bench_wna16.py --quick --reps 100 --chain 8 --formats "w4a16 s4 g128" \
             --json "$OUT/wna16.json" 2>&1 | tee "$OUT/wna16.txt" | tail -16 ;;
    # all five shapes of the issue at M = 1..4096 (its M = 64 and M >= 1024 targets name 8192 x 8192 and
    # 4096 x 14336 too, which --quick leaves out)
    wna16-full) timeout 400 python3 benchmarks/bench_wna16.py --reps 100 --formats "w4a16 s4 g128" --json "$OUT/wna16-full.json" \
                  2>&1 | tee "$OUT/wna16-full.txt" | tail -56 ;;
    # the issue's M = 64 and M >= 1024 targets: all five shapes, against cuBLAS in the same run
    wna16-big) timeout 400 python3 benchmarks/bench_wna16.py --reps 100 --m ${BIG_M:-64,256,1024,4096} \
                 --formats "w4a16 s4 g128" --json "$OUT/wna16-big.json" 2>&1 | tee "$OUT/wna16-big.txt" | tail -24 ;;
    # wna16-big with each timed kernel's own output checked against the float64 reference after its replays (its
    # 8192 x 28672 M = 1024 row printed ~585 us twice, under the kernel's own span elsewhere: done work or not?)
    big-verify) timeout 400 python3 benchmarks/bench_wna16.py --reps 20 --m ${BIG_M:-64,1024} --verify \
                  --formats "w4a16 s4 g128" --json "$OUT/big-verify.json" 2>&1 | tee "$OUT/big-verify.txt" | tail -24 ;;
    # wna16-big (M = 64, 1024) with the SM clock and power sampled every 100 ms and each printed row time-stamped: is
    # the 8192 x 28672 M = 1024 cell's ~585 us (against ~700 elsewhere) a clock the other cells did not get?
    clock-watch) { nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
                     --format=csv,noheader -lms 100 >"$OUT/clocks.csv" 2>&1 & CW=$!
      timeout 300 python3 benchmarks/bench_wna16.py --reps 20 --m 64,1024 --formats "w4a16 s4 g128" 2>&1 \
        | python3 -c "import sys,time
for l in sys.stdin: print(time.strftime('%H:%M:%S'), '%.1f' % (time.time() % 60), l, end='', flush=True)"
      kill $CW; } 2>&1 | tee "$OUT/clock-watch.txt" | tail -24 ;;
    # the tuner's M = 1024 kernel with the bench's buffers made as the plain step makes them (quantized tensor freed)
    # and as --verify does (kept), interleaved, with their offsets in 2 MiB pages (NOTES-wna16 run 21, lead 3)
    placement) { timeout 150 python3 benchmarks/experiments/placement.py --rounds 2
      timeout 100 python3 benchmarks/experiments/placement.py --n 28672 --k 8192 --rounds 1; } 2>&1 | tee "$OUT/placement.txt" ;;
    # which part of the wna16-big sequence brings the 8192 x 28672 M = 1024 cell to ~587 us: M = 1024 alone (with the
    # baselines), M = 64 and 1024 without the baselines, then the step itself once more
    big-seq) { timeout 120 python3 benchmarks/bench_wna16.py --reps 20 --m 1024 --formats "w4a16 s4 g128" | grep "M=1024"
      timeout 120 python3 benchmarks/bench_wna16.py --reps 20 --m 64,1024 --no-baselines --formats "w4a16 s4 g128" | grep "M="
      timeout 120 python3 benchmarks/bench_wna16.py --reps 20 --m 64,1024 --formats "w4a16 s4 g128" | grep "M="
    } 2>&1 | tee "$OUT/big-seq.txt" ;;
    # the harness around a replay (NOTES-wna16 run 22): single replay / plain launch / events inside the graph / a
    # graph of consecutive layers over distinct weights, for decode lines and cuBLAS, and a tiny kernel
    launch-gap) timeout 300 python3 benchmarks/experiments/launch_gap.py 2>&1 | tee "$OUT/launch-gap.txt" ;;
    # programmatic dependent launch off / on / on with the prologue's weights before the wait: chains of layers
    pdl) timeout 400 python3 benchmarks/experiments/launch_gap.py --pdl 2>&1 | tee "$OUT/pdl.txt" ;;
    # the reference checks of the bench and profile scripts (reference.check_gemm), briefly: M = 1 / 64, verified
    verify-paths) { timeout 120 python3 benchmarks/bench_wna16.py --quick --reps 5 --m 1,64 --verify --no-baselines \
                      --formats "w4a16 s4 g128,mxfp4" | grep "verify\|Error"
      timeout 60 $PROFILE --reps 5 --verify --m 1,16 | grep "verify\|Error"
    } 2>&1 | tee "$OUT/verify-paths.txt" ;;
    # the bench's timed-then-verified M = 1 case repeated with diagnostics (the verify failure of 19:44, run 22)
    verify-repro) timeout 200 python3 benchmarks/experiments/verify_repro.py 2>&1 | tee "$OUT/verify-repro.txt" ;;
    # where the bench's 8192 x 28672 quantized weights lose rows (run 22): checked before any GEMM reads them
    zero-rows-q) timeout 150 python3 benchmarks/experiments/zero_rows.py 2>&1 | tee "$OUT/zero-rows-q.txt" ;;
    # with experiments/wna16-zero-sums-mma.patch applied (remade on 3b85e10's kernels; HM_ZERO_BY_MMA=1 switches it
    # on): the zero on the partial sums at M = 2..16 by an offset MMA against the paired FMA (runs 9, 23 and 44: lost),
    # s4 g128 at M = 16 / 8, verified, ABBA, then M = 16 with the weights in L2 (l2-proxy: the H200's floor)
    zero-mma) { tree_patch < benchmarks/experiments/wna16-zero-sums-mma.patch || exit 1
      P="$PROFILE --reps 25"; Z="HM_ZERO_BY_MMA=1"; L="HM_L2_WEIGHTS=8"
      for nk in "28672 8192" "8192 28672" "28672 4096"; do read -r n k <<< "$nk"
        timeout 90 $P --verify --n $n --k $k --m 16,8 --tiles "tuner; tuner +$Z; tuner +$Z; tuner" | grep "M=\|skip\|FAIL"
        timeout 90 $P --n $n --k $k --m 16 --tiles "tuner +$L; tuner +$Z,$L; tuner +$Z,$L; tuner +$L" | grep "M=\|skip"
      done
      tree_patch -R < benchmarks/experiments/wna16-zero-sums-mma.patch
    } 2>&1 | grep -v "^ *skip\|^copy" | tee "$OUT/zero-mma.txt" ;;
    # compute-bound M = 1024 on random weights and on the same with half their rows zero, interleaved (run 23)
    zero-power) { timeout 150 python3 benchmarks/experiments/zero_weights_power.py --rounds 2
      timeout 100 python3 benchmarks/experiments/zero_weights_power.py --n 28672 --k 8192 --rounds 1; } 2>&1 \
      | tee "$OUT/zero-power.txt" ;;
    # the producer-warp form of the tuner's decode tiles on today's kernel (run 24, built, not run): its compute loop is
    # 528 against 738 instructions at M = 16 and 361 against 569 at M = 1 (one-token tile), 134-137 registers. Runs 7
    # (old kernel) and 15 (other tiles) measured producers 15-20% slower; this repeats them on the tuner's exact tiles
    producer-today) { P="$PROFILE --reps 25 --verify"
      for nk in "28672 8192" "8192 28672" "28672 4096"; do read -r n k <<< "$nk"
        timeout 100 $P --n $n --k $k --m 16 --tiles "tuner; 1,1,2,1,2,256,4,8,2,2,0,1 stream-k; 1,1,2,1,2,256,3,8,2,2,0,1 stream-k; tuner"
        timeout 100 $P --n $n --k $k --m 1 --tiles "tuner; 1,1,2,1,2,256,4,8,2,1,0,1,1 stream-k; tuner"; done
    } 2>&1 | grep -v "^ *skip\|^copy" | tee "$OUT/producer-today.txt" ;;
    # the same producer-warp tiles for MXFP4 / NVFP4 (furthest from their 70% line): their compute warps carry 23-30%
    # fewer stall cycles a stage than the tuner's (sass_loop --stalls), and ran 3-9% slower (2026-12-05, NOTES run 27).
    # At K = 4096 the tuner plans data-parallel: its tile under Stream-K is timed too, to part producer from schedule
    producer-fp4) { P="$PROFILE --reps 25 --verify"
      for f in mxfp4 nvfp4; do for nk in "28672 8192" "28672 4096"; do read -r n k <<< "$nk"
        timeout 70 $P --format $f --n $n --k $k --m 16 \
          --tiles "tuner; 1,1,2,1,2,256,4,8,2,2,0,1 stream-k; 1,1,2,1,2,256,4,8,2,2 stream-k; tuner"
        timeout 70 $P --format $f --n $n --k $k --m 1 \
          --tiles "tuner; 1,1,2,1,2,256,4,8,2,1,0,1,1 stream-k; 1,1,2,1,2,256,4,8,2,1,0,0,1 stream-k; tuner"
      done; done
    } 2>&1 | grep -v "^ *skip\|^copy" | tee "$OUT/producer-fp4.txt" ;;
    # M = 16 on twice the warps: k split four ways in a CTA (1 x 2 x 4 warps, 128 registers, two CTAs an SM: four warps a
    # scheduler against two), 3 or 2 stages of 256, against the tuner's tile. Built in run 24 and not run there (no device
    # was lent); it repeats run 9's decode-k4 (those tiles then spilled 28-150 bytes and lost 16-25%) on today's kernel,
    # whose 3-stage build spills 8 bytes outside the loop. Run 33 (H100): 3-4% faster on 8192 x 28672 only (split-K),
    # within 1% on 28672 x 8192, 1.5-5.5% slower on 28672 x 4096, 4096 x 14336 and for MXFP4. Run 34 (H100): the same again
    k4-m16) { P="$PROFILE --reps 25 --verify"
      T="tuner; 1,1,2,1,4,256,3,8,2,2; 1,1,2,1,4,256,2,8,2,2; tuner; 1,1,2,1,4,256,3,8,2,2"
      for nk in "28672 8192" "8192 28672" "28672 4096"; do read -r n k <<< "$nk"; timeout 100 $P --n $n --k $k --m 16 --tiles "$T"; done
      timeout 100 $P --m 16 --format mxfp4 --tiles "$T"; timeout 100 $P --m 9 --tiles "$T"
    } 2>&1 | grep -v "^ *skip\|^copy" | tee "$OUT/k4-m16.txt" ;;
    # run 33's one k4-m16 gain (8192 x 28672, split-K: 28 stages a CTA) against the shapes around it, to tell whether
    # four k-warps pay where each CTA's k range is long: three more split-K plans (256-deep stages a CTA: 4096 x 28672
    # 14, 8192 x 16384 16, 14336 x 28672 56; 8192 x 8192's 8 lost on the H100) and 28672 x 8192 under Stream-K for
    # both; M = 16 and 9, interleaved, verified. Run 34 (H100): 8192 x 28672 alone gains (1-3.8%); 14336 x 28672 (56
    # stages a CTA) loses 6-8%, the two shorter ones up to 2.4%: not the k range. Lead closed, no tuner rule
    # the activation loader copying only the rows a tile serves (HM_SERVED_A_ROWS, 2026-12-05: one row for the
    # one-token tile, 8 for one n8 fragment) against all 16 rows with a flag each, interleaved, verified: the decode
    # formats at M = 1 (s4, MXFP4 and NVFP4 take the one-token tile) and s4 at M = 8, AWQ and s8 at M = 1
    a-rows) { P="$PROFILE --reps 25 --verify"; T="tuner; tuner +HM_SERVED_A_ROWS=0; tuner; tuner +HM_SERVED_A_ROWS=0"
      for nk in "28672 8192" "8192 28672" "28672 4096"; do read -r n k <<< "$nk"
        timeout 60 $P --n $n --k $k --m 1,8 --tiles "$T" | grep "M=\|skip"
        for f in mxfp4 nvfp4; do timeout 40 $P --format $f --n $n --k $k --m 1 --tiles "$T" | grep "M=\|skip"; done; done
      for f in "w4a16 u4 zp g128" "w8a16 s8 ch"; do timeout 40 $P --format "$f" --m 1 --tiles "$T" | grep "M=\|skip"; done
    } 2>&1 | tee "$OUT/a-rows.txt" ;;
    # one token with each group part in its own n8 column (route.cuh kGroupColumns) against every part on column 0
    # (HM_GROUP_COLUMNS=0), and MXFP4 with its exponent fix on the activations there too (HM_FIX_ON_ACT_COLUMNS=1)
    group-cols) { P="$PROFILE --reps 25 --verify"
      TM="tuner +HM_GROUP_COLUMNS=0; tuner; tuner +HM_FIX_ON_ACT_COLUMNS=1; tuner +HM_GROUP_COLUMNS=0; tuner; tuner +HM_FIX_ON_ACT_COLUMNS=1"
      TN="tuner +HM_GROUP_COLUMNS=0; tuner; tuner +HM_GROUP_COLUMNS=0; tuner"
      for nk in "28672 8192" "8192 28672" "28672 4096"; do read -r n k <<< "$nk"
        timeout 60 $P --format nvfp4 --n $n --k $k --m 1 --tiles "$TN" | grep "M=\|skip"
        timeout 60 $P --format mxfp4 --n $n --k $k --m 1 --tiles "$TM" | grep "M=\|skip"; done
    } 2>&1 | tee "$OUT/group-cols.txt" ;;
    # where the decode stands against its own copies (after 83c283a, whose ~60 fewer loop instructions did not
    # move s4 at M = 1; s4 M = 16 beside it): the tuner's kernel beside its builds without the MMAs and dequant
    # (HM_ABLATE=3), without stage reads (4) and with the weights' copies alone (5); timing only (wrong values)
    m1-floor) { P="$PROFILE --reps 25"; T="tuner; tuner +HM_ABLATE=3; tuner +HM_ABLATE=5; tuner; tuner +HM_ABLATE=4"
      for nk in "28672 8192" "8192 28672" "28672 4096"; do read -r n k <<< "$nk"
        timeout 50 $P --n $n --k $k --m 1,16 --tiles "$T" | grep "M=\|skip"
        timeout 40 $P --format nvfp4 --n $n --k $k --m 1 --tiles "$T" | grep "M=\|skip"; done
    } 2>&1 | tee "$OUT/m1-floor.txt" ;;
    k4-long) { P="$PROFILE --reps 25 --verify"; T="tuner; 1,1,2,1,4,256,3,8,2,2; tuner; 1,1,2,1,4,256,3,8,2,2"
      for nk in "8192 28672" "4096 28672" "8192 16384" "14336 28672"; do read -r n k <<< "$nk"
        timeout 60 $P --n $n --k $k --m 16,9 --tiles "$T" | grep "M=\|skip"; done
      timeout 60 $P --m 16 --tiles "tuner; 1,1,2,1,4,256,3,8,2,2 stream-k; tuner; 1,1,2,1,4,256,3,8,2,2 stream-k" | grep "M=\|skip"
    } 2>&1 | tee "$OUT/k4-long.txt" ;;
    # the swapped form with each m16 fragment's pairs dequantised right before its MMAs (HM_INTERLEAVE_MMA of
    # experiments/wna16-interleave-mma.patch, run 24: lost, 0-1.3% slower),
    # interleaved with the tuner's build, verified: s4 M = 16 on the three large shapes, MXFP4 M = 16, s4 M = 1
    interleave) { tree_patch < benchmarks/experiments/wna16-interleave-mma.patch || exit 1
      P="$PROFILE --reps 25 --verify"; T="tuner; tuner +HM_INTERLEAVE_MMA=1; tuner; tuner +HM_INTERLEAVE_MMA=1"
      for nk in "28672 8192" "8192 28672" "28672 4096"; do read -r n k <<< "$nk"; timeout 100 $P --n $n --k $k --m 16 --tiles "$T"; done
      timeout 100 $P --m 16 --format mxfp4 --tiles "$T"; timeout 100 $P --m 1 --tiles "$T"
    } 2>&1 | grep -v "^ *skip\|^copy" | tee "$OUT/interleave.txt" ;;
    # the swapped wgmma form's tile store compiled once (whole tiles through finish_spread) against f95d1c7^'s
    # store_tile beside it (the patch puts back that finish.cuh), ABBA on one machine, M = 64 and 1024 (NOTES run 40);
    # the patch applies to the trees from 666e39c to 1d930bd^ only (1d930bd's staged store replaced that code)
    store-ab) { for v in new old old new; do
        if [ $v = old ] && [ ! -e /tmp/store-old ]; then tree_patch < benchmarks/experiments/wna16-store-twice.patch || exit 1; touch /tmp/store-old; fi
        if [ $v = new ] && [ -e /tmp/store-old ]; then tree_patch -R < benchmarks/experiments/wna16-store-twice.patch || exit 1; rm /tmp/store-old; fi
        echo "-- $v"; timeout 120 python3 benchmarks/bench_wna16.py --reps 25 --m 64,1024 --no-baselines --formats "w4a16 s4 g128" | grep "M="
      done; } 2>&1 | tee "$OUT/store-ab.txt" ;;
    # the wgmma forms' tiles stored through shared memory (1d930bd, 707f48d) against the pair store before them (the
    # patch puts back 1d930bd^'s store, with the k-warpgroups kept: remade at 1e9b4ff, where applied the W4A16 layer's
    # wgmma kernels are SASS-identical to 1d930bd^'s), ABBA on one machine, M = 32..1024 on the five shapes (NOTES run 41)
    staged-ab) { for v in new old old new; do
        if [ $v = old ] && [ ! -e /tmp/staged-old ]; then tree_patch < benchmarks/experiments/wna16-store-pairs.patch || exit 1; touch /tmp/staged-old; fi
        if [ $v = new ] && [ -e /tmp/staged-old ]; then tree_patch -R < benchmarks/experiments/wna16-store-pairs.patch || exit 1; rm /tmp/staged-old; fi
        echo "-- $v"; timeout 200 python3 benchmarks/bench_wna16.py --reps 25 --m ${AB_M:-32,64,128,256,1024} --no-baselines --formats "${AB_FORMATS:-w4a16 s4 g128}" | grep "M="
      done; } 2>&1 | tee "$OUT/staged-ab.txt" ;;
    # the four-fragment wgmma tile as two k-warpgroups taking the stages in turn (256 columns, warp_k = 2: half the f32
    # partials a split tile's sharers exchange) against the 512-column tile (O), ABBA in one process each line,
    # verified: s4 at M = 33 / 64 on the issue's five shapes, MXFP4 / NVFP4 at M = 64, and the 8-bit codes the tuner
    # gives it since d8f55c6 (s8, e4m3, u8 zp) at M = 33 / 64 / 128 on three shapes (NOTES-wna16 run 42; O, not
    # "tuner", is the baseline: for 8-bit codes the tuner's tile is K)
    ksplit) { P="$PROFILE --reps 25 --verify"; K="wgmma:1,4,4,1,2,64,8,8,1,0,0,1,0 stream-k"
      O="wgmma:1,4,8,1,1,64,8,8,1,0,0,1,0 stream-k"
      for nk in "28672 8192" "8192 28672" "28672 4096" "8192 8192" "4096 14336"; do read -r n k <<< "$nk"
        timeout 120 $P --n $n --k $k --m 33,64 --tiles "$O; $K; $K; $O"; done
      for f in mxfp4 nvfp4; do timeout 100 $P --format "$f" --m 64 --tiles "$O; $K; $K; $O"; done
      for f in "w8a16 s8 ch" "w8a16 e4m3 ch" "w8a16 u8 zp g128"; do
        for nk in "28672 8192" "8192 28672" "28672 4096"; do read -r n k <<< "$nk"
          timeout 150 $P --format "$f" --n $n --k $k --m 33,64,128 --tiles "$O; $K; $K; $O"; done; done
    } 2>&1 | grep -v "^ *skip\|^copy" | tee "$OUT/ksplit.txt" ;;
    # the wide TMA form in clusters of two CTAs multicasting each stage's activation tile (widepair, one CTA a tile)
    # against the tuner's wide TMA kernel, ABBA in one process a line, verified: s4 at M = 1000 / 1024 / 4096 on
    # 28672 x 8192 and M = 1024 on the other four shapes, MXFP4 / s8 / f16 at M = 1024, and M = 256 (NOTES run 43)
    pair) { P="$PROFILE --reps 20 --verify"; W="4,4,2,1,1,64,6,8,1,0,0,1,0"; W5="4,4,2,1,1,64,5,8,1,0,0,1,0"
      timeout 150 $P --m 1024,1000,4096 --tiles "tuner; widepair:$W data-parallel; widepair:$W data-parallel; tuner"
      for nk in "8192 28672" "28672 4096" "8192 8192" "4096 14336"; do read -r n k <<< "$nk"
        timeout 100 $P --n $n --k $k --m 1024 --tiles "tuner; widepair:$W data-parallel; widepair:$W data-parallel; tuner"; done
      timeout 100 $P --format mxfp4 --m 1024 --tiles "tuner; widepair:$W data-parallel; widepair:$W data-parallel; tuner"
      timeout 100 $P --format "w8a16 s8 ch" --m 1024 --tiles "tuner; widepair:$W5 data-parallel; widepair:$W5 data-parallel; tuner"
      timeout 100 $P --act f16 --m 1024 --tiles "tuner; widepair:$W data-parallel; widepair:$W data-parallel; tuner"
      timeout 100 $P --m 256 --tiles "tuner; widepair:$W data-parallel; widepair:$W data-parallel; tuner"
    } 2>&1 | grep -v "^ *skip\|^copy" | tee "$OUT/pair.txt" ;;
    # the wide TMA tile walking whole tiles one CTA an SM (a Stream-K plan's grid with every CTA's range rounded to whole
    # tiles, HM_WHOLE_TILES=1: no re-launch or pipeline ramp between a CTA's tiles, no partial ones) against the tuner's
    # one CTA a tile and plain Stream-K, verified (NOTES run 43)
    whole-tiles) { P="$PROFILE --reps 15 --verify"; T="tuner; tuner stream-k; tuner stream-k +HM_WHOLE_TILES=1; tuner stream-k +HM_WHOLE_TILES=1; tuner"
      timeout 150 $P --m 1024,4096 --tiles "$T"
      for nk in "8192 28672" "28672 4096" "8192 8192"; do read -r n k <<< "$nk"; timeout 100 $P --n $n --k $k --m 1024 --tiles "$T"; done
    } 2>&1 | grep -v "^ *skip\|^copy" | tee "$OUT/whole-tiles.txt" ;;
    # the decode's SM-side floor on an H100 (HM_L2_WEIGHTS=8: every tile copies n tiles 0..7's weights, scales and
    # zero points, which stay in L2, so the same instructions run against more bandwidth than the H200's DRAM): the
    # tuner's kernel with and without it, and at M = 16 the tiles with more warps a scheduler (four k-warps with 3 / 2
    # stages, three CTAs an SM), all with L2 weights; timing only (wrong values)
    l2-proxy) { P="$PROFILE --reps 25"; L="+HM_L2_WEIGHTS=8"
      T16="tuner; tuner $L; 1,1,2,1,4,256,3,8,2,2 $L; 1,1,2,1,4,256,2,8,2,2 $L; 1,1,2,1,2,128,5,8,3,2 $L; tuner $L"
      for nk in "28672 8192" "8192 28672" "28672 4096"; do read -r n k <<< "$nk"
        timeout 80 $P --n $n --k $k --m 16 --tiles "$T16" | grep "M=\|skip"
        timeout 40 $P --n $n --k $k --m 1 --tiles "tuner; tuner $L; tuner; tuner $L" | grep "M=\|skip"; done
      for f in mxfp4 nvfp4 "w8a16 s8 ch"; do
        timeout 60 $P --format "$f" --m 1,16 --tiles "tuner; tuner $L; tuner; tuner $L" | grep "M=\|skip"; done
    } 2>&1 | tee "$OUT/l2-proxy.txt" ;;
    # the k-warpgroup tile with its groups kept in step (HM_KGROUP_LOCKSTEP=1, a barrier every two stages) beside its
    # default and the tuner's 512-column tile, s4 / MXFP4 / s8 at M = 64, verified (NOTES-wna16 run 42, lead 2; built,
    # not yet run)
    ksplit-lockstep) { P="$PROFILE --reps 25 --verify"; K="wgmma:1,4,4,1,2,64,8,8,1,0,0,1,0 stream-k"
      O="wgmma:1,4,8,1,1,64,8,8,1,0,0,1,0 stream-k"
      for f in "w4a16 s4 g128" mxfp4 "w8a16 s8 ch"; do
        timeout 100 $P --format "$f" --m 64 --tiles "$O; $K; $K +HM_KGROUP_LOCKSTEP=1; $K +HM_KGROUP_LOCKSTEP=1; $K; $O"
      done; } 2>&1 | grep -v "^ *skip\|^copy" | tee "$OUT/ksplit-lockstep.txt" ;;
    # a workspace first needed inside a graph capture (run 23; before ops._filled_now the M = 1 case failed, 20:57)
    ws-capture) timeout 150 python3 -m pytest -q -m gpu tests/gpu/test_gemm_dense_gpu.py -p no:cacheprovider \
                  -k first_needed_in_a_capture 2>&1 | tail -3 | tee "$OUT/ws-capture.txt" ;;
    # verify-paths' bench run with each kept quantized tensor watched from its making to its verify (run 23)
    zero-rows-bench) timeout 200 python3 benchmarks/experiments/zero_rows_bench.py --quick --reps 5 --m 1,64 --verify \
                       --no-baselines --formats "w4a16 s4 g128,mxfp4" 2>&1 | tee "$OUT/zero-rows-bench.txt" ;;
    formats) timeout 250 python3 benchmarks/bench_wna16.py --quick --reps 100 --no-baselines --chain 8 --json "$OUT/formats.json" \
               --formats "w4a16 u4 zp g128,w8a16 s8 ch,w8a16 e4m3 ch,mxfp4,nvfp4" 2>&1 | tee "$OUT/formats.txt" | tail -32 ;;
    check) timeout 300 $CHECK 2>&1 | tee "$OUT/check.txt" | tail -3 ;;
    ncu) bash benchmarks/ncu_wna16.sh s4_m1 --m 1 2>&1 | tee "$OUT/ncu.txt" | tail -40
      rm -f "$OUT"/*.ncu-rep ;;  # the pages and the per-instruction SASS table come back; the report would not
    # the decode at M = 16 with its weights from L2 (HM_L2_WEIGHTS=8, l2-proxy: the H100 then runs s4 in the H200's
    # 44 us), s4 and NVFP4: which pipe or stall holds the SM once DRAM does not
    ncu-l2) { bash benchmarks/ncu_wna16.sh s4_m16_l2 --m 16 --define HM_L2_WEIGHTS=8
      bash benchmarks/ncu_wna16.sh nvfp4_m16_l2 --m 16 --format nvfp4 --define HM_L2_WEIGHTS=8; } 2>&1 | tee "$OUT/ncu-l2.txt" | tail -60
      rm -f "$OUT"/*.ncu-rep "$OUT"/*.log ;;
    # the decode kernels at today's code: s4 M = 16 (the W4A16 blocker), s4 M = 1 and MXFP4 M = 1 beside it (run 24)
    ncu-decode) { bash benchmarks/ncu_wna16.sh s4_m16 --m 16; bash benchmarks/ncu_wna16.sh s4_m1 --m 1
      bash benchmarks/ncu_wna16.sh mxfp4_m1 --m 1 --format mxfp4; } 2>&1 | tee "$OUT/ncu-decode.txt" | tail -60
      # only the per-instruction tables come back beside the step's log: the device tool returns ~8 files a call (run
      # 24 lost the M = 16 table to that), and the headline metrics are in the log
      rm -f "$OUT"/*.ncu-rep "$OUT"/s4_m16.txt "$OUT"/s4_m1.txt "$OUT"/mxfp4_m1.txt "$OUT"/*.log ;;
    # the producer wgmma kernels: L2 throughput (the traffic reading of NOTES-wna16 run 7), tensor pipe, stalls
    ncu-wgmma) { bash benchmarks/ncu_wna16.sh wide_m1024 --m 1024; bash benchmarks/ncu_wna16.sh p512_m64 --m 64; } 2>&1 \
                 | tee "$OUT/ncu-wgmma.txt" | tail -60 ;;
    ncu-wide) bash benchmarks/ncu_wna16.sh wide_m1024 --m 1024 2>&1 | tee "$OUT/ncu-wide.txt" | tail -40
      rm -f "$OUT"/*.ncu-rep ;;  # the text pages and the SASS table come back; the report would not
    # the TMA form at M = 1024 (after the tma step has verified it): do its MMA warps still wait for data?
    ncu-tma) bash benchmarks/ncu_wna16.sh tma_m1024 --m 1024 --tiles "widetma:4,4,2,1,1,64,6,8,1,0,0,1" 2>&1 \
               | tee "$OUT/ncu-tma.txt" | tail -40
      rm -f "$OUT"/*.ncu-rep ;;
    # the opt-in producer-warp decode tiles (12th tile field) against the tuner's, each checked against the
    # reference; then the same tiles with the arithmetic removed (HM_ABLATE=3), and an odd shape (K tail)
    producer) { P="$PROFILE --reps 20"
      V="1,1,2,1,2,256,4,8,2,S,0,1; 1,1,4,1,2,256,4,8,1,S,0,1; 1,1,4,1,2,256,4,8,1,S,0,1 stream-k; 1,1,4,1,2,256,5,8,1,S,0,1"
      timeout 100 $P --m 1 --verify --tiles "${V//S/1}"; timeout 100 $P --m 16 --verify --tiles "${V//S/2}"
      timeout 60 $P --m 1 --ablate 3 --tiles "${V//S/1}"
      timeout 60 $P --n 4032 --k 4224 --m 1,7,16 --reps 5 --verify --tiles "${V//S/2}"
      for f in "w4a16 u4 zp g128" mxfp4; do timeout 60 $P --m 1,16 --format "$f" --verify --tiles "${V//S/2}"; done
    } 2>&1 | grep -v "^ *skip" | tee "$OUT/producer.txt" ;;
    # the producer warpgroup for the wgmma kernels (setmaxnreg: 56 registers for it, the rest to the MMA warps)
    wgmma-producer) { P="$PROFILE --reps 15 --verify"
      timeout 200 $P --m 1024,4096 --tiles "wide:4,4,2,1,1,64,5,8,1,0,0,1; wide:4,4,2,1,1,64,4,8,1,0,0,1; wide:4,4,2,1,1,64,6,8,1,0,0,1; wide:4,4,1,1,1,64,6,8,1,0,0,1"
      timeout 150 $P --m 64,128 --tiles "wgmma:1,4,4,1,1,64,6,8,2,0,0,1; wgmma:1,4,4,1,1,64,6,8,1,0,0,1; wgmma:1,4,8,1,1,64,4,8,1,0,0,1; wide:4,1,2,1,1,64,6,8,1,0,0,1"
      timeout 100 $P --m 32 --tiles "wgmma:1,2,4,1,1,64,8,8,2,0,0,1; wgmma:1,2,8,1,1,64,6,8,1,0,0,1"
      timeout 120 $P --m 1024 --format "w8a16 s8 ch" --tiles "wide:4,4,2,1,1,64,5,8,1,0,0,1; wide:4,4,2,1,1,64,4,8,1,0,0,1"
      timeout 120 $P --m 1000 --act f16 --format mxfp4 --tiles "wide:4,4,2,1,1,64,5,8,1,0,0,1 stream-k"
    } 2>&1 | grep -v "^ *skip" | tee "$OUT/wgmma-producer.txt" ;;
    # M >= 64 tile shapes with the producer, Stream-K against data-parallel, and wgmma groups left in flight
    wgmma-tiles) { P="$PROFILE --reps 12 --verify"
      T="wide:4,4,2,1,1,64,6,8,1,0,0,1 data-parallel; wgmma:1,4,8,1,1,64,4,8,1,0,0,1; wgmma:2,4,4,1,1,64,4,8,1,0,0,1"
      timeout 120 $P --m 1024,4096 --tiles "$T; wide:4,4,2,1,1,64,6,16,1,0,0,1"
      echo "# HM_WGMMA_PENDING=2"; timeout 150 $P --m 64,128,1024,4096 --define HM_WGMMA_PENDING=2 --tiles "$T; wide:4,4,2,1,1,64,5,8,1,0,0,1"
      for f in "w8a16 s8 ch" mxfp4; do for d in HM_WGMMA_PENDING=1 HM_WGMMA_PENDING=2; do
        echo "# $f $d"; timeout 60 $P --m 64,1024 --format "$f" --define $d; done; done
    } 2>&1 | grep -v "^ *skip" | tee "$OUT/wgmma-tiles.txt" ;;
    # the wide form with two n64 blocks a warpgroup (256 x 128: a third fewer activation bytes per MAC; not yet
    # run on a GPU) against the tuner's 128 x 256, verified; where the wgmma kernels' time goes (HM_ABLATE: 1 no
    # wgmma, 2 no dequant, 3 loads and pipeline only); M = 64 / 128 wide tiles with four MMA warpgroups (twice
    # the warps per SM quarter to hide the dequant chain, 104 registers each) or two blocks a warpgroup
    wide2) { P="$PROFILE --reps 12 --verify"
      W="wide:4,2,2,2,1,64,6,8,1,0,0,1; wide:4,2,2,2,1,64,8,8,1,0,0,1; wide:4,2,2,2,1,64,8,8,1,0,0,1 data-parallel"
      timeout 150 $P --m 128,256,1024,4096 --tiles "$W"
      for a in 1 2 3; do echo "# HM_ABLATE=$a"
        timeout 60 $PROFILE --reps 12 --m 64,1024 --ablate $a --tiles "wide:4,2,2,2,1,64,8,8,1,0,0,1"; done
      timeout 90 $P --m 64,128 --tiles "wide:4,1,4,1,1,64,6,8,1,0,0,1; wide:4,1,2,2,1,64,6,8,1,0,0,1; wide:4,2,4,1,1,64,4,8,1,0,0,1"
      for f in "w8a16 s8 ch" "w4a16 u4 zp g128" mxfp4; do timeout 60 $P --m 1000 --act f16 --format "$f" --tiles "$W"; done
    } 2>&1 | grep -v "^ *skip" | tee "$OUT/wide2.txt" ;;
    # the other shapes of the issue at M = 33..1024: the tuner's 512-column producer tile makes few tiles there
    shapes) { P="$PROFILE --reps 12 --verify"
      S="wgmma:1,2,4,1,1,64,8,8,2; wgmma:1,4,4,1,1,64,6,8,2; wgmma:1,4,4,1,1,64,6,8,2,0,0,1"
      for nk in "4032 4224" "8192 8192" "4096 14336"; do read -r n k <<< "$nk"; timeout 60 $P --n $n --k $k --m 33,64,128 --tiles "$S"; done
      timeout 90 $P --m 1024 --n 28672 --k 4096 --tiles "wide:4,2,2,2,1,64,8,8,1,0,0,1; wide:4,4,2,1,1,64,6,8,1,0,0,1 data-parallel"
    } 2>&1 | grep -v "^ *skip" | tee "$OUT/shapes.txt" ;;
    # a stage's packed words read at the top of compute() (HM_WGMMA_PRELOAD=1), with one or two wgmma groups in
    # flight, against the default, on the tuner's kernels (verified) for three formats and the issue's M > 32
    preload) { P="$PROFILE --reps 12 --verify"
      for d in HM_WGMMA_PRELOAD=0 HM_WGMMA_PRELOAD=1 HM_WGMMA_PRELOAD=1,HM_WGMMA_PENDING=2; do echo "# $d"
        timeout 100 $P --m 64,128,1024,4096 --define $d
        for f in "w8a16 s8 ch" mxfp4; do timeout 60 $P --m 64,1024 --format "$f" --define $d; done; done
    } 2>&1 | grep -v "^ *skip" | tee "$OUT/preload.txt" ;;
    # the M = 33..128 producer tile (512 x 64) with deeper rings (ncu at M=64: the producer waits on empty stages
    # and the MMA warps on full ones, DRAM at 28%), Stream-K over all SMs, and the word preloads (0/1; a mode 2,
    # one step ahead, ran here on 2026-12-03 and was dropped); the wide tile at M = 1024 on the issue's three shapes
    stages) { P="$PROFILE --reps 12 --verify"
      T="wgmma:1,4,8,1,1,64,6,8,1,0,0,1; wgmma:1,4,8,1,1,64,8,8,1,0,0,1; wgmma:1,4,8,1,1,64,8,8,1,0,0,1 stream-k"
      for d in 0 1; do echo "# HM_WGMMA_PRELOAD=$d"; timeout 100 $P --m 33,64,128 --define HM_WGMMA_PRELOAD=$d --tiles "$T"; done
      for nk in "28672 8192" "8192 28672" "28672 4096"; do read -r n k <<< "$nk"; for d in 0 1; do
        timeout 60 $P --m 1024 --n $n --k $k --define HM_WGMMA_PRELOAD=$d; done; done
    } 2>&1 | grep -v "^ *skip" | tee "$OUT/stages.txt" ;;
    # the producer's activation loader with one running pointer (the old code) against four (the default), and
    # more producer registers, on the tuner's kernels (verified) at M = 64..4096 and the issue's other shapes
    loaders) { P="$PROFILE --reps 12 --verify"
      for d in HM_LOADER_POINTERS=1 HM_LOADER_POINTERS=4 HM_PRODUCER_REGS=104; do echo "# $d"
        timeout 100 $P --m 64,1024,4096 --define $d
        for nk in "8192 28672" "28672 4096"; do read -r n k <<< "$nk"; timeout 60 $P --m 1024 --n $n --k $k --define $d; done
      done
    } 2>&1 | grep -v "^ *skip" | tee "$OUT/loaders.txt" ;;
    # the wide form with TMA activations (GemmDenseWgmmaWideTmaSpec, the tuner's past M = 128 since a9a6c98):
    # stages and schedules verified against the reference beside the tuner's kernel, three shapes, three formats
    tma) { P="$PROFILE --reps 12 --verify"
      T="widetma:4,4,2,1,1,64,6,8,1,0,0,1; widetma:4,4,2,1,1,64,4,8,1,0,0,1; widetma:4,4,2,1,1,64,6,8,1,0,0,1 data-parallel"
      timeout 150 $P --m 256,1024,4096 --tiles "$T"
      for nk in "8192 28672" "28672 4096"; do read -r n k <<< "$nk"; timeout 60 $P --m 1024 --n $n --k $k --tiles "$T"; done
      for f in "w8a16 s8 ch" "w4a16 u4 zp g128" mxfp4; do
        timeout 60 $P --m 1000 --act f16 --format "$f" --tiles "widetma:4,4,2,1,1,64,5,8,1,0,0,1"; done
      timeout 60 $P --m 300 --n 4032 --k 4224 --tiles "widetma:4,4,2,1,1,64,6,8,1,0,0,1"  # M and K tails
    } 2>&1 | grep -v "^ *skip" | tee "$OUT/tma.txt" ;;
    # decode tiles whose warps hold half a group (4 k16 steps of g128): group scales now go on their f32 partial
    # sums (they multiplied every operand pair before, which lost to the tuner's tile although their loads-only
    # floors were lower: 33.6 against 37.4 us); verified, M = 1 and 16, the issue's shapes and AWQ
    decode-k4) { P="$PROFILE --reps 20 --verify"
      V="1,1,2,1,4,256,3,8,2,S; 1,1,2,1,4,128,6,8,2,S; 1,1,4,1,4,256,3,8,1,S; 1,1,2,1,4,256,3,8,2,S stream-k"
      for nk in "28672 8192" "8192 28672" "28672 4096"; do read -r n k <<< "$nk"
        timeout 60 $P --n $n --k $k --m 1 --tiles "${V//S/1}"; timeout 60 $P --n $n --k $k --m 16 --tiles "${V//S/2}"; done
      timeout 60 $P --m 1,16 --format "w4a16 u4 zp g128" --act f16 --tiles "${V//S/2}"
      for f in mxfp4 nvfp4; do timeout 60 $P --m 1,16 --format $f --tiles "1,1,2,1,4,256,3,8,2,2; 1,1,4,1,4,256,3,8,1,2"; done
      timeout 60 $P --m 1,16 --format "w8a16 s8 ch" --tiles "1,1,4,1,4,128,4,8,1,0; 1,1,2,1,4,256,2,8,2,0"
      timeout 60 $P --m 1 --ablate 3 --tiles "${V//S/1}"
    } 2>&1 | grep -v "^ *skip" | tee "$OUT/decode-k4.txt" ;;
    # three decode CTAs an SM (12 warps at <= 168 registers, against 8 at 190): 128-deep stages fit three
    decode-occ) { P="$PROFILE --reps 20 --verify"
      V="1,1,2,1,2,128,4,8,3,S; 1,1,2,1,2,128,4,8,3,S data-parallel; 1,1,2,1,2,128,5,8,3,S data-parallel; 1,1,1,1,4,256,3,8,3,S; 1,1,1,1,4,256,3,8,3,S data-parallel"
      timeout 90 $P --m 1 --tiles "${V//S/1}"; timeout 90 $P --m 16 --tiles "${V//S/2}"
    } 2>&1 | grep -v "^ *skip" | tee "$OUT/decode-occ.txt" ;;
    # the decode kernels after the loaders' rewrite (one pointer, stride and inside-N flag a thread instead of a
    # predicate a chunk): the tuner's tile verified on the issue's three large shapes at M = 1 and 16, beside
    # three CTAs an SM (now under the 168-register cap) and Stream-K
    decode-loader) { P="$PROFILE --reps 20 --verify"
      V="1,1,2,1,2,128,4,8,3,S; 1,1,2,1,2,256,4,8,2,S stream-k"
      for nk in "28672 8192" "8192 28672" "28672 4096"; do read -r n k <<< "$nk"
        timeout 60 $P --n $n --k $k --m 1 --tiles "${V//S/1}"; timeout 60 $P --n $n --k $k --m 16 --tiles "${V//S/2}"; done
      timeout 60 $P --m 1 --ablate 3 --tiles "1,1,2,1,2,128,4,8,3,1"
    } 2>&1 | grep -v "^ *skip" | tee "$OUT/decode-loader.txt" ;;
    # where the decode kernel's benchmark time goes (NOTES-wna16 run 10): each variant's own run span on the device
    # clock (HM_TIMESTAMPS) beside one replay's event interval, for the decode build with only its weight copies
    # (a5, which ncu ran in 31.6 us against 36.1 in the timer), the full decode kernel, the M = 64 tile, and the
    # read ceiling's kernels (same bytes, same order)
    span) { P="$PROFILE --reps 20 --span"
      timeout 60 $P --m 1 --ablate 5; timeout 60 $P --m 1 --ablate 5 --flush write
      timeout 60 $P --m 1,16; timeout 60 $P --m 64; timeout 60 $P --m 64 --ablate 3
      timeout 60 $P --m 1 --n 28672 --k 4096
      timeout 100 python3 benchmarks/experiments/read_ceiling.py --mb 117.4,60.6
    } 2>&1 | grep -v "^ *skip" | tee "$OUT/span.txt" ;;
    # Stream-K decode with partial tiles that carry only the rows inside M (finish.cuh quad_row): the tuner's tile,
    # data-parallel (224 CTAs: 92 SMs run two, 40 one) against Stream-K (264 CTAs, two an SM), verified, with
    # each kernel's span split (run time of CTAs sharing an SM against those alone)
    sk-decode) { P="$PROFILE --reps 20 --verify --span"
      V="1,1,2,1,2,256,4,8,2,S stream-k"
      for nk in "28672 8192" "8192 28672" "28672 4096"; do read -r n k <<< "$nk"
        timeout 60 $P --n $n --k $k --m 1,8 --tiles "${V//S/1}"; timeout 60 $P --n $n --k $k --m 16 --tiles "${V//S/2}"; done
      for f in "w8a16 s8 ch" mxfp4 nvfp4; do timeout 60 $P --m 1,16 --format "$f" --tiles "tuner stream-k"; done
      timeout 60 $P --m 1 --ablate 5 --tiles "1,1,2,1,2,256,4,8,2,1 stream-k"
    } 2>&1 | grep -v "^ *skip" | tee "$OUT/sk-decode.txt" ;;
    # M = 64 without partial tiles: the tuner's 512 x 64 Stream-K tile moves ~24 MB of 128 KB partials each way
    # (56 tiles shared by 132 CTAs); 64 x 128 mma.sync tiles data-parallel on 224 CTAs move none
    m64-dp) { P="$PROFILE --reps 20 --verify --span"
      timeout 90 $P --m 64 --tiles "wgmma:1,4,8,1,1,64,8,8,1,0,0,1 split-k; 1,4,2,1,2,128,3,8,2,0 data-parallel; 1,4,2,1,1,128,4,8,2,0 data-parallel"
    } 2>&1 | grep -v "^ *skip" | tee "$OUT/m64-dp.txt" ;;
    # Balance without Stream-K's ranges: the decode tile's K split 2 / 4 / 8 ways over more CTAs than run at once
    # (448 / 896 / 1792), numbered part-major (stream_k.cuh self()), so that an SM whose CTA finishes takes the
    # next and no SM runs two whole tiles while another runs one (data-parallel: 92 SMs two, 40 one)
    split-waves) { P="$PROFILE --reps 20 --verify --span"
      V="1,1,2,1,2,256,4,8,2,@ split-k:2; 1,1,2,1,2,256,4,8,2,@ split-k:4; 1,1,2,1,2,256,4,8,2,@ split-k:8; 1,1,2,1,2,128,4,8,3,@ split-k:4"
      timeout 90 $P --m 1 --tiles "${V//@/1}"; timeout 90 $P --m 16 --tiles "${V//@/2}"
      timeout 90 $P --m 1 --n 28672 --k 4096 --tiles "${V//@/1}"
    } 2>&1 | grep -v "^ *skip" | tee "$OUT/split-waves.txt" ;;
    # M = 64's 16-us tail (RESULTS.md 2026-12-03 15:25): the slowest CTAs of the 512 x 64 Stream-K tile, full and
    # loads-only (a3), with the tiles and k-steps each ran
    m64-tail) { P="$PROFILE --reps 20 --span --slowest 8"
      timeout 60 $P --m 64; timeout 60 $P --m 64 --ablate 3
    } 2>&1 | grep -v "^ *skip" | tee "$OUT/m64-tail.txt" ;;
    # 8-bit codes at M = 1 / 16 (75% of the roofline needs 1-2 us on 8192 x 28672, 3.5 us on 28672 x 4096): the
    # tuner's 256-column tile (one CTA an SM, 112 of 132 SMs on N = 28672) against Stream-K on every SM, two
    # 128-column CTAs an SM (data-parallel and Stream-K) and six 256-column stages; the tuner's pair twice
    w8-sched) { P="$PROFILE --reps 20 --verify"
      for f in "w8a16 s8 ch" "w8a16 e4m3 ch"; do for nk in "28672 8192" "8192 28672" "28672 4096"; do
        read -r n k <<< "$nk"; for m in 1 16; do s=0; [ "$m" = 1 ] && s=1
          V="tuner; tuner stream-k; 1,1,2,1,2,128,4,8,2,$s; 1,1,2,1,2,128,4,8,2,$s stream-k; 1,1,4,1,2,128,6,8,1,$s"
          timeout 75 $P --format "$f" --n "$n" --k "$k" --m "$m" --tiles "$V; tuner; tuner stream-k"; done; done; done
    } 2>&1 | grep -v "^ *skip" | tee "$OUT/w8-sched.txt" ;;
    # M = 64 with half the tuner's columns (256 x 64 wgmma tile, two CTAs an SM: 64 KB partial tiles instead of
    # 128 KB, or none): data-parallel, split-K, Stream-K, and one CTA an SM with 8 stages, beside the tuner's
    # 512 x 64 Stream-K tile, on the three large shapes, verified
    m64-tiles) { P="$PROFILE --reps 20 --verify"
      W="wgmma:1,4,4,1,1,64,6,8,2,0,0,1"
      V="$W data-parallel; $W split-k; $W stream-k; wgmma:1,4,4,1,1,64,8,8,1,0,0,1 data-parallel; tuner"
      for nk in "28672 8192" "8192 28672" "28672 4096"; do read -r n k <<< "$nk"; timeout 120 $P --n $n --k $k --m 64 --tiles "$V"; done
    } 2>&1 | grep -v "^ *skip" | tee "$OUT/m64-tiles.txt" ;;
    # what a Stream-K segment change costs the decode kernel: its weight-copies-only build (a5) and the same without
    # the tile finish (a6: no k-warp reduction, partial, counter or store), data-parallel against Stream-K (264)
    # in one process each, twice, with each CTA's run (span) and the slowest CTAs
    sk-cost) { P="$PROFILE --reps 20 --span --slowest 6"
      for a in 5 6; do timeout 90 $P --m 1 --ablate $a --tiles "tuner stream-k; tuner; tuner stream-k"; done
    } 2>&1 | grep -v "^ *skip" | tee "$OUT/sk-cost.txt" ;;
    # which part of a partial tile's finish the copies-only Stream-K build pays for (a5 Stream-K ran 5-6 us over
    # a5 data-parallel, a6 -- no finish -- not at all; deferring the mid-run fence changed nothing: 3d737a3):
    # HM_FINISH_STEPS 0..5 (finish.cuh; store.cuh then) under Stream-K in one process, data-parallel first, twice
    sk-bisect) { P="$PROFILE --reps 20 --span --ablate 5"
      V="tuner stream-k"; for n in 0 1 2 3 4 5 0 5; do V="$V; tuner stream-k +HM_FINISH_STEPS=$n"; done
      timeout 120 $P --m 1 --tiles "$V"
    } 2>&1 | grep -v "^ *skip" | tee "$OUT/sk-bisect.txt" ;;
    # Stream-K against the tuner's schedule at M = 1 and 16, every 4- and 8-bit format on 28672 x 8192 and s4 on the
    # other two shapes, in one process each (the fix-up of 3-4 us a CTA at the end of a launch is down to ~1-3)
    sk-formats) { P="$PROFILE --reps 20 --verify --span"
      for nk in "8192 28672" "28672 4096"; do read -r n k <<< "$nk"; timeout 60 $P --n $n --k $k --m 1,16 --tiles "tuner stream-k"; done
      for f in "w4a16 s4 g128" "w4a16 u4 zp g128" "w8a16 s8 ch" "w8a16 e4m3 ch" mxfp4 nvfp4; do
        timeout 60 $P --m 1,16 --format "$f" --tiles "tuner stream-k"; done
    } 2>&1 | grep -v "^ *skip" | tee "$OUT/sk-formats.txt" ;;
    # store.cuh HM_HEAD_SETTLE (experiments/wna16-head-settle.patch, apply it first; lost at a27192e): the CTA ending
    # on a tile's head settles it from its registers when the rest is in
    sk-settle) { P="$PROFILE --reps 20 --verify --span"
      V="tuner stream-k"; for n in 1 3 6; do V="$V; tuner stream-k +HM_HEAD_SETTLE=$n"; done
      for nk in "28672 8192" "8192 28672" "28672 4096"; do read -r n k <<< "$nk"; timeout 90 $P --n $n --k $k --m 1,16 --tiles "$V"; done
      for f in mxfp4 nvfp4; do timeout 90 $P --m 1,16 --format "$f" --tiles "$V"; done
    } 2>&1 | grep -v "^ *skip" | tee "$OUT/sk-settle.txt" ;;
    # decode tiles split over CTAs, finished by the tile's first CTA (finish.cuh, then store.cuh, finish_shared_tile_by_first,
    # cooperative launches), against one CTA a tile, interleaved in one process each (schedule* = cooperative;
    # +COOP=0: the same plan launched without the attribute), verified; 456165d also timed the counter form
    # (HM_FIXUP_BY_LAST=1, since removed): RESULTS.md 2026-12-03 21:55
    sk-first) { P="$PROFILE --reps 20 --verify"
      V="tuner; tuner data-parallel; tuner stream-k; tuner stream-k +COOP=0; tuner; tuner data-parallel; tuner stream-k"
      for nk in "28672 8192" "8192 28672" "28672 4096"; do read -r n k <<< "$nk"; timeout 150 $P --n $n --k $k --m 1,16 --tiles "$V"; done
      for f in mxfp4 nvfp4; do timeout 100 $P --m 1,16 --format "$f" --tiles "$V"; done
    } 2>&1 | grep -v "^ *skip" | tee "$OUT/sk-first.txt" ;;
    # M 9..16 on wgmma (m64n16k16, the dequant overlapping the asynchronous MMA) against the tuner's mma.sync decode
    # tile, now that the producer, the loader fixes and the decode fix-up exist (wgmma N = 16 lost in run 6, before
    # them): one warpgroup 2 CTAs an SM, two with a producer, one with a producer; Stream-K (cooperative) and one CTA
    # a tile; verified, interleaved, three shapes and MXFP4 (built 2026-12-03 after the device time ran out: they
    # compile without spills, 128-203 registers; not yet run)
    m16-wgmma) { P="$PROFILE --reps 20 --verify"
      A="wgmma:1,1,4,1,1,64,8,8,2"; B="wgmma:1,1,8,1,1,64,8,8,1,0,0,1"; C="wgmma:1,1,4,1,1,64,6,8,2,0,0,1"
      V="tuner; $A stream-k; $A data-parallel; $B stream-k; $C stream-k; tuner; $A stream-k"
      for nk in "28672 8192" "8192 28672" "28672 4096"; do read -r n k <<< "$nk"; timeout 150 $P --n $n --k $k --m 9,16 --tiles "$V"; done
      timeout 120 $P --m 16 --format mxfp4 --tiles "$V"
    } 2>&1 | grep -v "^ *skip" | tee "$OUT/m16-wgmma.txt" ;;
    # three and four decode CTAs an SM (12 / 16 warps; 128-deep stages need only 125-164 registers since the loaders
    # were slimmed, run 10) under Stream-K, against the tuner's two, at M = 1 / 16, verified
    occ34) { P="$PROFILE --reps 20 --verify"
      for m in 1 16; do s=1; [ "$m" = 16 ] && s=2
        V="tuner; 1,1,2,1,2,256,2,8,3,$s stream-k; 1,1,2,1,2,128,5,8,3,$s stream-k; 1,1,2,1,2,128,3,8,4,$s stream-k; tuner"
        for nk in "28672 8192" "8192 28672" "28672 4096"; do read -r n k <<< "$nk"; timeout 100 $P --n $n --k $k --m $m --tiles "$V"; done
        timeout 100 $P --m $m --format mxfp4 --tiles "$V"; done
    } 2>&1 | grep -v "^ *skip" | tee "$OUT/occ34.txt" ;;
    # M = 64's slow copies (loads-only a3 CTAs ran 27.5 to 52.7 us on equal ranges): the 512 x 64 tile with 8 and 4
    # stages under Stream-K, data-parallel (56 CTAs, a whole tile each) and split-K, full and loads-only, with each
    # CTA's run (--span --slowest)
    m64-diag) { T="wgmma:1,4,8,1,1,64"; P="$PROFILE --reps 20 --m 64 --span --slowest 6"
      V="tuner stream-k; $T,4,8,1,0,0,1 stream-k; $T,8,8,1,0,0,1 data-parallel; $T,8,8,1,0,0,1 split-k"
      timeout 120 $P --tiles "$V"; timeout 120 $P --ablate 3 --tiles "$V"
    } 2>&1 | grep -v "^ *skip" | tee "$OUT/m64-diag.txt" ;;
    # which step of the counter form's fix-up makes M = 64's tail (finish.cuh HM_FIXUP_STEPS 0-3; HM_FINISH_STEPS=1: no
    # finish at all), split-K and Stream-K, one process, each CTA's run (--span). Since run 16 the wgmma form spreads
    # its fix-up, which HM_FIXUP_STEPS does not cut: this step measures the last arrival's at commit 269e004 only;
    # since 1d930bd HM_SWAPPED_STORE_PAIRS touches only the wgmma N = 16 form, so its variants here equal the tuner's
    m64-fixup) { T="wgmma:1,4,8,1,1,64,8,8,1,0,0,1"; P="$PROFILE --reps 20 --span"
      V="tuner; tuner stream-k +HM_SWAPPED_STORE_PAIRS=0"; for sch in split-k stream-k; do V="$V; $T $sch +HM_FINISH_STEPS=1"
        for s in 0 1 2; do V="$V; $T $sch +HM_FIXUP_STEPS=$s"; done; done
      timeout 200 $P --m 64 --verify --tiles "$V; tuner stream-k"
      for nk in "8192 28672" "28672 4096"; do read -r n k <<< "$nk"
        timeout 100 $P --n $n --k $k --m 64 --verify --tiles "tuner stream-k +HM_SWAPPED_STORE_PAIRS=0; tuner stream-k"; done
      timeout 100 $P --m 1024 --verify --tiles "tuner data-parallel +HM_SWAPPED_STORE_PAIRS=0; tuner data-parallel"
    } 2>&1 | grep -v "^ *skip" | tee "$OUT/m64-fixup.txt" ;;
    # the spread fix-up (finish.cuh finish_spread, the wgmma form's default since run 16; the runs that measured it
    # against the last arrival's and its variants are the steps of 269e004 and 160af34): the tuner's plan at
    # M = 33, 64 and 128 on the issue's five shapes, verified, each CTA's run
    spread) { P="$PROFILE --reps 20 --span --verify"
      for nk in "28672 8192" "8192 28672" "28672 4096" "8192 8192" "4096 14336"; do read -r n k <<< "$nk"
        timeout 120 $P --n $n --k $k --m 33,64,128 --tiles "tuner"; done
    } 2>&1 | grep -v "^ *skip" | tee "$OUT/spread.txt" ;;
    # the wgmma rate of the register-A form alone and behind the s4 dequantisation (experiments/wgmma_rate.py), then
    # the 256-column M = 33..128 tile (one CTA an SM, Stream-K) against the tuner's 512-column one on the five shapes
    wgmma-rate) timeout 120 python3 benchmarks/experiments/wgmma_rate.py 2>&1 | tee "$OUT/wgmma-rate.txt" ;;
    few-tiles) { P="$PROFILE --reps 20 --span --verify"
      for nk in "8192 8192" "4096 14336" "28672 4096" "8192 28672" "28672 8192"; do read -r n k <<< "$nk"
        timeout 150 $P --n $n --k $k --m 33,64,128 --tiles "tuner; wgmma:1,4,4,1,1,64,8,8,1,0,0,1 stream-k; tuner"; done
    } 2>&1 | grep -v "^ *skip" | tee "$OUT/few-tiles.txt" ;;
    # the same at M = 64 on the two few-tile shapes only (after the uniform warp index of run 20)
    few-tiles64) { P="$PROFILE --reps 20 --verify"
      for nk in "8192 8192" "4096 14336"; do read -r n k <<< "$nk"
        timeout 100 $P --n $n --k $k --m 64 --tiles "wgmma:1,4,4,1,1,64,8,8,1,0,0,1 stream-k; tuner; wgmma:1,4,4,1,1,64,8,8,1,0,0,1 stream-k"; done
    } 2>&1 | grep -v "^ *skip\|^copy" | tee "$OUT/few-tiles64.txt" ;;
    # the two smaller shapes at decode (36-43% of the roofline at M = 1, split-K of 7-8 k-steps a CTA): other splits,
    # Stream-K, 256- and 64-column tiles, verified, each CTA's run
    small-decode) { P="$PROFILE --reps 20 --verify --span"
      V="tuner split-k:2; tuner split-k:4; tuner stream-k; 1,1,4,1,2,256,4,8,1,S split-k:8; 1,1,4,1,2,256,4,8,1,S stream-k"
      V="$V; 1,1,1,1,2,256,4,8,3,S; 1,1,1,1,2,256,4,8,3,S stream-k; 1,1,2,1,1,256,4,8,2,S; 1,1,2,1,2,128,6,8,2,S"
      for nk in "4096 14336" "8192 8192"; do read -r n k <<< "$nk"
        timeout 150 $P --n $n --k $k --m 1 --tiles "${V//S/1}"; timeout 150 $P --n $n --k $k --m 16 --tiles "${V//S/2}"; done
    } 2>&1 | grep -v "^ *skip\|^copy" | tee "$OUT/small-decode.txt" ;;
    # decode on smaller shapes (Llama-class layers): the tuner's two CTAs an SM against one (a K split with at most
    # one CTA an SM, or one CTA a tile), the tuner's plan timed again last (the noise), verified
    one-per-sm) { P="$PROFILE --reps 25 --verify --span"
      for nks in "4096 4096 split-k:4" "6144 4096 split-k:2" "4096 14336 split-k:4" "14336 4096 data-parallel" \
                 "8192 8192 split-k:2" "2048 8192 split-k:8"; do read -r n k s <<< "$nks"
        timeout 100 $P --n $n --k $k --m 1,16 --tiles "tuner $s; tuner"; done
    } 2>&1 | grep -v "^ *skip\|^copy" | tee "$OUT/one-per-sm.txt" ;;
    # the tuner's split over one CTA an SM for short CTAs (SHORT_SPLIT_STEPS) against the resident split it replaced,
    # then the tuner again; s4 and MXFP4, verified
    short-splits) { P="$PROFILE --reps 25 --verify"
      for f in "w4a16 s4 g128" mxfp4; do for nks in "4096 4096 split-k:8" "4096 14336 split-k:8" "2048 8192 split-k:16"; do
        read -r n k s <<< "$nks"; timeout 100 $P --format "$f" --n $n --k $k --m 1,16 --tiles "tuner $s; tuner"; done; done
    } 2>&1 | grep -v "^ *skip\|^copy" | tee "$OUT/short-splits.txt" ;;
    # decode layers where Stream-K over 264 resident CTAs leaves ~3-5 k-steps a CTA (NOTES run 18 lead 2; not yet
    # run): the tuner against a split of 2 (at most one CTA an SM), one CTA a tile, and Stream-K over 132 CTAs, verified
    short-sk) { P="$PROFILE --reps 25 --verify --span"
      V="tuner split-k:2; tuner data-parallel; 1,1,2,1,2,256,4,8,1,S stream-k; tuner"
      for nk in "6144 4096" "5120 5120" "11008 4096" "4096 11008"; do read -r n k <<< "$nk"
        timeout 100 $P --n $n --k $k --m 1 --tiles "${V//S/1}"; timeout 100 $P --n $n --k $k --m 16 --tiles "${V//S/2}"; done
    } 2>&1 | grep -v "^ *skip\|^copy" | tee "$OUT/short-sk.txt" ;;
    # the uniform stage wait (experiments/wna16-uniform-wait.patch, applied to this call's copy only) with the words
    # read per k16 step: no R2UR and the fix-up's spills as today (36 / 76 bytes; with preload 60 / 228), against
    # the default, verified (NOTES run 18 lead 1; not yet run)
    uniform-preload) { tree_patch < benchmarks/experiments/wna16-uniform-wait.patch || exit 1
      P="$PROFILE --reps 20 --verify"
      for nk in "28672 8192" "8192 28672" "28672 4096" "8192 8192"; do read -r n k <<< "$nk"
        for d in HM_UNIFORM_WAIT=0 HM_UNIFORM_WAIT=1,HM_WGMMA_PRELOAD=0 HM_UNIFORM_WAIT=0,HM_WGMMA_PRELOAD=0; do
          timeout 100 $P --n $n --k $k --m 33,64,128 --define $d; done; done
      for f in mxfp4 "w8a16 e4m3 ch"; do for d in HM_UNIFORM_WAIT=0 HM_UNIFORM_WAIT=1,HM_WGMMA_PRELOAD=0; do
        timeout 60 $P --m 64 --format "$f" --define $d; done; done
      tree_patch -R < benchmarks/experiments/wna16-uniform-wait.patch
    } 2>&1 | grep -v "^ *skip\|^copy" | tee "$OUT/uniform-preload.txt" ;;
    # where the M = 64 kernel's MMA warps wait without the dequant (HM_ABLATE=2: 54 us against 42 for the loads
    # alone, NOTES run 18 lead 1; not yet run)
    ncu-m64-a2) bash benchmarks/ncu_wna16.sh p512_m64_a2 --m 64 --ablate 2 2>&1 | tee "$OUT/ncu-m64-a2.txt" | tail -40
      rm -f "$OUT"/*.ncu-rep ;;
    # the activations' share of an SM's traffic past decode (each n tile re-reads its A tile; 56 tiles at N = 28672):
    # HM_NO_A_LOADS=1 drops their copies, with and without the MMAs and dequant (a3); wrong values by design
    no-a) { P="$PROFILE --reps 20 --span"
      for nk in "28672 8192" "8192 8192"; do read -r n k <<< "$nk"
        for a in 0 3; do for d in HM_NO_A_LOADS=0 HM_NO_A_LOADS=1; do
          timeout 90 $P --n $n --k $k --m 64,128 --ablate $a --define $d; done; done; done
      for d in HM_NO_A_LOADS=0 HM_NO_A_LOADS=1; do timeout 90 $P --m 1024 --define $d; done
    } 2>&1 | grep -v "^ *skip\|^copy" | tee "$OUT/no-a.txt" ;;
    # the tuner's Stream-K over one CTA an SM where the resident CTAs would get < 8 k-steps (tuning.SHORT_SPLIT_STEPS)
    # against Stream-K over every resident CTA, s4 and MXFP4, verified
    short-sk2) { P="$PROFILE --reps 25 --verify"
      for f in "w4a16 s4 g128" mxfp4; do for nk in "6144 4096" "5120 5120" "11008 4096" "4096 11008" "3072 4096"; do
        read -r n k <<< "$nk"; timeout 100 $P --format "$f" --n $n --k $k --m 1,16 --tiles "tuner; tuner stream-k; tuner"; done; done
    } 2>&1 | grep -v "^ *skip\|^copy" | tee "$OUT/short-sk2.txt" ;;
    # MXFP4 on bf16 with the e2m1 exponent fix folded into the ue8m0 scale pairs (HM_FOLD_UE8M0; no f32 partial
    # sums for the scales), against the default, verified
    # (experiments/wna16-fold-ue8m0.patch, applied to this call's copy only; ran 13:41, not merged)
    fold) { tree_patch < benchmarks/experiments/wna16-fold-ue8m0.patch || exit 1
      P="$PROFILE --reps 25 --verify"
      for nk in "28672 8192" "8192 28672" "28672 4096"; do read -r n k <<< "$nk"
        for d in 0 1 0 1; do timeout 100 $P --format mxfp4 --n $n --k $k --m 1,16,64 --define HM_FOLD_UE8M0=$d; done; done
      tree_patch -R < benchmarks/experiments/wna16-fold-ue8m0.patch
    } 2>&1 | grep -v "^ *skip\|^copy" | tee "$OUT/fold.txt" ;;
    # what the split-tile fix-up costs the M = 64 kernel on few-tile shapes: Stream-K against split-K over 128 CTAs,
    # each with the fix-up cut out (HM_FINISH_STEPS=-1: wrong values, timing only; 1 loses the MMAs, 2 still runs
    # the spread fix-up)
    fixup-floor) { P="$PROFILE --reps 20 --span"
      for nk in "8192 8192 8" "8192 28672 8" "4096 14336 16"; do read -r n k s <<< "$nk"
        timeout 100 $P --n $n --k $k --m 64 --tiles "tuner split-k:$s; tuner stream-k +HM_FINISH_STEPS=-1; tuner split-k:$s +HM_FINISH_STEPS=-1"
      done
    } 2>&1 | grep -v "^ *skip\|^copy" | tee "$OUT/fixup-floor.txt" ;;
    # split-K over thread-block clusters, each tile reduced through its cluster's shared memory
    # (experiments/wna16-cluster-splitk.patch, applied to this call's copy only; ran 13:56, not merged), against the
    # tuner's Stream-K, verified
    cluster) { tree_patch < benchmarks/experiments/wna16-cluster-splitk.patch || exit 1
      P="$PROFILE --reps 20 --verify --span"; T="cluster:1,4,8,1,1,64,8,8,1,0,0,1"
      for nks in "8192 8192 8 4" "8192 28672 8 4" "4096 14336 8 8" "28672 8192 2 0" "28672 4096 2 0"; do
        read -r n k s s2 <<< "$nks"
        timeout 100 $P --n $n --k $k --m 33,64 --tiles "tuner; $T split-k:$s"
        [ "$s2" != 0 ] && timeout 100 $P --n $n --k $k --m 128 --tiles "tuner; $T split-k:$s2"
      done
      tree_patch -R < benchmarks/experiments/wna16-cluster-splitk.patch
    } 2>&1 | grep -v "^ *skip\|^copy" | tee "$OUT/cluster.txt" ;;
    # run 19's M = 64 gaps split between the finish and the loop's code: the tuner's kernel, the same kernel skipping
    # its finish at run time (HM_FINISH_STEPS=-2: the loop compiled as in the real kernel), and the finish compiled
    # out (-1: the leaner loop); wrong values by design
    finish-split) { P="$PROFILE --reps 20 --span"
      for nk in "28672 8192" "8192 28672" "28672 4096" "8192 8192"; do read -r n k <<< "$nk"
        timeout 100 $P --n $n --k $k --m 64 --tiles "tuner stream-k +HM_FINISH_STEPS=-2; tuner stream-k +HM_FINISH_STEPS=-1"
      done
    } 2>&1 | grep -v "^ *skip\|^copy" | tee "$OUT/finish-split.txt" ;;
    # a spread finish's participants take the other sharers' slots by bulk copies into the idle stage ring
    # (HM_FIXUP_BULK=1) instead of 16-byte loads, against the default, verified (NOTES run 19 lead 1)
    # (experiments/wna16-fixup-bulk.patch, applied to this call's copy only; ran 14:16, not merged)
    fixup-bulk) { tree_patch < benchmarks/experiments/wna16-fixup-bulk.patch || exit 1
      P="$PROFILE --reps 20 --verify --span"
      for nk in "28672 8192" "8192 28672" "28672 4096" "8192 8192" "4096 14336"; do read -r n k <<< "$nk"
        timeout 100 $P --n $n --k $k --m 64 --tiles "tuner stream-k +HM_FIXUP_BULK=1"; done
      timeout 100 $P --m 33,128 --tiles "tuner stream-k +HM_FIXUP_BULK=1"
      tree_patch -R < benchmarks/experiments/wna16-fixup-bulk.patch
    } 2>&1 | grep -v "^ *skip\|^copy" | tee "$OUT/fixup-bulk.txt" ;;
    # the links of M = 64's spread finish (finish.cuh HM_SPREAD_STEPS 0-3, skipped at run time: the real k-loop), one
    # process a step (2 leaves the tile counters dirty); each process times the tuner's real kernel first
    spread-steps) { P="$PROFILE --reps 20 --span"
      for nk in "28672 8192" "8192 8192"; do read -r n k <<< "$nk"
        for st in 0 1 3 2; do timeout 60 $P --n $n --k $k --m 64 --tiles "tuner stream-k +HM_SPREAD_STEPS=$st"; done; done
    } 2>&1 | grep -v "^ *skip\|^copy" | tee "$OUT/spread-steps.txt" ;;
    # the one-token decode tile (the tuner's at M = 1 for scale groups <= 32) against the same tile scaling every
    # token column, under the tuner's schedule of each shape, verified; s4 g128 (not one-token) as a control; an odd
    # shape (K and N tails) verified
    one-token) { P="$PROFILE --reps 25 --verify"; T="1,1,2,1,2,256,4,8,2,1,0,0"
      for f in mxfp4 nvfp4 "w4a16 s4 g128"; do
        for nks in "28672 8192 stream-k" "8192 28672 split-k" "28672 4096 data-parallel"; do read -r n k s <<< "$nks"
          timeout 100 $P --format "$f" --n $n --k $k --m 1 --tiles "$T $s; tuner"; done; done
      for f in mxfp4 nvfp4; do timeout 60 $P --format $f --n 4032 --k 4224 --m 1 --reps 5; done
    } 2>&1 | grep -v "^ *skip\|^copy" | tee "$OUT/one-token.txt" ;;
    # the producer pipeline's compute warps with their warp index as tid >> 5 (HM_UNIFORM_WARP=0, the form before run
    # 20: 32 R2UR a stage in the wgmma k-loop) against the tuner's kernel (broadcast from lane 0), M = 64 on five
    # shapes, M = 33 / 128 / 1024, MXFP4, NVFP4 and s8; verified (ran 15:50 the other way round, NOTES run 20)
    uniform-warp) { P="$PROFILE --reps 20 --verify"
      for nk in "28672 8192" "8192 28672" "28672 4096" "8192 8192" "4096 14336"; do read -r n k <<< "$nk"
        timeout 100 $P --n $n --k $k --m 64 --tiles "tuner +HM_UNIFORM_WARP=0; tuner +HM_WGMMA_PRELOAD=0"; done
      timeout 100 $P --m 33,128,1024 --tiles "tuner +HM_UNIFORM_WARP=0"
      for f in mxfp4 nvfp4 "w8a16 s8 ch"; do timeout 100 $P --format "$f" --m 64 --tiles "tuner +HM_UNIFORM_WARP=0"; done
    } 2>&1 | grep -v "^ *skip\|^copy" | tee "$OUT/uniform-warp.txt" ;;
    # W8A16 M = 16: the 128-column swapped tile, two CTAs an SM (w8-m16's best on the 28672-wide shapes), under
    # Stream-K and the tuner's grid rule, on the issue's five shapes; M = 1 likewise (verified)
    w8-m16b) { P="$PROFILE --reps 25 --verify"
      T="1,1,2,1,2,128,4,8,2,S stream-k; tuner; 1,1,2,1,2,128,4,8,2,S"
      for f in "w8a16 s8 ch" "w8a16 e4m3 ch"; do
        for nk in "28672 4096" "28672 8192" "8192 28672"; do read -r n k <<< "$nk"
          timeout 100 $P --format "$f" --n $n --k $k --m 16 --tiles "${T//S/2}"; done; done
      for nk in "8192 8192" "4096 14336"; do read -r n k <<< "$nk"
        timeout 100 $P --format "w8a16 s8 ch" --n $n --k $k --m 16 --tiles "${T//S/2}"; done
      timeout 100 $P --format "w8a16 s8 ch" --n 28672 --k 4096 --m 1 --tiles "${T//S/1}"
    } 2>&1 | grep -v "^ *skip\|^copy" | tee "$OUT/w8-m16b.txt" ;;
    # the wide wgmma form with its warpgroup indices broadcast from lane 0 too (the default since run 20: no R2UR in its
    # k-loop, 174 -> 159 SASS lines) against HM_UNIFORM_WARP=0 (neither broadcast), M >= 256, verified
    wide-uniform) { P="$PROFILE --reps 15 --verify"
      timeout 150 $P --m 256,1024,4096 --tiles "tuner +HM_UNIFORM_WARP=0; tuner"
      for nk in "8192 28672" "28672 4096" "8192 8192" "4096 14336"; do read -r n k <<< "$nk"
        timeout 100 $P --n $n --k $k --m 1024 --tiles "tuner +HM_UNIFORM_WARP=0; tuner"; done
      for f in mxfp4 "w8a16 s8 ch"; do timeout 100 $P --format "$f" --m 1024 --tiles "tuner +HM_UNIFORM_WARP=0; tuner"; done
      timeout 60 $P --m 1000 --act f16 --format "w4a16 u4 zp g128"  # M tail, f16, zero points
    } 2>&1 | grep -v "^ *skip\|^copy" | tee "$OUT/wide-uniform.txt" ;;
    # M = 1024 on the two 28672 shapes, the tuner's kernel twice, verified, each CTA's run: the 16:13 bench gave
    # 8192 x 28672 583 us (1.19x cuBLAS) against 684-694 in profile_wna16 at 16:05
    wide-confirm) { P="$PROFILE --reps 20 --verify --span"
      for nk in "8192 28672" "28672 8192"; do read -r n k <<< "$nk"; timeout 100 $P --n $n --k $k --m 1024 --tiles "tuner"; done
    } 2>&1 | grep -v "^ *skip\|^copy" | tee "$OUT/wide-confirm.txt" ;;
    # tile depth and k-warps around the two lines within ~1.5% of the issue's targets (NOTES run 20 lead 3): W8A16
    # 28672 x 4096 M = 16 (74%) and MXFP4 M = 1 (69-70%), the tuner's tile first and last, verified
    near-lines) { P="$PROFILE --reps 25 --verify"
      W="tuner; 1,1,2,1,2,128,5,8,2,2; 1,1,2,1,4,256,3,8,2,2; 1,1,2,1,2,128,3,8,2,2; 1,1,2,1,1,128,4,8,2,2; tuner"
      for f in "w8a16 s8 ch" "w8a16 e4m3 ch"; do timeout 100 $P --format "$f" --n 28672 --k 4096 --m 16 --tiles "$W"; done
      timeout 100 $P --format "w8a16 s8 ch" --n 28672 --k 8192 --m 16 --tiles "$W"
      X="1,1,2,1,2,256,3,8,2,1,0,0,1 S; 1,1,2,1,2,256,5,8,2,1,0,0,1 S; 1,1,2,1,4,256,3,8,2,1,0,0,1 S; 1,1,2,1,2,128,6,8,2,1,0,0,1 S; 1,1,2,1,2,128,8,8,2,1,0,0,1 S; tuner"
      timeout 100 $P --format mxfp4 --n 28672 --k 8192 --m 1 --tiles "${X//S/stream-k}"
      timeout 100 $P --format mxfp4 --n 8192 --k 28672 --m 1 --tiles "${X//S/split-k}"
    } 2>&1 | grep -v "^ *skip\|^copy" | tee "$OUT/near-lines.txt" ;;
    # bf16 float weights at M <= 16 with the exponent fix on the activations (kFixOnActivations, the default) against
    # the fix on every weight pair (HM_FIX_ON_ACT=0), interleaved, verified; then the GPU tests of those formats
    fix-act) { P="$PROFILE --reps 25 --verify"
      for f in mxfp4 nvfp4 "w8a16 e4m3 ch"; do
        for nk in "28672 8192" "8192 28672" "28672 4096"; do read -r n k <<< "$nk"
          timeout 100 $P --format "$f" --n $n --k $k --m 1,16 --tiles "tuner +HM_FIX_ON_ACT=0; tuner; tuner +HM_FIX_ON_ACT=0; tuner"; done; done
      timeout 200 python3 -m pytest -q -m gpu tests/gpu/test_gemm_dense_gpu.py -p no:cacheprovider -k \
        "across_their_range or (matches_the_reference and bf16 and (mxfp4 or nvfp4 or e4m3 or e5m2 or mxfp6 or e3m4))" | tail -8
    } 2>&1 | grep -v "^ *skip\|^copy" | tee "$OUT/fix-act.txt" ;;
    # s4 at M = 1 on the one-token tile with the zero offset on the partial sums (kZeroOnSums: operands 128 + c, one warp
    # sum of the activations a part) against the tuner's tile and the one-token tile with the zero on every pair
    # (HM_ZERO_ON_SUMS=0), each schedule as the tuner's, verified; then odd shapes
    zero-sums) { P="$PROFILE --reps 25 --verify"; T="1,1,2,1,2,256,4,8,2,1,0,0,1"
      for nks in "28672 8192 stream-k" "8192 28672 split-k" "28672 4096 data-parallel" "8192 8192 stream-k" "4096 14336 split-k"; do
        read -r n k s <<< "$nks"
        timeout 100 $P --n $n --k $k --m 1 --tiles "tuner; $T $s; $T $s +HM_ZERO_ON_SUMS=0; tuner; $T $s"; done
      timeout 60 $P --n 4032 --k 4224 --m 1 --reps 5 --tiles "$T stream-k; $T split-k; $T data-parallel"
      timeout 60 $P --n 4032 --k 4224 --m 1 --reps 5 --format "w4a16 u4 zp g128" --tiles "$T stream-k"
    } 2>&1 | grep -v "^ *skip\|^copy" | tee "$OUT/zero-sums.txt" ;;
    # the tuner's M = 1 s4 kernel (the one-token tile with kZeroOnSums) against the same tile with the zero on every pair
    # and the M <= 8 tile it replaced, f16 and bf16, the issue's five shapes, verified; then the GPU tests of it
    zero-sums2) { P="$PROFILE --reps 25 --verify"; T="1,1,2,1,2,256,4,8,2,1,0,0"
      for act in bf16 f16; do
        for nks in "28672 8192 stream-k" "8192 28672 split-k" "28672 4096 data-parallel" "8192 8192 split-k" "4096 14336 split-k"; do
          read -r n k s <<< "$nks"
          timeout 100 $P --act $act --n $n --k $k --m 1 --tiles "$T $s; tuner +HM_ZERO_ON_SUMS=0; tuner; $T $s"; done; done
      timeout 200 python3 -m pytest -q -m gpu tests/gpu/test_gemm_dense_gpu.py -p no:cacheprovider -k \
        "one_token_s4 or across_their_range or (matches_the_reference and s4_g128)" | tail -4
    } 2>&1 | grep -v "^ *skip\|^copy" | tee "$OUT/zero-sums2.txt" ;;
    # M = 16 s4 with two n64 blocks a warp (frag_n = 2: ~15% fewer instructions a weight at 8 k16 steps a warp, twice
    # the independent work in a warp) against the tuner's tile, interleaved, verified (NOTES-wna16 run 22)
    fn2) { P="$PROFILE --reps 25 --verify --m 16"
      V="1,1,2,2,2,256,4,8,1,2 stream-k; 1,1,2,2,2,256,3,8,1,2 stream-k; 1,1,1,2,2,256,4,8,2,2 stream-k"
      V="$V; 1,1,2,2,2,128,4,8,2,2 stream-k; 1,1,2,2,4,256,4,8,1,2 stream-k; 1,1,4,2,2,128,4,8,1,2 stream-k"
      timeout 150 $P --tiles "$V; tuner"
      timeout 150 $P --n 8192 --k 28672 --tiles "$V; tuner"
    } 2>&1 | grep -v "^ *skip\|^copy" | tee "$OUT/fn2.txt" ;;
    # with experiments/wna16-awq-zero-on-sums.patch applied: AWQ (u4, zero points per group) at M = 1 under bf16 with
    # its zero on the partial sums (the patched tuner's one-token tile) against the M <= 8 tile and the one-token tile
    # with the zero on the pairs, interleaved, verified; then the GPU tests of it
    zero-rows) { P="$PROFILE --reps 25 --verify --format"; T="1,1,2,1,2,256,4,8,2,1,0,0"
      for nks in "28672 8192 stream-k" "8192 28672 split-k" "28672 4096 data-parallel" "8192 8192 split-k" "4096 14336 split-k"; do
        read -r n k s <<< "$nks"
        timeout 100 $P "w4a16 u4 zp g128" --n $n --k $k --m 1 --tiles "$T $s; tuner +HM_ZERO_ON_SUMS=0; tuner; $T $s"; done
      timeout 200 python3 -m pytest -q -m gpu tests/gpu/test_gemm_dense_gpu.py -p no:cacheprovider -k \
        "one_token_4_bit or (matches_the_reference and (u4_zp_g128 or s4_g128))" | tail -4
    } 2>&1 | grep -v "^ *skip\|^copy" | tee "$OUT/zero-rows.txt" ;;
    # s8 codes straight into bf16 pairs (dequant::s8_bf16_pair, the default) against the f32 route (HM_S8_BF16_DIRECT=0),
    # interleaved, verified: decode on the three large shapes, M = 64 / 1024 (the wgmma kernels take the same pairs)
    s8-direct) { P="$PROFILE --reps 25 --verify --format"
      for nk in "28672 8192" "8192 28672" "28672 4096"; do read -r n k <<< "$nk"
        timeout 100 $P "w8a16 s8 ch" --n $n --k $k --m 1,16 --tiles "tuner +HM_S8_BF16_DIRECT=0; tuner; tuner +HM_S8_BF16_DIRECT=0; tuner"; done
      timeout 150 $P "w8a16 s8 ch" --m 64,1024 --tiles "tuner +HM_S8_BF16_DIRECT=0; tuner; tuner +HM_S8_BF16_DIRECT=0; tuner"
      timeout 60 $P "w8a16 s8 ch" --n 4032 --k 4224 --m 1,7,16,33,300 --reps 5
    } 2>&1 | grep -v "^ *skip\|^copy" | tee "$OUT/s8-direct.txt" ;;
    # what the 4-bit codes' zero subtraction (one paired FMA a pair) costs the s4 decode loop: the tuner's kernel
    # against a timing build that keeps the magic offset (HM_NO_ZERO_SUB=1, wrong values: not verified), interleaved
    zero-sub) { P="$PROFILE --reps 25"
      for nk in "28672 8192" "8192 28672" "28672 4096"; do read -r n k <<< "$nk"
        timeout 100 $P --n $n --k $k --m 1,16 --tiles "tuner +HM_NO_ZERO_SUB=1; tuner; tuner +HM_NO_ZERO_SUB=1"; done
    } 2>&1 | grep -v "^ *skip\|^copy" | tee "$OUT/zero-sub.txt" ;;
    # W8A16 at M = 9..16 (28672 x 4096 is the issue's one W8A16 line under 75%): the tuner's unswapped 256-column tile
    # against the swapped one with two n8 fragments of M, its schedules, and two CTAs an SM; verified
    w8-m16) { P="$PROFILE --reps 25 --verify"
      T="1,1,4,1,2,128,4,8,1,2; 1,1,4,1,2,128,4,8,1,2 stream-k; 1,1,4,1,2,128,4,8,1,2 data-parallel; 1,1,4,1,2,128,4,8,2 stream-k; 1,1,2,1,2,128,4,8,2,2"
      for f in "w8a16 s8 ch" "w8a16 e4m3 ch"; do for nk in "28672 4096" "28672 8192" "8192 28672"; do read -r n k <<< "$nk"
        timeout 100 $P --format "$f" --n $n --k $k --m 16 --tiles "$T"; done; done
    } 2>&1 | grep -v "^ *skip\|^copy" | tee "$OUT/w8-m16.txt" ;;
    # the decode lines with f16 activations beside bf16, each case in both, one after the other, in one process (the
    # f16 magic read takes two nibble positions a shift, bf16 one): W4A16 s4 g128 against cuBLAS, then MXFP4 / NVFP4
    f16-decode) { B="python3 benchmarks/bench_wna16.py --quick --reps 25 --chain 8 --act bf16,f16"
      timeout 200 $B --m 1,16,64 --formats "w4a16 s4 g128" --json "$OUT/f16-decode-w4.json" | tail -21
      timeout 150 $B --no-baselines --formats "mxfp4,nvfp4" --json "$OUT/f16-decode-fp4.json" | tail -25
    } 2>&1 | tee "$OUT/f16-decode.txt" ;;
    # the mma.sync kernel at M >= 1024 on this GPU (the issue's "M >= 1024 at >= 0.75x cuBLAS bf16 on mma.sync"; the
    # path of every target without wgmma): the LARGE_SMEM rule's 128 x 256 tile with 64- and 128-deep stages, under
    # the tuner's schedule and data-parallel, against the tuner's wgmma plan (timed first) and, last, cuBLAS in the
    # same process; then
    # the same tile without the dequantisation (HM_ABLATE=2, wrong values: this GPU's mma.sync pipeline ceiling)
    msync-big) { P="$PROFILE --reps 10"
      T="2,4,4,1,1,64,4,8,1; 2,4,4,1,1,64,4,8,1 data-parallel; 2,4,4,1,1,128,3,8,1; 2,4,4,1,1,128,3,8,1 data-parallel"
      for nk in "28672 8192" "8192 28672" "28672 4096"; do read -r n k <<< "$nk"
        timeout 100 $P --verify --n $n --k $k --m 1024,4096 --tiles "$T" | grep "M=\\|skip"; done
      timeout 80 $P --m 1024,4096 --tiles "2,4,4,1,1,64,4,8,1 +HM_ABLATE=2; 2,4,4,1,1,128,3,8,1 +HM_ABLATE=2" | grep "M="
      timeout 120 python3 benchmarks/bench_wna16.py --quick --reps 10 --m 1024,4096 --formats "w4a16 s4 g128" | tail -8
    } 2>&1 | tee "$OUT/msync-big.txt" ;;
    # msync-big's two stage depths for the other formats at 28672 x 8192, M = 1024, verified
    msync-formats) { P="$PROFILE --reps 10 --verify --m 1024"
      for f in "w4a16 u4 zp g128" "w8a16 s8 ch" "w8a16 e4m3 ch" mxfp4 nvfp4; do
        timeout 70 $P --format "$f" --tiles "2,4,4,1,1,64,4,8,1; 2,4,4,1,1,128,3,8,1" | grep "M=\\|skip"; done
    } 2>&1 | tee "$OUT/msync-formats.txt" ;;
    # 8-bit float codes by one sign-replicating byte permute a pair (HM_F8_PRMT=1, dequant/values.cuh): e4m3 per
    # channel at M = 1 / 16 on the three large shapes and M = 64 / 1024 on one, interleaved with the default build,
    # verified; then the check matrix's 8-bit float formats (e4m3 channel / block, e5m2, e3m4) built with it
    f8-prmt) { P="$PROFILE --reps 25 --verify --format"; F="w8a16 e4m3 ch"
      T="tuner; tuner +HM_F8_PRMT=0; tuner; tuner +HM_F8_PRMT=0"  # the permute is the default since NOTES run 31
      for nk in "28672 8192" "8192 28672" "28672 4096"; do read -r n k <<< "$nk"
        timeout 70 $P "$F" --n $n --k $k --m 1,16 --tiles "$T" | grep "M="; done
      timeout 70 $P "$F" --m 64,1024 --tiles "$T" | grep "M="
      timeout 150 $CHECK \
        --only e4m3_channel,e4m3_block,e5m2_channel,e3m4_g64 | tail -6
    } 2>&1 | tee "$OUT/f8-prmt.txt" ;;
    # the wgmma four-fragment form with 8-bit codes, all four steps' words preloaded (the default) against words read
    # per k16 step (+HM_WGMMA_PRELOAD=0), interleaved, verified, M = 64 / 128 (NOTES run 31: preloading won on H100)
    preload-wide) { P="$PROFILE --reps 25 --verify --m 64,128"; T="tuner; tuner +HM_WGMMA_PRELOAD=0; tuner; tuner +HM_WGMMA_PRELOAD=0"
      for f in "w8a16 s8 ch" "w8a16 e4m3 ch"; do timeout 90 $P --format "$f" --tiles "$T" | grep "M=\|skip"; done
      timeout 90 $P --format "w8a16 e4m3 ch" --act f16 --tiles "$T" | grep "M=\|skip"
    } 2>&1 | tee "$OUT/preload-wide.txt" ;;
    # the wgmma four-fragment form's preload against per-step words for u8 zero-point g128 (NOTES runs 31, 33): f16
    # reads per step by default (its preload spilled 22 LDL / STL into the loop), bf16 preloads; each is timed against
    # the other mode (+HM_WGMMA_PRELOAD=1 / 0), M = 64 / 128 at 28672 x 8192, interleaved, verified
    preload-u8) { P="$PROFILE --reps 25 --verify --m 64,128 --format"; F="w8a16 u8 zp g128"
      for am in f16:1 bf16:0; do a=${am%:*}; V="tuner +HM_WGMMA_PRELOAD=${am#*:}"
        timeout 90 $P "$F" --act $a --tiles "tuner; $V; tuner; $V" | grep "M=\|skip"; done
    } 2>&1 | tee "$OUT/preload-u8.txt" ;;
    # 28672 x 4096's decode tiles under Stream-K against the tuner's data-parallel plan (NOTES run 30): its 224 CTAs sit
    # two on 92 SMs and one on 40, and run 11 found the shared SMs' arithmetic the bound. The tuner runs 28672 x 8192
    # under Stream-K and keeps one CTA a tile here on the comparison of 2026-12-03 21:55 (tuning.DECODE_STREAM_K_FROM:
    # s4 M = 1 24.1 / 24.6 us, M = 16 tied); this repeats it on today's kernels, interleaved, verified
    sk-today) { P="$PROFILE --reps 25 --verify --n 28672 --k 4096"
      timeout 75 $P --m 1 --tiles "tuner; tuner stream-k; tuner; tuner stream-k" | grep "M=\|skip"
      timeout 75 $P --m 16 --tiles "tuner; tuner stream-k; tuner; tuner stream-k" | grep "M=\|skip"
    } 2>&1 | tee "$OUT/sk-today.txt" ;;
    # 128-deep decode stages against 256-deep ones at the same bytes in flight (8 x 128 against 4 x 256, two CTAs an
    # SM): at K = 4096 a CTA runs 16 stages of 256, and the last stage's arithmetic after its bytes land (~1/16 of the
    # run) is part of the ~8 us that does not scale with K (NOTES run 30); halving the stage halves that drain at more
    # barriers a tile. 28672 x 8192 is the control; interleaved, verified. Run 33 (H100): 128-deep lost 2-3.5% on both
    fine-stages) { P="$PROFILE --reps 25 --verify"
      # each shape under the tuner's schedule for it (data-parallel at K = 4096, Stream-K at 8192)
      for nks in "28672 4096 " "28672 8192  stream-k"; do read -r n k s <<< "$nks"; s=${s:+ $s}
        A="1,1,2,1,2,128,8,8,2,1,0,0,1$s"; B="1,1,2,1,2,128,8,8,2,2$s"
        timeout 75 $P --n $n --k $k --m 1 --tiles "tuner; $A; tuner; $A" | grep "M=\|skip"
        timeout 75 $P --n $n --k $k --m 16 --tiles "tuner; $B; tuner; $B" | grep "M=\|skip"
      done
    } 2>&1 | tee "$OUT/fine-stages.txt" ;;
    # the issue's largest M (65536) with operands past 2^31 bytes: the tuner's kernel and the mma.sync tile (GPU test)
    large-m) timeout 300 python3 -m pytest -q -m gpu tests/gpu/test_gemm_dense_gpu.py -p no:cacheprovider -rs \
               -k largest_m 2>&1 | tail -6 | tee "$OUT/large-m.txt" ;;
    conformance) timeout 180 python3 -m humming conformance --device 0 --level all --report "$OUT/conformance" 2>&1 | tee "$OUT/conformance.txt" | tail -30 ;;
  esac
done
