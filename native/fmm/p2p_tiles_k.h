/// \file p2p_tiles_k.h
/// \brief The near lists and P2P tiles of fmm/p2p_tiles.h one item at a time, for the CUDA backend's build of them
/// from its P2P pairs (cuda/fmm_tiles_phase.h) and its host emulation (fmm/p2p_tiles_emulate.h), written once for
/// both. The result is buildNearLists', findRegularLeaves', the tables' slots of P2pTables::prepare and
/// buildP2pTiles' arrays, element for element (native/tests/fmm_device_tiles.cpp checks the emulation, the GPU
/// parity subject fmm-tiles the device). Isolated boxes only (no image shifts).
///
/// The steps (each a per-item rule here, scans and sorts between them):
///  1. the P2P pairs' keys (A, B), A < B, each both ways, sorted: a CSR over the nodes (fmm/dual_walk_k.h
///     csrStartsAt) whose sources ascend; leaf k's near list is itself then that CSR's row (nearStartAt, nearRow),
///     which is buildNearLists' order (the CPU's pairs are sorted, so a leaf's partners come ascending);
///  2. each node's regularity, origin and h (regularLeaf, as findRegularLeaves);
///  3. each regular target's entries' table slots (entrySlot: the whole-leaf offset, P2pTables::findSlot's choice),
///     the slots used (any entry), their indices in ascending order (slotIndexes);
///  4. each regular target's table indices sorted, their count, its computed pairs and FNV-1a hash (targetTables);
///  5. the regular targets in buildP2pTiles' order: sorted by (computed, hash, leaf) (TargetOrder), cut into runs of
///     equal (computed, hash) (runHead), the runs sorted by (computed, tables, first leaf) (RunOrder) and laid out in
///     that order (placeMember);
///  6. per tile of kTileTargets: its steps' counts (tileCountsOf), prefix-summed into the step starts, its steps'
///     tables (tileSteps), then per target its column of sources (tileColumn).
/// Orders are total (the leaf index breaks every tie), so any correct sort gives the same arrays.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/hostdevice.h"
#include "fmm/dual_walk_k.h"

