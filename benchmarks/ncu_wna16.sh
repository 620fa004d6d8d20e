#!/usr/bin/env bash
# ncu of one dense WnA16 kernel on the GPU machine (Firecracker runtime; ncu reads the counters there).
#   bash benchmarks/ncu_wna16.sh NAME [profile_wna16.py args...]    e.g.  bash benchmarks/ncu_wna16.sh s4_m1 --m 1
# Writes $OUT/NAME.ncu-rep, NAME.txt (details page), NAME.sass.csv and prints the headline metrics and
# benchmarks/ncu_summary.py's stall / instruction-mix summary. Clocks are left alone (--clock-control none).
set -uo pipefail
name=$1; shift
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1)
timeout 300 "$NCU" --clock-control none --set full --import-source no -k regex:gemm_dense --launch-skip 2 \
  --launch-count 1 -f -o "$OUT/$name" python3 benchmarks/profile_wna16.py --loop 3 "$@" > "$OUT/$name.log" 2>&1
"$NCU" -i "$OUT/$name.ncu-rep" --page details > "$OUT/$name.txt" 2>&1
"$NCU" -i "$OUT/$name.ncu-rep" --page source --print-source sass --csv > "$OUT/$name.sass.csv" 2>&1
grep -E "SM Frequency|Duration|DRAM Throughput|L1/TEX Cache Throughput|L2 Cache Throughput|Executed Ipc A|Issue Slots Busy|Registers Per|Achieved Occupancy|Eligible Warps" \
  "$OUT/$name.txt" | head -16
"$NCU" -i "$OUT/$name.ncu-rep" --page raw 2>/dev/null | grep -E "sm__(pipe_(alu|fma|tensor)[a-z_]*_cycles_active|inst_executed_pipe_alu)\.avg\.pct_of_peak_sustained_active|l1tex__data_pipe_lsu_wavefronts_mem_shared\.sum\.pct|lts__t_sectors\.avg\.pct"
python3 benchmarks/ncu_summary.py "$OUT/$name.sass.csv" --top 15
