/// \file p2p_tiles_emulate.cpp
/// \brief The device's near lists and tiles emulated on the host (see p2p_tiles_emulate.h); the steps are
/// cuda/fmm_tiles_phase.cu's, in its order.
#include "fmm/p2p_tiles_emulate.h"

#include <algorithm>
#include <cstring>

#include "fmm/p2p_tiles_k.h"

namespace amrgrav {
namespace fmm {

static_assert(kTileCellsK == kTableCells && kTileWidthK == kTileTargets && kMaxLeafOffsetK == kMaxLeafOffset &&
                  kSlotsK == kOffsetSlots && kNoLeafK == kNoLeaf,
              "fmm/p2p_tiles_k.h's constants are p2p_tables.h's and p2p_tiles.h's");

namespace {

/// out[i] = the sum of f(i') for i' < i, i = 0 .. n; returns the total (the device's exclusive scans of n + 1 items).
template <class F>
std::uint32_t exclusiveScan(std::size_t n, std::uint32_t* out, F f) {
  std::uint32_t s = 0;
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = s;
    s += f(i);
  }
  out[n] = s;
  return s;
}

}  // namespace

void emulateDeviceTiles(const FmmTree& tree, const SortedCells& cells, const FmmLists& lists, DeviceTiles& out) {
  const Octree& o = tree.topo;
  const std::uint32_t nodes = std::uint32_t(o.nodeCount());
  const int bits = keyBits(nodes);
  const std::size_t pairs = lists.p2pA.size();
  TileBuildView v;
  v.nodes = nodes;
  v.childCount = o.childCount.data();
  v.cellBegin = o.cellBegin.data();
  v.cellCount = o.cellCount.data();
  v.x = cells.x.data();
  v.y = cells.y.data();
  v.z = cells.z.data();
  v.size = cells.size.data();

  // 1: leaves, the directed P2P CSR, the near lists
  std::vector<std::uint32_t> leafAt(nodes + 1);
  const std::uint32_t nl = exclusiveScan(nodes, leafAt.data(), [&](std::size_t i) { return leafFlag(v, i); });
  NearLists& near = out.near;
  near.leaves.assign(nl, 0);
  for (std::uint32_t i = 0; i < nodes; ++i)
    if (leafFlag(v, i)) near.leaves[leafAt[i]] = i;
  v.nl = nl;
  v.leaves = near.leaves.data();
  std::vector<std::uint64_t> p2p(pairs), keys(2 * pairs);
  for (std::size_t q = 0; q < pairs; ++q) p2p[q] = listKey(lists.p2pA[q], lists.p2pB[q], bits);
  for (std::size_t q = 0; q < pairs; ++q) directedP2P(p2p.data(), q, bits, keys.data());
  std::sort(keys.begin(), keys.end());
  std::vector<std::uint32_t> nodeStart(nodes + 1), nodeSource(2 * pairs);
  for (std::size_t i = 0; i <= keys.size(); ++i) {
    csrStartsAt(keys.data(), keys.size(), i, nodes, bits, nodeStart.data());
    if (i < keys.size()) nodeSource[i] = keySecond(keys[i], bits);
  }
  v.nodeStart = nodeStart.data();
  v.nodeSource = nodeSource.data();
  near.start.assign(nl + 1, 0);
  for (std::uint32_t k = 0; k <= nl; ++k) near.start[k] = nearStartAt(v, k);
  near.source.assign(near.start[nl], 0);
  v.nearStart = near.start.data();
  v.nearSource = near.source.data();
  for (std::uint32_t k = 0; k < nl; ++k) nearRow(v, k);

  // 2: the regular leaves
  RegularLeaves& reg = out.reg;
  reg.regular.assign(nodes, 0);
  reg.origin.assign(3 * std::size_t(nodes), 0.0);
  reg.h.assign(nodes, 0.0);
  v.regular = reg.regular.data();
  v.origin = reg.origin.data();
  v.h = reg.h.data();
  for (std::uint32_t i = 0; i < nodes; ++i) regularLeaf(v, i);

  // 3: the entries' slots, the slots used, their indices
  const std::size_t entries = near.source.size();
  std::vector<std::int32_t> slot(entries), tab(entries, 0), indexOf(kSlotsK), slots(kSlotsK);
  std::vector<std::uint8_t> used(kSlotsK, 0);
  v.slot = slot.data();
  v.tab = tab.data();
  v.used = used.data();
  v.indexOf = indexOf.data();
  for (std::uint32_t k = 0; k < nl; ++k) leafEntrySlots(v, k);
  const int nslots = slotIndexes(used.data(), indexOf.data(), slots.data());
  P2pTiles& t = out.tiles;
  t = P2pTiles{};
  t.slots.assign(slots.begin(), slots.begin() + nslots);

  // 4: each regular target's tables
  std::vector<std::uint32_t> ntab(nl), computed(nl);
  std::vector<std::uint64_t> hash(nl);
  v.ntab = ntab.data();
  v.computed = computed.data();
  v.hash = hash.data();
  for (std::uint32_t k = 0; k < nl; ++k) targetTables(v, k);

  // 5: the regular targets' order
  std::vector<std::uint32_t> regularAt(nl + 1);
  const std::uint32_t nreg = exclusiveScan(nl, regularAt.data(), [&](std::size_t k) { return regularFlag(v, k); });
  v.nreg = nreg;
  v.regularAt = regularAt.data();
  std::vector<std::uint32_t> sorted(nreg);
  t.irregular.assign(nl - nreg, 0);
  for (std::uint32_t k = 0; k < nl; ++k) scatterLeaf(v, k, sorted.data(), t.irregular.data());
  std::sort(sorted.begin(), sorted.end(), TargetOrder{computed.data(), hash.data()});
  v.sorted = sorted.data();
  std::vector<std::uint32_t> runAt(nreg + 1);
  const std::uint32_t runs = exclusiveScan(nreg, runAt.data(), [&](std::size_t r) { return runHead(v, r); });
  v.runAt = runAt.data();
  std::vector<std::uint32_t> runStart(runs + 1), placeStart(runs), ordered(nreg);
  v.runStart = runStart.data();
  for (std::uint32_t r = 0; r <= nreg; ++r) runStartAt(v, r);
  std::vector<std::uint32_t> runOrder(runs), pos(runs + 1);
  for (std::uint32_t j = 0; j < runs; ++j) runOrder[j] = j;
  std::sort(runOrder.begin(), runOrder.end(),
            RunOrder{sorted.data(), runStart.data(), computed.data(), ntab.data(), near.start.data(), tab.data()});
  exclusiveScan(runs, pos.data(), [&](std::size_t j) { return runLength(v, runOrder[j]); });
  v.placeStart = placeStart.data();
  for (std::uint32_t j = 0; j < runs; ++j) placeRun(v, j, runOrder.data(), pos.data());
  v.ordered = ordered.data();
  for (std::uint32_t r = 0; r < nreg; ++r) placeMember(v, r);

  // 6: the tiles
  const std::uint32_t tiles = (nreg + kTileWidthK - 1) / kTileWidthK;
  std::vector<TileCounts> counts(tiles), at(tiles + 1);
  for (std::uint32_t b = 0; b < tiles; ++b) counts[b] = tileCountsOf(v, b);
  TileCounts sum;
  for (std::uint32_t b = 0; b <= tiles; ++b) {
    at[b] = sum;
    if (b < tiles) sum = sum + counts[b];
  }
  t.stepStart.assign(tiles + 1, 0);
  for (std::uint32_t b = 0; b <= tiles; ++b) t.stepStart[b] = at[b].tableSteps + at[b].computedSteps;
  const std::uint32_t steps = t.stepStart[tiles];
  t.stepTable.assign(steps, 0);
  t.stepSource.assign(std::size_t(steps) * kTileWidthK, 0);
  t.target.assign(std::size_t(tiles) * kTileWidthK, 0);
  t.invH.assign(std::size_t(tiles) * kTileWidthK, 0.0);
  v.stepStart = t.stepStart.data();
  v.stepTable = t.stepTable.data();
  v.stepSource = t.stepSource.data();
  v.target = t.target.data();
  v.invH = t.invH.data();
  for (std::uint32_t b = 0; b < tiles; ++b) tileSteps(v, b, counts[b]);
  for (std::uint32_t b = 0; b < tiles; ++b)
    for (std::uint32_t i = 0; i < std::uint32_t(kTileWidthK); ++i) tileColumn(v, b, i, counts[b].tableSteps);
  t.tableSteps = sum.tableSteps;
  t.computedSteps = sum.computedSteps;
  t.tableEntries = sum.tableEntries;
  t.computedEntries = sum.computedEntries;

  // the irregular leaves' lists
  IrregularLists& irr = out.irregular;
  const std::uint32_t ni = nl - nreg;
  irr.leaf.assign(ni, 0);
  irr.start.assign(ni + 1, 0);
  const std::uint32_t ne =
      exclusiveScan(ni, irr.start.data(), [&](std::size_t j) { return irregularSize(v, t.irregular.data(), j); });
  irr.source.assign(ne, 0);
  for (std::uint32_t j = 0; j < ni; ++j)
    irregularRow(v, t.irregular.data(), j, irr.start.data(), irr.leaf.data(), irr.source.data());
}

namespace {

template <class T>
void compare(std::string& out, const char* name, const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) {
    out += std::string(name) + ": lengths " + std::to_string(a.size()) + " vs " + std::to_string(b.size()) + "; ";
    return;
  }
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) {  // bits (invH)
      out += std::string(name) + ": first difference at " + std::to_string(i) + "; ";
      return;
    }
}

}  // namespace

std::string tilesDifference(const NearLists& na, const P2pTiles& a, const IrregularLists& ia, const NearLists& nb,
                            const P2pTiles& b, const IrregularLists& ib) {
  std::string d;
  compare(d, "near.leaves", na.leaves, nb.leaves);
  compare(d, "near.start", na.start, nb.start);
  compare(d, "near.source", na.source, nb.source);
  compare(d, "target", a.target, b.target);
  compare(d, "invH", a.invH, b.invH);
  compare(d, "stepStart", a.stepStart, b.stepStart);
  compare(d, "stepTable", a.stepTable, b.stepTable);
  compare(d, "stepSource", a.stepSource, b.stepSource);
  compare(d, "slots", a.slots, b.slots);
  compare(d, "irregular", a.irregular, b.irregular);
  compare(d, "irregular.leaf", ia.leaf, ib.leaf);
  compare(d, "irregular.start", ia.start, ib.start);
  compare(d, "irregular.source", ia.source, ib.source);
  if (a.tableSteps != b.tableSteps || a.computedSteps != b.computedSteps || a.tableEntries != b.tableEntries ||
      a.computedEntries != b.computedEntries)
    d += "counts differ; ";
  return d;
}

}  // namespace fmm
}  // namespace amrgrav
