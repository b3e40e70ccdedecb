/// \file signed_scale.cpp
/// \brief The host's side of the signed scale from the device's cells (see signed_scale.h).
#include "fmm/signed_scale.h"

#include <algorithm>
#include <map>
#include <utility>

#include "core/thread_pool.h"
#include "fmm/p2p_tables.h"
#include "fmm/p2p_tiles_k.h"
#include "fmm/signed_scale_k.h"

namespace amrgrav {
namespace fmm {

void ScaleCandidates::add(const FmmTree& tree, std::uint32_t leaf) {
  leaves.push_back(leaf);
  offset.push_back(std::uint32_t(total));
  count.push_back(tree.topo.cellCount[leaf]);
  total += tree.topo.cellCount[leaf];
}

ScaleCandidates leafNearCandidates(const FmmTree& tree, const double* perNode, const std::uint64_t* hash) {
  const Octree& o = tree.topo;
  const std::size_t nodes = o.nodeCount();
  const double *margin = perNode + nodes, *h = perNode + 2 * nodes;
  // the floor: the host's maximum is at least every leaf's estimate less its margin (and at least 0)
  double floor = 0;
  for (std::size_t i = 0; i < nodes; ++i)
    if (o.isLeaf(i)) floor = std::max(floor, perNode[i] - margin[i]);
  ScaleCandidates c;
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::uint32_t> groups;  // (h's bits, hash) -> the first
  for (std::size_t i = 0; i < nodes; ++i) {
    if (!o.isLeaf(i) || !leafNearCandidate(perNode[i], margin[i], floor)) continue;
    if (h[i] > 0) {
      const auto g = groups.try_emplace(std::make_pair(doubleBits(h[i]), hash[i]), std::uint32_t(i));
      if (!g.second) {  // tied with the group's first, if the device finds their masses equal
        c.member.push_back(std::uint32_t(i));
        c.rep.push_back(g.first->second);
        continue;
      }
    }
    c.add(tree, std::uint32_t(i));
  }
  return c;
}

void addUnverified(const FmmTree& tree, const std::vector<std::uint8_t>& same, ScaleCandidates& c) {
  for (std::size_t k = 0; k < c.member.size(); ++k)
    if (!same[k]) c.add(tree, c.member[k]);
}

double candidatesNearMax(const std::vector<double>& cells, const ScaleCandidates& c, int threads) {
  const std::size_t nc = c.leaves.size(), total = c.total;
  if (nc == 0) return 0.0;
  std::vector<std::uint8_t> childCount(nc, 0), regular(nc, 0);
  std::vector<double> origin(3 * nc, 0.0), h(nc, 0.0);
  const double *x = cells.data(), *y = x + total, *z = x + 2 * total, *size = x + 3 * total, *m = x + 4 * total;
  TileBuildView tv;  // regularLeaf's inputs: the candidates as nodes over the gathered cells
  tv.nodes = std::uint32_t(nc);
  tv.childCount = childCount.data();
  tv.cellBegin = c.offset.data();
  tv.cellCount = c.count.data();
  tv.x = x;
  tv.y = y;
  tv.z = z;
  tv.size = size;
  tv.regular = regular.data();
  tv.origin = origin.data();
  tv.h = h.data();
  P2pTables tables;
  const int self = slotOfK(0, 0, 0);
  tables.prepareSlots({self}, threads);
  const P2pTable* selfTable = tables.bySlot(self);
  std::vector<double> best(nc, 0.0);
  parallelFor(nc, 16, threads, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t k = b; k < e; ++k) {
      regularLeaf(tv, std::uint32_t(k));
      const std::uint32_t o = c.offset[k];
      best[k] = leafNearOf(x + o, y + o, z + o, m + o, c.count[k], regular[k] ? selfTable : nullptr, h[k]);
    }
  });
  double mx = 0;
  for (const double v : best) mx = std::max(mx, v);
  return mx;
}

