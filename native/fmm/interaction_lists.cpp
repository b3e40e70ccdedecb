/// \file interaction_lists.cpp
/// \brief The FMM's dual tree walk and its canonical lists (see interaction_lists.h). Compiled without contraction:
/// the MAC decides the lists.
#include "fmm/interaction_lists.h"

#include <algorithm>

#include "core/thread_pool.h"
#include "physics/fmm_mac_k.h"

namespace amrgrav {
namespace fmm {
namespace {

/// One step of the walk: a node with itself (self, no shift) or a pair of distinct nodes (or a node and an image).
struct Task {
  std::uint32_t a, b;
  std::uint8_t shift;
};

struct Walker {
  const FmmTree& t;
  double tolerance;
  const FmmLists& geo;  ///< the periods (shift vectors)
  std::vector<std::uint32_t> m2lA, m2lB, p2pA, p2pB;
  std::vector<std::uint8_t> m2lS, p2pS;

  bool accepts(std::uint32_t A, std::uint32_t B, std::uint8_t shift) const {
    const double* cb = &t.centre[3 * B];
    double v[3];
    geo.shiftVector(shift, v);
    const double c[3] = {cb[0] + v[0], cb[1] + v[1], cb[2] + v[2]};  // + 0 without a shift: the same bits
    if (t.dipoles) {  // signed sources (periodic): the error from the multipole norms, against the scale of |phi|
      const std::size_t np = std::size_t(t.order) + 1;
      return fmmSignedPairAccepts(&t.centre[3 * A], t.radius[A], t.critical[A], &t.norms[A * np], c, t.radius[B],
                                  t.critical[B], &t.norms[B * np], t.lowBound[A], t.order, tolerance);
    }
    return fmmPairAccepts(&t.centre[3 * A], t.radius[A], t.critical[A], t.absMass[A], t.lowBound[A], c,
                          t.radius[B], t.critical[B], t.absMass[B], t.lowBound[B], t.order, tolerance, t.accelLimit,
                          t.isLeaf(A), t.isLeaf(B));
  }

  /// The tasks one step of the walk makes of `k` (none when it ends in a list entry, which is then recorded).
  template <class Push>
  void step(Task k, Push&& push) {
    const Octree& o = t.topo;
    if (k.a == k.b && k.shift == kNoShift) {
      if (o.isLeaf(k.a)) return;  // a leaf with itself: always a P2P, not listed
      const std::uint32_t c0 = o.childBegin[k.a], nc = o.childCount[k.a];
      for (std::uint32_t i = 0; i < nc; ++i) push(Task{c0 + i, c0 + i, kNoShift});
      for (std::uint32_t i = 0; i < nc; ++i)
        for (std::uint32_t j = i + 1; j < nc; ++j) push(Task{c0 + i, c0 + j, kNoShift});
      return;
    }
    if (accepts(k.a, k.b, k.shift)) {
      m2lA.push_back(k.a);
      m2lB.push_back(k.b);
      m2lS.push_back(k.shift);
      return;
    }
    const bool la = o.isLeaf(k.a), lb = o.isLeaf(k.b);
    if (la && lb) {
      // canonical: (min, max), the shift seen from the smaller node (a leaf and its image keep theirs)
      const bool swap = k.a > k.b;
      p2pA.push_back(swap ? k.b : k.a);
      p2pB.push_back(swap ? k.a : k.b);
      p2pS.push_back(swap ? std::uint8_t(26 - k.shift) : k.shift);
      return;
    }
    // open the node with the larger radius (a leaf cannot be opened; ties: physics/fmm_mac_k.h fmmOpensFirst)
    const bool openA = !la && (lb || fmmOpensFirst(t.radius[k.a], &t.centre[3 * k.a], t.radius[k.b], &t.centre[3 * k.b]));
    const std::uint32_t p = openA ? k.a : k.b, other = openA ? k.b : k.a;
    const std::uint32_t c0 = o.childBegin[p], nc = o.childCount[p];
    // the opened node's children first, as (child, other): seen from B's child the shift is the opposite
    const std::uint8_t shift = openA ? k.shift : std::uint8_t(26 - k.shift);
    for (std::uint32_t i = 0; i < nc; ++i) push(Task{c0 + i, other, shift});
  }

