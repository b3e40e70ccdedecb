/// \file p2p_tiles.cpp
/// \brief The CUDA backend's P2P work from the CPU's lists and tables (see p2p_tiles.h).
#include "fmm/p2p_tiles.h"

#include <algorithm>

#include "core/thread_pool.h"
#include "fmm/p2p_tiles_k.h"

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
  // periodic: a pair (A, B, s) gives A the source B + s and B the source A - s (the opposite shift, 26 - s)
  const bool periodic = l.period[0] > 0 || l.period[1] > 0 || l.period[2] > 0;
  for (int d = 0; d < 3; ++d) n.period[d] = l.period[d];
  if (periodic) n.shift.assign(n.start.back(), kNoShift);
  std::vector<std::uint32_t> fill(n.start.begin(), n.start.end() - 1);
  for (std::size_t k = 0; k < n.leaves.size(); ++k) n.source[fill[k]++] = n.leaves[k];
  for (std::size_t q = 0; q < l.p2pA.size(); ++q) {
    const std::uint32_t a = fill[leafOf[l.p2pA[q]]]++, b = fill[leafOf[l.p2pB[q]]]++;
    n.source[a] = l.p2pB[q];
    n.source[b] = l.p2pA[q];
    if (periodic) {
      n.shift[a] = l.p2pShift[q];
      n.shift[b] = std::uint8_t(26 - l.p2pShift[q]);
    }
  }
  return n;
}

