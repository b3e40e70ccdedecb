#!/bin/bash
# One device call: build the addon with CUDA (and MPI) on the GPU host, then GPU correctness (compute-sanitizer on a
# small case, CPU-vs-GPU parity through the C++ tool and through the public API) and the timings of issue #4.
# Usage on the GPU host, from the project root, with .gpuhost and dist carried:
#   bash bench/gpu/device-check.sh [parity|perf|all]
# Logs go to $OUT (or /tmp/amrgrav-device if OUT is unset).
set -u
what=${1:-all}
out=${OUT:-/tmp/amrgrav-device}; mkdir -p "$out"
t0=$(date +%s)
stamp() { echo "== [$(( $(date +%s) - t0 ))s] $*"; }
stamp "build"
source .gpuhost/setup.sh || exit 1
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$out/gpu.txt"
tool=build/amrgrav_gpu_parity
if [ "$what" = parity ] || [ "$what" = all ]; then
  stamp "compute-sanitizer memcheck (quick)"
  timeout 300 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 3 $tool --quick > "$out/memcheck.log" 2>&1
  echo "memcheck rc=$?"; tail -4 "$out/memcheck.log"
  stamp "compute-sanitizer racecheck (quick)"
  timeout 300 compute-sanitizer --tool racecheck --error-exitcode 3 $tool --quick --no-perf > "$out/racecheck.log" 2>&1
  echo "racecheck rc=$?"; tail -4 "$out/racecheck.log"
  stamp "parity tool"
  timeout 400 $tool --no-perf > "$out/parity.log" 2>&1
  echo "parity rc=$?"; grep -E '^(ok|FAIL)' "$out/parity.log"
  stamp "parity through the API (MacLaurin levels 6, clustered)"
  timeout 400 node dist/bench/gpuParity.js --levels 6 > "$out/api-parity.log" 2>&1
  echo "api parity rc=$?"; cut -c1-400 "$out/api-parity.log"
fi
if [ "$what" = perf ] || [ "$what" = all ]; then
  stamp "perf tool"
  timeout 400 $tool --no-parity --perf 128,256 > "$out/perf.log" 2>&1
  echo "perf rc=$?"; tail -30 "$out/perf.log"
fi
stamp "done"
