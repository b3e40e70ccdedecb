/// \file fmm_tree.cpp
/// \brief The FMM's tree and upward pass (see fmm_tree.h). Compiled without contraction (CMakeLists.txt): the
/// centres and radii decide the interaction lists. Every sum is tree-shaped (fmm/upward_k.h: a leaf's cells in
/// sorted order, an internal node's children's sums in child order), one node per task, so the bits depend neither
/// on the thread count nor on the backend (the CUDA backend's upward pass runs the same rules, cuda/fmm_tree_phase.h).
#include "fmm/fmm_tree.h"

#include <algorithm>
#include <cmath>

#include "core/thread_pool.h"
#include "fmm/expansions.h"
#include "fmm/multi_index.h"
#include "fmm/norms_k.h"
#include "fmm/p2p_tables.h"
#include "fmm/signed_scale_k.h"
#include "fmm/upward_k.h"
#include "physics/fmm_mac_k.h"

namespace amrgrav {
namespace fmm {
namespace {

/// Node i's sums (fmm/upward_k.h): a leaf's cells in sorted order, else its children's sums (done) in child order.
void sumsOfNode(const SortedCells& c, const Octree& o, std::size_t i, FmmSums* sums) {
  FmmSums a;
  if (o.isLeaf(i)) {
    for (std::uint32_t j = o.cellBegin[i]; j < o.cellBegin[i] + o.cellCount[i]; ++j)
      fmmAddCell(a, c.mass[j], c.x[j], c.y[j], c.z[j]);
  } else {
    for (std::uint32_t k = 0; k < o.childCount[i]; ++k) fmmAddSums(a, sums[o.childBegin[i] + k]);
  }
  sums[i] = a;
}

/// The largest squared distance from node i's centre to one of its cells (exact in any order).
double radius2OfNode(const SortedCells& c, const FmmTree& t, std::size_t i) {
  const Octree& o = t.topo;
  const double* ctr = &t.centre[3 * i];
  double r2 = 0;
  for (std::uint32_t j = o.cellBegin[i]; j < o.cellBegin[i] + o.cellCount[i]; ++j)
    r2 = stdMax(r2, fmmCellDistance2(c.x[j], c.y[j], c.z[j], ctr));
  return r2;
}

/// Centre, radius, critical radius and |mass| of node i from its sums and cells (what decides the lists), then its
/// multipoles; its children's are done.
void upwardNode(const MultiIndex& mi, const SortedCells& c, double theta, std::size_t i, FmmSums* sums, FmmTree& t) {
  const Octree& o = t.topo;
  sumsOfNode(c, o, i, sums);
  for (int d = 0; d < 3; ++d) t.centre[3 * i + d] = fmmCentreOf(sums[i], d, o.centre[3 * i + d], t.dipoles);
  t.radius[i] = std::sqrt(radius2OfNode(c, t, i));
  t.critical[i] = fmmCriticalRadius(t.radius[i], theta);
  t.absMass[i] = sums[i].am;
  multipolesOfNode(mi, c, i, t);
}

/// The distributed upward pass (fmm_tree.h SharedNodes): upwardNode's sums per node, the shared nodes' summed over
/// the ranks before the centres are taken; the radii from the global centres, the shared nodes' maxima taken; the
/// multipoles about the global centres (a shared node's from this rank's cells and children alone, partial, its
/// children's partial ones included by M2M), the shared nodes' summed over the ranks once at the end: every rank's
/// partial multipoles about one centre add up to the node's. `ownAbsMass`: the |mass| of this rank's cells.
Status upwardShared(const MultiIndex& mi, const SortedCells& c, double theta, int threads, const SharedNodes& sh,
                    FmmTree& t, double& ownAbsMass) {
  const Octree& o = t.topo;
  const std::size_t n = o.nodeCount(), K = sh.top->size();
  std::vector<double> sums(5 * n);
  {  // upwardNode's sums, bottom-up: the same bits where the node is this rank's alone; a shared node's partial
    std::vector<FmmSums> part(n);
    for (std::size_t lev = t.levelBegin.size() - 1; lev-- > 0;) {
      const std::size_t b = t.levelBegin[lev], e = t.levelBegin[lev + 1];
      parallelFor(e - b, 16, threads, [&](std::size_t lb, std::size_t le, int) {
        for (std::size_t i = b + lb; i < b + le; ++i) sumsOfNode(c, o, i, part.data());
      });
    }
    for (std::size_t i = 0; i < n; ++i) {
      const double v[5] = {part[i].m, part[i].am, part[i].s[0], part[i].s[1], part[i].s[2]};
      std::copy(v, v + 5, &sums[5 * i]);
    }
  }
  ownAbsMass = n > 0 ? sums[1] : 0.0;
  auto reduceShared = [&](std::vector<double>& perNode, std::size_t k, bool useMax) -> Status {
    std::vector<double> v(K * k, 0.0);
    for (std::size_t i = 0; i < n; ++i)
      if (sh.index[i] >= 0) std::copy(&perNode[k * i], &perNode[k * i] + k, &v[k * std::size_t(sh.index[i])]);
    AG_TRY(useMax ? sh.max(v.data(), v.size()) : sh.sum(v.data(), v.size()));
    for (std::size_t i = 0; i < n; ++i)
      if (sh.index[i] >= 0) std::copy(&v[k * std::size_t(sh.index[i])], &v[k * std::size_t(sh.index[i])] + k, &perNode[k * i]);
    return Status::success();
  };
  AG_TRY(reduceShared(sums, 5, false));
  for (std::size_t i = 0; i < n; ++i) {
    FmmSums a;
    a.m = sums[5 * i];
    for (int d = 0; d < 3; ++d) a.s[d] = sums[5 * i + 2 + d];
    for (int d = 0; d < 3; ++d) t.centre[3 * i + d] = fmmCentreOf(a, d, o.centre[3 * i + d], t.dipoles);
    t.absMass[i] = sums[5 * i + 1];
  }
  std::vector<double> r2(n, 0.0);
  parallelFor(n, 16, threads, [&](std::size_t lb, std::size_t le, int) {
    for (std::size_t i = lb; i < le; ++i) r2[i] = radius2OfNode(c, t, i);
  });
  AG_TRY(reduceShared(r2, 1, true));
  for (std::size_t i = 0; i < n; ++i) {
    t.radius[i] = std::sqrt(r2[i]);
    t.critical[i] = fmmCriticalRadius(t.radius[i], theta);
  }
  for (std::size_t lev = t.levelBegin.size() - 1; lev-- > 0;) {
    const std::size_t b = t.levelBegin[lev], e = t.levelBegin[lev + 1];
    parallelFor(e - b, 16, threads, [&](std::size_t lb, std::size_t le, int) {
      for (std::size_t i = b + lb; i < b + le; ++i) multipolesOfNode(mi, c, i, t);
    });
  }
  return reduceShared(t.M, std::size_t(t.mStride), false);
}

/// A rank without cells takes part in upwardShared's reductions.
Status upwardSharedNone(const SharedNodes& sh, int mStride) {
  const std::size_t K = sh.top->size();
  std::vector<double> v(5 * K, 0.0);
  AG_TRY(sh.sum(v.data(), v.size()));
  v.assign(K, 0.0);
  AG_TRY(sh.max(v.data(), v.size()));
  v.assign(K * std::size_t(mStride), 0.0);
  return sh.sum(v.data(), v.size());
}

/// The share of the signed sources' potential scale that the error estimate is measured against: a target's error
/// sums the errors of all its M2L, which a contrast's signs do not keep below the largest, and the estimate
/// (fmmSignedPairAccepts) is no bound. Calibrated on white noise, the hardest case: with the default fmmTolerance,
/// white-noise contrasts on 16^3 and 32^3 grids come to ~1e-5 of max |phi|, smooth ones and a refined blob to
/// less (bench/RESULTS.md, "FMM in fully periodic boxes").
constexpr double kSignedScaleShare = 1.0 / 32;

/// Part (a) of the scale of |phi| for signed sources (the density contrast), where the root's |mass| over a distance
/// is no lower bound of the potential (the contrast's potential cancels and crosses zero) and grows as sqrt(N) past
/// it: the largest near field of one leaf's own cells at its cells.
double leafNearMax(const SortedCells& c, int threads, const FmmTree& t, const SharedNodes* shared) {
  const Octree& o = t.topo;
  const std::size_t n = o.nodeCount();
  std::vector<double> nearMax(n, 0.0);
  // regular 4^3 leaves by their self table (p2p_tables.h), the others pair by pair
  const RegularLeaves reg = findRegularLeaves(t, c, threads);
  P2pTables tables;
  tables.prepare(reg, FmmLists{}, threads);
  const double none[3] = {0, 0, 0};
  parallelFor(n, 16, threads, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t i = b; i < e; ++i) {
      if (!o.isLeaf(i) || (shared && shared->index[i] >= 0)) continue;  // a shared leaf: not all its cells here
      const std::uint32_t cb = o.cellBegin[i];
      nearMax[i] = leafNearOf(&c.x[cb], &c.y[cb], &c.z[cb], &c.mass[cb], o.cellCount[i],
                              tables.find(reg, std::uint32_t(i), std::uint32_t(i), none), reg.h[i]);
    }
  });
  double scale = 0;
  for (double v : nearMax) scale = stdMax(scale, v);
  return scale;
}

double coarseFieldOfCubes(const RootCube& r, const MacScaleParts& parts);

/// The cube (of the root's 4^3, Morton order) of a position: the same on every rank (periodic: one root cube).
int scaleCubeOf(const RootCube& r, double x, double y, double z) {
  const double q = r.side / 4, p[3] = {x, y, z};
  int code = 0;
  for (int d = 0; d < 3; ++d) {
    const int k = std::min(3, std::max(0, int(std::floor((p[d] - r.lo[d]) / q))));
    code |= (k & 1) << d | (k >> 1) << (d + 3);
  }
  return code;
}

/// Part (b)'s net masses and cell counts of the root's 4^3 cubes (kScaleCubes), from this tree's cells: a level-2
/// node's cells summed in their order into the cube of its centre (netMassOf: a node a task, the same bits for any
/// thread count), the cells of leaves above level 2 one by one, in their order, into the cube of their position.
/// One rule in one process, on every rank (each rank's own cells, summed over the ranks afterwards) and on the
/// device (its level-2 sums, placeLevelNets): so one process and N ranks choose the same scale and pairs.
void scaleCubes(const SortedCells& c, const FmmTree& t, int threads, std::vector<double>& net,
                std::vector<double>& count) {
  const Octree& o = t.topo;
  net.assign(kScaleCubes, 0.0);
  count.assign(kScaleCubes, 0.0);
  if (t.levelBegin.size() > 3) {
    const std::size_t first = t.levelBegin[2], k = t.levelBegin[3] - first;
    std::vector<double> level(k, 0.0);
    parallelFor(k, 1, threads, [&](std::size_t b, std::size_t e, int) {
      for (std::size_t q = b; q < e; ++q)
        level[q] = netMassOf(c.mass.data(), o.cellBegin[first + q], o.cellCount[first + q]);
    });
    placeLevelNets(t, level, net, count);
  }
  for (std::size_t i = 0; i < o.nodeCount() && o.level[i] < 2; ++i) {
    if (!o.isLeaf(i)) continue;
    for (std::uint32_t j = o.cellBegin[i]; j < o.cellBegin[i] + o.cellCount[i]; ++j) {
      const int q = scaleCubeOf(o.root, c.x[j], c.y[j], c.z[j]);
      net[q] += c.mass[j];
      count[q] += 1;
    }
  }
}

/// Part (b) in one process: the coarse field of the cubes' net masses (scaleCubes) at each other's centres.
double coarseFieldOfNodes(const SortedCells& c, const FmmTree& t, int threads) {
  MacScaleParts parts;
  scaleCubes(c, t, threads, parts.net, parts.count);
  return coarseFieldOfCubes(t.topo.root, parts);
}

double coarseFieldOfCubes(const RootCube& r, const MacScaleParts& parts) {
  double centre[kScaleCubes][3];
  for (int k = 0; k < kScaleCubes; ++k)
    for (int d = 0; d < 3; ++d)
      centre[k][d] = r.lo[d] + (((k >> d) & 1) + 2 * ((k >> (d + 3)) & 1) + 0.5) * (r.side / 4);
  double scale = 0;
  for (int a = 0; a < kScaleCubes; ++a) {
    if (parts.count[a] == 0) continue;
    double p = 0;
    for (int b = 0; b < kScaleCubes; ++b) {
      if (a == b || parts.count[b] == 0) continue;
      p += parts.net[b] / std::sqrt(squaredNorm(centre[a][0] - centre[b][0], centre[a][1] - centre[b][1],
                                                centre[a][2] - centre[b][2]));
    }
    scale = stdMax(scale, std::fabs(p));
  }
  return scale;
}

/// Signed sources: each node's multipole norms |M^(n)| = sqrt(sum_(|k| = n) n! k! M_k^2), n = 0..p (for one mass m at
/// distance d: |m| d^n), which the signed pair test reads (physics/fmm_mac_k.h, fmmSignedPairAccepts).
void multipoleNorms(const MultiIndex& mi, int threads, FmmTree& t) {
  const std::vector<double> w = multipoleNormWeights(mi);
  const int np = mi.order + 1;
  t.norms.assign(t.nodeCount() * np, 0.0);
  parallelFor(t.nodeCount(), 256, threads, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t i = b; i < e; ++i)
      fmmMultipoleNorms(&t.M[i * t.mStride], mi.terms, w.data(), mi.degree.data(), mi.order, &t.norms[i * np]);
  });
}

}  // namespace

