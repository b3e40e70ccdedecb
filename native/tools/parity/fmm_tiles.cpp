/// \file fmm_tiles.cpp
/// \brief Subject `fmm-tiles`: the FMM's near lists and P2P tiles built on the device from its P2P pairs
/// (cuda/fmm_tiles_phase.h, issue #20) against the host's buildNearLists, findRegularLeaves, buildP2pTiles and
/// buildIrregularLists (fmm/p2p_tiles.h) on the same host-built tree and lists: every array equal (the near lists,
/// the regular leaves' flags, origins and h, the tiles' targets, invH bits, step starts, tables and sources, the
/// tables' slots, the irregular leaves and their lists, the counts). Trees: the uniform grid (--uniform), the
/// clustered AMR-like set (--amr) and a Plummer sphere of points, orders 3 and 7, tolerance 0 and 2e-4, then a grid
/// four times finer whose device and host times are noted. Then method 'fmm' with the device's lists, host tiles
/// against device tiles (CudaOptions::fmmDeviceTiles): the same bits (the same arrays, the same deterministic
/// evaluation), and the device tiles' solve within the fmm subject's tolerances of the CPU backend.
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "fmm/fmm_tree.h"
#include "fmm/interaction_lists.h"
#include "fmm/p2p_tables.h"
#include "fmm/p2p_tiles.h"
#include "fmm/p2p_tiles_emulate.h"
#include "tools/parity/harness.h"
#include "tree/tree.h"

