/// \file moments.cpp
/// \brief Bottom-up multipole moments (double precision) and the per-node MAC radius.
#include <algorithm>
#include <cmath>

#include "core/tree.h"

namespace amrgrav {
namespace {

/// Adds m (3 d d^T - |d|^2 I) to q (xx, xy, xz, yy, yz, zz).
inline void addQuadrupole(double* q, double m, double dx, double dy, double dz) {
  const double d2 = dx * dx + dy * dy + dz * dz;
  q[0] += m * (3 * dx * dx - d2);
  q[1] += m * (3 * dx * dy);
  q[2] += m * (3 * dx * dz);
  q[3] += m * (3 * dy * dy - d2);
  q[4] += m * (3 * dy * dz);
  q[5] += m * (3 * dz * dz - d2);
}

}  // namespace

void computeMoments(const SortedCells& c, const SolveOptions& opt, Octree& t) {
  const std::size_t m = t.nodeCount();
  t.mass.assign(m, 0.0);
  t.com.assign(3 * m, 0.0);
  t.quad.assign(6 * m, 0.0);
  t.extentLo.assign(3 * m, 0.0);
  t.extentHi.assign(3 * m, 0.0);
  t.macRadius.assign(m, 0.0);
  // Children always follow their parent, so a reverse sweep sees every child before its parent.
  for (std::size_t ii = m; ii-- > 0;) {
    double M = 0, sx = 0, sy = 0, sz = 0;
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    double* q = &t.quad[6 * ii];
    if (t.isLeaf(ii)) {
      const std::uint32_t b = t.cellBegin[ii], e = b + t.cellCount[ii];
      for (std::uint32_t j = b; j < e; ++j) {
        M += c.mass[j];
        sx += c.mass[j] * c.x[j]; sy += c.mass[j] * c.y[j]; sz += c.mass[j] * c.z[j];
        const double h = 0.5 * c.size[j];
        lo[0] = std::min(lo[0], c.x[j] - h); hi[0] = std::max(hi[0], c.x[j] + h);
        lo[1] = std::min(lo[1], c.y[j] - h); hi[1] = std::max(hi[1], c.y[j] + h);
        lo[2] = std::min(lo[2], c.z[j] - h); hi[2] = std::max(hi[2], c.z[j] + h);
      }
    } else {
      const std::uint32_t b = t.childBegin[ii], e = b + t.childCount[ii];
      for (std::uint32_t k = b; k < e; ++k) {
        M += t.mass[k];
        sx += t.mass[k] * t.com[3 * k]; sy += t.mass[k] * t.com[3 * k + 1]; sz += t.mass[k] * t.com[3 * k + 2];
        for (int d = 0; d < 3; ++d) {
          lo[d] = std::min(lo[d], t.extentLo[3 * k + d]);
          hi[d] = std::max(hi[d], t.extentHi[3 * k + d]);
        }
      }
    }
    double cm[3];
    if (M > 0) { cm[0] = sx / M; cm[1] = sy / M; cm[2] = sz / M; }
    else { for (int d = 0; d < 3; ++d) cm[d] = t.centre[3 * ii + d]; }  // massless: any point inside will do
    if (t.isLeaf(ii)) {
      const std::uint32_t b = t.cellBegin[ii], e = b + t.cellCount[ii];
      for (std::uint32_t j = b; j < e; ++j) addQuadrupole(q, c.mass[j], c.x[j] - cm[0], c.y[j] - cm[1], c.z[j] - cm[2]);
    } else {
      const std::uint32_t b = t.childBegin[ii], e = b + t.childCount[ii];
      for (std::uint32_t k = b; k < e; ++k) {  // parallel-axis theorem
        for (int r = 0; r < 6; ++r) q[r] += t.quad[6 * k + r];
        addQuadrupole(q, t.mass[k], t.com[3 * k] - cm[0], t.com[3 * k + 1] - cm[1], t.com[3 * k + 2] - cm[2]);
      }
    }
    t.mass[ii] = M;
    for (int d = 0; d < 3; ++d) {
      t.com[3 * ii + d] = cm[d];
      t.extentLo[3 * ii + d] = lo[d];
      t.extentHi[3 * ii + d] = hi[d];
    }
    // MAC radius l/theta + delta
    double l, ctr[3];
    if (opt.mac == MacKind::Bonsai) {
      l = std::max({hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]});
      for (int d = 0; d < 3; ++d) ctr[d] = 0.5 * (lo[d] + hi[d]);
    } else {
      l = t.side(ii);
      for (int d = 0; d < 3; ++d) ctr[d] = t.centre[3 * ii + d];
    }
    const double delta = std::sqrt((cm[0] - ctr[0]) * (cm[0] - ctr[0]) + (cm[1] - ctr[1]) * (cm[1] - ctr[1]) +
                                   (cm[2] - ctr[2]) * (cm[2] - ctr[2]));
    t.macRadius[ii] = l / opt.theta + delta;
  }
}

}  // namespace amrgrav
