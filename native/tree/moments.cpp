/// \file moments.cpp
/// \brief Bottom-up multipole moments (double precision) and the per-node MAC radius.
#include <algorithm>
#include <cmath>

#include "tree/tree.h"

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

/// The dipole's part of shifting a child's quadrupole to the parent's centre: D s^T + s D^T times 3, minus
/// 2 (D.s) I (the cross terms of 3 (d + s)(d + s)^T - |d + s|^2 I summed with weights m).
inline void addDipoleShift(double* q, const double* D, const double* s) {
  const double ds = D[0] * s[0] + D[1] * s[1] + D[2] * s[2];
  q[0] += 6 * D[0] * s[0] - 2 * ds;
  q[1] += 3 * (D[0] * s[1] + s[0] * D[1]);
  q[2] += 3 * (D[0] * s[2] + s[0] * D[2]);
  q[3] += 6 * D[1] * s[1] - 2 * ds;
  q[4] += 3 * (D[1] * s[2] + s[1] * D[2]);
  q[5] += 6 * D[2] * s[2] - 2 * ds;
}

}  // namespace

void computeMoments(const SortedCells& c, const SolveOptions& opt, Octree& t) {
  const std::size_t m = t.nodeCount();
  const bool signedSources = opt.signedSources();
  t.mass.assign(m, 0.0);
  t.com.assign(3 * m, 0.0);
  t.quad.assign(6 * m, 0.0);
  t.extentLo.assign(3 * m, 0.0);
  t.extentHi.assign(3 * m, 0.0);
  t.macRadius.assign(m, 0.0);
  t.dipole.assign(signedSources ? 3 * m : 0, 0.0);
  std::vector<double> absMass(signedSources ? m : 0, 0.0);  // sum |m|: a signed node is empty only when it is 0
  // Children always follow their parent, so a reverse sweep sees every child before its parent.
  for (std::size_t ii = m; ii-- > 0;) {
    // M the mass; W the weight that decides emptiness and delta's scale: M, or for signed sources sum |m|;
    // (sx, sy, sz) the first moments that place a centre of mass (not used for signed sources)
    double M = 0, W = 0, sx = 0, sy = 0, sz = 0;
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    double* q = &t.quad[6 * ii];
    if (t.isLeaf(ii)) {
      const std::uint32_t b = t.cellBegin[ii], e = b + t.cellCount[ii];
      for (std::uint32_t j = b; j < e; ++j) {
        M += c.mass[j];
        W += signedSources ? std::fabs(c.mass[j]) : c.mass[j];
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
        W += signedSources ? absMass[k] : t.mass[k];
        sx += t.mass[k] * t.com[3 * k]; sy += t.mass[k] * t.com[3 * k + 1]; sz += t.mass[k] * t.com[3 * k + 2];
        for (int d = 0; d < 3; ++d) {
          lo[d] = std::min(lo[d], t.extentLo[3 * k + d]);
          hi[d] = std::max(hi[d], t.extentHi[3 * k + d]);
        }
      }
    }
    // the MAC's length and centre: Barnes the cube's, Bonsai the tight box's around the cells' extents
    double l, ctr[3];
    if (opt.mac == MacKind::Bonsai) {
      l = std::max({hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]});
      for (int d = 0; d < 3; ++d) ctr[d] = 0.5 * (lo[d] + hi[d]);
    } else {
      l = t.side(ii);
      for (int d = 0; d < 3; ++d) ctr[d] = t.centre[3 * ii + d];
    }
    // The expansion centre: the centre of mass, or for signed sources the MAC's centre, about which the dipole is
    // kept (a centre of mass is undefined when the masses sum to ~0; the centre of |m| left 3x the error on smooth
    // perturbations). The lists then depend on the masses only through delta, and the expansions are linear in them.
    double cm[3];
    if (signedSources) { for (int d = 0; d < 3; ++d) cm[d] = ctr[d]; }
    else if (W > 0) { cm[0] = sx / W; cm[1] = sy / W; cm[2] = sz / W; }
    else { for (int d = 0; d < 3; ++d) cm[d] = t.centre[3 * ii + d]; }  // massless: skipped by the walk
    double* D = signedSources ? &t.dipole[3 * ii] : nullptr;
    if (t.isLeaf(ii)) {
      const std::uint32_t b = t.cellBegin[ii], e = b + t.cellCount[ii];
      for (std::uint32_t j = b; j < e; ++j) {
        const double dx = c.x[j] - cm[0], dy = c.y[j] - cm[1], dz = c.z[j] - cm[2];
        addQuadrupole(q, c.mass[j], dx, dy, dz);
        if (D) { D[0] += c.mass[j] * dx; D[1] += c.mass[j] * dy; D[2] += c.mass[j] * dz; }
      }
    } else {
      const std::uint32_t b = t.childBegin[ii], e = b + t.childCount[ii];
      for (std::uint32_t k = b; k < e; ++k) {  // parallel-axis theorem (with the child's dipole when signed)
        const double s[3] = {t.com[3 * k] - cm[0], t.com[3 * k + 1] - cm[1], t.com[3 * k + 2] - cm[2]};
        for (int r = 0; r < 6; ++r) q[r] += t.quad[6 * k + r];
        addQuadrupole(q, t.mass[k], s[0], s[1], s[2]);
        if (D) {
          const double* Dk = &t.dipole[3 * k];
          addDipoleShift(q, Dk, s);
          for (int d = 0; d < 3; ++d) D[d] += Dk[d] + t.mass[k] * s[d];
        }
      }
    }
    t.mass[ii] = M;
    if (signedSources) absMass[ii] = W;
    for (int d = 0; d < 3; ++d) {
      t.com[3 * ii + d] = cm[d];
      t.extentLo[3 * ii + d] = lo[d];
      t.extentHi[3 * ii + d] = hi[d];
    }
    // MAC radius l/theta + delta (delta: the offset of the centre of mass from the MAC's centre); -1 for a node
    // with no mass at all
    double delta;
    if (D && W > 0) {
      // |com - centre| is |D_ctr| / M, D_ctr the dipole about the centre; for signed sources the same offset
      // weighted by |m|, |D_ctr| / sum |m| (|com - centre| again when no mass is negative). delta = 0 left 3x the
      // error on smooth perturbations (bench/RESULTS.md).
      double e[3];
      for (int d = 0; d < 3; ++d) e[d] = D[d] + M * (cm[d] - ctr[d]);
      delta = std::sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]) / W;
    } else {
      delta = std::sqrt((cm[0] - ctr[0]) * (cm[0] - ctr[0]) + (cm[1] - ctr[1]) * (cm[1] - ctr[1]) +
                        (cm[2] - ctr[2]) * (cm[2] - ctr[2]));
    }
    t.macRadius[ii] = W > 0 ? l / opt.theta + delta : -1.0;
  }
}

ContrastDensity contrastDensity(const SolveOptions& opt, double scale, double totalMass) {
  double volume = 1, volumeScaled = 1;
  for (int d = 0; d < 3; ++d) {
    volume *= opt.boxHi[d] - opt.boxLo[d];
    volumeScaled *= (opt.boxHi[d] - opt.boxLo[d]) * scale;
  }
  return ContrastDensity{totalMass / volume, totalMass / volumeScaled};  // sizes scaled, masses not
}

double applyDensityContrast(SortedCells& c, const SolveOptions& opt, double totalMass) {
  if (!(opt.fullyPeriodic() && opt.densityContrast)) return 0.0;
  const ContrastDensity cd = contrastDensity(opt, c.scale, totalMass);
  const double rho = cd.rhoScaled;
  // (kernel_moments.cu densityContrastKernel does the same operations on the device)
  for (std::size_t j = 0; j < c.mass.size(); ++j) c.mass[j] -= rho * (c.size[j] * c.size[j] * c.size[j]);
  return cd.rho;
}

}  // namespace amrgrav