std::vector<double> multipoleNormWeights(const MultiIndex& mi) {
  std::vector<double> w(mi.terms);
  for (int q = 0; q < mi.terms; ++q) {
    double f = 1;
    for (int k = 2; k <= mi.degree[q]; ++k) f *= k;
    for (int d = 0; d < 3; ++d)
      for (int k = 2; k <= mi.n[q][d]; ++k) f *= k;
    w[q] = f;
  }
  return w;
}

double leafNearOf(const double* x, const double* y, const double* z, const double* m, std::uint32_t count,
                  const P2pTable* self, double h) {
  double mx = 0;
  if (self) {  // regular 4^3 leaves by their self table (p2p_tables.h)
    double p[kTableCells];
    tableP2P(*self, m, h, p, nullptr, nullptr, nullptr);
    for (int k = 0; k < kTableCells; ++k) mx = stdMax(mx, std::fabs(p[k]));
    return mx;
  }
  for (std::uint32_t a = 0; a < count; ++a) {
    double q = 0;
    for (std::uint32_t j = 0; j < count; ++j)
      if (j != a) q += m[j] / std::sqrt(squaredNorm(x[a] - x[j], y[a] - y[j], z[a] - z[j]));
    mx = stdMax(mx, std::fabs(q));
  }
  return mx;
}

