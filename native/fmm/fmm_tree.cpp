/// \file fmm_tree.cpp
/// \brief The FMM's tree and upward pass (see fmm_tree.h). Compiled without contraction (CMakeLists.txt): the
/// centres and radii decide the interaction lists. Every sum runs over a node's cells in sorted order, one node per
/// task, so the bits do not depend on the thread count.
#include "fmm/fmm_tree.h"

#include <algorithm>
#include <cmath>

#include "core/thread_pool.h"
#include "fmm/expansions.h"
#include "fmm/multi_index.h"
#include "physics/fmm_mac_k.h"

namespace amrgrav {
namespace fmm {
namespace {

/// Centre, radius, critical radius and |mass| of node i from its cells (what decides the lists), then its multipoles.
void upwardNode(const MultiIndex& mi, const SortedCells& c, double theta, std::size_t i, FmmTree& t) {
  const Octree& o = t.topo;
  const std::uint32_t b = o.cellBegin[i], e = b + o.cellCount[i];
  double m = 0, am = 0, s[3] = {0, 0, 0};
  for (std::uint32_t j = b; j < e; ++j) {
    m += c.mass[j];
    am += std::fabs(c.mass[j]);
    s[0] += c.mass[j] * c.x[j];
    s[1] += c.mass[j] * c.y[j];
    s[2] += c.mass[j] * c.z[j];
  }
  double* ctr = &t.centre[3 * i];
  for (int d = 0; d < 3; ++d) ctr[d] = m > 0 ? s[d] / m : o.centre[3 * i + d];
  double r2 = 0;
  for (std::uint32_t j = b; j < e; ++j)
    r2 = stdMax(r2, squaredNorm(c.x[j] - ctr[0], c.y[j] - ctr[1], c.z[j] - ctr[2]));
  t.radius[i] = std::sqrt(r2);
  t.critical[i] = fmmCriticalRadius(t.radius[i], theta);
  t.absMass[i] = am;
  multipolesOfNode(mi, c, i, t);
}

}  // namespace

Status buildFmmTree(const std::vector<std::uint64_t>& keys, const RootCube& root, const SortedCells& cells,
                    const SolveOptions& opt, int threads, FmmTree& t) {
  Status st = buildOctree(keys, root, kFmmLeafSize, t.topo);
  if (!st.ok()) return st;
  const MultiIndex mi(opt.fmmOrder);
  const std::size_t n = t.topo.nodeCount();
  t.order = opt.fmmOrder;
  t.terms = mi.terms;
  t.mStride = (mi.terms + 7) / 8 * 8;
  t.levelBegin.assign(1, 0);
  for (std::size_t i = 0; i < n; ++i)
    while (std::size_t(t.topo.level[i]) >= t.levelBegin.size()) t.levelBegin.push_back(std::uint32_t(i));
  t.levelBegin.push_back(std::uint32_t(n));
  t.centre.assign(3 * n, 0.0);
  t.radius.assign(n, 0.0);
  t.critical.assign(n, 0.0);
  t.absMass.assign(n, 0.0);
  t.lowBound.assign(n, 0.0);
  t.M.assign(n * t.mStride, 0.0);
  t.L.assign(n * mi.terms, 0.0);
  if (n == 0) return Status::success();
  // bottom-up, a level at a time (children are a level below their parent)
  for (std::size_t lev = t.levelBegin.size() - 1; lev-- > 0;) {
    const std::size_t b = t.levelBegin[lev], e = t.levelBegin[lev + 1];
    parallelFor(e - b, 16, threads, [&](std::size_t lb, std::size_t le, int) {
      for (std::size_t i = b + lb; i < b + le; ++i) upwardNode(mi, cells, opt.fmmTheta, i, t);
    });
  }
  const double* lo = t.topo.root.lo;
  const double side = t.topo.root.side, rootMass = t.absMass[0];
  parallelFor(n, 256, threads, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t i = b; i < e; ++i)
      t.lowBound[i] = fmmPotentialLowerBound(&t.centre[3 * i], t.radius[i], lo, side, rootMass);
  });
  return Status::success();
}

}  // namespace fmm
}  // namespace amrgrav
