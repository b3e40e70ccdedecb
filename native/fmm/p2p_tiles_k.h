/// \file p2p_tiles_k.h
/// \brief The near lists and P2P tiles of fmm/p2p_tiles.h one item at a time, for the CUDA backend's build of them
/// from its P2P pairs (cuda/fmm_tiles_phase.h) and its host emulation (fmm/p2p_tiles_emulate.h), written once for
/// both. The result is buildNearLists', findRegularLeaves', the tables' slots of P2pTables::prepare and
/// buildP2pTiles' arrays, element for element (native/tests/fmm_device_tiles.cpp checks the emulation, the GPU
/// parity subject fmm-tiles the device). Periodic boxes too (the near lists, tiles and irregular lists with each
/// source's image shift, as fmm/p2p_tiles.h builds them with shifts: the GPU parity subject fmm-periodic checks them).
///
/// The steps (each a rule here for one item or one lane's part of an item, scans and sorts between them; the
/// device runs a warp per leaf, target or tile where an item has many entries, the emulation plain loops over the
/// same lane parts):
///  1. the P2P pairs' keys (A, B), A < B, sorted (as the lists leave them), and a copy stably sorted by B alone:
///     two CSRs over the nodes (csrStartsAtBy: the pairs by A give node i its partners above it ascending, the
///     copy by B its partners below it ascending); leaf k's near list is itself, its partners below, its partners
///     above (nearStartAt, nearEntry), which is buildNearLists' order (the CPU's pairs are sorted, so a leaf's
///     partners come ascending) with no sort of the 2 x pairs directed keys;
///  2. each node's regularity, origin and h (regularCandidate, regularCell for each of its 64 cells, regularWrite:
///     as findRegularLeaves);
///  3. each regular target's entries' table slots (entrySlotAt: the whole-leaf offset, P2pTables::findSlot's
///     choice), the slots used as a bitset, their indices in ascending order (laneSlotCount, laneSlotIndexes: one
///     lane per word of the bitset);
///  4. each regular target's table indices sorted by counting (entryTable counted per table, then laneTableCount and
///     laneTableWrite emit each lane's range of tables ascending: O(entries + kSlotsK / 32) per lane, no comparison
///     sort), their count and computed pairs (targetTablesDone), its FNV-1a hash (targetHash);
///  5. the regular targets in buildP2pTiles' order: sorted by (computed, hash, leaf) (TargetOrder), cut into runs of
///     equal (computed, hash) (runHead), the runs sorted by (computed, their first kRunKeyTables tables, first leaf)
///     (RunOrder, over runKey's packed prefix) and laid out in that order (placeMember); both orders are integer
///     tuples, so the device sorts them by stable radix passes, least significant first;
///  6. per tile of kTileWidthK: the union of its targets' tables as a bitset (tileBits) and its counts (tileTarget's
///     per target, combined by TileCounts' maxSum, the table steps the bitset's popcount), prefix-summed into the
///     step starts; then its step tables (laneStepTables: the union's bits ascending, then -1 per computed step) and
///     each target's column of sources (entryStep: a table entry at its table's rank in the union, tableRank; the
///     computed ones after the tables in list order).
/// Orders are total (the leaf index breaks every tie), so any correct sort gives the same arrays.
///
/// Periodic boxes (TileBuildView::sbits = kShiftBits): the pairs' keys carry their image shift in the low bits
/// (fmm/dual_walk_k.h shiftedKey), sorted by (A, B, shift), and the copy is sorted by B's bits alone; a leaf may be
/// paired with its own image (A = B, shifted). buildNearLists gives a pair (A, B, s) the entries (B, s) on A's side
/// and (A, 26 - s) on B's, in pair order, so a leaf's list is: itself (kNoShift), its partners below it ((A, 26 - s),
/// by (A, s)), its pairs with its own images ((leaf, s), (leaf, 26 - s) for each, by s: the first of its pairs by A
/// and the last of its pairs by B, selfImagePairs), its partners above it ((B, s), by (B, s)). Each entry's slot is
/// that of the shifted source's offset (P2pTables::findSlot with the shift's vector), and the shifts ride beside
/// the sources into the tiles' columns (kNoShift for none) and the irregular leaves' lists.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/hostdevice.h"
#include "fmm/dual_walk_k.h"
#include "fmm/p2p_mma_k.h"

