/// \file far_images.cpp
/// \brief The far periodic images' pass: the frontier cubes, the walk over their octree, M2M, M2L and L2L
/// (see far_images.h).
#include "fmm/far_images.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <functional>
#include <array>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>

#include "core/thread_pool.h"
#include "fmm/evaluate.h"
#include "fmm/far_kernel.h"
#include "fmm/multi_index.h"

namespace amrgrav {
namespace fmm {
namespace {

// ------------------------------------------------------------------------------------------------------------------
// The process's kernel values: per (periods in s, order), per integer offset.

struct KernelKey {
  std::array<double, 3> period;
  int order;
  std::array<int, 3> offset;
  bool operator<(const KernelKey& o) const {
    if (period != o.period) return period < o.period;
    if (order != o.order) return order < o.order;
    return offset < o.offset;
  }
};
struct KernelCache {
  std::mutex mu;
  std::map<KernelKey, std::shared_ptr<const std::vector<double>>> values;
};
KernelCache& kernelCache() {
  static KernelCache c;
  return c;
}

/// One frontier cube: a tree node of the frontier level, or cells of shallower leaves binned into its cube.
struct Cube {
  int ix[3];
  std::uint32_t node = ~0u;           ///< the tree's node, or ~0u (then `cells`, M and L are this cube's own)
  std::vector<std::uint32_t> cells;
  std::vector<double> M, L;  ///< M padded to the tree's mStride (m2lWithKernels reads 8 terms at a time)
};

/// A node of the far pass's octree over the cubes (level 0: one cube; `lo`, `hi` in cubes, the box [lo, hi) of
/// the cubes under it).
struct FarNode {
  int lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
  int level = 0;
  int cube = -1;           ///< level 0: the cube
  std::vector<int> child;  ///< the nodes of the level below, in key order
  std::vector<double> M, L;
};

/// The largest reach (r_A + r_B) / (distance from the offset to C_far's nearest singularity) at which two nodes of
/// the far octree interact: that of two cubes of a quarter period in the worst case, sqrt(3) / 5.
constexpr double kFarRatio = 0.3465;

/// h^n / n! for every term (multi_index.h's monomials).
void monomialsOf(const MultiIndex& mi, double hx, double hy, double hz, double* mono) {
  const double h[3] = {hx, hy, hz};
  mono[0] = 1;
  for (int q = 1; q < mi.terms; ++q) mono[q] = mono[mi.monoPrev[q]] * h[mi.monoAxis[q]] * mi.monoScale[q];
}

/// Distance from `delta` to the nearest far image n P (|n_d| >= 2 along some periodic axis, n_d = 0 along the
/// isolated ones, P[d] = 0), every length in cubes. The offsets between two of the box's nodes are under one period
/// along each periodic axis, so |n_d| <= 3 finds it.
double farSingularityDistance(const double delta[3], const double P[3]) {
  double best = INFINITY;
  int N[3];
  for (int d = 0; d < 3; ++d) N[d] = P[d] > 0 ? 3 : 0;
  for (int nz = -N[2]; nz <= N[2]; ++nz)
    for (int ny = -N[1]; ny <= N[1]; ++ny)
      for (int nx = -N[0]; nx <= N[0]; ++nx) {
        if (std::abs(nx) <= 1 && std::abs(ny) <= 1 && std::abs(nz) <= 1) continue;
        const double r[3] = {delta[0] - nx * P[0], delta[1] - ny * P[1], delta[2] - nz * P[2]};
        best = std::min(best, std::sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]));
      }
  return best;
}

}  // namespace

/// The frontier level's depth below a root cube of side `rootSide`: cubes of side s <= L_min / 4 (L_min the shortest
/// period; isolated axes have period 0).
static int frontierLevel(const double period[3], double rootSide, double* side) {
  double pmin = INFINITY;
  for (int d = 0; d < 3; ++d)
    if (period[d] > 0) pmin = std::min(pmin, period[d]);
  double s = rootSide;
  int level = 0;
  while (s > 0.25 * pmin * (1 + 1e-12)) {
    s *= 0.5;
    ++level;
  }
  if (side) *side = s;
  return level;
}

int farCubesPerAxis(const double period[3], double rootSide) { return 1 << frontierLevel(period, rootSide, nullptr); }

