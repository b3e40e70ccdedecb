/// \file p2p_tiles.cpp
/// \brief The CUDA backend's P2P work from the CPU's lists and tables (see p2p_tiles.h).
#include "fmm/p2p_tiles.h"

#include <algorithm>

namespace amrgrav {
namespace fmm {
NearLists buildNearLists(const FmmTree& t, const FmmLists& l) {
  const Octree& o = t.topo;
  NearLists n;
  std::vector<std::uint32_t> leafOf(o.nodeCount(), 0);
  for (std::size_t i = 0; i < o.nodeCount(); ++i)
    if (o.isLeaf(i)) {
      leafOf[i] = std::uint32_t(n.leaves.size());
      n.leaves.push_back(std::uint32_t(i));
    }
  n.start.assign(n.leaves.size() + 1, 0);
  for (std::size_t k = 0; k < n.leaves.size(); ++k) n.start[k + 1] = 1;  // itself
  for (std::size_t q = 0; q < l.p2pA.size(); ++q) {
    ++n.start[leafOf[l.p2pA[q]] + 1];
    ++n.start[leafOf[l.p2pB[q]] + 1];
  }
  for (std::size_t k = 0; k < n.leaves.size(); ++k) n.start[k + 1] += n.start[k];
  n.source.assign(n.start.back(), 0);
  std::vector<std::uint32_t> fill(n.start.begin(), n.start.end() - 1);
  for (std::size_t k = 0; k < n.leaves.size(); ++k) n.source[fill[k]++] = n.leaves[k];
  for (std::size_t q = 0; q < l.p2pA.size(); ++q) {
    n.source[fill[leafOf[l.p2pA[q]]]++] = l.p2pB[q];
    n.source[fill[leafOf[l.p2pB[q]]]++] = l.p2pA[q];
  }
  return n;
}

P2pTiles buildP2pTiles(const NearLists& near, const RegularLeaves& reg, const P2pTables& tables) {
  P2pTiles out;
  const std::size_t nl = near.leaves.size();
  const double none[3] = {0, 0, 0};
  // each entry's slot (or -1), and the slots in use
  std::vector<std::int32_t> slot(near.source.size(), -1);
  std::vector<char> used(kOffsetSlots, 0);
  for (std::size_t k = 0; k < nl; ++k) {
    const std::uint32_t T = near.leaves[k];
    if (!reg.regular[T]) continue;
    for (std::uint32_t e = near.start[k]; e < near.start[k + 1]; ++e) {
      slot[e] = tables.findSlot(reg, T, near.source[e], none);
      if (slot[e] >= 0) used[slot[e]] = 1;
    }
  }
  std::vector<std::int32_t> indexOf(kOffsetSlots, -1);
  for (int s = 0; s < kOffsetSlots; ++s)
    if (used[s]) {
      indexOf[s] = std::int32_t(out.slots.size());
      out.slots.push_back(s);
    }
  // each regular target's tables (ascending) and computed sources (in list order)
  std::vector<std::uint32_t> regular;
  for (std::size_t k = 0; k < nl; ++k) {
    if (reg.regular[near.leaves[k]]) regular.push_back(std::uint32_t(k));
    else out.irregular.push_back(std::uint32_t(k));
  }
  auto tablesOf = [&](std::uint32_t k, std::vector<std::int32_t>& v) {
    v.clear();
    for (std::uint32_t e = near.start[k]; e < near.start[k + 1]; ++e)
      if (slot[e] >= 0) v.push_back(indexOf[slot[e]]);
    std::sort(v.begin(), v.end());
  };
  // targets with as many computed pairs and the same tables next to each other (by that count, then the sets in
  // lexicographic order, then the leaf's order)
  {
    std::vector<std::vector<std::int32_t>> sets(nl);
    std::vector<std::uint32_t> computed(nl, 0);
    for (const std::uint32_t k : regular) {
      tablesOf(k, sets[k]);
      computed[k] = near.start[k + 1] - near.start[k] - std::uint32_t(sets[k].size());
    }
    std::stable_sort(regular.begin(), regular.end(), [&](std::uint32_t a, std::uint32_t b) {
      return computed[a] != computed[b] ? computed[a] < computed[b] : sets[a] < sets[b];
    });
  }
  out.stepStart.push_back(0);
  std::vector<std::int32_t> v, steps;
  std::vector<std::uint32_t> at(kOffsetSlots);
  for (std::size_t b = 0; b < regular.size(); b += kTileTargets) {
    const std::size_t n = std::min<std::size_t>(kTileTargets, regular.size() - b);
    // the tile's steps: the union of its targets' tables, ascending, then as many computed steps as any target has
    steps.clear();
    std::uint32_t computed = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t k = regular[b + i];
      tablesOf(k, v);
      steps.insert(steps.end(), v.begin(), v.end());
      computed = std::max(computed, (near.start[k + 1] - near.start[k]) - std::uint32_t(v.size()));
    }
    std::sort(steps.begin(), steps.end());
    steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
    for (std::size_t q = 0; q < steps.size(); ++q) at[steps[q]] = std::uint32_t(q);
    const std::size_t s0 = out.stepTable.size(), ns = steps.size() + computed;
    out.stepTable.insert(out.stepTable.end(), steps.begin(), steps.end());
    out.stepTable.insert(out.stepTable.end(), computed, -1);
    out.stepSource.resize(out.stepSource.size() + ns * kTileTargets, kNoLeaf);
    for (std::size_t i = 0; i < std::size_t(kTileTargets); ++i) {
      const std::uint32_t k = i < n ? regular[b + i] : kNoLeaf;
      const std::uint32_t T = i < n ? near.leaves[k] : kNoLeaf;
      out.target.push_back(T);
      out.invH.push_back(i < n ? 1.0 / reg.h[T] : 0.0);  // as tableP2P's ih
      if (i >= n) continue;
      std::uint32_t c = 0;
      for (std::uint32_t e = near.start[k]; e < near.start[k + 1]; ++e) {
        const std::size_t q = slot[e] >= 0 ? at[indexOf[slot[e]]] : steps.size() + c++;
        out.stepSource[(s0 + q) * kTileTargets + i] = near.source[e];
        ++(slot[e] >= 0 ? out.tableEntries : out.computedEntries);
      }
    }
    out.tableSteps += steps.size();
    out.computedSteps += computed;
    out.stepStart.push_back(std::uint32_t(out.stepTable.size()));
  }
  return out;
}

}  // namespace fmm
}  // namespace amrgrav