namespace amrgrav::parity {
namespace {

/// The device's tiles vs the host's on one tree (noteTimes: both builds' times noted beside the check).
void tilesCase(Context& cx, CudaBackend& gpu, const std::string& name, const fmm::FmmTree& tree,
               const SortedCells& sorted, double tolerance, bool noteTimes) {
  const int threads = resolveThreadCount(0);
  fmm::FmmLists lists;
  fmm::buildInteractionLists(tree, tolerance, threads, lists);
  const auto th = Clock::now();
  const fmm::HostNearField hn = fmm::buildHostNearField(tree, lists, sorted, threads);
  const fmm::NearLists& near = hn.near;
  const fmm::RegularLeaves& reg = hn.reg;
  const fmm::P2pTiles& tiles = hn.tiles;
  const fmm::IrregularLists& irr = hn.irr;
  const double hostSeconds = since(th);
  fmm::DeviceTiles dev;
  double devSeconds = 0;
  const Status st = gpu.fmmDeviceTiles(tree, sorted, tolerance, dev, &devSeconds);
  if (!st.ok()) {
    check(cx, name, false, "device tiles failed: " + st.message);
    return;
  }
  std::string diff = fmm::tilesDifference(near, tiles, irr, dev.near, dev.tiles, dev.irregular);
  if (reg.regular != dev.reg.regular || reg.h != dev.reg.h || reg.origin != dev.reg.origin)
    diff += "regular leaves differ; ";
  check(cx, name, diff.empty(),
        (diff.empty() ? std::string("device tiles = host tiles, every array: ") : diff) +
            std::to_string(near.leaves.size()) + " leaves, " + std::to_string(tiles.tiles()) + " tiles, " +
            std::to_string(tiles.slots.size()) + " tables, " + std::to_string(tiles.tableEntries) + " table / " +
            std::to_string(tiles.computedEntries) + " computed entries, " + std::to_string(tiles.irregular.size()) +
            " irregular leaves");
  if (noteTimes)
    cx.report.note("{\"kind\":\"fmm_tiles_time\",\"case\":\"" + name + "\",\"leaves\":" +
                       std::to_string(near.leaves.size()) + ",\"host_s\":" + num(hostSeconds) + ",\"device_s\":" +
                       num(devSeconds) + "}",
                   "# " + name + ": host near lists + regular leaves + tables + tiles " + ms(hostSeconds) +
                       " (all threads), device " + ms(devSeconds) + " (events: the tiles' build from the pairs)");
}

void meshCases(Context& cx, CudaBackend& gpu, const std::string& mesh, const Cells& cells, bool points) {
  for (const int p : {3, 7}) {
    fmm::FmmTree tree;
    SortedCells sorted;
    const Status st = hostFmmTree(cells, p, points, tree, &sorted);
    if (!st.ok()) {
      check(cx, "fmm-tiles-" + mesh + "-p" + std::to_string(p), false, "host tree failed: " + st.message);
      continue;
    }
    for (const double tol : {0.0, 2e-4})
      tilesCase(cx, gpu, "fmm-tiles-" + mesh + "-p" + std::to_string(p) + (tol > 0 ? "-tol2e-4" : "-tol0"), tree,
                sorted, tol, false);
  }
}

}  // namespace

void runFmmTiles(Context& cx) {
  CudaBackend& gpu = *cx.gpu;
  const int n = cx.args.uniform;
  meshCases(cx, gpu, "grid" + std::to_string(n), cx.uniform(), false);
  meshCases(cx, gpu, "amr", cx.amr(), false);
  meshCases(cx, gpu, "plummer", cx.plummer(), true);
  {  // a finer grid, its times noted
    const int fine = 4 * n;
    const Cells grid = uniformGrid(fine, kKpc, 1e-24);
    fmm::FmmTree tree;
    SortedCells sorted;
    const Status st = hostFmmTree(grid, 7, false, tree, &sorted);
    if (st.ok())
      tilesCase(cx, gpu, "fmm-tiles-grid" + std::to_string(fine) + "-p7-tol2e-4", tree, sorted, 2e-4, true);
    else
      check(cx, "fmm-tiles-grid" + std::to_string(fine), false, "host tree failed: " + st.message);
  }

  // method 'fmm' with the device's lists: host tiles vs device tiles, the same bits; the CPU's values and counts
  const CudaOptions before = gpu.cudaOptions();
  for (const bool amr : {false, true}) {
    const Cells& cells = amr ? cx.amr() : cx.uniform();
    const std::string name = std::string("fmm-tiles-solve-") + (amr ? "amr" : "grid" + std::to_string(n));
    SolveOptions o;
    o.method = SolveMethod::Fmm;
    o.accelerations = true;
    SolveResult hostTiles, devTiles;
    poison(hostTiles, cells.size(), true);
    poison(devTiles, cells.size(), true);
    CudaOptions on = before;
    on.fmmDeviceLists = true;
    on.fmmDeviceTiles = false;
    setDeviceOptions(gpu, on);
    const Status sh = gpu.solve(cells.view(), o, hostTiles);
    const CudaStats ch = deviceStats(gpu);
    on.fmmDeviceTiles = true;
    setDeviceOptions(gpu, on);
    const Status sd = gpu.solve(cells.view(), o, devTiles);
    const CudaStats cd = deviceStats(gpu);
    const bool sameCounts = ch.fmmTiles == cd.fmmTiles && ch.fmmTables == cd.fmmTables &&
                            ch.fmmTableEntries == cd.fmmTableEntries &&
                            ch.fmmComputedEntries == cd.fmmComputedEntries &&
                            ch.fmmIrregularLeaves == cd.fmmIrregularLeaves;
    check(cx, name + "-bitwise", sh.ok() && sd.ok() && sameCounts && bitwiseEqual(hostTiles, devTiles),
          sh.ok() && sd.ok() ? std::string("method 'fmm' with the device's tiles (") + std::to_string(cd.fmmTiles) +
                                   " tiles, " + std::to_string(cd.fmmTables) + " tables, " +
                                   std::to_string(cd.fmmIrregularLeaves) + " irregular leaves; build " +
                                   ms(cd.secondsBuild) + " vs " + ms(ch.secondsBuild) + " with host tiles) vs the "
                                   "host's tiles: " + (sameCounts ? "the same counts" : "counts differ") + ", bits " +
                                   (bitwiseEqual(hostTiles, devTiles) ? "equal" : "differ")
                             : "solve failed: " + (sh.ok() ? sd.message : sh.message));
    setDeviceOptions(gpu, on);  // the CPU comparison with the device's tiles
    parityCase(cx, name + "-vs-cpu", cells, o, gpu, 1e-12, false, true, 1e-11);
  }
  setDeviceOptions(gpu, before);
}

}  // namespace amrgrav::parity
