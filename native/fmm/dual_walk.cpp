/// \file dual_walk.cpp
/// \brief The breadth-first dual walk's host emulation (dual_walk.h): each step as the device runs it, the kernels'
/// bodies (fmm/dual_walk_k.h) called in loops over their indices. Compiled without contraction: the MAC decides
/// the lists.
#include "fmm/dual_walk.h"

#include <algorithm>
#include <string>
#include <vector>

namespace amrgrav {
namespace fmm {

DualWalkTree dualWalkView(const FmmTree& t, double tolerance) {
  DualWalkTree v;
  v.childBegin = t.topo.childBegin.data();
  v.childCount = t.topo.childCount.data();
  v.centre = t.centre.data();
  v.radius = t.radius.data();
  v.critical = t.critical.data();
  v.absMass = t.absMass.data();
  v.lowBound = t.lowBound.data();
  v.order = t.order;
  v.tolerance = tolerance;
  v.accelLimit = t.accelLimit;
  v.dipoles = t.dipoles;
  v.norms = t.dipoles ? t.norms.data() : nullptr;
  return v;
}

void emulateDeviceLists(const FmmTree& t, double tolerance, FmmLists& out, DualWalkStats* stats,
                        const double* period) {
  out = FmmLists{};
  if (period)
    for (int d = 0; d < 3; ++d) out.period[d] = period[d];
  const std::size_t nodes = t.nodeCount();
  out.m2lStart.assign(nodes + 1, 0);
  if (stats) *stats = DualWalkStats{};
  if (nodes == 0) return;
  DualWalkTree view = dualWalkView(t, tolerance);
  for (int d = 0; d < 3; ++d) view.period[d] = out.period[d];
  const int bits = keyBits(nodes);
  const int sbits = period ? kShiftBits : 0;  // the shifts ride with the pairs and in the keys

  // the rounds: decide (one thread per pair), exclusive scan of the counts (n + 1 of them: the last is the total),
  // emit (one thread per pair) into the next frontier and the lists' ends
  std::vector<std::uint64_t> frontier, next, m2l, p2p;
  std::vector<std::uint8_t> frontierShift, nextShift, m2lShift;
  {
    std::uint64_t p[14];
    std::uint8_t s[14];
    const int k = walkStartPairs(period, p, s);
    frontier.assign(p, p + k);
    frontierShift.assign(s, s + k);
  }
  std::vector<PairStep> steps;
  std::vector<PairCounts> at;
  while (!frontier.empty()) {
    const std::size_t n = frontier.size();
    if (stats) {
      ++stats->rounds;
      stats->maxFrontier = std::max(stats->maxFrontier, n);
      stats->pairs += n;
    }
    steps.resize(n);
    at.assign(n + 1, PairCounts{});
    for (std::size_t i = 0; i < n; ++i) steps[i] = decidePair(view, frontier[i], frontierShift[i]);
    for (std::size_t i = 0; i < n; ++i) at[i + 1] = at[i] + pairCounts(steps[i]);
    const PairCounts total = at[n];
    next.resize(total.pairs);
    nextShift.assign(total.pairs, kNoShift);
    const std::size_t m2lBase = m2l.size(), p2pBase = p2p.size();
    m2l.resize(m2lBase + total.m2l);
    m2lShift.resize(m2lBase + total.m2l, kNoShift);
    p2p.resize(p2pBase + total.p2p);
    for (std::size_t i = 0; i < n; ++i)
      emitPair(steps[i], frontier[i], at[i], bits, next.data(), m2l.data() + m2lBase, p2p.data() + p2pBase, sbits,
               nextShift.data(), m2lShift.data() + m2lBase);
    frontier.swap(next);
    frontierShift.swap(nextShift);
  }

  if (sbits == 0) {  // isolated boxes: the CSR from the undirected keys, by (min, max) and stably by max (the device's)
    std::vector<std::uint64_t> byA(m2l.size());
    for (std::size_t q = 0; q < m2l.size(); ++q) byA[q] = undirectedKey(m2l[q], bits);
    std::sort(byA.begin(), byA.end());
    std::vector<std::uint64_t> byB = byA;
    std::stable_sort(byB.begin(), byB.end(),
                     [&](std::uint64_t x, std::uint64_t y) { return keySecond(x, bits) < keySecond(y, bits); });
    std::vector<std::uint32_t> aStart(nodes + 1), bStart(nodes + 1);
    for (std::size_t i = 0; i <= byA.size(); ++i) {
      csrStartsAtBy(byA.data(), byA.size(), i, std::uint32_t(nodes), bits, false, aStart.data());
      csrStartsAtBy(byB.data(), byB.size(), i, std::uint32_t(nodes), bits, true, bStart.data());
    }
    for (std::uint32_t t = 0; t <= nodes; ++t) out.m2lStart[t] = m2lStartAt(aStart.data(), bStart.data(), t);
    out.m2lSource.resize(2 * byA.size());
    out.m2lShift.assign(2 * byA.size(), kNoShift);
    for (std::size_t j = 0; j < byA.size(); ++j)
      m2lPairEntries(byA.data(), byB.data(), j, bits, aStart.data(), bStart.data(), out.m2lStart.data(),
                     out.m2lSource.data());
    out.directedM2L = out.m2lSource.size();
  } else {
  // M2L: the directed entries keyed (target, source[, shift]), sorted (the device's radix sort), the CSR from them
  std::vector<std::uint64_t> keys(2 * m2l.size());
  for (std::size_t q = 0; q < m2l.size(); ++q) directedEntries(m2l.data(), q, bits, keys.data(), sbits, m2lShift.data());
  std::sort(keys.begin(), keys.end());
  for (std::size_t i = 0; i <= keys.size(); ++i)
    csrStartsAt(keys.data(), keys.size(), i, std::uint32_t(nodes), bits, out.m2lStart.data(), sbits);
  out.m2lSource.resize(keys.size());
  out.m2lShift.resize(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    out.m2lSource[i] = keySecond(keyPairPart(keys[i], sbits), bits);
    out.m2lShift[i] = keyShift(keys[i], sbits);
  }
  out.directedM2L = keys.size();
  }

  // P2P: the (min, max[, shift]) pairs sorted, and the directed cell pairs (the device's reduction)
  std::sort(p2p.begin(), p2p.end());
  out.p2pA.resize(p2p.size());
  out.p2pB.resize(p2p.size());
  out.p2pShift.resize(p2p.size());
  std::uint64_t cellPairs = 0;
  for (std::size_t q = 0; q < p2p.size(); ++q) {
    const std::uint64_t k = keyPairPart(p2p[q], sbits);
    out.p2pA[q] = keyFirst(k, bits);
    out.p2pB[q] = keySecond(k, bits);
    out.p2pShift[q] = keyShift(p2p[q], sbits);
    cellPairs += p2pCellPairs(t.topo.cellCount.data(), p2p[q], bits, sbits);
  }
  for (std::size_t i = 0; i < nodes; ++i)
    cellPairs += leafSelfCellPairs(t.topo.cellCount.data(), t.topo.childCount.data(), std::uint32_t(i));
  out.directedP2P = cellPairs;
}

namespace {

template <class T>
std::string firstDifference(const char* what, const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size())
    return std::string(what) + " lengths " + std::to_string(a.size()) + " vs " + std::to_string(b.size()) + "; ";
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i])
      return std::string(what) + "[" + std::to_string(i) + "] " + std::to_string(a[i]) + " vs " +
             std::to_string(b[i]) + "; ";
  return "";
}

}  // namespace

std::string listsDifference(const FmmLists& a, const FmmLists& b) {
  std::string d = firstDifference("m2lStart", a.m2lStart, b.m2lStart) +
                  firstDifference("m2lSource", a.m2lSource, b.m2lSource) +
                  firstDifference("m2lShift", a.m2lShift, b.m2lShift) + firstDifference("p2pA", a.p2pA, b.p2pA) +
                  firstDifference("p2pB", a.p2pB, b.p2pB) + firstDifference("p2pShift", a.p2pShift, b.p2pShift);
  if (a.directedM2L != b.directedM2L)
    d += "directedM2L " + std::to_string(a.directedM2L) + " vs " + std::to_string(b.directedM2L) + "; ";
  if (a.directedP2P != b.directedP2P)
    d += "directedP2P " + std::to_string(a.directedP2P) + " vs " + std::to_string(b.directedP2P) + "; ";
  return d;
}

}  // namespace fmm
}  // namespace amrgrav