  void run(Task k) {
    step(k, [&](Task c) { run(c); });
  }
};

/// Rounds of expansion of the root task before the tasks are handed to threads: a fixed number, so the split (and
/// with it nothing but the order in which pairs are found) never depends on the thread count.
constexpr int kSplitRounds = 3;

}  // namespace

void buildInteractionLists(const FmmTree& t, double tolerance, int threads, FmmLists& out, const double* period) {
  out = FmmLists{};
  if (period)
    for (int d = 0; d < 3; ++d) out.period[d] = period[d];
  const std::size_t n = t.nodeCount();
  out.m2lStart.assign(n + 1, 0);
  if (n == 0) return;
  Walker head{t, tolerance, out, {}, {}, {}, {}, {}, {}};
  std::vector<Task> tasks{Task{0, 0, kNoShift}};
  // the root with the images of one half-space (the other half are the same pairs seen from the image): 13 in a
  // fully periodic box, 4 in a sheet, 1 on a line; no shift along an isolated axis (period 0)
  if (period)
    for (std::uint8_t s = kNoShift + 1; s < 27; ++s) {
      const int n[3] = {s % 3 - 1, s / 3 % 3 - 1, s / 9 - 1};
      bool alongPeriodic = true;
      for (int d = 0; d < 3; ++d) alongPeriodic = alongPeriodic && (n[d] == 0 || period[d] > 0);
      if (alongPeriodic) tasks.push_back(Task{0, 0, s});
    }
  for (int r = 0; r < kSplitRounds; ++r) {
    std::vector<Task> next;
    for (const Task& k : tasks) head.step(k, [&](Task c) { next.push_back(c); });
    tasks.swap(next);
  }
  std::vector<Walker> parts(tasks.size(), Walker{t, tolerance, out, {}, {}, {}, {}, {}, {}});
  parallelFor(tasks.size(), 1, threads, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t i = b; i < e; ++i) parts[i].run(tasks[i]);
  });
  parts.push_back(std::move(head));
  // M2L: both directions (the source's shift seen from the other side is the opposite), by target, each target's
  // sources ascending by (source, shift): a counting sort by (source, shift) key, then a stable one by target
  const std::size_t K = period ? 27 : 1;  // shifts per source in the key (isolated: kNoShift only)
  auto keyOf = [&](std::uint32_t node, std::uint8_t shift) { return std::size_t(node) * K + (K > 1 ? shift : 0); };
  std::vector<std::uint32_t>& start = out.m2lStart;
  std::vector<std::uint32_t> byKey(n * K + 1, 0);
  for (const Walker& w : parts)
    for (std::size_t q = 0; q < w.m2lA.size(); ++q) {
      ++start[w.m2lA[q] + 1];
      ++start[w.m2lB[q] + 1];
      ++byKey[keyOf(w.m2lB[q], w.m2lS[q]) + 1];
      ++byKey[keyOf(w.m2lA[q], std::uint8_t(26 - w.m2lS[q])) + 1];
    }
  for (std::size_t i = 0; i < n; ++i) start[i + 1] += start[i];
  for (std::size_t k = 0; k < n * K; ++k) byKey[k + 1] += byKey[k];
  std::vector<std::uint32_t> keyTarget(start[n]);
  {
    std::vector<std::uint32_t> fill(byKey.begin(), byKey.end() - 1);
    for (const Walker& w : parts)
      for (std::size_t q = 0; q < w.m2lA.size(); ++q) {
        keyTarget[fill[keyOf(w.m2lB[q], w.m2lS[q])]++] = w.m2lA[q];
        keyTarget[fill[keyOf(w.m2lA[q], std::uint8_t(26 - w.m2lS[q]))]++] = w.m2lB[q];
      }
  }
  out.m2lSource.resize(start[n]);
  out.m2lShift.resize(start[n]);
  {
    std::vector<std::uint32_t> fill(start.begin(), start.end() - 1);
    for (std::size_t k = 0; k < n * K; ++k)
      for (std::uint32_t q = byKey[k]; q < byKey[k + 1]; ++q) {
        const std::uint32_t at = fill[keyTarget[q]]++;
        out.m2lSource[at] = std::uint32_t(k / K);
        out.m2lShift[at] = K > 1 ? std::uint8_t(k % K) : kNoShift;
      }
  }
  out.directedM2L = out.m2lSource.size();
  // P2P: mutual pairs sorted by (A, B, shift)
  std::vector<std::pair<std::uint64_t, std::uint8_t>> pairs;
  for (const Walker& w : parts)
    for (std::size_t q = 0; q < w.p2pA.size(); ++q)
      pairs.emplace_back(std::uint64_t(w.p2pA[q]) << 32 | w.p2pB[q], w.p2pS[q]);
  std::sort(pairs.begin(), pairs.end());
  out.p2pA.resize(pairs.size());
  out.p2pB.resize(pairs.size());
  out.p2pShift.resize(pairs.size());
  const Octree& o = t.topo;
  std::uint64_t cellPairs = 0;
  for (std::size_t q = 0; q < pairs.size(); ++q) {
    out.p2pA[q] = std::uint32_t(pairs[q].first >> 32);
    out.p2pB[q] = std::uint32_t(pairs[q].first);
    out.p2pShift[q] = pairs[q].second;
    cellPairs += 2 * std::uint64_t(o.cellCount[out.p2pA[q]]) * o.cellCount[out.p2pB[q]];
  }
  for (std::size_t i = 0; i < n; ++i)
    if (o.isLeaf(i)) cellPairs += std::uint64_t(o.cellCount[i]) * (o.cellCount[i] - 1);
  out.directedP2P = cellPairs;
}

}  // namespace fmm
}  // namespace amrgrav
