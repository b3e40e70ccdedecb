/// \file dual_walk_k.h
/// \brief The FMM's symmetric dual tree walk (fmm/interaction_lists.h, Dehnen 2002) one pair at a time, for a walk
/// that runs level-synchronously (breadth first) over a frontier of node pairs: the CUDA backend's
/// (cuda/fmm_lists_phase.h) and its host emulation (fmm/dual_walk.h), written once for both. Isolated boxes
/// (multipoles about the centres of mass: physics/fmm_mac_k.h fmmPairAccepts) and periodic ones (fully, sheets,
/// lines: every pair carries an image shift, fmm/interaction_lists.h, and the signed sources' test
/// fmmSignedPairAccepts decides; the walk starts from the root with itself and its images of one half-space,
/// walkStartPairs).
///
/// One round of the walk: every pair of the frontier is decided (decidePair: the rule of interaction_lists.cpp's
/// Walker::step, the same pair orientation, so the same MAC and opening decisions), each decision's counts
/// (pairCounts: child pairs, M2L, P2P) are prefix-summed, and each pair writes its child pairs into the next
/// frontier and its list entry into the M2L or P2P pairs at its offsets (emitPair). The walk ends when a frontier is
/// empty. The lists are then made canonical as the CPU's: each accepted pair one directed M2L entry each way, keyed
/// (target, source) and sorted, the CSR's starts from the sorted keys (csrStartsAt; isolated boxes build the same CSR
/// from the accepted pairs' undirected keys, m2lPairEntries, sorting half as many); the P2P pairs keyed (min, max)
/// and sorted (keys of 2 keyBits(nodes) bits: listKey). So a walk that finds the same pairs, in whatever order, gets the same lists.
/// Periodic boxes: a frontier pair's shift rides in an array beside it, and the list keys take the shift in their
/// low kShiftBits bits (sbits = kShiftBits; 0 in isolated boxes, whose keys stay as they were), so the sorts order
/// M2L sources by (source, shift) and P2P pairs by (A, B, shift), as interaction_lists.cpp does.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/hostdevice.h"
#include "fmm/interaction_lists.h"
#include "physics/fmm_mac_k.h"
#include "physics/rounding.h"

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
  /// Periodic boxes (FmmTree::dipoles): the signed sources' test from the multipole norms (order + 1 per node,
  /// FmmTree::norms; lowBound then holds the scale of |phi|), and pairs with image shifts of these periods (scaled
  /// lengths, 0 along isolated axes).
  bool dipoles = false;
  const double* norms = nullptr;
  double period[3] = {0, 0, 0};
};

/// The list keys' shift bits in periodic boxes (shifts 0..26).
constexpr int kShiftBits = 5;

/// The walk's first frontier: the root with itself, then (periodic, `period` non-null) the root with each image of
/// one half-space along periodic axes, shifts kNoShift + 1 .. 26 in order (interaction_lists.cpp's start; 13 in a
/// fully periodic box, 4 in a sheet, 1 on a line). pairs and shifts (14 each at most) get them; returns the count.
AG_HD int walkStartPairs(const double* period, std::uint64_t* pairs, std::uint8_t* shifts) {
  int k = 0;
  pairs[k] = 0;  // packPair(0, 0)
  shifts[k++] = kNoShift;
  if (!period) return k;
  for (int s = kNoShift + 1; s < 27; ++s) {
    const int n[3] = {s % 3 - 1, s / 3 % 3 - 1, s / 9 - 1};
    bool alongPeriodic = true;
    for (int d = 0; d < 3; ++d) alongPeriodic = alongPeriodic && (n[d] == 0 || period[d] > 0);
    if (alongPeriodic) {
      pairs[k] = 0;
      shifts[k++] = std::uint8_t(s);
    }
  }
  return k;
}

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
  /// kPairOpen: the child pairs' shift (seen from the opened node's children); kPairM2L: the pair's; kPairP2P: the
  /// canonical pair's (seen from the smaller node); kNoShift in isolated boxes.
  std::uint8_t shift = kNoShift;
};