namespace amrgrav {
namespace fmm {

/// Must equal p2p_tables.h / p2p_tiles.h's constants (static_assert in p2p_tiles_emulate.cpp).
constexpr int kTileCellsK = 64;
constexpr int kTileWidthK = 32;
constexpr int kMaxLeafOffsetK = 4;
constexpr int kSlotsK = (2 * kMaxLeafOffsetK + 1) * (2 * kMaxLeafOffsetK + 1) * (2 * kMaxLeafOffsetK + 1);
constexpr int kSlotWordsK = (kSlotsK + 31) / 32;
constexpr std::uint32_t kNoLeafK = 0xffffffffu;
/// The lanes of a warp (the device's unit for one leaf, target or tile; the emulation loops over them): lane l
/// owns word l of a 729-bit set (kSlotWordsK <= kLanesK) and the kLaneSlotsK table indices from l * kLaneSlotsK.
constexpr int kLanesK = 32;
constexpr int kLaneSlotsK = (kSlotsK + kLanesK - 1) / kLanesK;
static_assert(kSlotWordsK <= kLanesK && kTileWidthK == kLanesK, "a lane per bitset word and per tile target");

/// Set bits of x (the device's __popc).
AG_HD int popc32(std::uint32_t x) {
#if defined(__CUDA_ARCH__)
  return __popc(x);
#else
  return __builtin_popcount(x);
#endif
}

/// The arrays the rules read and write (host or device pointers). Sizes: nodes, leaves (nl), entries (nl + 2 P2P
/// pairs), regular targets (nreg), runs, tiles.
struct TileBuildView {
  // inputs: the tree and its sorted cells (scaled lengths)
  std::uint32_t nodes = 0;
  const std::uint8_t* childCount = nullptr;
  const std::uint32_t *cellBegin = nullptr, *cellCount = nullptr;
  const double *x = nullptr, *y = nullptr, *z = nullptr, *size = nullptr;
  // 1: the leaves and near lists
  std::uint32_t nl = 0;
  std::uint32_t* leaves = nullptr;       ///< nl, ascending nodes
  int bits = 0;                          ///< the pairs' keys' node bits (fmm/dual_walk_k.h keyBits)
  const std::uint64_t* byA = nullptr;    ///< pairs: the P2P keys (A, B[, shift]), A < B (or A = B shifted), ascending
  const std::uint64_t* byB = nullptr;    ///< pairs: the same keys stably sorted by B
  int sbits = 0;                         ///< the keys' shift bits (periodic: kShiftBits; isolated: 0)
  double period[3] = {0, 0, 0};          ///< periodic: the lists' periods (scaled; 0 along isolated axes)
  std::uint32_t* aStart = nullptr;       ///< nodes + 1: byA's CSR over A (each node's partners above it)
  std::uint32_t* bStart = nullptr;       ///< nodes + 1: byB's CSR over B (each node's partners below it)
  std::uint32_t* nearStart = nullptr;    ///< nl + 1
  std::uint32_t* nearSource = nullptr;   ///< entries
  std::uint8_t* nearShift = nullptr;     ///< entries: each source's image shift (periodic; null in isolated boxes)
  // 2: regular leaves (per node)
  std::uint8_t* regular = nullptr;
  double* origin = nullptr;  ///< 3 per node
  double* h = nullptr;
  // 3, 4: per entry, per slot, per leaf
  std::int32_t* slot = nullptr;          ///< entries: the entry's table slot, -1 for none
  std::int32_t* tab = nullptr;           ///< entries: a regular target's table indices, sorted, at its entries' start
  std::uint32_t* usedBits = nullptr;     ///< kSlotWordsK: the slots used, a bit each
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
  std::uint32_t* tileBits = nullptr;     ///< kSlotWordsK per tile: the union of its targets' tables
  std::uint32_t* target = nullptr;       ///< kTileWidthK per tile
  double* invH = nullptr;                ///< kTileWidthK per tile
  std::uint32_t* stepStart = nullptr;    ///< tiles + 1
  std::int32_t* stepTable = nullptr;
  std::uint32_t* stepSource = nullptr;   ///< kTileWidthK per step
  std::uint8_t* stepShift = nullptr;     ///< kTileWidthK per step: the source's shift (periodic; else null)
};

/// Leaf k's flag for the prefix sum that numbers the leaves (1 for a leaf).
AG_HD std::uint32_t leafFlag(const TileBuildView& v, std::uint32_t node) { return v.childCount[node] == 0 ? 1 : 0; }

/// Leaf k's near list's start (k = nl: the end): one entry itself for each leaf before it, then each one's partners
/// below and above it.
AG_HD std::uint32_t nearStartAt(const TileBuildView& v, std::uint32_t k) {
  return k == v.nl ? v.nl + v.aStart[v.nodes] + v.bStart[v.nodes]
                   : k + v.aStart[v.leaves[k]] + v.bStart[v.leaves[k]];
}

/// Periodic boxes: node's pairs with its own images (node, node, s), the first of its pairs by A (0 in isolated
/// boxes: A < B there).
AG_HD std::uint32_t selfImagePairs(const TileBuildView& v, std::uint32_t node) {
  if (v.sbits == 0) return 0;
  std::uint32_t m = 0;
  for (std::uint32_t q = v.aStart[node]; q < v.aStart[node + 1]; ++q, ++m)
    if (keySecond(keyPairPart(v.byA[q], v.sbits), v.bits) != node) break;
  return m;
}

/// Entry j of leaf k's near list (j < its length): itself (j = 0), then its partners below it (the A of the pairs
/// (A, leaf), A ascending), then (periodic) its images (two entries per pair (leaf, leaf, s): s, then 26 - s), then
/// its partners above it (the B of the pairs (leaf, B), B ascending); with its shift (periodic: nearShift non-null;
/// a partner below is seen through the opposite shift 26 - s).
AG_HD void nearEntry(const TileBuildView& v, std::uint32_t k, std::uint32_t j) {
  const std::uint32_t node = v.leaves[k], m = selfImagePairs(v, node);
  const std::uint32_t below = v.bStart[node + 1] - v.bStart[node] - m;
  std::uint32_t src = node;
  std::uint8_t shift = kNoShift;
  if (j > 0 && j <= below) {
    const std::uint64_t key = v.byB[v.bStart[node] + j - 1];
    src = keyFirst(keyPairPart(key, v.sbits), v.bits);
    shift = std::uint8_t(26 - keyShift(key, v.sbits));
  } else if (j > below && j <= below + 2 * m) {
    const std::uint32_t p = j - 1 - below;
    const std::uint8_t s = keyShift(v.byA[v.aStart[node] + p / 2], v.sbits);
    shift = p % 2 == 0 ? s : std::uint8_t(26 - s);
  } else if (j > below + 2 * m) {
    const std::uint64_t key = v.byA[v.aStart[node] + j - 1 - below - m];
    src = keySecond(keyPairPart(key, v.sbits), v.bits);
    shift = keyShift(key, v.sbits);
  }
  v.nearSource[v.nearStart[k] + j] = src;
  if (v.nearShift) v.nearShift[v.nearStart[k] + j] = shift;
}

/// Lattice position of the k-th cell of a 4^3 leaf in Morton order (p2p_tables.cpp latticeOf; p2p_mma_k.h
/// leafLatticeAxis, the tensor-core kernels' per-axis rule).
AG_HD void latticeOfK(int k, int p[3]) {
  for (int d = 0; d < 3; ++d) p[d] = leafLatticeAxis(k, d);
}

/// Node i may be a regular leaf: a leaf of kTileCellsK cells (findRegularLeaves' first test).
AG_HD bool regularCandidate(const TileBuildView& v, std::uint32_t i) {
  return v.childCount[i] == 0 && v.cellCount[i] == std::uint32_t(kTileCellsK);
}

/// Cell k (0 .. kTileCellsK - 1) of the leaf whose cells start at c0 is where a regular leaf has it: the first
/// cell's size h > 0, its own size h, at its Morton lattice position from the first cell. The leaf is regular when
/// every cell is (an and: any order of the cells, any split over lanes, gives the same answer). No multiply-add to
/// fuse: the same bits on both sides.
AG_HD bool regularCell(const TileBuildView& v, std::uint32_t c0, int k) {
  const double h = v.size[c0];
  const std::uint32_t j = c0 + std::uint32_t(k);
  if (!(h > 0) || !(v.size[j] == h)) return false;
  int p[3];
  latticeOfK(k, p);
  const double pos[3] = {v.x[j], v.y[j], v.z[j]}, org[3] = {v.x[c0], v.y[c0], v.z[c0]};
  for (int d = 0; d < 3; ++d)
    if (!(fabs((pos[d] - org[d]) / h - p[d]) <= 1e-9)) return false;
  return true;
}

/// Node i's regularity, origin and h given the test's answer (zeros for the others).
AG_HD void regularWrite(const TileBuildView& v, std::uint32_t i, bool ok) {
  const std::uint32_t c0 = ok ? v.cellBegin[i] : 0;
  v.regular[i] = ok ? 1 : 0;
  v.h[i] = ok ? v.size[c0] : 0.0;
  v.origin[3 * std::size_t(i)] = ok ? v.x[c0] : 0.0;
  v.origin[3 * std::size_t(i) + 1] = ok ? v.y[c0] : 0.0;
  v.origin[3 * std::size_t(i) + 2] = ok ? v.z[c0] : 0.0;
}

/// Node i's regularity, origin and h (findRegularLeaves' rule on the host; the device splits the cells over a
/// warp's lanes).
AG_HD void regularLeaf(const TileBuildView& v, std::uint32_t i) {
  bool ok = regularCandidate(v, i);
  for (int k = 0; k < kTileCellsK && ok; ++k) ok = regularCell(v, v.cellBegin[i], k);
  regularWrite(v, i, ok);
}

AG_HD int slotOfK(int a, int b, int c) {
  const int r = kMaxLeafOffsetK, w = 2 * r + 1;
  if (a < -r || a > r || b < -r || b > r || c < -r || c > r) return -1;
  return ((a + r) * w + (b + r)) * w + (c + r);
}

/// The table slot of source S seen through image shift `shift` (kNoShift: none) for target T (P2pTables::findSlot
/// with the shift's vector, for a pair of the lists or a leaf with itself, whose tables prepare always makes): -1
/// where none. 4 * leaves is exact, so a fused cells - 4 leaves rounds as the unfused one.
AG_HD int entrySlot(const TileBuildView& v, std::uint32_t T, std::uint32_t S, std::uint8_t shift = kNoShift) {
  double sh[3] = {0.0, 0.0, 0.0};  // as buildP2pTiles makes it: zeros, or imageShiftVector's
  if (shift != kNoShift) imageShiftVector(v.period, shift, sh);
  if (T == S && sh[0] == 0 && sh[1] == 0 && sh[2] == 0) return v.regular[T] ? slotOfK(0, 0, 0) : -1;
  if (!v.regular[T] || !v.regular[S] || v.h[T] != v.h[S]) return -1;
  const double h = v.h[T];
  int a[3];
  for (int d = 0; d < 3; ++d) {
    const double cells = ((v.origin[3 * std::size_t(S) + d] + sh[d]) - v.origin[3 * std::size_t(T) + d]) / h;
    const double leaves = nearbyint(cells / 4);
    if (!(fabs(cells - 4 * leaves) <= 1e-9 * fmax(1.0, fabs(cells))) || fabs(leaves) > kMaxLeafOffsetK) return -1;
    a[d] = int(leaves);
  }
  return slotOfK(a[0], a[1], a[2]);
}

/// Entry q of leaf k's near list: its slot written (-1 unless the leaf is regular) and returned, for the caller to
/// mark used (a bit set: the same result for any number of items setting it, in any order).
AG_HD int entrySlotAt(const TileBuildView& v, std::uint32_t k, std::uint32_t q) {
  const std::uint32_t T = v.leaves[k];
  const int s = v.regular[T] ? entrySlot(v, T, v.nearSource[q], v.nearShift ? v.nearShift[q] : kNoShift) : -1;
  v.slot[q] = s;
  return s;
}

/// Lane l's used slots (word l of the bitset; lanes past the words have none).
AG_HD std::uint32_t laneSlotCount(const std::uint32_t* usedBits, int lane) {
  return lane < kSlotWordsK ? std::uint32_t(popc32(usedBits[lane])) : 0;
}

/// Lane l's slots 32 l .. 32 l + 31 (below kSlotsK): a used one's index (at, at + 1, ... ascending: at is the used
/// slots' count in the lanes before it) into indexOf and the slot into slots[index], -1 into indexOf for the others.
AG_HD void laneSlotIndexes(const std::uint32_t* usedBits, int lane, std::uint32_t at, std::int32_t* indexOf,
                           std::int32_t* slots) {
  if (lane >= kSlotWordsK) return;
  const std::uint32_t w = usedBits[lane];
  for (int b = 0; b < 32; ++b) {
    const int s = 32 * lane + b;
    if (s >= kSlotsK) break;
    if (w >> b & 1) {
      indexOf[s] = std::int32_t(at);
      slots[at++] = s;
    } else {
      indexOf[s] = -1;
    }
  }
}

/// Entry q's table index (-1: none), to be counted per table for its target.
AG_HD std::int32_t entryTable(const TileBuildView& v, std::uint32_t q) {
  return v.slot[q] >= 0 ? v.indexOf[v.slot[q]] : -1;
}

/// Lane l's entries among a target's table counts (counts[t]: how many of its entries have table t; kLanesK x
/// kLaneSlotsK of them, those past kSlotsK zero): its range's sum.
AG_HD std::uint32_t laneTableCount(const std::uint32_t* counts, int lane) {
  std::uint32_t n = 0;
  for (int j = 0; j < kLaneSlotsK; ++j) n += counts[lane * kLaneSlotsK + j];
  return n;
}

/// Lane l's tables from out (out = the target's tab row plus the entries of the lanes before it): each table of its
/// range as many times as counted, ascending. The lanes' ranges ascend, so the row is the tables sorted.
AG_HD void laneTableWrite(const std::uint32_t* counts, int lane, std::int32_t* out) {
  for (int j = 0; j < kLaneSlotsK; ++j) {
    const int t = lane * kLaneSlotsK + j;
    for (std::uint32_t c = counts[t]; c > 0; --c) *out++ = t;
  }
}

/// Leaf k's table count n (its sorted tables written) and its computed pairs (the rest of its list); zeros for a
/// leaf that is not regular.
AG_HD void targetTablesDone(const TileBuildView& v, std::uint32_t k, std::uint32_t n) {
  const bool reg = v.regular[v.leaves[k]] != 0;
  v.ntab[k] = reg ? n : 0;
  v.computed[k] = reg ? v.nearStart[k + 1] - v.nearStart[k] - n : 0;
}

/// Leaf k's FNV-1a hash of (count, sorted tables) (buildP2pTiles'); 0 for a leaf that is not regular.
AG_HD std::uint64_t targetHash(const TileBuildView& v, std::uint32_t k) {
  if (!v.regular[v.leaves[k]]) return 0;
  const std::uint32_t q0 = v.nearStart[k], n = v.ntab[k];
  std::uint64_t h = 1469598103934665603ULL ^ n;
  for (std::uint32_t q = q0; q < q0 + n; ++q) h = (h ^ std::uint32_t(v.tab[q])) * 1099511628211ULL;
  return h;
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

/// Tables of a run's list that its place among the runs looks at: its first 12, two keys of 6.
constexpr int kRunKeyTables = 12;
constexpr int kRunKeyTablesPerWord = 6;
constexpr int kRunKeyWords = kRunKeyTables / kRunKeyTablesPerWord;
constexpr int kRunKeyBits = 10 * kRunKeyTablesPerWord;  ///< a key's bits (10 a table)
static_assert(kSlotsK < 1023 && kRunKeyBits <= 64, "a table index + 1 in 10 bits");

/// Word w of a sorted table list's prefix key: tables [6 w, 6 w + 6) as 10 bits each (the table + 1; 0 past the
/// list's end), the first in the highest bits. Lists compare as their first kRunKeyTables tables lexicographically
/// (a list that ends first is the smaller) when their keys compare word by word.
AG_HD std::uint64_t tablePrefixKey(const std::int32_t* tab, std::uint32_t n, int w) {
  std::uint64_t key = 0;
  for (int i = w * kRunKeyTablesPerWord; i < (w + 1) * kRunKeyTablesPerWord; ++i)
    key = key << 10 | (std::uint32_t(i) < n ? std::uint64_t(tab[i] + 1) : 0u);
  return key;
}

/// -1, 0 or 1 as sorted table list a's first kRunKeyTables tables compare with list b's (their keys word by word).
AG_HD int compareTablePrefixes(const std::int32_t* ta, std::uint32_t na, const std::int32_t* tb, std::uint32_t nb) {
  for (int w = 0; w < kRunKeyWords; ++w) {
    const std::uint64_t ka = tablePrefixKey(ta, na, w), kb = tablePrefixKey(tb, nb, w);
    if (ka != kb) return ka < kb ? -1 : 1;
  }
  return 0;
}

/// Word w of regular target k's prefix key (its tables at its entries' start).
AG_HD std::uint64_t runKey(const TileBuildView& v, std::uint32_t k, int w) {
  return tablePrefixKey(v.tab + v.nearStart[k], v.ntab[k], w);
}

/// The runs' order: (computed pairs, the first kRunKeyTables tables, first leaf) of their first targets. Runs of
/// different tables sit next to each other by how their lists begin, which keeps a tile's union of tables small;
/// comparing the whole lists (up to hundreds of tables) made the device's sort cost milliseconds.
struct RunOrder {
  const std::uint32_t *sorted, *runStart, *computed, *ntab, *nearStart;
  const std::int32_t* tab;
  AG_HD bool operator()(std::uint32_t x, std::uint32_t y) const {
    const std::uint32_t a = sorted[runStart[x]], b = sorted[runStart[y]];
    if (computed[a] != computed[b]) return computed[a] < computed[b];
    const int c = compareTablePrefixes(tab + nearStart[a], ntab[a], tab + nearStart[b], ntab[b]);
    return c != 0 ? c < 0 : a < b;
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
/// One tile's targets combined: as many computed steps as its most, the rest summed (associative and commutative:
/// any tree of combinations gives the same counts).
AG_HD TileCounts maxSum(const TileCounts& a, const TileCounts& b) {
  TileCounts r = a + b;
  r.computedSteps = a.computedSteps > b.computedSteps ? a.computedSteps : b.computedSteps;
  return r;
}

/// Run j of the runs in their order (runOrder, pos: the exclusive prefix sums of their lengths in that order): its
/// place in ordered.
AG_HD void placeRun(const TileBuildView& v, std::uint32_t j, const std::uint32_t* runOrder, const std::uint32_t* pos) {
  v.placeStart[runOrder[j]] = pos[j];
}

/// Target i of tile t as a leaf index (into leaves), kNoLeafK past the last regular target.
AG_HD std::uint32_t tileTargetLeaf(const TileBuildView& v, std::uint32_t t, int i) {
  const std::uint32_t r = t * kTileWidthK + std::uint32_t(i);
  return r < v.nreg ? v.ordered[r] : kNoLeafK;
}

/// Target i's part of its tile's counts: its computed pairs as the tile's computed steps, its entries (zeros for
/// none). The table steps are the tile's union's popcount (tileBits), added by the caller.
AG_HD TileCounts tileTarget(const TileBuildView& v, std::uint32_t t, int i) {
  TileCounts c;
  const std::uint32_t k = tileTargetLeaf(v, t, i);
  if (k == kNoLeafK) return c;
  c.computedSteps = v.computed[k];
  c.tableEntries = v.ntab[k];
  c.computedEntries = v.computed[k];
  return c;
}

/// The rank of table `table` among the set bits of a tile's union (bits: kSlotWordsK words; prefix[w]: the set bits
/// in the words before w): its step, which is where buildP2pTiles' ascending step tables have it.
AG_HD std::uint32_t tableRank(const std::uint32_t* bits, const std::uint32_t* prefix, std::int32_t table) {
  const int w = table >> 5, b = table & 31;
  return prefix[w] + std::uint32_t(popc32(bits[w] & ((1u << b) - 1u)));
}

/// Lane l's step tables of a tile whose steps start at s0: the tables of its word (bits), ascending, from s0 +
/// prefix (the set bits of the words before it).
AG_HD void laneStepTables(const TileBuildView& v, int lane, std::uint32_t bits, std::uint32_t s0,
                          std::uint32_t prefix) {
  std::uint32_t s = s0 + prefix;
  for (std::uint32_t x = bits; x; x &= x - 1) v.stepTable[s++] = std::int32_t(32 * lane + popc32((x & (0u - x)) - 1u));
}

/// Target i of tile t: its leaf (node) and 1 / h into the tile's columns (kNoLeafK and 0 for none).
AG_HD void tileTargetWrite(const TileBuildView& v, std::uint32_t t, int i) {
  const std::uint32_t k = tileTargetLeaf(v, t, i);
  const std::size_t col = std::size_t(t) * kTileWidthK + std::uint32_t(i);
  v.target[col] = k == kNoLeafK ? kNoLeafK : v.leaves[k];
  v.invH[col] = k == kNoLeafK ? 0.0 : 1.0 / v.h[v.leaves[k]];
}

/// Entry q of a tile's target (c: the target's computed entries before it in its list) : its step, a table entry at
/// its table's rank in the tile's union, a computed one at tableSteps + c.
AG_HD std::uint32_t entryStep(const TileBuildView& v, std::uint32_t q, const std::uint32_t* bits,
                              const std::uint32_t* prefix, std::uint32_t tableSteps, std::uint32_t c) {
  return v.slot[q] >= 0 ? tableRank(bits, prefix, v.indexOf[v.slot[q]]) : tableSteps + c;
}

/// Column col of a tile's steps empty (no source: kNoLeafK, kNoShift), before its targets' entries are written.
AG_HD void emptyStep(const TileBuildView& v, std::size_t col) {
  v.stepSource[col] = kNoLeafK;
  if (v.stepShift) v.stepShift[col] = kNoShift;
}

/// Entry q's source (and shift) into column col of its step.
AG_HD void entryWrite(const TileBuildView& v, std::uint32_t q, std::size_t col) {
  v.stepSource[col] = v.nearSource[q];
  if (v.stepShift) v.stepShift[col] = v.nearShift[q];
}

/// The irregular leaves' own CSR (fmm_phase.cu's irregularLists): irregular leaf j's list's length, then (with
/// start, the exclusive prefix sums of those) its node and entry i of its list.
AG_HD std::uint32_t irregularSize(const TileBuildView& v, const std::uint32_t* irregular, std::uint32_t j) {
  return v.nearStart[irregular[j] + 1] - v.nearStart[irregular[j]];
}
AG_HD std::uint32_t irregularLeaf(const TileBuildView& v, const std::uint32_t* irregular, std::uint32_t j) {
  return v.leaves[irregular[j]];
}
AG_HD void irregularEntry(const TileBuildView& v, const std::uint32_t* irregular, std::uint32_t j, std::uint32_t i,
                          const std::uint32_t* start, std::uint32_t* source, std::uint8_t* shift = nullptr) {
  const std::uint32_t q = v.nearStart[irregular[j]] + i;
  source[start[j] + i] = v.nearSource[q];
  if (shift) shift[start[j] + i] = v.nearShift[q];  // periodic: the entry's shift
}

}  // namespace fmm
}  // namespace amrgrav
