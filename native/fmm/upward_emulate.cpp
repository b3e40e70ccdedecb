/// \file upward_emulate.cpp
/// \brief The FMM upward pass's host emulation (upward_emulate.h): each kernel as the device runs it, its body's rules
/// (fmm/upward_k.h) called in loops over its indices. Compiled without contraction: the centres and radii decide
/// the lists.
#include "fmm/upward_emulate.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "fmm/norms_k.h"
#include "physics/fmm_mac_k.h"

namespace amrgrav {
namespace fmm {

UpwardTables upwardTables(const MultiIndex& mi) {
  UpwardTables t;
  t.prev = mi.monoPrev;
  t.axis = mi.monoAxis;
  t.scale = mi.monoScale;
  t.prev[0] = 0;  // term 0 is the chain's end (its entries are never read)
  t.axis[0] = 0;
  const std::size_t ne = mi.m2mN.size();
  t.m2mStart.assign(std::size_t(mi.terms) + 1, 0);
  for (std::size_t q = 0; q < ne; ++q) ++t.m2mStart[std::size_t(mi.m2mN[q]) + 1];
  for (int k = 0; k < mi.terms; ++k) t.m2mStart[std::size_t(k) + 1] += t.m2mStart[std::size_t(k)];
  std::vector<int> fill(t.m2mStart.begin(), t.m2mStart.end() - 1);
  t.m2mJ.resize(ne);
  t.m2mNJ.resize(ne);
  for (std::size_t q = 0; q < ne; ++q) {  // stable: each target's entries keep the table's order
    const int at = fill[std::size_t(mi.m2mN[q])]++;
    t.m2mJ[std::size_t(at)] = mi.m2mJ[q];
    t.m2mNJ[std::size_t(at)] = mi.m2mNJ[q];
  }
  return t;
}

void emulateDeviceUpward(const SortedCells& c, double theta, FmmTree& t, bool mutate) {
  const Octree& o = t.topo;
  const std::size_t n = o.nodeCount();
  const MultiIndex& mi = MultiIndex::of(t.order);
  const UpwardTables tab = upwardTables(mi);
  const MonoTables mono{tab.prev.data(), tab.axis.data(), tab.scale.data()};
  t.centre.assign(3 * n, 0.0);
  t.radius.assign(n, 0.0);
  t.critical.assign(n, 0.0);
  t.absMass.assign(n, 0.0);
  t.lowBound.assign(n, 0.0);
  t.M.assign(n * std::size_t(t.mStride), 0.0);
  t.L.assign(n * std::size_t(t.terms), 0.0);
  if (n == 0) return;
  std::vector<FmmSums> sums(n);
  std::vector<double> row(std::size_t(t.terms)), rows(std::size_t(kUpwardLanes) * std::size_t(t.terms));
  // a level at a time from the deepest: the level's kernel, a block per node (its sums and centre, then its terms)
  for (std::size_t lev = t.levelBegin.size() - 1; lev-- > 0;) {
    for (std::size_t i = t.levelBegin[lev]; i < t.levelBegin[lev + 1]; ++i) {
      FmmSums a;
      const std::uint32_t b = o.cellBegin[i], e = b + o.cellCount[i];
      if (o.isLeaf(i)) {
        for (std::uint32_t k = 0; k < e - b; ++k) {
          const std::uint32_t j = mutate ? e - 1 - k : b + k;
          fmmAddCell(a, c.mass[j], c.x[j], c.y[j], c.z[j]);
        }
      } else {
        for (std::uint32_t k = 0; k < o.childCount[i]; ++k) fmmAddSums(a, sums[o.childBegin[i] + k]);
      }
      sums[i] = a;
      double* ctr = &t.centre[3 * i];
      for (int d = 0; d < 3; ++d) ctr[d] = fmmCentreOf(a, d, o.centre[3 * i + d], t.dipoles);
      double* M = &t.M[i * std::size_t(t.mStride)];
      const double* Mc[kUpwardLanes] = {};
      double h[kUpwardLanes][3] = {};
      const int children = o.childCount[i];
      for (int k = 0; k < children; ++k) {
        const std::size_t ch = o.childBegin[i] + std::uint32_t(k);
        Mc[k] = &t.M[ch * std::size_t(t.mStride)];
        for (int d = 0; d < 3; ++d) h[k][d] = RoundNearest::sub(t.centre[3 * ch + d], ctr[d]);
      }
      // the node's terms as the kernel makes them: monomial rows (a leaf's cells', else its children's offsets'),
      // then a leaf's cells into their lanes in order, or each term's M2M from the children's rows
      const int T = t.terms;
      if (o.isLeaf(i)) {
        std::vector<double> lanes(std::size_t(T) * kUpwardLanes, 0.0);
        for (std::uint32_t j = b; j < e; ++j) {
          const double hj[3] = {RoundNearest::sub(c.x[j], ctr[0]), RoundNearest::sub(c.y[j], ctr[1]),
                                RoundNearest::sub(c.z[j], ctr[2])};
          fmmMonomialRow(mono, T, hj, row.data());
          const int l = fmmP2MLaneOf(j, b);
          for (int q = 0; q < T; ++q) {
            double& lane = lanes[std::size_t(q) * kUpwardLanes + std::size_t(l)];
            lane = fmmP2MLaneAdd(lane, c.mass[j], row[std::size_t(q)]);
          }
        }
        for (int q = 0; q < T; ++q) M[q] = fmmLaneTotal(&lanes[std::size_t(q) * kUpwardLanes]);
      } else {
        for (int k = 0; k < children; ++k) fmmMonomialRow(mono, T, h[k], &rows[std::size_t(k) * std::size_t(T)]);
        for (int q = 0; q < T; ++q)
          M[q] = fmmM2MTermOfRows(tab.m2mJ.data(), tab.m2mNJ.data(), tab.m2mStart[std::size_t(q)],
                                  tab.m2mStart[std::size_t(q) + 1], Mc[0], std::size_t(t.mStride), 1, rows.data(),
                                  T, 1, children);
      }
    }
  }
  // the radii: a thread per cell, descending from the root, its distance to each ancestor's centre, maximised per
  // node (exact in any order)
  std::vector<double> r2(n, 0.0);
  const std::size_t cells = c.x.size();
  for (std::uint32_t j = 0; j < cells; ++j)
    for (std::uint32_t i = 0; i != 0xffffffffu;
         i = fmmChildHolding(o.cellBegin.data(), o.childBegin.data(), o.childCount.data(), i, j))
      r2[i] = stdMax(r2[i], fmmCellDistance2(c.x[j], c.y[j], c.z[j], &t.centre[3 * i]));
  // a thread per node: the MAC's quantities (the root's |mass| for every lower bound)
  for (std::size_t i = 0; i < n; ++i) {
    t.radius[i] = RoundNearest::sqrt(r2[i]);
    t.critical[i] = fmmCriticalRadius(t.radius[i], theta);
    t.absMass[i] = sums[i].am;
    t.lowBound[i] = fmmPotentialLowerBound(&t.centre[3 * i], t.radius[i], o.root.lo, o.root.side, sums[0].am);
  }
  if (t.dipoles) {  // periodic (cuda/fmm_periodic_phase.cu): the host's scale of |phi| in every lowBound, then a
                    // thread per node: its multipole norms
    const double scale = signedSourceScale(c, 1, t);
    for (std::size_t i = 0; i < n; ++i) t.lowBound[i] = scale;
    const MultiIndex& mi = MultiIndex::of(t.order);
    const std::vector<double> w = multipoleNormWeights(mi);
    const int np = t.order + 1;
    t.norms.assign(n * std::size_t(np), 0.0);
    for (std::size_t i = 0; i < n; ++i)
      fmmMultipoleNorms(&t.M[i * std::size_t(t.mStride)], t.terms, w.data(), mi.degree.data(), t.order,
                        &t.norms[i * std::size_t(np)]);
  }
}

namespace {

template <class T>
void compareArray(const char* name, const std::vector<T>& a, const std::vector<T>& b, std::string& out) {
  if (a.size() != b.size()) {
    out += std::string(name) + ": " + std::to_string(a.size()) + " vs " + std::to_string(b.size()) + " entries; ";
    return;
  }
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) {
      out += std::string(name) + "[" + std::to_string(i) + "] differs; ";
      return;
    }
}

}  // namespace

std::string fmmTreeDifference(const FmmTree& a, const FmmTree& b) {
  std::string out;
  if (a.order != b.order || a.terms != b.terms || a.mStride != b.mStride || a.dipoles != b.dipoles)
    out += "order, terms, stride or dipoles differ; ";
  if (a.topo.depth != b.topo.depth) out += "depth differs; ";
  if (std::memcmp(a.topo.root.lo, b.topo.root.lo, sizeof a.topo.root.lo) != 0 ||
      std::memcmp(&a.topo.root.side, &b.topo.root.side, sizeof(double)) != 0)
    out += "root cube differs; ";
  compareArray("cellBegin", a.topo.cellBegin, b.topo.cellBegin, out);
  compareArray("cellCount", a.topo.cellCount, b.topo.cellCount, out);
  compareArray("childBegin", a.topo.childBegin, b.topo.childBegin, out);
  compareArray("childCount", a.topo.childCount, b.topo.childCount, out);
  compareArray("level", a.topo.level, b.topo.level, out);
  compareArray("cube centre", a.topo.centre, b.topo.centre, out);
  compareArray("levelBegin", a.levelBegin, b.levelBegin, out);
  compareArray("centre", a.centre, b.centre, out);
  compareArray("radius", a.radius, b.radius, out);
  compareArray("critical", a.critical, b.critical, out);
  compareArray("absMass", a.absMass, b.absMass, out);
  compareArray("lowBound", a.lowBound, b.lowBound, out);
  compareArray("M", a.M, b.M, out);
  compareArray("norms", a.norms, b.norms, out);
  return out;
}

}  // namespace fmm
}  // namespace amrgrav