int signedScaleLevel(const FmmTree& t) { return std::min<int>(2, int(t.levelBegin.size()) - 2); }

void placeLevelNets(const FmmTree& t, const std::vector<double>& net, std::vector<double>& cubeNet,
                    std::vector<double>& cubeCount) {
  const Octree& o = t.topo;
  const std::size_t first = t.levelBegin[2];
  cubeNet.resize(kScaleCubes, 0.0);
  cubeCount.resize(kScaleCubes, 0.0);
  for (std::size_t q = 0; q < net.size(); ++q) {  // a level-2 node is one cube: its centre's (exactly its middle)
    const double* x = &t.centre[3 * (first + q)];
    const int k = scaleCubeOf(o.root, x[0], x[1], x[2]);
    cubeNet[k] += net[q];
    cubeCount[k] += o.cellCount[first + q];
  }
}

double coarseFieldOfNets(const FmmTree& t, const std::vector<double>& net) {
  MacScaleParts parts;
  parts.net.assign(kScaleCubes, 0.0);
  parts.count.assign(kScaleCubes, 0.0);
  placeLevelNets(t, net, parts.net, parts.count);
  return coarseFieldOfCubes(t.topo.root, parts);
}

double signedScaleOf(double nearMax, double coarse) { return kSignedScaleShare * stdMax(nearMax, coarse); }

