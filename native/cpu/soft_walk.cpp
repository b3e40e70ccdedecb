/// \file soft_walk.cpp
/// \brief The softened walk and direct sums (soft_walk.h).
#include "cpu/soft_walk.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <vector>

#include "core/thread_pool.h"
#include "cpu/soft_lists.h"
#include "physics/interact_k.h"
#include "physics/softening_k.h"

namespace amrgrav {
namespace {

constexpr int kMaxGroup = 256;

/// The lists of one group evaluated at its nt targets (tx, ty, tz, te), into p and g (written, not added).
template <int Order, bool Accel, bool Plummer>
void evaluateSoft(const SoftLists& L, const double* tx, const double* ty, const double* tz, const double* te, int nt,
                  double* p, double* gx, double* gy, double* gz) {
  double fx[kMaxGroup], fy[kMaxGroup], fz[kMaxGroup], qx[kMaxGroup], qy[kMaxGroup], qz[kMaxGroup];
  for (int i = 0; i < nt; ++i) { p[i] = 0; fx[i] = 0; fy[i] = 0; fz[i] = 0; qx[i] = 0; qy[i] = 0; qz[i] = 0; }
  const SofteningKernel kernel = Plummer ? SofteningKernel::Plummer : SofteningKernel::Spline;
  const std::size_t nn = L.nm.size();
  for (std::size_t k = 0; k < nn; ++k) {
    const double sx = L.nx[k], sy = L.ny[k], sz = L.nz[k], sm = L.nm[k];
    const double q[6] = {L.q0[k], L.q1[k], L.q2[k], L.q3[k], L.q4[k], L.q5[k]};
    if (Plummer) {
      const double s2 = L.ns[k], ne = L.ne[k];
      for (int i = 0; i < nt; ++i) {
        const double eps = pairSoftening(te[i], ne);
        if (Accel)
          plummerNodeForce<double, Order>(tx[i] - sx, ty[i] - sy, tz[i] - sz, sm, q, s2, eps, p[i], fx[i], fy[i],
                                          fz[i]);
        else plummerNodePotential<double, Order>(tx[i] - sx, ty[i] - sy, tz[i] - sz, sm, q, s2, eps, p[i]);
      }
    } else if (Accel) {
      for (int i = 0; i < nt; ++i)
        nodeCellForce<double, Order>(tx[i] - sx, ty[i] - sy, tz[i] - sz, sm, q, p[i], fx[i], fy[i], fz[i], qx[i],
                                     qy[i], qz[i]);
    } else {
      double h[6];
      halfUpperQuadrupole(q, h);
      for (int i = 0; i < nt; ++i) nodeCellPotential<double, Order>(tx[i] - sx, ty[i] - sy, tz[i] - sz, sm, h, p[i]);
    }
  }
  const std::size_t nc = L.cm.size();
  for (std::size_t k = 0; k < nc; ++k) {
    const double sx = L.cx[k], sy = L.cy[k], sz = L.cz[k], sm = L.cm[k], se = L.ce[k];
    for (int i = 0; i < nt; ++i) {
      const double eps = pairSoftening(te[i], se);
      if (Accel) softPairForce(tx[i] - sx, ty[i] - sy, tz[i] - sz, sm, eps, kernel, p[i], fx[i], fy[i], fz[i]);
      else softPairPotential(tx[i] - sx, ty[i] - sy, tz[i] - sz, sm, eps, kernel, p[i]);
    }
  }
  if (Accel)
    for (int i = 0; i < nt; ++i) { gx[i] = fx[i] - qx[i]; gy[i] = fy[i] - qy[i]; gz[i] = fz[i] - qz[i]; }
}

using SoftEvalFn = void (*)(const SoftLists&, const double*, const double*, const double*, const double*, int,
                            double*, double*, double*, double*);

SoftEvalFn pickSoftEval(int order, bool accel, bool plummer) {
  static constexpr SoftEvalFn fns[2][2][2] = {
      {{evaluateSoft<1, false, false>, evaluateSoft<1, true, false>},
       {evaluateSoft<2, false, false>, evaluateSoft<2, true, false>}},
      {{evaluateSoft<1, false, true>, evaluateSoft<1, true, true>},
       {evaluateSoft<2, false, true>, evaluateSoft<2, true, true>}}};
  return fns[plummer ? 1 : 0][order == 1 ? 0 : 1][accel ? 1 : 0];
}

}  // namespace

void walkSoftGroups(const SourceTree& t, const SortedCells& c, const double* targetEps, const Groups& g,
                    const double* groupEpsMin, const double* groupEpsMax, const SolveOptions& opt, int threads,
                    WalkPass pass, WalkOutput& out) {
  if (t.nodeCount == 0 || g.size() == 0) return;
  const bool plummer = opt.softening == SofteningKernel::Plummer;
  assert(!plummer || t.secondMoment);
  const bool accel = out.gx != nullptr;
  const SoftEvalFn eval = pickSoftEval(opt.order, accel, plummer);
  std::vector<SoftLists> lists(std::max(1, threads));
  std::atomic<std::uint64_t> approx{0}, direct{0};
  parallelFor(g.size(), 8, threads, [&](std::size_t b, std::size_t e, int tid) {
    SoftLists& L = lists[tid];
    std::uint64_t a = 0, d = 0;
    double te[kMaxGroup], p[kMaxGroup], fx[kMaxGroup], fy[kMaxGroup], fz[kMaxGroup];
    for (std::size_t gi = b; gi < e; ++gi) {
      const double eMin = groupEpsMin ? groupEpsMin[gi] : 0.0, eMax = groupEpsMax ? groupEpsMax[gi] : 0.0;
      buildSoftLists(t, &g.lo[3 * gi], &g.hi[3 * gi], eMin, eMax, opt.softening, L);
      const std::uint32_t nt = g.count[gi];
      // in chunks of kMaxGroup (a probes' leaf at the finest key level may hold more: coincident probes)
      for (std::uint32_t c0 = 0; c0 < nt; c0 += kMaxGroup) {
        const std::uint32_t first = g.begin[gi] + c0;
        const int nc = int(std::min<std::uint32_t>(kMaxGroup, nt - c0));
        for (int i = 0; i < nc; ++i) te[i] = targetEps ? targetEps[first + i] : 0.0;
        eval(L, &c.x[first], &c.y[first], &c.z[first], te, nc, p, fx, fy, fz);
        for (int i = 0; i < nc; ++i) {
          const std::size_t j = first + i;
          out.phi[j] = pass.accumulate ? out.phi[j] + p[i] : p[i];
          if (accel) {
            out.gx[j] = pass.accumulate ? out.gx[j] + fx[i] : fx[i];
            out.gy[j] = pass.accumulate ? out.gy[j] + fy[i] : fy[i];
            out.gz[j] = pass.accumulate ? out.gz[j] + fz[i] : fz[i];
          }
        }
      }
      a += std::uint64_t(nt) * L.nm.size();
      // in its own tree every target meets itself once (its leaf is always opened): not an interaction
      const std::size_t self = pass.sourcesAreTargets ? std::min<std::size_t>(L.cm.size(), 1) : 0;
      d += std::uint64_t(nt) * (L.cm.size() - self);
    }
    approx += a;
    direct += d;
  });
  out.approx += approx;
  out.direct += direct;
}

void directSoft(const SortedCells& s, const double* sourceEps, const SortedCells& t, const double* targetEps,
                SofteningKernel kernel, bool accel, bool skipSelf, int threads, WalkOutput& out) {
  const std::size_t ns = s.x.size(), nt = t.x.size();
  constexpr std::size_t kBlock = 64;
  parallelFor((nt + kBlock - 1) / kBlock, 4, threads, [&](std::size_t bb, std::size_t be, int) {
    double p[kBlock], fx[kBlock], fy[kBlock], fz[kBlock], te[kBlock];
    for (std::size_t blk = bb; blk < be; ++blk) {
      const std::size_t b = blk * kBlock;
      const int n = int(std::min(nt, b + kBlock) - b);
      for (int i = 0; i < n; ++i) {
        p[i] = fx[i] = fy[i] = fz[i] = 0;
        te[i] = targetEps ? targetEps[b + i] : 0.0;
      }
      for (std::size_t k = 0; k < ns; ++k) {
        const double sx = s.x[k], sy = s.y[k], sz = s.z[k], sm = s.mass[k], se = sourceEps ? sourceEps[k] : 0.0;
        for (int i = 0; i < n; ++i) {
          if (skipSelf && b + i == k) continue;
          const double eps = pairSoftening(te[i], se);
          const double dx = t.x[b + i] - sx, dy = t.y[b + i] - sy, dz = t.z[b + i] - sz;
          if (accel) softPairForce(dx, dy, dz, sm, eps, kernel, p[i], fx[i], fy[i], fz[i]);
          else softPairPotential(dx, dy, dz, sm, eps, kernel, p[i]);
        }
      }
      for (int i = 0; i < n; ++i) {
        out.phi[b + i] += p[i];
        if (accel) { out.gx[b + i] += fx[i]; out.gy[b + i] += fy[i]; out.gz[b + i] += fz[i]; }
      }
    }
  });
  out.direct += std::uint64_t(nt) * ns - (skipSelf ? std::uint64_t(nt) : 0);
}

}  // namespace amrgrav
