#!/bin/bash
# Device calls without a build on the GPU host: the tools built here (build/, CUDA compiles without a GPU) travel
# compressed with the meshes they read, so a call spends seconds where device-check.sh's build spends ~5 minutes.
# For kernel iterations between full device-check.sh calls (which stay the record: they build what they run).
#
# Here (the project root, after `ninja -C build TOOL...`):
#   bash bench/gpu/prebuilt.sh pack TOOL... [--mesh NAME...]
#     xz's build/TOOL into .prebuilt/ (git-ignored through .git/info/exclude; ~32 MB a tool, and the device tool
#     carries 64 MiB: one or two tools a call) and writes each mesh of bench/dumpCells.ts (maclaurin7, amr4, ...)
#     there too; the call then carries [".prebuilt"]
# On the GPU host (the device tool's command):
#   bash bench/gpu/prebuilt.sh run TOOL ARGS...
#     unpacks the tools and meshes into /tmp/prebuilt once, then runs /tmp/prebuilt/TOOL ARGS, where an argument
#     @NAME (also inside a comma list: @mac7,@amr4) is the mesh NAME's file, e.g.
#     bash bench/gpu/prebuilt.sh run amrgrav_gpu_timing --no-perf --fmm-cells @maclaurin7,@amr4 --reps 5
#     bash bench/gpu/prebuilt.sh run amrgrav_gpu_parity fmm fmm-tiles
#   bash bench/gpu/prebuilt.sh profile TOOL ARGS...
#     the same under Nsight Compute, one metric (each kernel's duration, clocks and caches as in a run): every
#     kernel's launches and total time, largest first (PROFILE_TOP lines, default 30); where a solve's time goes
# The tools are x86-64 Linux builds with cudart static; they need no library of this project (the addon does: use
# device-check.sh for anything through Node).
set -u
dir=.prebuilt
case "${1:-}" in
  pack)
    shift
    mkdir -p "$dir"
    grep -qx "/$dir/" .git/info/exclude 2>/dev/null || echo "/$dir/" >> .git/info/exclude
    meshes=0
    for a in "$@"; do
      if [ "$a" = --mesh ]; then meshes=1; continue; fi
      if [ $meshes = 1 ]; then
        node dist/bench/dumpCells.js --mesh "$a" --out "/tmp/prebuilt-$a.bin" > /dev/null || exit 1
        xz -T0 -9 -c "/tmp/prebuilt-$a.bin" > "$dir/$a.bin.xz" && rm -f "/tmp/prebuilt-$a.bin" || exit 1
      else
        [ -x "build/$a" ] || { echo "prebuilt.sh: no build/$a (ninja -C build $a)" >&2; exit 1; }
        xz -T0 -6 -c "build/$a" > "$dir/$a.xz" || exit 1
      fi
    done
    du -ch "$dir"/* | tail -1 ;;
  run|profile)
    mode=$1
    shift
    tool=${1:?prebuilt.sh run|profile TOOL ARGS...}
    shift
    mkdir -p /tmp/prebuilt
    for f in "$dir"/*.xz; do
      out=/tmp/prebuilt/$(basename "$f" .xz)
      [ -e "$out" ] || { xz -T0 -dc "$f" > "$out" && chmod +x "$out"; } || exit 1
    done
    args=()
    for a in "$@"; do args+=("$(echo "$a" | sed -E 's#@([A-Za-z0-9_-]+)#/tmp/prebuilt/\1.bin#g')"); done
    nvidia-smi --query-gpu=name --format=csv,noheader
    [ "$mode" = run ] && exec "/tmp/prebuilt/$tool" "${args[@]}"
    ncu --csv --page raw --metrics gpu__time_duration.sum --cache-control none --clock-control none \
      "/tmp/prebuilt/$tool" "${args[@]}" > /tmp/prebuilt/profile.csv 2> /tmp/prebuilt/profile.err ||
      { tail -5 /tmp/prebuilt/profile.err; exit 1; }
    python3 - /tmp/prebuilt/profile.csv "${PROFILE_TOP:-30}" <<'PY'
import csv, collections, sys
rows = list(csv.reader(open(sys.argv[1], errors='replace')))
h = next(i for i, r in enumerate(rows) if 'Kernel Name' in r and 'gpu__time_duration.sum' in r)
name, dur = rows[h].index('Kernel Name'), rows[h].index('gpu__time_duration.sum')
scale = {'nsecond': 1e-6, 'usecond': 1e-3, 'msecond': 1.0}.get(rows[h + 1][dur], 1e-6)
total, count = collections.defaultdict(float), collections.Counter()
for r in rows[h + 2:]:
    try:
        ms = float(r[dur].replace(',', '')) * scale
    except (ValueError, IndexError):
        continue
    total[r[name][:120]] += ms
    count[r[name][:120]] += 1
print(f'{sum(count.values())} launches, {sum(total.values()):.3f} ms of kernels')
for k, ms in sorted(total.items(), key=lambda kv: -kv[1])[:int(sys.argv[2])]:
    print(f'{ms:10.3f} ms x{count[k]:5d}  {k}')
PY
    ;;
  *)
    sed -n '2,22p' "$0"
    exit 2 ;;
esac
