/// \file expansion_k.h
/// \brief The Ewald correction of a group's whole interaction list as one Taylor expansion about the group's
/// centre, shared by the CPU and CUDA walks.
///
/// Per-cell lookups (ewald/lookup_k.h) cost one table lookup per (cell, source) pair: about 4x the 1/r
/// interaction, so a periodic walk cost ~12x the isolated one on the CPU. The correction is smooth, though, and
/// the table's lookup is itself a cubic Taylor polynomial P_g about the grid point g nearest the separation. For
/// a source at separation r = centre - source from the group's centre, re-expanding P_g about r to third order is
/// exact, so sum_sources m C(r + d) is one cubic in d = cell - centre: 20 coefficients, summed once per (group,
/// source) and evaluated once per cell. The only difference from per-cell lookups is that P_g is used up to
/// |d| + h sqrt(3)/2 from its grid point instead of h sqrt(3)/2; groups are therefore expanded only while their
/// half-diagonal is at most kEwaldExpansionSpacings table spacings (the measured gap is in bench/RESULTS.md and
/// test/periodic-expansion.test.ts); larger groups keep per-cell lookups.
///
/// With the expansion a source cell is seen through its image nearest the group's centre (not each cell's): the
/// split psi = 1/|s| + C_ext(s) holds for any image whose separation lies inside the table's reach (9/16 of a
/// period), and |s| <= P/2 + half-extent <= 9/16 P for the groups that expand.
#pragma once
#include "ewald/lookup_k.h"
#include "physics/image_k.h"  // which groups expand, hoisted nodes and their image tags

