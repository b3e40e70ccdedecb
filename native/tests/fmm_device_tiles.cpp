/// \file fmm_device_tiles.cpp
/// \brief amrgrav_fmm_device_tiles: the CUDA backend's build of the near lists and P2P tiles from its P2P pairs
/// (fmm/p2p_tiles_k.h), in its host emulation (fmm/p2p_tiles_emulate.h), against the host's buildNearLists,
/// findRegularLeaves, P2pTables::prepare's slots, buildP2pTiles and buildIrregularLists (fmm/p2p_tiles.h): every
/// array equal (the tiles' targets, invH bits, step starts, tables and sources, the slots, the irregular leaves and
/// their lists, the counts; the regular leaves' flags, origins and h), on uniform grids (whole 4^3 leaves: tables
/// everywhere; 22^3: edge leaves of other shapes, irregular), a random AMR-like mesh (tables, computed pairs and irregular leaves
/// mixed) and clustered points (no regular leaf), orders 3 and 5, tolerances 0 and 2e-4; and the lane rules the
/// device runs a warp of (the counting sort of a target's tables, the slots' indices, a tile's step tables and each
/// table's rank) on random sets over all 729 slots. Periodic boxes (the CUDA backend's periodic FMM with
/// CudaOptions::fmmDevicePeriodicTiles): the same build from the pairs with their image shifts against
/// buildHostNearField with shifts, every array with its shifts equal, on fully periodic uniform grids (4^3: one leaf
/// paired with its own images; 8^3, 32^3: images by table), a periodic random AMR-like mesh, a sheet and a line.
/// CTest (label cpu).
#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "core/types.h"
#include "fmm/fmm_tree.h"
#include "fmm/interaction_lists.h"
#include "fmm/p2p_tables.h"
#include "fmm/p2p_tiles.h"
#include "fmm/p2p_tiles_emulate.h"
#include "fmm/p2p_tiles_k.h"
#include "tests/check_report.h"
#include "tests/fmm_test_meshes.h"
#include "tree/tree.h"

using namespace amrgrav;
using namespace amrgrav::fmm;
using namespace amrgrav::tests;

