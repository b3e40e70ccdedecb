/// \file dual_walk_k.h
/// \brief The FMM's symmetric dual tree walk (fmm/interaction_lists.h, Dehnen 2002) one pair at a time, for a walk
/// that runs level-synchronously (breadth first) over a frontier of node pairs: the CUDA backend's
/// (cuda/fmm_lists_phase.h) and its host emulation (fmm/dual_walk.h), written once for both. Isolated boxes only
/// (no image shifts; multipoles about the centres of mass: physics/fmm_mac_k.h fmmPairAccepts).
///
/// One round of the walk: every pair of the frontier is decided (decidePair: the rule of interaction_lists.cpp's
/// Walker::step, the same pair orientation, so the same MAC and opening decisions), each decision's counts
/// (pairCounts: child pairs, M2L, P2P) are prefix-summed, and each pair writes its child pairs into the next
/// frontier and its list entry into the M2L or P2P pairs at its offsets (emitPair). The walk ends when a frontier is
/// empty. The lists are then made canonical as the CPU's: each accepted pair one directed M2L entry each way, keyed
/// (target, source) and sorted, the CSR's starts from the sorted keys (csrStartsAt); the P2P pairs keyed (min, max)
/// and sorted (keys of 2 keyBits(nodes) bits: listKey). So a walk that finds the same pairs, in whatever order, gets the same lists.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/hostdevice.h"
#include "physics/fmm_mac_k.h"

