/// \file system_points.cpp
/// \brief The probes' sort and the target groups (system_points.h).
#include "tree/system_points.h"

#include <algorithm>
#include <cmath>

#include "tree/keys.h"

namespace amrgrav {

double wrapIntoBox(double x, double lo, double hi) {
  if (x >= lo && x <= hi) return x;
  const double L = hi - lo;
  double w = lo + (x - lo - L * std::floor((x - lo) / L));
  if (!(w >= lo && w < hi)) w = lo;  // rounding onto hi, or just below lo: the same point of the period
  return w;
}

void sortProbes(const PointsView& p, const RootCube& root, double scale, const SolveOptions& opt, SortedCells& out,
                Groups& groups) {
  const std::size_t n = p.n;
  std::vector<double> x(n), y(n), z(n);
  const double* in[3] = {p.x, p.y, p.z};
  std::vector<double>* w[3] = {&x, &y, &z};
  for (int d = 0; d < 3; ++d)
    for (std::size_t i = 0; i < n; ++i)
      (*w[d])[i] = (opt.periodic[d] ? wrapIntoBox(in[d][i], opt.boxLo[d], opt.boxHi[d]) : in[d][i]) * scale;
  std::vector<std::uint64_t> k(n), ktmp;
  std::vector<std::uint32_t> idx(n), itmp;
  const double inv = double(kKeyCells) / root.side;
  for (std::size_t i = 0; i < n; ++i) {
    k[i] = mortonKey(keyCoordinate(x[i], root.lo[0], inv), keyCoordinate(y[i], root.lo[1], inv),
                     keyCoordinate(z[i], root.lo[2], inv));
    idx[i] = std::uint32_t(i);
  }
  stableSortByKey(k, idx, ktmp, itmp);
  out = SortedCells{};
  out.scale = scale;
  out.x.resize(n);
  out.y.resize(n);
  out.z.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    out.x[i] = x[idx[i]];
    out.y[i] = y[idx[i]];
    out.z[i] = z[idx[i]];
  }
  out.order = std::move(idx);
  // the groups: the leaves of the probes' octree (breadth-first, so sorted by their first probe afterwards)
  groups = Groups{};
  Octree t;
  if (n == 0 || !buildOctree(k, root, opt.pointGroupSize(), t).ok()) return;  // buildOctree fails only on no memory
  std::vector<std::uint32_t> leafBegin;
  for (std::size_t i = 0; i < t.nodeCount(); ++i)
    if (t.isLeaf(i)) leafBegin.push_back(t.cellBegin[i]);
  std::sort(leafBegin.begin(), leafBegin.end());
  // a leaf at the finest key level may hold more than groupSize (coincident probes): cut it into groups of
  // groupSize, the most a walk group takes (a warp's lanes on the device)
  std::vector<std::uint32_t> starts;
  for (std::size_t l = 0; l < leafBegin.size(); ++l) {
    const std::uint32_t b = leafBegin[l], e = l + 1 < leafBegin.size() ? leafBegin[l + 1] : std::uint32_t(n);
    for (std::uint32_t s = b; s < e; s += std::uint32_t(opt.pointGroupSize())) starts.push_back(s);
  }
  for (std::size_t l = 0; l < starts.size(); ++l) {
    const std::uint32_t b = starts[l], e = l + 1 < starts.size() ? starts[l + 1] : std::uint32_t(n);
    groups.begin.push_back(b);
    groups.count.push_back(e - b);
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (std::uint32_t j = b; j < e; ++j) {  // as tree/groups.cpp
      lo[0] = std::min(lo[0], out.x[j]); hi[0] = std::max(hi[0], out.x[j]);
      lo[1] = std::min(lo[1], out.y[j]); hi[1] = std::max(hi[1], out.y[j]);
      lo[2] = std::min(lo[2], out.z[j]); hi[2] = std::max(hi[2], out.z[j]);
    }
    for (int d = 0; d < 3; ++d) {
      groups.lo.push_back(lo[d]);
      groups.hi.push_back(hi[d]);
    }
  }
}

std::vector<std::uint32_t> sortedPositions(const SortedCells& c) {
  std::vector<std::uint32_t> sortedOf(c.order.size());
  for (std::size_t i = 0; i < c.order.size(); ++i) sortedOf[c.order[i]] = std::uint32_t(i);
  return sortedOf;
}

std::vector<std::uint32_t> groupsHoldingTargets(const Groups& g, const std::vector<std::uint32_t>& sortedOf,
                                                const std::uint32_t* targets, std::size_t count) {
  std::vector<std::uint8_t> holds(sortedOf.size(), 0);  // per sorted cell: a target
  for (std::size_t k = 0; k < count; ++k) holds[sortedOf[targets[k]]] = 1;
  std::vector<std::uint32_t> which;
  for (std::size_t gi = 0; gi < g.size(); ++gi) {
    for (std::uint32_t j = g.begin[gi]; j < g.begin[gi] + g.count[gi]; ++j)
      if (holds[j]) {
        which.push_back(std::uint32_t(gi));
        break;
      }
  }
  return which;
}

Groups pickGroups(const Groups& g, const std::vector<std::uint32_t>& which) {
  Groups s;
  for (const std::uint32_t gi : which) {
    s.begin.push_back(g.begin[gi]);
    s.count.push_back(g.count[gi]);
    for (int d = 0; d < 3; ++d) {
      s.lo.push_back(g.lo[3 * gi + d]);
      s.hi.push_back(g.hi[3 * gi + d]);
    }
  }
  return s;
}

}  // namespace amrgrav
