#!/bin/bash
# Issue #17 on a GPU host, in one call: build (as device-check.sh does: .gpuhost/setup.sh, CUDA and MPI found by
# CMake), then the block entry's checks and timings through the C API (build/amrgrav_device_blocks_check, from
# test/cuda/device_blocks.cu) and, when the addon has it, through the Node API:
#   check64    64^3 (512 blocks of 8^3) in a FLASH-like unk (3 variables, 4 guard cells, blocks at reversed slots),
#              float64 and float32: device entry vs host entry (bitwise), host block entry vs the per-cell entry on
#              the same cells (bitwise, float64), reuse (new densities made on the device, tree kept, bitwise a fresh
#              solve), then timings
#   check256   the same at 256^3 (float64; float32 without the per-cell comparison), best of 5:
#              host-new / host-unchanged / device-new / device-unchanged / cells (the per-cell entry)
#   flash256   256^3 timings with FLASH's layout (8 variables, 4 guard cells): the packing's cost
#   chunks256  256^3 float64, host entry timings (new mesh, unchanged) with the walk in 1 (the results downloaded
#              after it), 2, 3 (the default), 4 and 5 launches (--chunks K): what the overlapped download saves and
#              which count is best
#   big        1000^3 = 1e9 cells, float32, plain layout, host entry only (new mesh, unchanged), best of 2: needs
#              about 60 GB of device memory (the ~60 bytes per cell of the solve) and 8 GB of host memory
#   largest    the largest uniform grid one GPU solves, float32 from host memory: the first of $LARGEST_GRIDS (default
#              1304 1288 1248, in 8^3 blocks) that runs (on an 80 GB H100 at 37 bytes per cell: 1304^3 = 2.2e9
#              cells, past 2^31), its potential at 16 cells against direct summation over every cell (--direct 16)
#   fmm64      method 'fmm' through the block entry (cuda/fmm_phase.h solveFmmBlocks: the cells made on the device),
#              64^3 in the FLASH-like unk, float64 and float32: check64's checks (the FMM keeps no tree: reuse and
#              kept-* want tree_reused 0 and a fresh solver's bits) and timings
#   fmm256     the same at 256^3 (plain layout), best of 5: host-new / host-unchanged (a whole new solve: nothing is
#              kept) / device-new / device-unchanged / cells (the FMM's cell entry, float64), float64 and float32
#   auto       backend 'auto' with autoGpuMinCells 100000: a 32^3 solve on the CPU (reason "auto: 32768 cells below
#              the GPU's break-even (100000)"), a 64^3 one on the GPU, through the Node API (cells and blocks)
#   node       `amrgrav bench --grid 256 --backend cuda` through the Node API: the cell entry, then the block entry
#              (--blocks 8: unchanged mesh and new mesh), float64 and float32
# Usage on the GPU host, from the project root, with .gpuhost carried:
#   bash bench/gpu/blocks-check.sh                 (all steps but largest, fmm64 and fmm256)
#   bash bench/gpu/blocks-check.sh check64 check256
# Logs: $OUT/blocks-logs.tar.gz; a summary (one line per check and timing) is printed last.
# The timings' stats are each phase's own wall time, and on the host entry they overlap: a new mesh's densities go up
# (upload) while the keys, sort and build run, and the results come down chunk by chunk of the walk (download: from
# the first chunk's results to the last in the caller's arrays) while the later chunks walk; so upload + keys +
# build + moments + walk + download may exceed total. From 4096 walk groups (64^3 has 8192) the host entry walks in
# 3 launches of 76%, 19% and 5% of the groups (CudaOptions::resultChunks); its checks (device, cells, reuse, kept-*) cover the chunked path.
set -u
export AMRGRAV_REQUIRE_GPU=1  # the checks fail, not skip, without a usable GPU
out=/tmp/amrgrav-blocks-logs; rm -rf "$out"; mkdir -p "$out"
t0=$(date +%s)
stamp() { echo "== [$(( $(date +%s) - t0 ))s] $*"; }
steps=("$@"); [ ${#steps[@]} -eq 0 ] && steps=(check64 check256 flash256 chunks256 auto node big)
stamp "build"
source .gpuhost/setup.sh || exit 1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$out/gpu.txt"
tool=build/amrgrav_device_blocks_check
[ -x $tool ] || { echo "no $tool: was CUDA found? (tail of the build log)"; tail -20 /tmp/gpuhost-build.log; exit 1; }
summary=()
# run TAG TIMEOUT ARGS...: the check program, its JSON lines into TAG.log, each line into the summary
run() {
  local tag=$1 limit=$2; shift 2
  timeout "$limit" $tool "$@" > "$out/$tag.log" 2> "$out/$tag.err"
  local rc=$?
  summary+=("-- $tag ($*): rc=$rc")
  while IFS= read -r line; do summary+=("   $line"); done < <(python3 - "$out/$tag.log" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    if not l.startswith('{'): continue
    r = json.loads(l)
    k = r.get('kind')
    if k == 'check' and r['check'] == 'direct':
        print(f"check direct  {'PASS' if r['pass'] else 'FAIL'}: {r['targets']} cells of {r['cells']} against direct "
              f"summation: max rel {r['maxRelDiff']:.3g} (at most {r['bound']}; {r['seconds']} s)")
    elif k == 'check':
        print(f"check {r['check']:7s} {'PASS' if r['pass'] else 'FAIL'}: bitwise {r['bitwise']}/{r['cells']} "
              f"max|diff| {r['maxAbsDiff']:.3g} max rel {r['maxRelDiff']:.3g}" +
              (f" tree_reused {r['tree_reused']}" if 'tree_reused' in r else ''))
    elif k == 'time':
        s = r['stats_ms']
        print(f"time  {r['what']:16s} best {r['best_ms']:9.2f} ms  (stats: total {s['total']:.2f} upload {s['upload']:.2f} "
              f"keys {s['keys']:.2f} build {s['build']:.2f} moments {s['moments']:.2f} walk {s['walk']:.2f} "
              f"download {s['download']:.2f}) reused {r['tree_reused']} B/cell {r['device_bytes_per_cell']:.1f} "
              f"int/cell {r['interactions_per_cell']:.0f}")
        if r['cells'] >= 1 << 24 and r['what'] != 'cells':  # issue #17: the block path within 40 bytes per cell
            print(f"check memory  {'PASS' if r['device_bytes_per_cell'] <= 40 else 'FAIL'}: "
                  f"{r['device_bytes_per_cell']:.1f} B/cell (block path, at most 40)")
    elif k in ('error', 'summary', 'setup'):
        print(json.dumps(r))
PY
)
  tail -3 "$out/$tag.err"
}
for step in "${steps[@]}"; do
  stamp "$step"
  case $step in
    check64)
      run check64-f64 300 --grid 64 --block 8 --guard 4 --nvar 3 --reps 5
      run check64-f32 300 --grid 64 --block 8 --guard 4 --nvar 3 --reps 5 --float32 ;;
    check256)
      run check256-f64 500 --grid 256 --block 8 --guard 0 --nvar 1 --reps 5
      run check256-f32 500 --grid 256 --block 8 --guard 0 --nvar 1 --reps 5 --float32 ;;
    fmm64)
      run fmm64-f64 400 --grid 64 --block 8 --guard 4 --nvar 3 --reps 5 --method fmm
      run fmm64-f32 400 --grid 64 --block 8 --guard 4 --nvar 3 --reps 5 --float32 --method fmm ;;
    fmm256)
      run fmm256-f64 590 --grid 256 --block 8 --guard 0 --nvar 1 --reps 5 --method fmm
      run fmm256-f32 590 --grid 256 --block 8 --guard 0 --nvar 1 --reps 5 --float32 --method fmm ;;
    flash256)
      run flash256 400 --grid 256 --block 8 --guard 4 --nvar 8 --reps 5 --no-check ;;
    chunks256)
      for k in 1 2 3 4 5; do
        run chunks256-k$k 300 --grid 256 --block 8 --guard 0 --nvar 1 --reps 5 --only host --chunks $k
      done ;;
    big)
      free -g | head -2 > "$out/big-mem.txt"
      run big1000 590 --grid 1000 --block 8 --guard 0 --nvar 1 --float32 --reps 2 --only host ;;
    largest)
      # the largest uniform grid one GPU solves (float32, host entry): the first of these sizes that runs
      for g in ${LARGEST_GRIDS:-1304 1288 1248}; do
        run largest$g 300 --grid $g --block 8 --guard 0 --nvar 1 --float32 --reps 1 --only host --no-check --no-cells \
          --direct 16
        grep -q '"kind":"time"' "$out/largest$g.log" && break
      done ;;
    auto)
      timeout 120 node --input-type=module -e "
        const { GravitySolver, uniformMesh, fillVariable } = await import('./dist/solver/index.js');
        const s = new GravitySolver({ backend: 'auto', autoGpuMinCells: 100000 });
        for (const level of [3, 4]) {
          const mesh = uniformMesh({ lrefineMax: level, level });
          fillVariable(mesh, 'dens', (x, y, z) => 1 + x * y * z);
          const r = await s.solve(mesh);
          console.log(JSON.stringify({ cells: r.stats.cells, backend: r.stats.backend, reason: r.stats.backendReason }));
        }" > "$out/auto.json" 2> "$out/auto.err"
      summary+=("-- auto rc=$? $(tr '\n' ' ' < "$out/auto.json")") ;;
    node)
      if node dist/app/cli.js bench --help 2>&1 | grep -q -- '--blocks'; then
        for args in "" "--blocks 8" "--blocks 8 --float32"; do
          tag=node256$(echo "$args" | tr -d ' -')
          timeout 300 node dist/app/cli.js bench --grid 256 --backend cuda $args --repeat 5 --json \
            > "$out/$tag.json" 2> "$out/$tag.err"
          summary+=("-- node bench 256^3 $args rc=$? $(head -c 600 "$out/$tag.json")")
        done
      else
        summary+=("-- node: the CLI has no --blocks (skipped)")
      fi ;;
    *) echo "unknown step $step" ;;
  esac
done
stamp "done"
[ -n "${OUT:-}" ] && tar czf "$OUT/blocks-logs.tar.gz" -C "$out" .
printf '%s\n' "${summary[@]}"
true
