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
  out = DeviceTiles{};
  const Octree& o = tree.topo;
  const std::uint32_t nodes = std::uint32_t(o.nodeCount());
  const int bits = keyBits(nodes);
  const std::size_t pairs = lists.p2pA.size();
  // periodic boxes (buildNearLists' test): the keys with their shifts, as the device's walk leaves them
  const bool periodic = lists.period[0] > 0 || lists.period[1] > 0 || lists.period[2] > 0;
  const int sbits = periodic ? kShiftBits : 0;
  TileBuildView v;
  v.nodes = nodes;
  v.childCount = o.childCount.data();
  v.cellBegin = o.cellBegin.data();
  v.cellCount = o.cellCount.data();
  v.x = cells.x.data();
  v.y = cells.y.data();
  v.z = cells.z.data();
  v.size = cells.size.data();

  // 1: leaves, the pairs' CSRs by A and by B, the near lists
  std::vector<std::uint32_t> leafAt(nodes + 1);
  const std::uint32_t nl = exclusiveScan(nodes, leafAt.data(), [&](std::size_t i) { return leafFlag(v, i); });
  NearLists& near = out.near;
  near.leaves.assign(nl, 0);
  for (std::uint32_t i = 0; i < nodes; ++i)
    if (leafFlag(v, i)) near.leaves[leafAt[i]] = i;
  v.nl = nl;
  v.leaves = near.leaves.data();
  std::vector<std::uint64_t> byA(pairs), byB;
  for (std::size_t q = 0; q < pairs; ++q)
    byA[q] = shiftedKey(lists.p2pA[q], lists.p2pB[q], periodic ? lists.p2pShift[q] : kNoShift, bits, sbits);
  byB = byA;  // the device: a stable radix sort over B's bits alone
  std::stable_sort(byB.begin(), byB.end(), [&](std::uint64_t a, std::uint64_t b) {
    return keySecond(keyPairPart(a, sbits), bits) < keySecond(keyPairPart(b, sbits), bits);
  });
  std::vector<std::uint32_t> aStart(nodes + 1), bStart(nodes + 1);
  for (std::size_t i = 0; i <= pairs; ++i) {
    csrStartsAtBy(byA.data(), pairs, i, nodes, bits, false, aStart.data(), sbits);
    csrStartsAtBy(byB.data(), pairs, i, nodes, bits, true, bStart.data(), sbits);
  }
  v.bits = bits;
  v.sbits = sbits;
  for (int d = 0; d < 3; ++d) v.period[d] = near.period[d] = lists.period[d];
  v.byA = byA.data();
  v.byB = byB.data();
  v.aStart = aStart.data();
  v.bStart = bStart.data();
  near.start.assign(nl + 1, 0);
  for (std::uint32_t k = 0; k <= nl; ++k) near.start[k] = nearStartAt(v, k);
  near.source.assign(near.start[nl], 0);
  if (periodic) near.shift.assign(near.start[nl], 0);
  v.nearStart = near.start.data();
  v.nearSource = near.source.data();
  v.nearShift = periodic ? near.shift.data() : nullptr;
  for (std::uint32_t k = 0; k < nl; ++k)  // the device: a warp per leaf, a lane per entry
    for (std::uint32_t j = 0; j < near.start[k + 1] - near.start[k]; ++j) nearEntry(v, k, j);

  // 2: the regular leaves
  RegularLeaves& reg = out.reg;
  reg.regular.assign(nodes, 0);
  reg.origin.assign(3 * std::size_t(nodes), 0.0);
  reg.h.assign(nodes, 0.0);
  v.regular = reg.regular.data();
  v.origin = reg.origin.data();
  v.h = reg.h.data();
  for (std::uint32_t i = 0; i < nodes; ++i) regularLeaf(v, i);  // the device: a warp per node, two cells a lane

  // 3: the entries' slots, the slots used, their indices
  const std::size_t entries = near.source.size();
  std::vector<std::int32_t> slot(entries), tab(entries, 0), indexOf(kSlotsK), slots(kSlotsK);
  std::vector<std::uint32_t> usedBits(kSlotWordsK, 0);
  v.slot = slot.data();
  v.tab = tab.data();
  v.usedBits = usedBits.data();
  v.indexOf = indexOf.data();
  for (std::uint32_t k = 0; k < nl; ++k)  // the device: a warp per leaf, the bits set in its block's, then ored
    for (std::uint32_t q = near.start[k]; q < near.start[k + 1]; ++q) {
      const int s = entrySlotAt(v, k, q);
      if (s >= 0) usedBits[s >> 5] |= 1u << (s & 31);
    }
  std::uint32_t nslots = 0;  // the device: one warp, a lane per word, its counts' exclusive scan
  for (int lane = 0; lane < kLanesK; ++lane) {
    const std::uint32_t n = laneSlotCount(usedBits.data(), lane);
    laneSlotIndexes(usedBits.data(), lane, nslots, indexOf.data(), slots.data());
    nslots += n;
  }
  P2pTiles& t = out.tiles;
  t = P2pTiles{};
  t.slots.assign(slots.begin(), slots.begin() + nslots);

  // 4: each regular target's tables, by counting (the device: a warp per target, the counts in shared memory, the
  // lanes' counts' exclusive scan placing each lane's range), then each one's hash
  std::vector<std::uint32_t> ntab(nl), computed(nl);
  std::vector<std::uint64_t> hash(nl);
  v.ntab = ntab.data();
  v.computed = computed.data();
  v.hash = hash.data();
  std::vector<std::uint32_t> counts(kLanesK * kLaneSlotsK);
  for (std::uint32_t k = 0; k < nl; ++k) {
    std::fill(counts.begin(), counts.end(), 0u);
    if (v.regular[near.leaves[k]])
      for (std::uint32_t q = near.start[k]; q < near.start[k + 1]; ++q) {
        const std::int32_t tb = entryTable(v, q);
        if (tb >= 0) ++counts[tb];
      }
    std::uint32_t n = 0;
    for (int lane = 0; lane < kLanesK; ++lane) {
      const std::uint32_t c = laneTableCount(counts.data(), lane);
      laneTableWrite(counts.data(), lane, tab.data() + near.start[k] + n);
      n += c;
    }
    targetTablesDone(v, k, n);
  }
  for (std::uint32_t k = 0; k < nl; ++k) hash[k] = targetHash(v, k);

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

  // 6: the tiles: per tile (the device: a warp) the union of its targets' tables and its counts, their scan into
  // the step starts, then per tile its step tables and (a lane per target) the columns
  const std::uint32_t tiles = (nreg + kTileWidthK - 1) / kTileWidthK;
  std::vector<TileCounts> tileCounts(tiles), at(tiles + 1);
  std::vector<std::uint32_t> tileBits(std::size_t(tiles) * kSlotWordsK, 0);
  v.tileBits = tileBits.data();
  for (std::uint32_t b = 0; b < tiles; ++b) {
    std::uint32_t* bits = tileBits.data() + std::size_t(b) * kSlotWordsK;
    TileCounts c;
    for (int i = 0; i < kTileWidthK; ++i) {
      const std::uint32_t k = tileTargetLeaf(v, b, i);
      if (k != kNoLeafK)
        for (std::uint32_t q = near.start[k]; q < near.start[k] + ntab[k]; ++q)
          bits[tab[q] >> 5] |= 1u << (tab[q] & 31);
      c = maxSum(c, tileTarget(v, b, i));
    }
    for (int w = 0; w < kSlotWordsK; ++w) c.tableSteps += std::uint32_t(popc32(bits[w]));
    tileCounts[b] = c;
  }
  TileCounts sum;
  for (std::uint32_t b = 0; b <= tiles; ++b) {
    at[b] = sum;
    if (b < tiles) sum = sum + tileCounts[b];
  }
  t.stepStart.assign(tiles + 1, 0);
  for (std::uint32_t b = 0; b <= tiles; ++b) t.stepStart[b] = at[b].tableSteps + at[b].computedSteps;
  const std::uint32_t steps = t.stepStart[tiles];
  t.stepTable.assign(steps, 0);
  t.stepSource.assign(std::size_t(steps) * kTileWidthK, 0);
  if (periodic) t.stepShift.assign(std::size_t(steps) * kTileWidthK, 0);
  t.target.assign(std::size_t(tiles) * kTileWidthK, 0);
  t.invH.assign(std::size_t(tiles) * kTileWidthK, 0.0);
  v.stepStart = t.stepStart.data();
  v.stepTable = t.stepTable.data();
  v.stepSource = t.stepSource.data();
  v.stepShift = periodic ? t.stepShift.data() : nullptr;
  v.target = t.target.data();
  v.invH = t.invH.data();
  for (std::uint32_t b = 0; b < tiles; ++b) {
    const std::uint32_t* bits = tileBits.data() + std::size_t(b) * kSlotWordsK;
    std::uint32_t prefix[kLanesK] = {}, tableSteps = 0;
    for (int lane = 0; lane < kSlotWordsK; ++lane) {
      prefix[lane] = tableSteps;
      tableSteps += std::uint32_t(popc32(bits[lane]));
    }
    const std::uint32_t s0 = t.stepStart[b], ns = t.stepStart[b + 1] - s0;
    for (int lane = 0; lane < kSlotWordsK; ++lane) laneStepTables(v, lane, bits[lane], s0, prefix[lane]);
    for (std::uint32_t j = tableSteps; j < ns; ++j) t.stepTable[s0 + j] = -1;
    for (std::size_t e = std::size_t(s0) * kTileWidthK; e < std::size_t(s0 + ns) * kTileWidthK; ++e) emptyStep(v, e);
    for (int i = 0; i < kTileWidthK; ++i) {
      tileTargetWrite(v, b, i);
      const std::uint32_t k = tileTargetLeaf(v, b, i);
      if (k == kNoLeafK) continue;
      std::uint32_t c = 0;  // the device: a lane per entry, c from a ballot of the computed ones
      for (std::uint32_t q = near.start[k]; q < near.start[k + 1]; ++q) {
        const std::uint32_t st = entryStep(v, q, bits, prefix, tableSteps, c);
        if (slot[q] < 0) ++c;
        entryWrite(v, q, (std::size_t(s0) + st) * kTileWidthK + std::uint32_t(i));
      }
    }
  }
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
  if (periodic) irr.shift.assign(ne, 0);
  for (std::uint32_t j = 0; j < ni; ++j) {  // the device: a warp per leaf, a lane per entry
    irr.leaf[j] = irregularLeaf(v, t.irregular.data(), j);
    for (std::uint32_t i = 0; i < irr.start[j + 1] - irr.start[j]; ++i)
      irregularEntry(v, t.irregular.data(), j, i, irr.start.data(), irr.source.data(),
                     periodic ? irr.shift.data() : nullptr);
  }
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
  compare(d, "near.shift", na.shift, nb.shift);
  for (int k = 0; k < 3; ++k)
    if (std::memcmp(&na.period[k], &nb.period[k], sizeof(double)) != 0) {
      d += "near.period differs; ";
      break;
    }
  compare(d, "target", a.target, b.target);
  compare(d, "invH", a.invH, b.invH);
  compare(d, "stepStart", a.stepStart, b.stepStart);
  compare(d, "stepTable", a.stepTable, b.stepTable);
  compare(d, "stepSource", a.stepSource, b.stepSource);
  compare(d, "stepShift", a.stepShift, b.stepShift);
  compare(d, "slots", a.slots, b.slots);
  compare(d, "irregular", a.irregular, b.irregular);
  compare(d, "irregular.leaf", ia.leaf, ib.leaf);
  compare(d, "irregular.start", ia.start, ib.start);
  compare(d, "irregular.source", ia.source, ib.source);
  compare(d, "irregular.shift", ia.shift, ib.shift);
  if (a.tableSteps != b.tableSteps || a.computedSteps != b.computedSteps || a.tableEntries != b.tableEntries ||
      a.computedEntries != b.computedEntries)
    d += "counts differ; ";
  return d;
}

}  // namespace fmm
}  // namespace amrgrav