double signedSourceScale(const SortedCells& cells, int threads, const FmmTree& t) {
  return signedScaleOf(leafNearMax(cells, threads, t, nullptr), coarseFieldOfNodes(cells, t, threads));
}

Status buildFmmTree(const std::vector<std::uint64_t>& keys, const RootCube& root, const SortedCells& cells,
                    const SolveOptions& opt, int threads, FmmTree& t, const MacScaleReduce& reduce,
                    SharedNodes* shared) {
  SplitCount splitCount;
  if (shared)  // a shared node splits by its count over every rank, as in one process
    splitCount = [&](int level, std::uint64_t key, std::uint32_t count) {
      const std::int64_t k = shared->top->find(nodeCode(key, level));
      return k < 0 ? count : shared->top->count[std::size_t(k)];
    };
  Status st = buildOctree(keys, root, kFmmLeafSize, t.topo, splitCount);
  if (!st.ok()) return st;
  if (shared) {
    shared->index.assign(t.topo.nodeCount(), -1);
    for (std::size_t i = 0; i < t.topo.nodeCount(); ++i)
      shared->index[i] = std::int32_t(shared->top->find(nodeCode(keys[t.topo.cellBegin[i]], t.topo.level[i])));
  }
  const MultiIndex& mi = MultiIndex::of(opt.fmmOrder);
  const std::size_t n = t.topo.nodeCount();
  t.order = opt.fmmOrder;
  t.terms = mi.terms;
  t.mStride = (mi.terms + 7) / 8 * 8;
  // any periodic axis: cube centres (the far kernel acts between them) and the signed test, since a sheet's or a
  // line's potential crosses zero too (psi's plane or line average falls as -|w| or -ln rho) even for positive masses
  t.dipoles = opt.anyPeriodic();
  t.accelLimit = 0;  // set with the lower bounds (isolated boxes)
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
  if (n == 0) {  // a rank without cells still takes part in the reductions
    if (shared) AG_TRY(upwardSharedNone(*shared, t.mStride));
    if (!reduce) return Status::success();
    MacScaleParts parts;
    parts.cube = root;
    if (t.dipoles) {
      parts.net.assign(kScaleCubes, 0.0);
      parts.count.assign(kScaleCubes, 0.0);
    }
    return reduce(parts);
  }
  MacScaleParts parts;
  if (shared) {
    AG_TRY(upwardShared(mi, cells, opt.fmmTheta, threads, *shared, t, parts.absMass));
  } else {
    // bottom-up, a level at a time (children are a level below their parent)
    std::vector<FmmSums> sums(n);
    for (std::size_t lev = t.levelBegin.size() - 1; lev-- > 0;) {
      const std::size_t b = t.levelBegin[lev], e = t.levelBegin[lev + 1];
      parallelFor(e - b, 16, threads, [&](std::size_t lb, std::size_t le, int) {
        for (std::size_t i = b + lb; i < b + le; ++i) upwardNode(mi, cells, opt.fmmTheta, i, sums.data(), t);
      });
    }
    parts.absMass = t.absMass[0];
  }
  parts.cube = t.topo.root;
  if (t.dipoles) {
    parts.nearMax = leafNearMax(cells, threads, t, shared);
    if (shared) parts.nearMax = stdMax(parts.nearMax, shared->sharedLeafNearMax);
    if (reduce) scaleCubes(cells, t, threads, parts.net, parts.count);
  }
  if (reduce) AG_TRY(reduce(parts));
  if (t.dipoles) {  // periodic: phi crosses zero; a scale of it instead of a lower bound, multipole powers for |M|
    const double coarse = reduce ? coarseFieldOfCubes(t.topo.root, parts) : coarseFieldOfNodes(cells, t, threads);
    const double scale = signedScaleOf(parts.nearMax, coarse);
    for (std::size_t i = 0; i < n; ++i) t.lowBound[i] = scale;
    multipoleNorms(mi, threads, t);
    return Status::success();
  }
  const double* lo = parts.cube.lo;
  const double side = parts.cube.side, rootMass = parts.absMass;
  if (opt.accelerations) t.accelLimit = fmmAccelLimit(opt.fmmAccelTolerance, rootMass, side);
  parallelFor(n, 256, threads, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t i = b; i < e; ++i)
      t.lowBound[i] = fmmPotentialLowerBound(&t.centre[3 * i], t.radius[i], lo, side, rootMass);
  });
  return Status::success();
}

}  // namespace fmm
}  // namespace amrgrav