namespace amrgrav {
namespace fmm {

/// The tree's arrays the walk reads (host or device pointers, fmm/fmm_tree.h's layout) and the MAC's settings.
struct DualWalkTree {
  const std::uint32_t* childBegin = nullptr;
  const std::uint8_t* childCount = nullptr;
  const double* centre = nullptr;    ///< 3 per node
  const double* radius = nullptr;
  const double* critical = nullptr;
  const double* absMass = nullptr;
  const double* lowBound = nullptr;
  int order = 0;
  double tolerance = 0;
  double accelLimit = 0;  ///< the MAC's test 3 (FmmTree::accelLimit; 0: the potential's lists)
};

/// A frontier pair or an accepted M2L pair, packed: the first node in the high 32 bits.
AG_HD std::uint64_t packPair(std::uint32_t a, std::uint32_t b) { return std::uint64_t(a) << 32 | b; }
AG_HD std::uint32_t pairFirst(std::uint64_t p) { return std::uint32_t(p >> 32); }
AG_HD std::uint32_t pairSecond(std::uint64_t p) { return std::uint32_t(p); }

/// What one pair of the frontier becomes.
enum PairKind : std::uint8_t {
  kPairEnds = 0,  ///< a leaf with itself: its P2P is implied (not listed)
  kPairM2L = 1,   ///< accepted: one M2L each way
  kPairP2P = 2,   ///< two leaves, not accepted: one mutual P2P
  kPairSelf = 3,  ///< a node with itself: its children each with itself, then each pair of them (i < j)
  kPairOpen = 4,  ///< the node `opened` split: (each child, other)
};

struct PairStep {
  std::uint32_t c0 = 0;     ///< kPairSelf, kPairOpen: the split node's first child
  std::uint32_t other = 0;  ///< kPairOpen: the node left whole
  std::uint8_t kind = kPairEnds;
  std::uint8_t nc = 0;      ///< the split node's children
};

/// The decision of interaction_lists.cpp's Walker::step for the pair (a, b) of an isolated box (no shift): a == b
/// is a node with itself; otherwise the MAC (fmmPairAccepts), then two leaves, else the node with the larger radius
/// is opened (fmmOpensFirst; a leaf never), its children first in the child pairs as on the CPU.
AG_HD PairStep decidePair(const DualWalkTree& t, std::uint64_t pair) {
  const std::uint32_t a = pairFirst(pair), b = pairSecond(pair);
  PairStep s;
  if (a == b) {
    s.nc = t.childCount[a];
    if (s.nc == 0) return s;  // kPairEnds
    s.kind = kPairSelf;
    s.c0 = t.childBegin[a];
    return s;
  }
  const double* ca = &t.centre[3 * std::size_t(a)];
  const double* cb = &t.centre[3 * std::size_t(b)];
  if (fmmPairAccepts(ca, t.radius[a], t.critical[a], t.absMass[a], t.lowBound[a], cb, t.radius[b], t.critical[b],
                     t.absMass[b], t.lowBound[b], t.order, t.tolerance, t.accelLimit, t.childCount[a] == 0,
                     t.childCount[b] == 0)) {
    s.kind = kPairM2L;
    return s;
  }
  const bool la = t.childCount[a] == 0, lb = t.childCount[b] == 0;
  if (la && lb) {
    s.kind = kPairP2P;
    return s;
  }
  const bool openA = !la && (lb || fmmOpensFirst(t.radius[a], ca, t.radius[b], cb));
  const std::uint32_t p = openA ? a : b;
  s.kind = kPairOpen;
  s.c0 = t.childBegin[p];
  s.nc = t.childCount[p];
  s.other = openA ? b : a;
  return s;
}

/// A decision's entries in the next frontier and the lists: the quantities the walk prefix-sums.
struct PairCounts {
  std::uint32_t pairs = 0, m2l = 0, p2p = 0;
};

AG_HD PairCounts operator+(const PairCounts& x, const PairCounts& y) {
  PairCounts r;
  r.pairs = x.pairs + y.pairs;
  r.m2l = x.m2l + y.m2l;
  r.p2p = x.p2p + y.p2p;
  return r;
}

/// The most child pairs one decision makes: 8 children with themselves and the 28 pairs among them.
constexpr std::uint32_t kMaxChildPairs = 8 + 8 * 7 / 2;

AG_HD PairCounts pairCounts(const PairStep& s) {
  PairCounts c;
  const std::uint32_t n = s.nc;
  c.pairs = s.kind == kPairSelf ? n + n * (n - 1) / 2 : s.kind == kPairOpen ? n : 0;
  c.m2l = s.kind == kPairM2L ? 1 : 0;
  c.p2p = s.kind == kPairP2P ? 1 : 0;
  return c;
}

/// The k-th child pair of a decision (k < pairCounts(s).pairs), in the CPU's order: a node's children each with
/// itself, then (c0 + i, c0 + j) for i < j row by row; an opened node's (c0 + i, other).
AG_HD std::uint64_t childPair(const PairStep& s, std::uint32_t k) {
  if (s.kind == kPairOpen) return packPair(s.c0 + k, s.other);
  const std::uint32_t n = s.nc;
  if (k < n) return packPair(s.c0 + k, s.c0 + k);
  k -= n;
  std::uint32_t i = 0;
  while (k >= n - 1 - i) {  // row i holds the n - 1 - i pairs (i, i + 1 .. n - 1)
    k -= n - 1 - i;
    ++i;
  }
  return packPair(s.c0 + i, s.c0 + i + 1 + k);
}

/// The list keys' width: node indices take `bits` = keyBits(nodes) bits, a key (first, second) is first << bits |
/// second, 2 bits wide in all (the device's radix sorts pass over those bits alone).
AG_HD int keyBits(std::size_t nodes) {
  int b = 1;
  while ((std::size_t(1) << b) < nodes) ++b;
  return b;
}
AG_HD std::uint64_t listKey(std::uint32_t first, std::uint32_t second, int bits) {
  return std::uint64_t(first) << bits | second;
}
AG_HD std::uint32_t keyFirst(std::uint64_t k, int bits) { return std::uint32_t(k >> bits); }
AG_HD std::uint32_t keySecond(std::uint64_t k, int bits) { return std::uint32_t(k & ((std::uint64_t(1) << bits) - 1)); }

/// Writes pair `pair`'s decision at its offsets `at` (the exclusive prefix sums of pairCounts): its child pairs
/// into next[at.pairs ..], an accepted pair as it is into m2l[at.m2l], a leaf pair as the key (min, max) into
/// p2p[at.p2p].
AG_HD void emitPair(const PairStep& s, std::uint64_t pair, const PairCounts& at, int bits, std::uint64_t* next,
                    std::uint64_t* m2l, std::uint64_t* p2p) {
  if (s.kind == kPairM2L) {
    m2l[at.m2l] = pair;
  } else if (s.kind == kPairP2P) {
    const std::uint32_t a = pairFirst(pair), b = pairSecond(pair);
    p2p[at.p2p] = a < b ? listKey(a, b, bits) : listKey(b, a, bits);
  } else {
    const std::uint32_t n = pairCounts(s).pairs;
    for (std::uint32_t k = 0; k < n; ++k) next[at.pairs + k] = childPair(s, k);
  }
}

/// The two directed M2L entries of accepted pair q, keyed (target, source): A's from B, B's from A.
AG_HD void directedEntries(const std::uint64_t* m2l, std::size_t q, int bits, std::uint64_t* keys) {
  const std::uint32_t a = pairFirst(m2l[q]), b = pairSecond(m2l[q]);
  keys[2 * q] = listKey(a, b, bits);
  keys[2 * q + 1] = listKey(b, a, bits);
}

/// The CSR's starts from keys sorted by target (count of them, over `nodes` targets): position i (0 .. count) starts
/// every target after the one before it up to its own (after the last entry: up to `nodes`), so start[0 .. nodes]
/// are each written once, by one i.
AG_HD void csrStartsAt(const std::uint64_t* keys, std::size_t count, std::size_t i, std::uint32_t nodes, int bits,
                       std::uint32_t* start) {
  const std::uint32_t lo = i == 0 ? 0 : keyFirst(keys[i - 1], bits) + 1;
  const std::uint32_t hi = i == count ? nodes : keyFirst(keys[i], bits);
  for (std::uint32_t t = lo; t <= hi; ++t) start[t] = std::uint32_t(i);
}

/// A mutual P2P pair's directed cell pairs (interaction_lists.h FmmLists::directedP2P): both directions.
AG_HD std::uint64_t p2pCellPairs(const std::uint32_t* cellCount, std::uint64_t key, int bits) {
  return 2 * std::uint64_t(cellCount[keyFirst(key, bits)]) * cellCount[keySecond(key, bits)];
}

/// A leaf's cell pairs with itself (its own cells, each pair both ways, a cell with itself excluded); 0 elsewhere.
AG_HD std::uint64_t leafSelfCellPairs(const std::uint32_t* cellCount, const std::uint8_t* childCount,
                                      std::uint32_t node) {
  const std::uint64_t c = cellCount[node];
  return childCount[node] == 0 ? c * (c - 1) : 0;
}

}  // namespace fmm
}  // namespace amrgrav
