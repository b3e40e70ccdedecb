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

/// One step of the walk: a node with itself (self) or a pair of distinct nodes.
struct Task {
  std::uint32_t a, b;
};

struct Walker {
  const FmmTree& t;
  double tolerance;
  std::vector<std::uint32_t> m2lA, m2lB, p2pA, p2pB;

  bool accepts(std::uint32_t A, std::uint32_t B) const {
    return fmmPairAccepts(&t.centre[3 * A], t.radius[A], t.critical[A], t.absMass[A], t.lowBound[A],
                          &t.centre[3 * B], t.radius[B], t.critical[B], t.absMass[B], t.lowBound[B], t.order,
                          tolerance);
  }

  /// The tasks one step of the walk makes of `k` (none when it ends in a list entry, which is then recorded).
  template <class Push>
  void step(Task k, Push&& push) {
    const Octree& o = t.topo;
    if (k.a == k.b) {
      if (o.isLeaf(k.a)) return;  // a leaf with itself: always a P2P, not listed
      const std::uint32_t c0 = o.childBegin[k.a], nc = o.childCount[k.a];
      for (std::uint32_t i = 0; i < nc; ++i) push(Task{c0 + i, c0 + i});
      for (std::uint32_t i = 0; i < nc; ++i)
        for (std::uint32_t j = i + 1; j < nc; ++j) push(Task{c0 + i, c0 + j});
      return;
    }
    if (accepts(k.a, k.b)) {
      m2lA.push_back(k.a);
      m2lB.push_back(k.b);
      return;
    }
    const bool la = o.isLeaf(k.a), lb = o.isLeaf(k.b);
    if (la && lb) {
      p2pA.push_back(std::min(k.a, k.b));
      p2pB.push_back(std::max(k.a, k.b));
      return;
    }
    // open the node with the larger radius (a leaf cannot be opened)
    const bool openA = !la && (lb || t.radius[k.a] >= t.radius[k.b]);
    const std::uint32_t p = openA ? k.a : k.b, other = openA ? k.b : k.a;
    const std::uint32_t c0 = o.childBegin[p], nc = o.childCount[p];
    for (std::uint32_t i = 0; i < nc; ++i) push(Task{c0 + i, other});
  }

  void run(Task k) {
    step(k, [&](Task c) { run(c); });
  }
};

/// Rounds of expansion of the root task before the tasks are handed to threads: a fixed number, so the split (and
/// with it nothing but the order in which pairs are found) never depends on the thread count.
constexpr int kSplitRounds = 3;

}  // namespace

void buildInteractionLists(const FmmTree& t, double tolerance, int threads, FmmLists& out) {
  out = FmmLists{};
  const std::size_t n = t.nodeCount();
  out.m2lStart.assign(n + 1, 0);
  if (n == 0) return;
  Walker head{t, tolerance, {}, {}, {}, {}};
  std::vector<Task> tasks{Task{0, 0}};
  for (int r = 0; r < kSplitRounds; ++r) {
    std::vector<Task> next;
    for (const Task& k : tasks) head.step(k, [&](Task c) { next.push_back(c); });
    tasks.swap(next);
  }
  std::vector<Walker> parts(tasks.size(), Walker{t, tolerance, {}, {}, {}, {}});
  parallelFor(tasks.size(), 1, threads, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t i = b; i < e; ++i) parts[i].run(tasks[i]);
  });
  parts.push_back(std::move(head));
  // M2L: both directions, bucketed by target, each bucket's sources sorted
  std::vector<std::uint32_t>& start = out.m2lStart;
  for (const Walker& w : parts)
    for (std::size_t q = 0; q < w.m2lA.size(); ++q) { ++start[w.m2lA[q] + 1]; ++start[w.m2lB[q] + 1]; }
  for (std::size_t i = 0; i < n; ++i) start[i + 1] += start[i];
  out.m2lSource.resize(start[n]);
  std::vector<std::uint32_t> fill(start.begin(), start.end() - 1);
  for (const Walker& w : parts)
    for (std::size_t q = 0; q < w.m2lA.size(); ++q) {
      out.m2lSource[fill[w.m2lA[q]]++] = w.m2lB[q];
      out.m2lSource[fill[w.m2lB[q]]++] = w.m2lA[q];
    }
  parallelFor(n, 64, threads, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t i = b; i < e; ++i) std::sort(out.m2lSource.begin() + start[i], out.m2lSource.begin() + start[i + 1]);
  });
  out.directedM2L = out.m2lSource.size();
  // P2P: mutual pairs sorted by (A, B)
  std::vector<std::uint64_t> pairs;
  for (const Walker& w : parts)
    for (std::size_t q = 0; q < w.p2pA.size(); ++q) pairs.push_back(std::uint64_t(w.p2pA[q]) << 32 | w.p2pB[q]);
  std::sort(pairs.begin(), pairs.end());
  out.p2pA.resize(pairs.size());
  out.p2pB.resize(pairs.size());
  const Octree& o = t.topo;
  std::uint64_t cellPairs = 0;
  for (std::size_t q = 0; q < pairs.size(); ++q) {
    out.p2pA[q] = std::uint32_t(pairs[q] >> 32);
    out.p2pB[q] = std::uint32_t(pairs[q]);
    cellPairs += 2 * std::uint64_t(o.cellCount[out.p2pA[q]]) * o.cellCount[out.p2pB[q]];
  }
  for (std::size_t i = 0; i < n; ++i)
    if (o.isLeaf(i)) cellPairs += std::uint64_t(o.cellCount[i]) * (o.cellCount[i] - 1);
  out.directedP2P = cellPairs;
}

}  // namespace fmm
}  // namespace amrgrav