namespace amrgrav {
namespace fmm {

/// Must equal p2p_tables.h / p2p_tiles.h's constants (static_assert in p2p_tiles_emulate.cpp).
constexpr int kTileCellsK = 64;
constexpr int kTileWidthK = 32;
constexpr int kMaxLeafOffsetK = 4;
constexpr int kSlotsK = (2 * kMaxLeafOffsetK + 1) * (2 * kMaxLeafOffsetK + 1) * (2 * kMaxLeafOffsetK + 1);
constexpr int kSlotWordsK = (kSlotsK + 31) / 32;
constexpr std::uint32_t kNoLeafK = 0xffffffffu;

/// The arrays the rules read and write (host or device pointers). Sizes: nodes, leaves (nl), entries (nl + 2 P2P
/// pairs), regular targets (nreg), runs.
struct TileBuildView {
  // inputs: the tree and its sorted cells (scaled lengths)
  std::uint32_t nodes = 0;
  const std::uint8_t* childCount = nullptr;
  const std::uint32_t *cellBegin = nullptr, *cellCount = nullptr;
  const double *x = nullptr, *y = nullptr, *z = nullptr, *size = nullptr;
  // 1: the leaves and near lists
  std::uint32_t nl = 0;
  std::uint32_t* leaves = nullptr;       ///< nl, ascending nodes
  std::uint32_t* nodeStart = nullptr;    ///< nodes + 1: the directed P2P CSR
  std::uint32_t* nodeSource = nullptr;   ///< 2 pairs
  std::uint32_t* nearStart = nullptr;    ///< nl + 1
  std::uint32_t* nearSource = nullptr;   ///< entries
  // 2: regular leaves (per node)
  std::uint8_t* regular = nullptr;
  double* origin = nullptr;  ///< 3 per node
  double* h = nullptr;
  // 3, 4: per entry, per slot, per leaf
  std::int32_t* slot = nullptr;          ///< entries: the entry's table slot, -1 for none
  std::int32_t* tab = nullptr;           ///< entries: a regular target's table indices, sorted, at its entries' start
  std::uint8_t* used = nullptr;          ///< kSlotsK
  std::int32_t* indexOf = nullptr;       ///< kSlotsK: a used slot's table index, -1 for the others
  std::uint32_t* ntab = nullptr;         ///< nl
  std::uint32_t* computed = nullptr;     ///< nl
  std::uint64_t* hash = nullptr;         ///< nl
  // 5: the regular targets' order
  std::uint32_t nreg = 0;
  std::uint32_t* regularAt = nullptr;    ///< nl: exclusive prefix sum of the leaves' regularity
  std::uint32_t* sorted = nullptr;       ///< nreg: the regular leaves (indices into leaves) by TargetOrder
  std::uint32_t* runAt = nullptr;        ///< nreg + 1: exclusive prefix sum of runHead
  std::uint32_t* runStart = nullptr;     ///< runs + 1: the runs' first positions in sorted
  std::uint32_t* placeStart = nullptr;   ///< runs: where each run goes in ordered
  std::uint32_t* ordered = nullptr;      ///< nreg: the tiles' order
  // 6: the tiles (as P2pTiles)
  std::uint32_t* target = nullptr;       ///< kTileWidthK per tile
  double* invH = nullptr;                ///< kTileWidthK per tile
  std::uint32_t* stepStart = nullptr;    ///< tiles + 1
  std::int32_t* stepTable = nullptr;
  std::uint32_t* stepSource = nullptr;   ///< kTileWidthK per step
};

/// Leaf k's flag for the prefix sum that numbers the leaves (1 for a leaf).
AG_HD std::uint32_t leafFlag(const TileBuildView& v, std::uint32_t node) { return v.childCount[node] == 0 ? 1 : 0; }

/// The P2P pair q's two directed keys (target, source), from its key (A, B).
AG_HD void directedP2P(const std::uint64_t* p2p, std::size_t q, int bits, std::uint64_t* keys) {
  const std::uint32_t a = keyFirst(p2p[q], bits), b = keySecond(p2p[q], bits);
  keys[2 * q] = listKey(a, b, bits);
  keys[2 * q + 1] = listKey(b, a, bits);
}

/// Leaf k's near list's start (k = nl: the end): one entry itself for each leaf before it, then the CSR's.
AG_HD std::uint32_t nearStartAt(const TileBuildView& v, std::uint32_t k) {
  return k == v.nl ? v.nl + v.nodeStart[v.nodes] : k + v.nodeStart[v.leaves[k]];
}

/// Leaf k's near list: itself, then its CSR row (sources ascending).
AG_HD void nearRow(const TileBuildView& v, std::uint32_t k) {
  const std::uint32_t node = v.leaves[k], q0 = v.nearStart[k];
  v.nearSource[q0] = node;
  const std::uint32_t b = v.nodeStart[node], e = v.nodeStart[node + 1];
  for (std::uint32_t q = b; q < e; ++q) v.nearSource[q0 + 1 + (q - b)] = v.nodeSource[q];
}

/// Lattice position of the k-th cell of a 4^3 leaf in Morton order (p2p_tables.cpp latticeOf).
AG_HD void latticeOfK(int k, int p[3]) {
  p[0] = (k & 1) | ((k >> 3) & 1) << 1;
  p[1] = ((k >> 1) & 1) | ((k >> 4) & 1) << 1;
  p[2] = ((k >> 2) & 1) | ((k >> 5) & 1) << 1;
}

/// Node i's regularity, origin and h (findRegularLeaves: a leaf of 64 cells of one size at their Morton lattice
/// positions); zeros for the others. No multiply-add to fuse: the same bits on both sides.
AG_HD void regularLeaf(const TileBuildView& v, std::uint32_t i) {
  v.regular[i] = 0;
  v.h[i] = 0;
  for (int d = 0; d < 3; ++d) v.origin[3 * std::size_t(i) + d] = 0;
  if (v.childCount[i] != 0 || v.cellCount[i] != std::uint32_t(kTileCellsK)) return;
  const std::uint32_t c0 = v.cellBegin[i];
  const double h = v.size[c0];
  const double org[3] = {v.x[c0], v.y[c0], v.z[c0]};
  bool ok = h > 0;
  for (int k = 0; k < kTileCellsK && ok; ++k) {
    const std::uint32_t j = c0 + std::uint32_t(k);
    int p[3];
    latticeOfK(k, p);
    const double pos[3] = {v.x[j], v.y[j], v.z[j]};
    ok = v.size[j] == h;
    for (int d = 0; d < 3 && ok; ++d) ok = fabs((pos[d] - org[d]) / h - p[d]) <= 1e-9;
  }
  if (!ok) return;
  v.regular[i] = 1;
  v.h[i] = h;
  for (int d = 0; d < 3; ++d) v.origin[3 * std::size_t(i) + d] = org[d];
}

AG_HD int slotOfK(int a, int b, int c) {
  const int r = kMaxLeafOffsetK, w = 2 * r + 1;
  if (a < -r || a > r || b < -r || b > r || c < -r || c > r) return -1;
  return ((a + r) * w + (b + r)) * w + (c + r);
}

/// The table slot of source S for target T (P2pTables::findSlot with no shift, for a pair of the lists or a leaf
/// with itself, whose tables prepare always makes): -1 where none. 4 * leaves is exact, so a fused cells - 4 leaves
/// rounds as the unfused one.
AG_HD int entrySlot(const TileBuildView& v, std::uint32_t T, std::uint32_t S) {
  if (T == S) return v.regular[T] ? slotOfK(0, 0, 0) : -1;
  if (!v.regular[T] || !v.regular[S] || v.h[T] != v.h[S]) return -1;
  const double h = v.h[T];
  int a[3];
  for (int d = 0; d < 3; ++d) {
    const double cells = ((v.origin[3 * std::size_t(S) + d] + 0.0) - v.origin[3 * std::size_t(T) + d]) / h;
    const double leaves = nearbyint(cells / 4);
    if (!(fabs(cells - 4 * leaves) <= 1e-9 * fmax(1.0, fabs(cells))) || fabs(leaves) > kMaxLeafOffsetK) return -1;
    a[d] = int(leaves);
  }
  return slotOfK(a[0], a[1], a[2]);
}

/// Leaf k's entries' slots (all -1 unless the leaf is regular), each slot found marked used (the same value
/// written by any number of items).
AG_HD void leafEntrySlots(const TileBuildView& v, std::uint32_t k) {
  const std::uint32_t T = v.leaves[k];
  const bool reg = v.regular[T] != 0;
  for (std::uint32_t q = v.nearStart[k]; q < v.nearStart[k + 1]; ++q) {
    const int s = reg ? entrySlot(v, T, v.nearSource[q]) : -1;
    v.slot[q] = s;
    if (s >= 0) v.used[s] = 1;
  }
}

/// The used slots ascending into slots, their indices into indexOf (-1 for the others); returns their count. One
/// item (kSlotsK steps).
AG_HD int slotIndexes(const std::uint8_t* used, std::int32_t* indexOf, std::int32_t* slots) {
  int n = 0;
  for (int s = 0; s < kSlotsK; ++s) {
    indexOf[s] = used[s] ? n : -1;
    if (used[s]) slots[n++] = s;
  }
  return n;
}

/// Regular leaf k's table indices sorted at its entries' start, their count, its computed pairs and the FNV-1a hash
/// of (count, indices) (buildP2pTiles'); zeros for a leaf that is not regular. Insertion sort: a near list is short.
AG_HD void targetTables(const TileBuildView& v, std::uint32_t k) {
  const std::uint32_t q0 = v.nearStart[k], q1 = v.nearStart[k + 1];
  if (!v.regular[v.leaves[k]]) {
    v.ntab[k] = v.computed[k] = 0;
    v.hash[k] = 0;
    return;
  }
  std::uint32_t n = 0;
  for (std::uint32_t q = q0; q < q1; ++q)
    if (v.slot[q] >= 0) {
      const std::int32_t t = v.indexOf[v.slot[q]];
      std::uint32_t j = n++;
      while (j > 0 && v.tab[q0 + j - 1] > t) {
        v.tab[q0 + j] = v.tab[q0 + j - 1];
        --j;
      }
      v.tab[q0 + j] = t;
    }
  v.ntab[k] = n;
  v.computed[k] = q1 - q0 - n;
  std::uint64_t h = 1469598103934665603ULL ^ n;
  for (std::uint32_t q = q0; q < q0 + n; ++q) h = (h ^ std::uint32_t(v.tab[q])) * 1099511628211ULL;
  v.hash[k] = h;
}

/// Leaf k's flag for the prefix sum that numbers the regular leaves.
AG_HD std::uint32_t regularFlag(const TileBuildView& v, std::uint32_t k) { return v.regular[v.leaves[k]] ? 1 : 0; }

/// Leaf k into the regular leaves (at its rank among them) or the irregular ones (at its rank among those).
AG_HD void scatterLeaf(const TileBuildView& v, std::uint32_t k, std::uint32_t* regularList, std::uint32_t* irregular) {
  const std::uint32_t r = v.regularAt[k];
  if (v.regular[v.leaves[k]]) regularList[r] = k;
  else irregular[k - r] = k;
}

/// The regular targets' first order: (computed pairs, hash, leaf).
struct TargetOrder {
  const std::uint32_t* computed;
  const std::uint64_t* hash;
  AG_HD bool operator()(std::uint32_t a, std::uint32_t b) const {
    if (computed[a] != computed[b]) return computed[a] < computed[b];
    return hash[a] != hash[b] ? hash[a] < hash[b] : a < b;
  }
};

/// Position r of the sorted targets starts a run (a new (computed, hash)).
AG_HD std::uint32_t runHead(const TileBuildView& v, std::uint32_t r) {
  if (r == 0) return 1;
  const std::uint32_t a = v.sorted[r], b = v.sorted[r - 1];
  return v.computed[a] != v.computed[b] || v.hash[a] != v.hash[b] ? 1 : 0;
}

/// Position r's run's start (r a head: runAt[r] is its run's number); the last run's end at r = nreg.
AG_HD void runStartAt(const TileBuildView& v, std::uint32_t r) {
  if (r == v.nreg) v.runStart[v.runAt[r]] = r;
  else if (v.runAt[r + 1] != v.runAt[r]) v.runStart[v.runAt[r]] = r;
}

/// The runs' order: (computed pairs, tables lexicographically, first leaf) of their first targets.
struct RunOrder {
  const std::uint32_t *sorted, *runStart, *computed, *ntab, *nearStart;
  const std::int32_t* tab;
  AG_HD bool operator()(std::uint32_t x, std::uint32_t y) const {
    const std::uint32_t a = sorted[runStart[x]], b = sorted[runStart[y]];
    if (computed[a] != computed[b]) return computed[a] < computed[b];
    const std::int32_t *ta = tab + nearStart[a], *tb = tab + nearStart[b];
    const std::uint32_t na = ntab[a], nb = ntab[b];
    for (std::uint32_t i = 0; i < na && i < nb; ++i)
      if (ta[i] != tb[i]) return ta[i] < tb[i];
    if (na != nb) return na < nb;
    return a < b;
  }
};

/// A run's length (for the prefix sum of the runs in their order, the runs numbered by their sorted order).
AG_HD std::uint32_t runLength(const TileBuildView& v, std::uint32_t run) {
  return v.runStart[run + 1] - v.runStart[run];
}

/// Sorted position r into ordered: its run's place plus its rank in its run (runAt[r + 1] - 1 is its run).
AG_HD void placeMember(const TileBuildView& v, std::uint32_t r) {
  const std::uint32_t run = v.runAt[r + 1] - 1;
  v.ordered[v.placeStart[run] + (r - v.runStart[run])] = v.sorted[r];
}

/// A tile's quantities, prefix-summed into the step starts and the totals.
struct TileCounts {
  std::uint32_t tableSteps = 0, computedSteps = 0;
  std::uint64_t tableEntries = 0, computedEntries = 0;
};
AG_HD TileCounts operator+(const TileCounts& a, const TileCounts& b) {
  TileCounts r;
  r.tableSteps = a.tableSteps + b.tableSteps;
  r.computedSteps = a.computedSteps + b.computedSteps;
  r.tableEntries = a.tableEntries + b.tableEntries;
  r.computedEntries = a.computedEntries + b.computedEntries;
  return r;
}

/// Run j of the runs in their order (runOrder, pos: the exclusive prefix sums of their lengths in that order): its
/// place in ordered.
AG_HD void placeRun(const TileBuildView& v, std::uint32_t j, const std::uint32_t* runOrder, const std::uint32_t* pos) {
  v.placeStart[runOrder[j]] = pos[j];
}

/// Tile t's targets' tables as a set of bits (tables < kSlotsK).
AG_HD void tileTableBits(const TileBuildView& v, std::uint32_t t, std::uint32_t bits[kSlotWordsK]) {
  for (int w = 0; w < kSlotWordsK; ++w) bits[w] = 0;
  const std::uint32_t b = t * kTileWidthK, e = b + kTileWidthK < v.nreg ? b + kTileWidthK : v.nreg;
  for (std::uint32_t r = b; r < e; ++r) {
    const std::uint32_t k = v.ordered[r], q0 = v.nearStart[k];
    for (std::uint32_t q = q0; q < q0 + v.ntab[k]; ++q) bits[v.tab[q] >> 5] |= 1u << (v.tab[q] & 31);
  }
}

/// Tile t's steps (the union of its tables, as many computed steps as its most) and entries.
AG_HD TileCounts tileCountsOf(const TileBuildView& v, std::uint32_t t) {
  std::uint32_t bits[kSlotWordsK];
  tileTableBits(v, t, bits);
  TileCounts c;
  for (int w = 0; w < kSlotWordsK; ++w)
    for (std::uint32_t x = bits[w]; x; x &= x - 1) ++c.tableSteps;
  const std::uint32_t b = t * kTileWidthK, e = b + kTileWidthK < v.nreg ? b + kTileWidthK : v.nreg;
  for (std::uint32_t r = b; r < e; ++r) {
    const std::uint32_t k = v.ordered[r];
    if (v.computed[k] > c.computedSteps) c.computedSteps = v.computed[k];
    c.tableEntries += v.ntab[k];
    c.computedEntries += v.computed[k];
  }
  return c;
}

/// Tile t's step tables from stepStart[t]: its tables ascending, then -1 for each computed step.
AG_HD void tileSteps(const TileBuildView& v, std::uint32_t t, const TileCounts& c) {
  std::uint32_t bits[kSlotWordsK];
  tileTableBits(v, t, bits);
  std::uint32_t s = v.stepStart[t];
  for (int w = 0; w < kSlotWordsK; ++w)
    for (int i = 0; i < 32; ++i)
      if (bits[w] >> i & 1) v.stepTable[s++] = std::int32_t(32 * w + i);
  for (std::uint32_t i = 0; i < c.computedSteps; ++i) v.stepTable[s++] = -1;
}

/// Target i of tile t (tableSteps: the tile's table steps): its leaf, 1 / h, and its column of sources (kNoLeafK
/// where it has none): a table entry at its table's step, the computed ones after the tables in list order.
AG_HD void tileColumn(const TileBuildView& v, std::uint32_t t, std::uint32_t i, std::uint32_t tableSteps) {
  const std::uint32_t r = t * kTileWidthK + i, s0 = v.stepStart[t], ns = v.stepStart[t + 1] - s0;
  const std::size_t col = std::size_t(t) * kTileWidthK + i;
  for (std::uint32_t s = 0; s < ns; ++s) v.stepSource[(std::size_t(s0) + s) * kTileWidthK + i] = kNoLeafK;
  if (r >= v.nreg) {
    v.target[col] = kNoLeafK;
    v.invH[col] = 0.0;
    return;
  }
  const std::uint32_t k = v.ordered[r], T = v.leaves[k];
  v.target[col] = T;
  v.invH[col] = 1.0 / v.h[T];
  std::uint32_t c = 0;
  for (std::uint32_t q = v.nearStart[k]; q < v.nearStart[k + 1]; ++q) {
    std::uint32_t st;
    if (v.slot[q] >= 0) {  // the table's step: binary search in the tile's ascending tables
      const std::int32_t want = v.indexOf[v.slot[q]];
      std::uint32_t lo = 0, hi = tableSteps;
      while (lo < hi) {
        const std::uint32_t mid = (lo + hi) / 2;
        if (v.stepTable[s0 + mid] < want) lo = mid + 1;
        else hi = mid;
      }
      st = lo;
    } else {
      st = tableSteps + c++;
    }
    v.stepSource[(std::size_t(s0) + st) * kTileWidthK + i] = v.nearSource[q];
  }
}

/// The irregular leaves' own CSR (fmm_phase.cu's irregularLists): irregular leaf j's list's length, then (with
/// start, the exclusive prefix sums of those) its node and list.
AG_HD std::uint32_t irregularSize(const TileBuildView& v, const std::uint32_t* irregular, std::uint32_t j) {
  return v.nearStart[irregular[j] + 1] - v.nearStart[irregular[j]];
}
AG_HD void irregularRow(const TileBuildView& v, const std::uint32_t* irregular, std::uint32_t j,
                        const std::uint32_t* start, std::uint32_t* leaf, std::uint32_t* source) {
  const std::uint32_t k = irregular[j], q0 = v.nearStart[k];
  leaf[j] = v.leaves[k];
  for (std::uint32_t q = q0; q < v.nearStart[k + 1]; ++q) source[start[j] + (q - q0)] = v.nearSource[q];
}

}  // namespace fmm
}  // namespace amrgrav
