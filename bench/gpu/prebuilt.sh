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
  run)
    shift
    tool=${1:?prebuilt.sh run TOOL ARGS...}
    shift
    mkdir -p /tmp/prebuilt
    for f in "$dir"/*.xz; do
      out=/tmp/prebuilt/$(basename "$f" .xz)
      [ -e "$out" ] || { xz -T0 -dc "$f" > "$out" && chmod +x "$out"; } || exit 1
    done
    args=()
    for a in "$@"; do args+=("$(echo "$a" | sed -E 's#@([A-Za-z0-9_-]+)#/tmp/prebuilt/\1.bin#g')"); done
    nvidia-smi --query-gpu=name --format=csv,noheader
    exec "/tmp/prebuilt/$tool" "${args[@]}" ;;
  *)
    sed -n '2,19p' "$0"
    exit 2 ;;
esac
