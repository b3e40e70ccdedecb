/// \file far_images.cpp
/// \brief The far periodic images' kernel and M2L between frontier cubes (see far_images.h).
#include "fmm/far_images.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>

#include "core/thread_pool.h"
#include "fmm/far_kernel.h"
#include "fmm/multi_index.h"
#include "fmm/simd.h"
#include "fmm/m2l_kernels.h"

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

template <int P>
void m2lFar(const double* D, const double* Mb, double* La) {
  if constexpr (P == 3) m2lOne3<double>(D, Mb, La);
  else if constexpr (P == 4) m2lOne4<double>(D, Mb, La);
  else if constexpr (P == 5) m2lOne5<double>(D, Mb, La);
  else if constexpr (P == 6) m2lOne6<double>(D, Mb, La);
  else m2lOne7<double>(D, Mb, La);
}

/// One frontier cube: a tree node of the frontier level, or cells of shallower leaves binned into its cube.
struct Cube {
  int ix[3];
  std::uint32_t node = ~0u;           ///< the tree's node, or ~0u (then `cells`, M and L are this cube's own)
  std::vector<std::uint32_t> cells;
  std::vector<double> M, L;
};

}  // namespace

Status addFarImages(const SortedCells& cells, const double period[3], int threads, FmmTree& t, FmmOutput out) {
  const Octree& o = t.topo;
  if (o.nodeCount() == 0) return Status::success();
  const MultiIndex mi(t.order);
  const int nt = t.terms;
  // the frontier level: cubes of side s <= L_min / 4 (L_min the shortest period; isolated axes have period 0)
  double pmin = INFINITY;
  for (int d = 0; d < 3; ++d)
    if (period[d] > 0) pmin = std::min(pmin, period[d]);
  double s = o.root.side;
  int level = 0;
  while (s > 0.25 * pmin * (1 + 1e-12)) {
    s *= 0.5;
    ++level;
  }
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
    c.M.assign(nt, 0.0);
    for (std::uint32_t j : c.cells) {
      monomials(cells.x[j] - centreOf(c, 0), cells.y[j] - centreOf(c, 1), cells.z[j] - centreOf(c, 2));
      for (int q = 0; q < nt; ++q) c.M[q] += cells.mass[j] * mono[q];
    }
  }
  // the kernel at every offset between two cubes, from the process's cache (made now where missing)
  const int w = 2 * per - 1;
  std::vector<std::uint8_t> need(std::size_t(w) * w * w, 0);
  auto slot = [&](const Cube& A, const Cube& B) {
    return ((A.ix[2] - B.ix[2] + per - 1) * w + (A.ix[1] - B.ix[1] + per - 1)) * w + (A.ix[0] - B.ix[0] + per - 1);
  };
  for (const Cube& A : cubes)
    for (const Cube& B : cubes) need[slot(A, B)] = 1;
  const std::array<double, 3> pu = {period[0] / s, period[1] / s, period[2] / s};
  std::vector<std::shared_ptr<const std::vector<double>>> kernel(need.size());
  {
    KernelCache& kc = kernelCache();
    std::lock_guard<std::mutex> lock(kc.mu);
    std::vector<int> missing;
    for (int q = 0; q < int(need.size()); ++q) {
      if (!need[q]) continue;
      const KernelKey key{pu, t.order, {q % w - (per - 1), q / w % w - (per - 1), q / (w * w) - (per - 1)}};
      auto it = kc.values.find(key);
      if (it != kc.values.end()) kernel[q] = it->second;
      else missing.push_back(q);
    }
    // each missing offset or its opposite (slots q and need.size() - 1 - q): the opposite's derivatives are
    // (-1)^n the same (C_far is even)
    std::vector<int> made;
    for (int q : missing)
      if (!kernel[need.size() - 1 - q]) made.push_back(std::min(q, int(need.size()) - 1 - q));
    std::sort(made.begin(), made.end());
    made.erase(std::unique(made.begin(), made.end()), made.end());
    if (!made.empty()) {
      const FarKernelSetup ks = farKernelSetup(pu.data(), t.order);
      std::vector<std::shared_ptr<const std::vector<double>>> values(made.size());
      parallelFor(made.size(), 1, threads, [&](std::size_t b, std::size_t e, int) {
        for (std::size_t k = b; k < e; ++k) {
          const int q = made[k];
          const double off[3] = {double(q % w - (per - 1)), double(q / w % w - (per - 1)),
                                 double(q / (w * w) - (per - 1))};
          values[k] = std::make_shared<const std::vector<double>>(farKernelAt(ks, off));
        }
      });
      for (std::size_t k = 0; k < made.size(); ++k) {
        const int q = made[k], opp = int(need.size()) - 1 - q;
        kernel[q] = values[k];
        if (opp != q) {
          std::vector<double> flipped(*values[k]);
          for (int j = 0; j < nt; ++j)
            if (mi.degree[j] & 1) flipped[j] = -flipped[j];
          kernel[opp] = std::make_shared<const std::vector<double>>(std::move(flipped));
        }
      }
    }
    for (int q : missing)  // opposites found in the cache
      if (!kernel[q]) {
        std::vector<double> flipped(*kernel[need.size() - 1 - q]);
        for (int j = 0; j < nt; ++j)
          if (mi.degree[j] & 1) flipped[j] = -flipped[j];
        kernel[q] = std::make_shared<const std::vector<double>>(std::move(flipped));
      }
    for (int q : missing)
      if (kernel[q]) kc.values[KernelKey{pu, t.order, {q % w - (per - 1), q / w % w - (per - 1), q / (w * w) - (per - 1)}}] = kernel[q];
  }
  // into the solve's lengths: a derivative of order n scales as s^-(n+1)
  std::vector<double> scaleOf(nt);
  for (int q = 0; q < nt; ++q) scaleOf[q] = std::pow(s, -(mi.degree[q] + 1));
  std::vector<double> D(need.size() * nt, 0.0);
  for (std::size_t q = 0; q < need.size(); ++q)
    if (kernel[q])
      for (int k = 0; k < nt; ++k) D[q * nt + k] = (*kernel[q])[k] * scaleOf[k];
  // M2L: each target cube from every cube (itself included), sources in cube order
  using Fn = void (*)(const double*, const double*, double*);
  static constexpr Fn fns[5] = {m2lFar<3>, m2lFar<4>, m2lFar<5>, m2lFar<6>, m2lFar<7>};
  const Fn m2l = fns[t.order - 3];
  parallelFor(cubes.size(), 4, threads, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t a = b; a < e; ++a)
      for (const Cube& B : cubes)
        m2l(&D[std::size_t(slot(cubes[a], B)) * nt], B.node != ~0u ? &t.M[std::size_t(B.node) * t.mStride] : B.M.data(),
            cubes[a].L.data());
  });
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