namespace {

/// What a case must contain (a case without the kind of work it is meant to cover would agree with a broken build).
struct Want {
  bool tables = false, irregular = false;
  bool shiftedTables = false;  ///< periodic: an image pair by table
  bool selfImages = false;     ///< periodic: a leaf paired with its own image
};

/// The device's build, emulated, against the host's on one tree and its lists.
void compareCase(const std::string& name, const FmmTree& tree, const SortedCells& sorted, const FmmLists& lists,
                 const Want& want) {
  const int threads = 2;
  // the host's path (cuda/fmm_phase.cu with CudaOptions::fmmDeviceTiles off)
  const HostNearField hn = buildHostNearField(tree, lists, sorted, threads);
  const NearLists& near = hn.near;
  const RegularLeaves& reg = hn.reg;
  const P2pTables& tables = hn.tables;
  const P2pTiles& tiles = hn.tiles;
  const IrregularLists& irr = hn.irr;
  // the device's, emulated
  DeviceTiles dev;
  emulateDeviceTiles(tree, sorted, lists, dev);
  std::string diff = tilesDifference(near, tiles, irr, dev.near, dev.tiles, dev.irregular);
  if (reg.regular != dev.reg.regular || reg.h != dev.reg.h || reg.origin != dev.reg.origin)
    diff += "regular leaves differ; ";
  // the device's slots must be ones the host made tables for (the same tables read)
  for (const int s : dev.tiles.slots)
    if (!tables.bySlot(s)) diff += "slot " + std::to_string(s) + " has no host table; ";
  if (want.tables && tiles.tableEntries == 0) diff += "no table entries; ";
  if (want.irregular && tiles.irregular.empty()) diff += "no irregular leaves; ";
  if (!want.tables && tiles.tiles() != 0) diff += "tiles where none expected; ";
  std::string shifts;
  const bool periodic = lists.period[0] > 0 || lists.period[1] > 0 || lists.period[2] > 0;
  if (periodic) {
    std::size_t selfImages = 0, shiftedPairs = 0, shiftedTables = 0;
    for (std::size_t q = 0; q < lists.p2pA.size(); ++q) {
      selfImages += lists.p2pA[q] == lists.p2pB[q];
      shiftedPairs += lists.p2pShift[q] != kNoShift;
    }
    for (std::size_t st = 0; st < tiles.stepTable.size(); ++st)
      if (tiles.stepTable[st] >= 0)
        for (int i = 0; i < kTileTargets; ++i) {
          const std::size_t e = st * kTileTargets + std::size_t(i);
          shiftedTables += tiles.stepSource[e] != kNoLeaf && tiles.stepShift[e] != kNoShift;
        }
    if (near.shift.size() != near.source.size()) diff += "the host's near lists have no shifts; ";
    if (shiftedPairs == 0) diff += "no image pairs; ";
    if (want.shiftedTables && shiftedTables == 0) diff += "no image pair by table; ";
    if (want.selfImages && selfImages == 0) diff += "no leaf with its own image; ";
    shifts = "; " + std::to_string(shiftedPairs) + " image pairs (" + std::to_string(selfImages) +
             " of a leaf with itself), " + std::to_string(shiftedTables) + " image entries by table";
  }
  check(name, diff.empty(),
        (diff.empty() ? std::string("every array equal: ") : diff) + std::to_string(near.leaves.size()) +
            " leaves, " + std::to_string(tiles.tiles()) + " tiles, " + std::to_string(tiles.slots.size()) +
            " tables, " + std::to_string(tiles.tableSteps) + "+" + std::to_string(tiles.computedSteps) +
            " steps, " + std::to_string(tiles.tableEntries) + " table / " + std::to_string(tiles.computedEntries) +
            " computed entries, " + std::to_string(tiles.irregular.size()) + " irregular leaves" + shifts);
}

void runCase(const std::string& name, const Cells& cells, bool points, int order, double tolerance,
             bool wantTables, bool wantIrregular) {
  SolveOptions opt;
  opt.method = SolveMethod::Fmm;
  opt.fmmOrder = order;
  if (points) opt.selfPotential = SelfPotential::None;
  const int threads = 2;
  const HostFmmTree h = hostFmmTree(cells, opt, points, threads);
  if (!h.status.ok()) {
    check(name + "-setup", false, h.status.message);
    return;
  }
  FmmLists lists;
  buildInteractionLists(h.tree, tolerance, threads, lists);
  Want want;
  want.tables = wantTables;
  want.irregular = wantIrregular;
  compareCase(name, h.tree, h.sorted, lists, want);
}

/// A periodic box (the unit cube, periodic along px, py, pz; the density contrast of a fully periodic one, dipole
/// terms): the lists with their image shifts (buildInteractionLists(..., period)) as the device's walk leaves them.
void periodicCase(const std::string& name, const Cells& cells, bool px, bool py, bool pz, int order,
                  const Want& want) {
  const SolveOptions opt = periodicFmmBox(px, py, pz, order);
  const int threads = 2;
  const HostFmmTree h = hostFmmTree(cells, opt, false, threads);
  if (!h.status.ok()) {
    check(name + "-setup", false, h.status.message);
    return;
  }
  double period[3];
  scaledPeriod(opt, h.sorted, period);
  FmmLists lists;
  buildInteractionLists(h.tree, opt.fmmTolerance, threads, lists, period);
  compareCase(name, h.tree, h.sorted, lists, want);
}

/// The lane rules the device runs a warp of (fmm/p2p_tiles_k.h), on random sets over all 729 slots (the meshes use
/// a few hundred of them, and no table twice): the counting sort with repeats against std::sort, the slots' indices
/// and the step tables against a plain walk over the slots, each table's rank against a binary search in the step
/// tables (buildP2pTiles' order).
void laneRules() {
  std::mt19937 rng(20);
  std::string diff;
  for (int trial = 0; trial < 200 && diff.empty(); ++trial) {
    // a target's tables: up to 300 entries over [0, 729), repeats allowed
    const int n = int(rng() % 300);
    std::vector<std::int32_t> want(n);
    std::vector<std::uint32_t> counts(kLanesK * kLaneSlotsK, 0);
    for (auto& t : want) {
      t = std::int32_t(rng() % kSlotsK);
      ++counts[t];
    }
    std::sort(want.begin(), want.end());
    std::vector<std::int32_t> got(n + 1, -7);
    std::uint32_t at = 0;
    for (int lane = 0; lane < kLanesK; ++lane) {
      const std::uint32_t c = laneTableCount(counts.data(), lane);
      laneTableWrite(counts.data(), lane, got.data() + at);
      at += c;
    }
    if (at != std::uint32_t(n) || !std::equal(want.begin(), want.end(), got.begin()) || got[n] != -7)
      diff += "counting sort differs (trial " + std::to_string(trial) + "); ";
    // a set of slots (used slots or a tile's union): density from sparse to full
    std::uint32_t bits[kLanesK] = {};
    const unsigned density = rng() % 101;
    std::vector<std::int32_t> set;
    for (int s = 0; s < kSlotsK; ++s)
      if (rng() % 100 < density) {
        bits[s >> 5] |= 1u << (s & 31);
        set.push_back(s);
      }
    std::vector<std::int32_t> indexOf(kSlotsK, -9), slots(kSlotsK, -9);
    std::uint32_t prefix[kLanesK] = {}, total = 0;
    for (int lane = 0; lane < kLanesK; ++lane) {
      prefix[lane] = total;
      const std::uint32_t c = laneSlotCount(bits, lane);
      laneSlotIndexes(bits, lane, total, indexOf.data(), slots.data());
      total += c;
    }
    bool ok = total == set.size() && std::equal(set.begin(), set.end(), slots.begin());
    for (int s = 0; s < kSlotsK && ok; ++s) {
      const auto it = std::lower_bound(set.begin(), set.end(), s);
      ok = indexOf[s] == (it != set.end() && *it == s ? std::int32_t(it - set.begin()) : -1);
    }
    if (!ok) diff += "slot indexes differ (trial " + std::to_string(trial) + "); ";
    std::vector<std::int32_t> steps(set.size() + 1, -5);
    TileBuildView v;
    v.stepTable = steps.data();
    for (int lane = 0; lane < kSlotWordsK; ++lane) laneStepTables(v, lane, bits[lane], 0, prefix[lane]);
    if (!std::equal(set.begin(), set.end(), steps.begin()) || steps[set.size()] != -5)
      diff += "step tables differ (trial " + std::to_string(trial) + "); ";
    for (std::size_t r = 0; r < set.size(); ++r)
      if (tableRank(bits, prefix, set[r]) != std::uint32_t(r)) {
        diff += "table rank differs (trial " + std::to_string(trial) + "); ";
        break;
      }
  }
  check("lane-rules", diff.empty(),
        diff.empty() ? "200 random sets: counting sort = std::sort (repeats), slot indexes, step tables and ranks = "
                       "the plain walk's"
                     : diff);
}

}  // namespace