Status addFarImages(const SortedCells& cells, const double period[3], int threads, FmmTree& t, FmmOutput out,
                    const FarCubeSum& sum, const std::function<bool(std::uint32_t node)>& adds) {
  const Octree& o = t.topo;
  if (o.nodeCount() == 0) {  // a rank without cells still takes part in the sum
    if (!sum) return Status::success();
    const std::size_t per = std::size_t(farCubesPerAxis(period, o.root.side));
    std::vector<double> dense(per * per * per * std::size_t(termCount(t.order)), 0.0);
    return sum(dense);
  }
  const MultiIndex& mi = MultiIndex::of(t.order);
  const int nt = t.terms;
  double s = 0;
  const int level = frontierLevel(period, o.root.side, &s);
  const int per = 1 << level;
  // the cubes: frontier nodes, then the cells of shallower leaves binned (ascending cube index within each leaf)
  std::vector<Cube> cubes;
  const double* lo = o.root.lo;
  auto cubeOf = [&](double x, int d) {
    const int k = int(std::floor((x - lo[d]) / s));
    return std::min(per - 1, std::max(0, k));
  };
  for (std::size_t i = 0; i < o.nodeCount(); ++i) {
    if (o.level[i] == level) {
      Cube c;
      for (int d = 0; d < 3; ++d) c.ix[d] = cubeOf(o.centre[3 * i + d], d);
      c.node = std::uint32_t(i);
      cubes.push_back(std::move(c));
    } else if (o.level[i] < level && o.isLeaf(i)) {
      std::map<std::array<int, 3>, std::vector<std::uint32_t>> bins;
      const double* xs[3] = {cells.x.data(), cells.y.data(), cells.z.data()};
      for (std::uint32_t j = o.cellBegin[i]; j < o.cellBegin[i] + o.cellCount[i]; ++j)
        bins[{cubeOf(xs[2][j], 2), cubeOf(xs[1][j], 1), cubeOf(xs[0][j], 0)}].push_back(j);
      for (auto& b : bins) {
        Cube c;
        c.ix[0] = b.first[2];
        c.ix[1] = b.first[1];
        c.ix[2] = b.first[0];
        c.cells = std::move(b.second);
        cubes.push_back(std::move(c));
      }
    }
    if (cubes.size() > std::size_t(kMaxFarCubes))
      return Status::error(ErrorCode::InvalidOption,
                           "method 'fmm' in a periodic box: the box's aspect ratio needs more than " +
                               std::to_string(kMaxFarCubes) + " cubes of a quarter of its shortest period for "
                               "the far images; use method 'tree' for such boxes");
  }
  // P2M of the binned cubes about their centres
  std::vector<double> mono(nt);
  auto monomials = [&](double hx, double hy, double hz) {
    const double h[3] = {hx, hy, hz};
    mono[0] = 1;
    for (int q = 1; q < nt; ++q) mono[q] = mono[mi.monoPrev[q]] * h[mi.monoAxis[q]] * mi.monoScale[q];
  };
  auto centreOf = [&](const Cube& c, int d) { return lo[d] + (c.ix[d] + 0.5) * s; };
  for (Cube& c : cubes) {
    c.L.assign(nt, 0.0);
    if (c.node != ~0u) continue;
    c.M.assign(t.mStride, 0.0);
    for (std::uint32_t j : c.cells) {
      monomials(cells.x[j] - centreOf(c, 0), cells.y[j] - centreOf(c, 1), cells.z[j] - centreOf(c, 2));
      for (int q = 0; q < nt; ++q) c.M[q] += cells.mass[j] * mono[q];
    }
  }
  // a distributed solve: every rank's cubes summed (dense, cube order), the far pass over all of them
  std::vector<Cube> global;
  if (sum) {
    std::vector<double> dense(std::size_t(per) * per * per * nt, 0.0);
    for (const Cube& c : cubes) {
      if (c.node != ~0u && adds && !adds(c.node)) continue;  // a shared node's lowest rank adds its multipoles
      const double* M = c.node != ~0u ? &t.M[std::size_t(c.node) * t.mStride] : c.M.data();
      double* D = &dense[((std::size_t(c.ix[2]) * per + c.ix[1]) * per + c.ix[0]) * nt];
      for (int q = 0; q < nt; ++q) D[q] += M[q];
    }
    AG_TRY(sum(dense));
    for (int k = 0; k < per * per * per; ++k) {
      const double* D = &dense[std::size_t(k) * nt];
      if (std::all_of(D, D + nt, [](double v) { return v == 0.0; })) continue;  // no cells of any rank
      Cube c;
      c.ix[0] = k % per;
      c.ix[1] = k / per % per;
      c.ix[2] = k / (per * per);
      c.M.assign(D, D + nt);
      c.M.resize(t.mStride, 0.0);
      global.push_back(std::move(c));
    }
  }
  std::vector<Cube>& farCubes = sum ? global : cubes;
  // the far pass's own octree over the cubes (far_images.h): level 0 the cubes, each level above merges 2^3 of the
  // one below; a node's box is the union of its cubes' (clipped to what is occupied), its centre the box's centre
  std::vector<FarNode> nodes;
  std::vector<std::vector<int>> levels(1);
  for (std::size_t c = 0; c < farCubes.size(); ++c) {
    FarNode f;
    for (int d = 0; d < 3; ++d) {
      f.lo[d] = farCubes[c].ix[d];
      f.hi[d] = farCubes[c].ix[d] + 1;
    }
    f.cube = int(c);
    levels[0].push_back(int(nodes.size()));
    nodes.push_back(std::move(f));
  }
  while (levels.back().size() > 1) {
    const int k = int(levels.size());  // the new level: 2^k cubes a side
    std::map<std::array<int, 3>, std::vector<int>> groups;
    for (int i : levels.back()) {
      const FarNode& f = nodes[i];
      groups[{f.lo[2] >> k, f.lo[1] >> k, f.lo[0] >> k}].push_back(i);
    }
    levels.emplace_back();
    for (auto& g : groups) {
      FarNode f;
      f.level = k;
      for (int d = 0; d < 3; ++d) {
        f.lo[d] = INT32_MAX;
        f.hi[d] = INT32_MIN;
        for (int i : g.second) {
          f.lo[d] = std::min(f.lo[d], nodes[i].lo[d]);
          f.hi[d] = std::max(f.hi[d], nodes[i].hi[d]);
        }
      }
      f.child = std::move(g.second);
      levels.back().push_back(int(nodes.size()));
      nodes.push_back(std::move(f));
    }
  }
  // positions in the solve's lengths: a node's centre (lo + hi) s / 2 from the root cube's corner
  auto centreOfNode = [&](const FarNode& f, int d) { return lo[d] + 0.5 * (f.lo[d] + f.hi[d]) * s; };
  auto sourceM = [&](const FarNode& f) -> const double* {
    if (f.cube < 0) return f.M.data();
    const Cube& c = farCubes[std::size_t(f.cube)];
    return c.node != ~0u ? &t.M[std::size_t(c.node) * t.mStride] : c.M.data();
  };
  // M2M up the far octree (exact to order p), a level at a time, the nodes of a level in parallel
  for (std::size_t k = 1; k < levels.size(); ++k)
    parallelFor(levels[k].size(), 8, threads, [&](std::size_t b, std::size_t e, int) {
      std::vector<double> h(nt);
      for (std::size_t q = b; q < e; ++q) {
        FarNode& f = nodes[std::size_t(levels[k][q])];
        f.M.assign(t.mStride, 0.0);
        for (int c : f.child) {
          const FarNode& ch = nodes[std::size_t(c)];
          monomialsOf(mi, centreOfNode(ch, 0) - centreOfNode(f, 0), centreOfNode(ch, 1) - centreOfNode(f, 1),
                      centreOfNode(ch, 2) - centreOfNode(f, 2), h.data());
          const double* Mc = sourceM(ch);
          for (std::size_t e2 = 0; e2 < mi.m2mN.size(); ++e2) f.M[mi.m2mN[e2]] += Mc[mi.m2mJ[e2]] * h[mi.m2mNJ[e2]];
        }
      }
    });
  // the pairs: a dual walk from the root with itself; two nodes interact when their expansions reach at most
  // kFarRatio of the way to C_far's nearest singularity (a far image: n L, |n_d| >= 2 along some periodic axis), as
  // two cubes always do; otherwise both are opened (they are of one level)
  const double pS[3] = {period[0] / s, period[1] / s, period[2] / s};  // periods in cubes, 0 along isolated axes
  auto accepts = [&](const FarNode& A, const FarNode& B) {
    double rA = 0, rB = 0, delta[3];
    for (int d = 0; d < 3; ++d) {
      rA += double(A.hi[d] - A.lo[d]) * (A.hi[d] - A.lo[d]);
      rB += double(B.hi[d] - B.lo[d]) * (B.hi[d] - B.lo[d]);
      delta[d] = 0.5 * ((A.lo[d] + A.hi[d]) - (B.lo[d] + B.hi[d]));
    }
    return 0.5 * (std::sqrt(rA) + std::sqrt(rB)) <= kFarRatio * farSingularityDistance(delta, pS);
  };
  std::vector<std::pair<int, int>> pairs;
  const std::function<void(int, int)> walk = [&](int a, int b) {
    const FarNode &A = nodes[std::size_t(a)], &B = nodes[std::size_t(b)];
    if (a == b) {
      if (A.level == 0) {
        pairs.emplace_back(a, a);
        return;
      }
      for (std::size_t i = 0; i < A.child.size(); ++i)
        for (std::size_t j = i; j < A.child.size(); ++j) walk(A.child[i], A.child[j]);
      return;
    }
    if (A.level == 0 || accepts(A, B)) {
      pairs.emplace_back(std::min(a, b), std::max(a, b));
      return;
    }
    for (int ca : A.child)
      for (int cb : B.child) walk(ca, cb);
  };
  walk(levels.back()[0], levels.back()[0]);
  // directed interactions by target, sources ascending; the offsets in half cubes (centres are on that grid)
  std::vector<std::vector<int>> sourcesOf(nodes.size());
  for (const auto& pr : pairs) {
    sourcesOf[std::size_t(pr.first)].push_back(pr.second);
    if (pr.first != pr.second) sourcesOf[std::size_t(pr.second)].push_back(pr.first);
  }
  for (auto& v : sourcesOf) std::sort(v.begin(), v.end());
  auto halfOffset = [&](const FarNode& A, const FarNode& B) {
    return std::array<int, 3>{(A.lo[0] + A.hi[0]) - (B.lo[0] + B.hi[0]), (A.lo[1] + A.hi[1]) - (B.lo[1] + B.hi[1]),
                              (A.lo[2] + A.hi[2]) - (B.lo[2] + B.hi[2])};
  };
  // the kernel at every offset needed, from the process's cache (made now where missing); the opposite offset's
  // derivatives are (-1)^n the same (C_far is even)
  const std::array<double, 3> pu = {2 * pS[0], 2 * pS[1], 2 * pS[2]};  // periods in half cubes
  std::map<std::array<int, 3>, std::shared_ptr<const std::vector<double>>> kernel;
  for (std::size_t a = 0; a < nodes.size(); ++a)
    for (int b : sourcesOf[a]) kernel[halfOffset(nodes[a], nodes[std::size_t(b)])] = nullptr;
  auto flipped = [&](const std::vector<double>& v) {
    std::vector<double> f(v);
    for (int j = 0; j < nt; ++j)
      if (mi.degree[j] & 1) f[j] = -f[j];
    return std::make_shared<const std::vector<double>>(std::move(f));
  };
  auto opposite = [](const std::array<int, 3>& o) { return std::array<int, 3>{-o[0], -o[1], -o[2]}; };
  {
    KernelCache& kc = kernelCache();
    std::lock_guard<std::mutex> lock(kc.mu);
    std::vector<std::array<int, 3>> made;  // one of each opposite pair: the larger
    for (auto& kv : kernel) {
      auto it = kc.values.find(KernelKey{pu, t.order, kv.first});
      if (it != kc.values.end()) {
        kv.second = it->second;
        continue;
      }
      auto op = kc.values.find(KernelKey{pu, t.order, opposite(kv.first)});
      if (op != kc.values.end()) kv.second = flipped(*op->second);
      else made.push_back(std::max(kv.first, opposite(kv.first)));
    }
    std::sort(made.begin(), made.end());
    made.erase(std::unique(made.begin(), made.end()), made.end());
    if (!made.empty()) {
      const FarKernelSetup ks = farKernelSetup(pu.data(), t.order);
      std::vector<std::shared_ptr<const std::vector<double>>> values(made.size());
      parallelFor(made.size(), 1, threads, [&](std::size_t b, std::size_t e, int) {
        for (std::size_t k = b; k < e; ++k) {
          const double off[3] = {double(made[k][0]), double(made[k][1]), double(made[k][2])};
          values[k] = std::make_shared<const std::vector<double>>(farKernelAt(ks, off));
        }
      });
      for (std::size_t k = 0; k < made.size(); ++k) {
        kc.values[KernelKey{pu, t.order, made[k]}] = values[k];
        if (opposite(made[k]) != made[k]) kc.values[KernelKey{pu, t.order, opposite(made[k])}] = flipped(*values[k]);
      }
    }
    for (auto& kv : kernel)
      if (!kv.second) kv.second = kc.values.at(KernelKey{pu, t.order, kv.first});
  }
  // into the solve's lengths: a derivative of order n scales as (s/2)^-(n+1)
  std::vector<double> scaleOf(nt);
  for (int q = 0; q < nt; ++q) scaleOf[q] = std::pow(0.5 * s, -(mi.degree[q] + 1));
  std::map<std::array<int, 3>, std::vector<double>> D;
  for (const auto& kv : kernel) {
    std::vector<double>& v = D[kv.first];
    v.assign(t.mStride, 0.0);  // padded as the multipoles (m2lWithKernels)
    for (int k = 0; k < nt; ++k) v[k] = (*kv.second)[k] * scaleOf[k];
  }
  // M2L into every target node's L, its sources in ascending order, in lanes (evaluate.h)
  parallelFor(nodes.size(), 4, threads, [&](std::size_t b, std::size_t e, int) {
    std::vector<const double*> kd, km;
    for (std::size_t a = b; a < e; ++a) {
      nodes[a].L.assign(nt, 0.0);
      kd.clear();
      km.clear();
      for (int src : sourcesOf[a]) {
        const FarNode& B = nodes[std::size_t(src)];
        kd.push_back(D.at(halfOffset(nodes[a], B)).data());
        km.push_back(sourceM(B));
      }
      m2lWithKernels(t.order, kd.size(), kd.data(), km.data(), nodes[a].L.data());
    }
  });
  // L2L down the far octree to the cubes, a level at a time (each node writes only its children)
  for (std::size_t k = levels.size() - 1; k >= 1; --k)
    parallelFor(levels[k].size(), 8, threads, [&](std::size_t b, std::size_t e, int) {
      std::vector<double> h(nt);
      for (std::size_t q = b; q < e; ++q) {
        const FarNode& f = nodes[std::size_t(levels[k][q])];
        for (int c : f.child) {
          FarNode& ch = nodes[std::size_t(c)];
          monomialsOf(mi, centreOfNode(ch, 0) - centreOfNode(f, 0), centreOfNode(ch, 1) - centreOfNode(f, 1),
                      centreOfNode(ch, 2) - centreOfNode(f, 2), h.data());
          for (std::size_t e2 = 0; e2 < mi.l2lK.size(); ++e2) ch.L[mi.l2lK[e2]] += f.L[mi.l2lKJ[e2]] * h[mi.l2lJ[e2]];
        }
      }
    });
  for (int i : levels[0]) farCubes[std::size_t(nodes[std::size_t(i)].cube)].L = nodes[std::size_t(i)].L;
  if (sum) {  // each own cube takes its global cube's local expansion
    std::map<std::array<int, 3>, const std::vector<double>*> byIndex;
    for (const Cube& g : global) byIndex[{g.ix[0], g.ix[1], g.ix[2]}] = &g.L;
    for (Cube& c : cubes) c.L = *byIndex.at({c.ix[0], c.ix[1], c.ix[2]});
  }
  // tree cubes: into their nodes' L (passed down with the rest); binned cubes: L2P at their cells
  const int ng = termCount(t.order - 1);
  for (const Cube& c : cubes) {
    if (c.node != ~0u) {
      double* L = &t.L[std::size_t(c.node) * nt];
      for (int q = 0; q < nt; ++q) L[q] += c.L[q];
      continue;
    }
    for (std::uint32_t j : c.cells) {
      monomials(cells.x[j] - centreOf(c, 0), cells.y[j] - centreOf(c, 1), cells.z[j] - centreOf(c, 2));
      double p = 0;
      for (int q = 0; q < nt; ++q) p += c.L[q] * mono[q];
      out.phi[j] += p;
      if (!out.gx) continue;
      double f[3] = {0, 0, 0};
      for (int q = 0; q < ng; ++q)
        for (int d = 0; d < 3; ++d) f[d] += c.L[mi.plusAxis[d][q]] * mono[q];
      out.gx[j] -= f[0];
      out.gy[j] -= f[1];
      out.gz[j] -= f[2];
    }
  }
  return Status::success();
}

}  // namespace fmm
}  // namespace amrgrav
