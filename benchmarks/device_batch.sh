#!/usr/bin/env bash
# One call on the GPU machine: install humming (for its entry points), then every GPU check and benchmark.
#   run: bash benchmarks/device_batch.sh [steps...]   (carry .whl for ml_dtypes; outputs land in $OUT)
# Steps: devices gpu-tests jit wna16 conformance (default: all). Each step's log is $OUT/<step>.txt.
set -uo pipefail
export PYTHONUNBUFFERED=1 HUMMING_CACHE_DIR=/tmp/humming-cache
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
python3 -m pip install -q --no-deps --no-build-isolation -e . >"$OUT/install.txt" 2>&1 || { cat "$OUT/install.txt"; exit 1; }
steps=${*:-devices gpu-tests jit wna16 conformance}
for step in $steps; do
  echo "=== $step ($(date -u +%H:%M:%S))"
  case $step in
    devices) { python3 -m humming devices; python3 -m humming devices --json >"$OUT/devices.json"; } 2>&1 | tee "$OUT/devices.txt" ;;
    gpu-tests) timeout 240 python3 -m pytest -q -m gpu tests -rs -p no:cacheprovider 2>&1 | tee "$OUT/gpu-tests.txt" | tail -25 ;;
    jit) timeout 150 python3 benchmarks/jit_compile.py --json "$OUT/jit_compile_gpu.json" 2>&1 | tee "$OUT/jit.txt" | tail -25 ;;
    wna16) [ -f benchmarks/bench_wna16.py ] && timeout 200 python3 benchmarks/bench_wna16.py 2>&1 | tee "$OUT/wna16.txt" | tail -40 ;;
    conformance) timeout 180 python3 -m humming conformance --device 0 --level all --report "$OUT/conformance" 2>&1 | tee "$OUT/conformance.txt" | tail -30 ;;
  esac
done