int main() {
  laneRules();
  for (const int p : {3, 5})
    for (const double tol : {0.0, 2e-4}) {
      const std::string s = "-p" + std::to_string(p) + (tol > 0 ? "-tol2e-4" : "-tol0");
      runCase("uniform32" + s, uniformGrid(32, 1), false, p, tol, true, false);
      runCase("uniform22" + s, uniformGrid(22, 2), false, p, tol, true, true);  // edge leaves of 32 cells
      runCase("amr" + s, randomAmr(4), false, p, tol, true, true);
      runCase("plummer" + s, plummer(20000), true, p, tol, false, true);
    }
  runCase("uniform64-p5-tol2e-4", uniformGrid(64, 3), false, 5, 2e-4, true, false);
  // periodic boxes
  Want self;  // one 4^3 leaf: its own images alone, by table
  self.tables = self.shiftedTables = self.selfImages = true;
  Want grid;
  grid.tables = grid.shiftedTables = true;
  Want amr;
  amr.tables = amr.irregular = true;
  Want odd;  // no 4^3 leaves: every leaf irregular, computed with its shifts
  odd.irregular = true;
  for (const int p : {4, 7}) {
    const std::string s = "-p" + std::to_string(p);
    periodicCase("periodic-uniform4" + s, uniformGrid(4, 5), true, true, true, p, self);
    periodicCase("periodic-uniform8" + s, uniformGrid(8, 6), true, true, true, p, grid);
    periodicCase("periodic-uniform32" + s, uniformGrid(32, 7), true, true, true, p, grid);
    periodicCase("periodic-uniform12" + s, uniformGrid(12, 8), true, true, true, p, odd);
    periodicCase("periodic-amr" + s, randomAmr(3), true, true, true, p, amr);
    periodicCase("sheet-xy-uniform16" + s, uniformGrid(16, 9), true, true, false, p, grid);
    periodicCase("line-z-amr" + s, randomAmr(5), false, false, true, p, amr);
  }
  std::printf("%d checks, %d failed\n", gChecks, gFailed);
  return gFailed == 0 ? 0 : 1;
}