namespace amrgrav {

/// Fully unrolled small loops: the CUDA walk keeps the lookup's values in registers (constant indices).
#if defined(__CUDA_ARCH__)
#define AG_EWALD_UNROLL _Pragma("unroll")
#else
#define AG_EWALD_UNROLL  // the host compilers unroll these fixed trip counts at -O3 by themselves
#endif

/// Coefficients of an expansion: C, gradient (3), Hessian (xx xy xz yy yz zz), third derivatives (10, as the table).
constexpr int kEwaldLocalCoefs = 20;

/// a += m x (C, grad C, Hessian, third derivatives) at separation r (r = group centre - source image). `a` is
/// anything indexable as a[k] (an array, or the CUDA walk's strided view of shared memory).
template <class V, class R, class A>
AG_EWALD_HD void ewaldLocalAddCell(const V& t, R rx, R ry, R rz, R m, A&& a) {
  R c, g[3], H[6], T[10];
  ewaldLookup<3>(t, rx, ry, rz, &c, g, H, T);
  a[0] += m * c;
  AG_EWALD_UNROLL
  for (int k = 0; k < 3; ++k) a[1 + k] += m * g[k];
  AG_EWALD_UNROLL
  for (int k = 0; k < 6; ++k) a[4 + k] += m * H[k];
  AG_EWALD_UNROLL
  for (int k = 0; k < 10; ++k) a[10 + k] += m * T[k];
}

/// As ewaldLocalAddCell for a node (mass m, plain traceless quadrupole q, second-moment trace S at its com; see
/// ewaldNodeCorrection): the quadrupole and S terms, (1/6)(Q:H + S lap C), enter the value and, through the third
/// derivatives, the gradient (their own curvature is of the order of the node's next multipole and is dropped).
/// A dipole p (non-null: signed sources) adds -p.grad C, -H p and -T p to the value, gradient and Hessian.
template <int Order, class V, class R, class A>
AG_EWALD_HD void ewaldLocalAddNode(const V& t, R rx, R ry, R rz, R m, const R* q, R S, A&& a, const R* p = nullptr) {
  R c, g[3], H[6], T[10];
  ewaldLookup<3>(t, rx, ry, rz, &c, g, H, T);
  R c0 = m * c, g0 = m * g[0], g1 = m * g[1], g2 = m * g[2];
  if (Order >= 2) {
    const R sixth = R(1) / R(6);
    const R qh = q[0] * H[0] + q[3] * H[3] + q[5] * H[5] + R(2) * (q[1] * H[1] + q[2] * H[2] + q[4] * H[4]);
    c0 += sixth * qh + (S / R(6)) * (H[0] + H[3] + H[5]);
    const R qtx = q[0] * T[0] + q[3] * T[3] + q[5] * T[5] + R(2) * (q[1] * T[1] + q[2] * T[2] + q[4] * T[4]);
    const R qty = q[0] * T[1] + q[3] * T[6] + q[5] * T[8] + R(2) * (q[1] * T[3] + q[2] * T[4] + q[4] * T[7]);
    const R qtz = q[0] * T[2] + q[3] * T[7] + q[5] * T[9] + R(2) * (q[1] * T[4] + q[2] * T[5] + q[4] * T[8]);
    g0 += sixth * qtx + (S / R(6)) * (T[0] + T[3] + T[5]);
    g1 += sixth * qty + (S / R(6)) * (T[1] + T[6] + T[8]);
    g2 += sixth * qtz + (S / R(6)) * (T[2] + T[7] + T[9]);
  }
  R h[6] = {m * H[0], m * H[1], m * H[2], m * H[3], m * H[4], m * H[5]};
  if (p) {
    c0 -= p[0] * g[0] + p[1] * g[1] + p[2] * g[2];
    g0 -= H[0] * p[0] + H[1] * p[1] + H[2] * p[2];
    g1 -= H[1] * p[0] + H[3] * p[1] + H[4] * p[2];
    g2 -= H[2] * p[0] + H[4] * p[1] + H[5] * p[2];
    h[0] -= T[0] * p[0] + T[1] * p[1] + T[2] * p[2];
    h[1] -= T[1] * p[0] + T[3] * p[1] + T[4] * p[2];
    h[2] -= T[2] * p[0] + T[4] * p[1] + T[5] * p[2];
    h[3] -= T[3] * p[0] + T[6] * p[1] + T[7] * p[2];
    h[4] -= T[4] * p[0] + T[7] * p[1] + T[8] * p[2];
    h[5] -= T[5] * p[0] + T[8] * p[1] + T[9] * p[2];
  }
  a[0] += c0;
  a[1] += g0;
  a[2] += g1;
  a[3] += g2;
  AG_EWALD_UNROLL
  for (int k = 0; k < 6; ++k) a[4 + k] += h[k];
  AG_EWALD_UNROLL
  for (int k = 0; k < 10; ++k) a[10 + k] += m * T[k];
}

/// The expansion at offset d = cell - group centre: phi += L(d); with Accel, g -= grad L(d) (the walk's sign
/// convention: g sums -grad of the unscaled potential terms).
template <bool Accel, class R>
AG_EWALD_HD void ewaldLocalEval(const R* a, R x, R y, R z, R& phi, R& gx, R& gy, R& gz) {
  const R* T = a + 10;
  // third derivatives contracted once with d: M_ij = sum_k T_ijk d_k (xx xy xz yy yz zz)
  const R mxx = T[0] * x + T[1] * y + T[2] * z, mxy = T[1] * x + T[3] * y + T[4] * z;
  const R mxz = T[2] * x + T[4] * y + T[5] * z, myy = T[3] * x + T[6] * y + T[7] * z;
  const R myz = T[4] * x + T[7] * y + T[8] * z, mzz = T[5] * x + T[8] * y + T[9] * z;
  // grad L = g + (H + M/2) d ; L = C + d.(g + (H/2 + M/6) d)
  const R hx = (a[4] + R(0.5) * mxx) * x + (a[5] + R(0.5) * mxy) * y + (a[6] + R(0.5) * mxz) * z;
  const R hy = (a[5] + R(0.5) * mxy) * x + (a[7] + R(0.5) * myy) * y + (a[8] + R(0.5) * myz) * z;
  const R hz = (a[6] + R(0.5) * mxz) * x + (a[8] + R(0.5) * myz) * y + (a[9] + R(0.5) * mzz) * z;
  const R kx = (R(0.5) * a[4] + mxx / R(6)) * x + (R(0.5) * a[5] + mxy / R(6)) * y + (R(0.5) * a[6] + mxz / R(6)) * z;
  const R ky = (R(0.5) * a[5] + mxy / R(6)) * x + (R(0.5) * a[7] + myy / R(6)) * y + (R(0.5) * a[8] + myz / R(6)) * z;
  const R kz = (R(0.5) * a[6] + mxz / R(6)) * x + (R(0.5) * a[8] + myz / R(6)) * y + (R(0.5) * a[9] + mzz / R(6)) * z;
  phi += a[0] + x * (a[1] + kx) + y * (a[2] + ky) + z * (a[3] + kz);
  if (Accel) {
    gx -= a[1] + hx;
    gy -= a[2] + hy;
    gz -= a[3] + hz;
  }
}

}  // namespace amrgrav