double emulateWarpNetMass(const double* mass, std::uint32_t begin, std::uint32_t count) {
  constexpr int kLoads = 4;
  const std::uint32_t ce = begin + count;
  double m = 0;
  for (std::uint32_t base = begin; base < ce; base += 32 * kLoads) {
    double val[kLoads][32];
    for (int u = 0; u < kLoads; ++u)
      for (std::uint32_t lane = 0; lane < 32; ++lane) {
        const std::uint32_t j = base + 32 * u + lane;
        val[u][lane] = j < ce ? mass[j] : 0.0;
      }
    for (int u = 0; u < kLoads; ++u)
      for (std::uint32_t l = 0; l < 32; ++l)
        if (base + 32 * u + l < ce) m = netMassStep(m, val[u][l]);
  }
  return m;
}

double emulateDeviceSignedScale(const SortedCells& cells, const FmmTree& tree, int threads,
                                std::vector<double>* perNodeOut, std::vector<double>* netOut,
                                ScaleCandidates* candidatesOut) {
  const Octree& o = tree.topo;
  const std::size_t nodes = o.nodeCount();
  // leafNearKernel: a leaf's regularity (regularLeaf's rule), each cell's estimate, the leaf's maxima; a regular
  // leaf's h and mass hash
  std::vector<double> per(3 * nodes, 0.0), invR(kLatticeR2);
  std::vector<std::uint64_t> hash(nodes, 0);
  for (int r2 = 0; r2 < kLatticeR2; ++r2) invR[r2] = latticeInverseDistance(r2);
  const RegularLeaves reg = findRegularLeaves(tree, cells, threads);  // regularLeaf's rule, as the kernel
  const std::vector<std::uint8_t>& regular = reg.regular;
  const std::vector<double>& hs = reg.h;
  parallelFor(nodes, 16, threads, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t i = b; i < e; ++i) {
      if (!o.isLeaf(i)) continue;
      const std::uint32_t cb = o.cellBegin[i], count = o.cellCount[i];
      double vmax = 0, amax = 0;
      for (std::uint32_t t = 0; t < count; ++t) {
        double q = 0, a = 0;
        leafNearCellEstimate(&cells.x[cb], &cells.y[cb], &cells.z[cb], &cells.mass[cb], count, regular[i] != 0,
                             hs[i], invR.data(), t, q, a);
        vmax = std::max(vmax, std::fabs(q));
        amax = std::max(amax, a);
      }
      per[i] = vmax;
      per[nodes + i] = leafNearMargin(amax, count);
      per[2 * nodes + i] = regular[i] ? hs[i] : 0.0;
      hash[i] = regular[i] ? leafMassHash(&cells.mass[cb]) : 0;
    }
  });
  // levelNetKernel
  const int lev = signedScaleLevel(tree);
  const std::size_t first = lev >= 0 ? tree.levelBegin[lev] : 0;
  const std::size_t count = lev >= 0 ? tree.levelBegin[lev + 1] - first : 0;
  std::vector<double> net(count);
  for (std::size_t k = 0; k < count; ++k)
    net[k] = emulateWarpNetMass(cells.mass.data(), o.cellBegin[first + k], o.cellCount[first + k]);
  // the candidates, sameMassesKernel, gatherLeafKernel, the host's part
  ScaleCandidates c = leafNearCandidates(tree, per.data(), hash.data());
  std::vector<std::uint8_t> same(c.member.size(), 1);
  for (std::size_t k = 0; k < c.member.size(); ++k)
    for (int j = 0; j < kTileCellsK; ++j)
      if (doubleBits(cells.mass[o.cellBegin[c.member[k]] + j]) != doubleBits(cells.mass[o.cellBegin[c.rep[k]] + j]))
        same[k] = 0;
  addUnverified(tree, same, c);
  std::vector<double> gathered(5 * c.total);
  const std::vector<double>* from[5] = {&cells.x, &cells.y, &cells.z, &cells.size, &cells.mass};
  for (std::size_t k = 0; k < c.leaves.size(); ++k)
    for (std::uint32_t j = 0; j < c.count[k]; ++j)
      for (int q = 0; q < 5; ++q) gathered[q * c.total + c.offset[k] + j] = (*from[q])[o.cellBegin[c.leaves[k]] + j];
  const double scale = signedScaleOf(candidatesNearMax(gathered, c, threads), coarseFieldOfNets(tree, net));
  if (perNodeOut) *perNodeOut = std::move(per);
  if (netOut) *netOut = std::move(net);
  if (candidatesOut) *candidatesOut = std::move(c);
  return scale;
}

}  // namespace fmm
}  // namespace amrgrav