/// The decision of interaction_lists.cpp's Walker::step for the pair (a, b) seen through image shift `shift` (b's
/// image; kNoShift in isolated boxes): a == b unshifted is a node with itself; otherwise the MAC (fmmPairAccepts, or
/// with dipoles fmmSignedPairAccepts, b's centre moved by the shift), then two leaves (the pair as (min, max), the
/// shift seen from the smaller), else the node with the larger radius is opened (fmmOpensFirst on the unshifted
/// centres, as on the CPU; a leaf never), its children first in the child pairs, their shift seen from them.
AG_HD PairStep decidePair(const DualWalkTree& t, std::uint64_t pair, std::uint8_t shift = kNoShift) {
  const std::uint32_t a = pairFirst(pair), b = pairSecond(pair);
  PairStep s;
  s.shift = shift;
  if (a == b && shift == kNoShift) {
    s.nc = t.childCount[a];
    if (s.nc == 0) return s;  // kPairEnds
    s.kind = kPairSelf;
    s.c0 = t.childBegin[a];
    return s;
  }
  const double* ca = &t.centre[3 * std::size_t(a)];
  const double* cb = &t.centre[3 * std::size_t(b)];
  bool accepted;
  if (t.dipoles) {  // interaction_lists.cpp's accepts: b's centre + the shift's vector (+ 0 without one)
    double v[3];
    imageShiftVector(t.period, shift, v);
    const double c[3] = {RoundNearest::add(cb[0], v[0]), RoundNearest::add(cb[1], v[1]),
                         RoundNearest::add(cb[2], v[2])};
    const std::size_t np = std::size_t(t.order) + 1;
    accepted = fmmSignedPairAccepts(ca, t.radius[a], t.critical[a], &t.norms[a * np], c, t.radius[b],
                                    t.critical[b], &t.norms[b * np], t.lowBound[a], t.order, t.tolerance);
  } else {
    accepted = fmmPairAccepts(ca, t.radius[a], t.critical[a], t.absMass[a], t.lowBound[a], cb, t.radius[b],
                              t.critical[b], t.absMass[b], t.lowBound[b], t.order, t.tolerance, t.accelLimit,
                              t.childCount[a] == 0, t.childCount[b] == 0);
  }
  if (accepted) {
    s.kind = kPairM2L;
    return s;
  }
  const bool la = t.childCount[a] == 0, lb = t.childCount[b] == 0;
  if (la && lb) {
    s.kind = kPairP2P;
    if (a > b) s.shift = std::uint8_t(26 - shift);  // the canonical (min, max): seen from b
    return s;
  }
  const bool openA = !la && (lb || fmmOpensFirst(t.radius[a], ca, t.radius[b], cb));
  const std::uint32_t p = openA ? a : b;
  s.kind = kPairOpen;
  s.c0 = t.childBegin[p];
  s.nc = t.childCount[p];
  s.other = openA ? b : a;
  s.shift = openA ? shift : std::uint8_t(26 - shift);  // seen from b's children: the opposite
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
/// With sbits shift bits (periodic: kShiftBits; isolated: 0, the key as listKey makes it): (first, second, shift).
AG_HD std::uint64_t shiftedKey(std::uint32_t first, std::uint32_t second, std::uint8_t shift, int bits, int sbits) {
  return sbits == 0 ? listKey(first, second, bits) : listKey(first, second, bits) << sbits | shift;
}
AG_HD std::uint64_t keyPairPart(std::uint64_t k, int sbits) { return k >> sbits; }
AG_HD std::uint8_t keyShift(std::uint64_t k, int sbits) {
  return sbits == 0 ? kNoShift : std::uint8_t(k & ((std::uint64_t(1) << sbits) - 1));
}

/// Writes pair `pair`'s decision at its offsets `at` (the exclusive prefix sums of pairCounts): its child pairs
/// into next[at.pairs ..], an accepted pair as it is into m2l[at.m2l], a leaf pair as the key (min, max) into
/// p2p[at.p2p]. Periodic boxes (sbits = kShiftBits): the child pairs' shifts into nextShift, the accepted pair's
/// into m2lShift, the P2P key with its shift (shiftedKey); isolated (sbits 0) the shift arrays may be null.
AG_HD void emitPair(const PairStep& s, std::uint64_t pair, const PairCounts& at, int bits, std::uint64_t* next,
                    std::uint64_t* m2l, std::uint64_t* p2p, int sbits = 0, std::uint8_t* nextShift = nullptr,
                    std::uint8_t* m2lShift = nullptr) {
  if (s.kind == kPairM2L) {
    m2l[at.m2l] = pair;
    if (sbits) m2lShift[at.m2l] = s.shift;
  } else if (s.kind == kPairP2P) {
    const std::uint32_t a = pairFirst(pair), b = pairSecond(pair);
    p2p[at.p2p] = a <= b ? shiftedKey(a, b, s.shift, bits, sbits) : shiftedKey(b, a, s.shift, bits, sbits);
  } else {
    const std::uint32_t n = pairCounts(s).pairs;
    for (std::uint32_t k = 0; k < n; ++k) next[at.pairs + k] = childPair(s, k);
    if (sbits)  // a node's children with each other: unshifted; an opened node's children: the step's shift
      for (std::uint32_t k = 0; k < n; ++k) nextShift[at.pairs + k] = s.kind == kPairOpen ? s.shift : kNoShift;
  }
}

/// The two directed M2L entries of accepted pair q, keyed (target, source[, shift]): A's from B (seen through the
/// pair's shift), B's from A (through the opposite one). m2lShift: null in isolated boxes (sbits 0).
AG_HD void directedEntries(const std::uint64_t* m2l, std::size_t q, int bits, std::uint64_t* keys, int sbits = 0,
                           const std::uint8_t* m2lShift = nullptr) {
  const std::uint32_t a = pairFirst(m2l[q]), b = pairSecond(m2l[q]);
  const std::uint8_t s = sbits ? m2lShift[q] : kNoShift;
  keys[2 * q] = shiftedKey(a, b, s, bits, sbits);
  keys[2 * q + 1] = shiftedKey(b, a, std::uint8_t(26 - s), bits, sbits);
}

/// The CSR's starts over the nodes from pair keys sorted by their first node (second: by their second), count of
/// them: position i (0 .. count) starts every node after the one before it up to its own (after the last key: up to
/// `nodes`), so start[0 .. nodes] are each written once, by one i. sbits: the keys' shift bits (periodic), below the
/// nodes'.
AG_HD void csrStartsAtBy(const std::uint64_t* keys, std::size_t count, std::size_t i, std::uint32_t nodes, int bits,
                         bool second, std::uint32_t* start, int sbits = 0) {
  auto node = [&](std::size_t j) {
    const std::uint64_t k = keyPairPart(keys[j], sbits);
    return second ? keySecond(k, bits) : keyFirst(k, bits);
  };
  const std::uint32_t lo = i == 0 ? 0 : node(i - 1) + 1;
  const std::uint32_t hi = i == count ? nodes : node(i);
  for (std::uint32_t t = lo; t <= hi; ++t) start[t] = std::uint32_t(i);
}

/// The CSR's starts from directed keys sorted by target (csrStartsAtBy by their first node).
AG_HD void csrStartsAt(const std::uint64_t* keys, std::size_t count, std::size_t i, std::uint32_t nodes, int bits,
                       std::uint32_t* start, int sbits = 0) {
  csrStartsAtBy(keys, count, i, nodes, bits, false, start, sbits);
}

/// Isolated boxes' M2L lists without the directed keys (a node is never accepted with itself): accepted pair q as
/// the key (min, max); those keys sorted (byA) and stably sorted by max alone (byB) give each target its partners
/// below it ascending (byB, over bStart: csrStartsAtBy by the second node) and above it ascending (byA, over aStart),
/// which in that order are its sorted directed entries: the same CSR from half the keys.
AG_HD std::uint64_t undirectedKey(std::uint64_t pair, int bits) {
  const std::uint32_t a = pairFirst(pair), b = pairSecond(pair);
  return a < b ? listKey(a, b, bits) : listKey(b, a, bits);
}
/// Target t's start (t = nodes: the end): the partners below and above of every target before it.
AG_HD std::uint32_t m2lStartAt(const std::uint32_t* aStart, const std::uint32_t* bStart, std::uint32_t t) {
  return aStart[t] + bStart[t];
}
/// Pair j of byB into its second node's list (among its partners below) and pair j of byA into its first node's
/// (after its partners below).
AG_HD void m2lPairEntries(const std::uint64_t* byA, const std::uint64_t* byB, std::size_t j, int bits,
                          const std::uint32_t* aStart, const std::uint32_t* bStart, const std::uint32_t* start,
                          std::uint32_t* source) {
  const std::uint32_t tb = keySecond(byB[j], bits), ta = keyFirst(byA[j], bits);
  source[start[tb] + (std::uint32_t(j) - bStart[tb])] = keyFirst(byB[j], bits);
  source[start[ta] + (bStart[ta + 1] - bStart[ta]) + (std::uint32_t(j) - aStart[ta])] = keySecond(byA[j], bits);
}

/// A mutual P2P pair's directed cell pairs (interaction_lists.h FmmLists::directedP2P): both directions (a leaf and
/// its own image too).
AG_HD std::uint64_t p2pCellPairs(const std::uint32_t* cellCount, std::uint64_t key, int bits, int sbits = 0) {
  const std::uint64_t k = keyPairPart(key, sbits);
  return 2 * std::uint64_t(cellCount[keyFirst(k, bits)]) * cellCount[keySecond(k, bits)];
}

/// A leaf's cell pairs with itself (its own cells, each pair both ways, a cell with itself excluded); 0 elsewhere.
AG_HD std::uint64_t leafSelfCellPairs(const std::uint32_t* cellCount, const std::uint8_t* childCount,
                                      std::uint32_t node) {
  const std::uint64_t c = cellCount[node];
  return childCount[node] == 0 ? c * (c - 1) : 0;
}

}  // namespace fmm
}  // namespace amrgrav