P2pTiles buildP2pTiles(const NearLists& near, const RegularLeaves& reg, const P2pTables& tables, int threads) {
  P2pTiles out;
  const std::size_t nl = near.leaves.size();
  const bool shifted = !near.shift.empty();
  // each entry's slot (-1: computed, or a target that is not regular); periodic: the shifted source's offset
  std::vector<std::int32_t> slot(near.source.size(), -1);
  parallelFor(nl, 256, threads, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t k = b; k < e; ++k) {
      const std::uint32_t T = near.leaves[k];
      if (!reg.regular[T]) continue;
      for (std::uint32_t q = near.start[k]; q < near.start[k + 1]; ++q) {
        double v[3] = {0, 0, 0};
        if (shifted) imageShiftVector(near.period, near.shift[q], v);
        slot[q] = tables.findSlot(reg, T, near.source[q], v);
      }
    }
  });
  std::vector<char> used(kOffsetSlots, 0);
  for (const std::int32_t sl : slot)
    if (sl >= 0) used[sl] = 1;
  std::vector<std::int32_t> indexOf(kOffsetSlots, -1);
  for (int s = 0; s < kOffsetSlots; ++s)
    if (used[s]) {
      indexOf[s] = std::int32_t(out.slots.size());
      out.slots.push_back(s);
    }
  std::vector<std::uint32_t> regular;
  for (std::size_t k = 0; k < nl; ++k) {
    if (reg.regular[near.leaves[k]]) regular.push_back(std::uint32_t(k));
    else out.irregular.push_back(std::uint32_t(k));
  }
  // each regular target's tables, ascending, at the start of its entries' range (ntab of them); then its computed
  // pairs' count is the rest
  std::vector<std::int32_t> tab(near.source.size());
  std::vector<std::uint32_t> ntab(nl, 0);
  parallelFor(regular.size(), 256, threads, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t r = b; r < e; ++r) {
      const std::uint32_t k = regular[r], q0 = near.start[k];
      std::uint32_t n = 0;
      for (std::uint32_t q = q0; q < near.start[k + 1]; ++q)
        if (slot[q] >= 0) tab[q0 + n++] = indexOf[slot[q]];
      std::sort(tab.begin() + q0, tab.begin() + q0 + n);
      ntab[k] = n;
    }
  });
  auto computedOf = [&](std::uint32_t k) { return near.start[k + 1] - near.start[k] - ntab[k]; };
  // targets with as many computed pairs and the same tables next to each other: by that count, then the first
  // kRunKeyTables tables in lexicographic order, then the leaf's order. Sorted as runs: the targets by (count, a hash
  // of the tables, leaf), so equal tables are adjacent at the cost of integer comparisons, then the runs by (count,
  // the tables' prefix keys, first leaf) (p2p_tiles_k.h RunOrder).
  {
    std::vector<std::uint64_t> hash(nl, 0);
    parallelFor(regular.size(), 1024, threads, [&](std::size_t b, std::size_t e, int) {
      for (std::size_t r = b; r < e; ++r) {
        const std::uint32_t k = regular[r];
        std::uint64_t h = 1469598103934665603ULL ^ ntab[k];  // FNV-1a
        for (std::uint32_t q = near.start[k]; q < near.start[k] + ntab[k]; ++q)
          h = (h ^ std::uint32_t(tab[q])) * 1099511628211ULL;
        hash[k] = h;
      }
    });
    std::sort(regular.begin(), regular.end(), [&](std::uint32_t a, std::uint32_t b) {
      if (computedOf(a) != computedOf(b)) return computedOf(a) < computedOf(b);
      return hash[a] != hash[b] ? hash[a] < hash[b] : a < b;
    });
    std::vector<std::size_t> runStart;  // runs of equal (count, hash)
    for (std::size_t r = 0; r < regular.size(); ++r)
      if (r == 0 || computedOf(regular[r]) != computedOf(regular[r - 1]) || hash[regular[r]] != hash[regular[r - 1]])
        runStart.push_back(r);
    runStart.push_back(regular.size());
    std::vector<std::size_t> runs(runStart.size() - 1);
    for (std::size_t i = 0; i < runs.size(); ++i) runs[i] = i;
    std::sort(runs.begin(), runs.end(), [&](std::size_t x, std::size_t y) {  // (count, prefix keys, first leaf)
      const std::uint32_t a = regular[runStart[x]], b = regular[runStart[y]];
      if (computedOf(a) != computedOf(b)) return computedOf(a) < computedOf(b);
      const int c = compareTablePrefixes(tab.data() + near.start[a], ntab[a], tab.data() + near.start[b], ntab[b]);
      return c != 0 ? c < 0 : a < b;
    });
    std::vector<std::uint32_t> ordered;
    ordered.reserve(regular.size());
    for (const std::size_t i : runs)
      ordered.insert(ordered.end(), regular.begin() + runStart[i], regular.begin() + runStart[i + 1]);
    regular.swap(ordered);
  }
  out.stepStart.push_back(0);
  std::vector<std::int32_t> steps;
  std::vector<std::uint32_t> at(out.slots.size()), stamp(out.slots.size(), 0);
  for (std::size_t b = 0; b < regular.size(); b += kTileTargets) {
    const std::size_t n = std::min<std::size_t>(kTileTargets, regular.size() - b);
    // the tile's steps: the union of its targets' tables, ascending, then as many computed steps as any target has
    steps.clear();
    std::uint32_t computed = 0;
    const std::uint32_t tileStamp = std::uint32_t(b / kTileTargets) + 1;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t k = regular[b + i];
      for (std::uint32_t q = near.start[k]; q < near.start[k] + ntab[k]; ++q)
        if (stamp[tab[q]] != tileStamp) {
          stamp[tab[q]] = tileStamp;
          steps.push_back(tab[q]);
        }
      computed = std::max(computed, computedOf(k));
    }
    std::sort(steps.begin(), steps.end());
    for (std::size_t q = 0; q < steps.size(); ++q) at[steps[q]] = std::uint32_t(q);
    const std::size_t s0 = out.stepTable.size(), ns = steps.size() + computed;
    out.stepTable.insert(out.stepTable.end(), steps.begin(), steps.end());
    out.stepTable.insert(out.stepTable.end(), computed, -1);
    out.stepSource.resize(out.stepSource.size() + ns * kTileTargets, kNoLeaf);
    if (shifted) out.stepShift.resize(out.stepSource.size(), kNoShift);
    for (std::size_t i = 0; i < std::size_t(kTileTargets); ++i) {
      const std::uint32_t k = i < n ? regular[b + i] : kNoLeaf;
      const std::uint32_t T = i < n ? near.leaves[k] : kNoLeaf;
      out.target.push_back(T);
      out.invH.push_back(i < n ? 1.0 / reg.h[T] : 0.0);  // as tableP2P's ih
      if (i >= n) continue;
      std::uint32_t c = 0;
      for (std::uint32_t q = near.start[k]; q < near.start[k + 1]; ++q) {
        const std::size_t st = slot[q] >= 0 ? at[indexOf[slot[q]]] : steps.size() + c++;
        out.stepSource[(s0 + st) * kTileTargets + i] = near.source[q];
        if (shifted) out.stepShift[(s0 + st) * kTileTargets + i] = near.shift[q];
      }
      out.tableEntries += ntab[k];
      out.computedEntries += computedOf(k);
    }
    out.tableSteps += steps.size();
    out.computedSteps += computed;
    out.stepStart.push_back(std::uint32_t(out.stepTable.size()));
  }
  return out;
}

IrregularLists buildIrregularLists(const NearLists& near, const P2pTiles& tiles) {
  IrregularLists r;
  r.start.assign(1, 0);
  for (const std::uint32_t k : tiles.irregular) {
    r.leaf.push_back(near.leaves[k]);
    r.source.insert(r.source.end(), near.source.begin() + near.start[k], near.source.begin() + near.start[k + 1]);
    if (!near.shift.empty())
      r.shift.insert(r.shift.end(), near.shift.begin() + near.start[k], near.shift.begin() + near.start[k + 1]);
    r.start.push_back(std::uint32_t(r.source.size()));
  }
  return r;
}

HostNearField buildHostNearField(const FmmTree& tree, const FmmLists& lists, const SortedCells& cells, int threads) {
  HostNearField h;
  h.near = buildNearLists(tree, lists);
  h.reg = findRegularLeaves(tree, cells, threads);
  h.tables.prepare(h.reg, lists, threads);
  h.tiles = buildP2pTiles(h.near, h.reg, h.tables, threads);
  h.irr = buildIrregularLists(h.near, h.tiles);
  return h;
}

}  // namespace fmm
}  // namespace amrgrav
