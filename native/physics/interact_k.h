/// \file interact_k.h
/// \brief Interaction kernels (cell-cell and node-cell), shared by the CPU backend and the CUDA backend.
/// Convention: phi accumulates sum m/r-type terms WITHOUT -G; the caller scales by -G (and G for accelerations).
#pragma once
#include <cmath>
#include <cstdint>

#include "core/hostdevice.h"

namespace amrgrav {

/// sqrt that resolves to the device intrinsic under nvcc and to std::sqrt on the host, for float and double.
AG_HD float agSqrt(float v) {
#if defined(__CUDA_ARCH__)
  return sqrtf(v);
#else
  return std::sqrt(v);
#endif
}
AG_HD double agSqrt(double v) {
#if defined(__CUDA_ARCH__)
  return ::sqrt(v);
#else
  return std::sqrt(v);
#endif
}

/// 1/sqrt(r2). Single precision: the hardware's. Double: the classic bit-level estimate (3.4% error) refined by
/// four Newton steps (relative error 3.4e-2 -> 1.7e-3 -> 4.5e-6 -> 3e-11 -> below double rounding), all
/// multiplies and adds, so CPUs vectorise it at full width; a double sqrt and divide cost several times more.
/// Needs r2 > 0 and finite, which callers guarantee.
AG_HD float rsqrtOf(float r2) { return 1.0f / agSqrt(r2); }
AG_HD double rsqrtOf(double r2) {
  std::uint64_t bits;
  __builtin_memcpy(&bits, &r2, sizeof bits);
  bits = 0x5fe6eb50c7b537a9ULL - (bits >> 1);
  double y;
  __builtin_memcpy(&y, &bits, sizeof y);
  const double h = 0.5 * r2;
  y = y * (1.5 - h * y * y);
  y = y * (1.5 - h * y * y);
  y = y * (1.5 - h * y * y);
  y = y * (1.5 - h * y * y);
  return y;
}

/// A product and a fused multiply-add of the interaction kernels below, each rounded once, in a fixed order: on the
/// device __fmul_rn / __fmaf_rn (never re-fused by the compiler), so that the GPU walk's paired evaluation (two
/// targets sharing their x-y terms, kernel_walk.cu) gives each target the bits of the single one; on the host the
/// plain operators (the CPU walk's files choose their own contraction).
AG_HD float mulOf(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
AG_HD float fmaOf(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return a * b + c;
#endif
}
AG_HD double mulOf(double a, double b) { return a * b; }
AG_HD double fmaOf(double a, double b, double c) { return a * b + c; }

/// The terms of a pair's offset that depend on its x and y alone. Two targets that differ only in z share them: in
/// the GPU walk's groups of 64 (a 4^3 cube in Morton order, x in each triple's lowest bit), a lane's cells l and
/// l + 32 lie two cells apart in z. With the half-upper quadrupole h below, h(d) = hxy + dz (hz + h5 dz):
/// hxy = dx (h0 dx + h1 dy) + h3 dy^2 and hz = h2 dx + h4 dy; pxy = p0 dx + p1 dy (a dipole).
template <class R>
struct PlanarTerms {
  R dx, dy, rxy, hxy, hz, pxy;
};

/// A cell's x-y terms (r_xy^2 alone).
template <class R>
AG_HD PlanarTerms<R> cellPlanarTerms(R dx, R dy) {
  PlanarTerms<R> t;
  t.dx = dx;
  t.dy = dy;
  t.rxy = fmaOf(dy, dy, mulOf(dx, dx));
  t.hxy = t.hz = t.pxy = R(0);
  return t;
}

/// Point mass m at offset (t.dx, t.dy, dz) = target - source. A coincident source (r = 0, the cell itself) adds 0.
template <class R>
AG_HD void cellCellPotentialZ(const PlanarTerms<R>& t, R dz, R m, R& phi) {
  const R r2 = fmaOf(dz, dz, t.rxy);
  // Written as two selects around an always-safe division so that compilers vectorise it.
  R rinv = rsqrtOf(r2 > R(0) ? r2 : R(1));
  rinv = r2 > R(0) ? rinv : R(0);
  phi = fmaOf(m, rinv, phi);
}

/// Point mass m at offset (dx, dy, dz) = target - source. A coincident source (r = 0, the cell itself) adds 0.
template <class R>
AG_HD void cellCellPotential(R dx, R dy, R dz, R m, R& phi) {
  cellCellPotentialZ(cellPlanarTerms(dx, dy), dz, m, phi);
}

/// As cellCellPotentialZ, plus g += m r / r^3 (the caller multiplies by -G to get the acceleration).
template <class R>
AG_HD void cellCellForceZ(const PlanarTerms<R>& t, R dz, R m, R& phi, R& gx, R& gy, R& gz) {
  const R r2 = fmaOf(dz, dz, t.rxy);
  // Written as two selects around an always-safe division so that compilers vectorise it.
  R rinv = rsqrtOf(r2 > R(0) ? r2 : R(1));
  rinv = r2 > R(0) ? rinv : R(0);
  const R mr = mulOf(m, rinv);
  const R mr3 = mulOf(mulOf(mr, rinv), rinv);
  phi = phi + mr;
  gx = fmaOf(mr3, t.dx, gx);
  gy = fmaOf(mr3, t.dy, gy);
  gz = fmaOf(mr3, dz, gz);
}

/// cellCellForceZ at offset (dx, dy, dz).
template <class R>
AG_HD void cellCellForce(R dx, R dy, R dz, R m, R& phi, R& gx, R& gy, R& gz) {
  cellCellForceZ(cellPlanarTerms(dx, dy), dz, m, phi, gx, gy, gz);
}

/// The potential-only walk takes a node's quadrupole as "half-upper" coefficients
/// h = (Qxx/2, Qxy, Qxz, Qyy/2, Qyz, Qzz/2), made once per list entry, so that (1/2) d.Q.d = h(d) needs no factor.
template <class R>
AG_HD void halfUpperQuadrupole(const R* q, R* h) {
  h[0] = R(0.5) * q[0]; h[1] = q[1]; h[2] = q[2];
  h[3] = R(0.5) * q[3]; h[4] = q[4]; h[5] = R(0.5) * q[5];
}

/// A node's x-y terms (PlanarTerms) for nodeCellPotentialZ: h the half-upper quadrupole (Order 2), p the dipole.
template <class R, int Order, bool Dipole = false>
AG_HD PlanarTerms<R> nodePlanarTerms(R dx, R dy, const R* h, const R* p = nullptr) {
  PlanarTerms<R> t = cellPlanarTerms(dx, dy);
  if (Order >= 2) {
    t.hxy = fmaOf(dy, mulOf(h[3], dy), mulOf(dx, fmaOf(h[1], dy, mulOf(h[0], dx))));
    t.hz = fmaOf(h[4], dy, mulOf(h[2], dx));
  }
  if (Dipole) t.pxy = fmaOf(p[1], dy, mulOf(p[0], dx));
  return t;
}

/// Node of mass m and traceless quadrupole Q (given as half-upper h, see above) at offset d = target - com, its x-y
/// terms in t: phi += m/r + (1/2) d.Q.d / r^5, written as (m + h(d) / r^4) / r with h(d) = hxy + dz (hz + h5 dz):
/// the GPU walk's time is mostly this function, so it is written for the fewest operations per target (8 and an
/// rsqrt, its x-y terms 11 more, made once for two targets that share them). order 1 drops the quadrupole. With
/// Dipole (signed sources, expanded about a centre that is not their centre of mass, tree/moments.cpp) the dipole p
/// adds p.d / r^3 = (p.d / r^2) / r.
template <class R, int Order, bool Dipole = false>
AG_HD void nodeCellPotentialZ(const PlanarTerms<R>& t, R dz, R m, const R* h, R& phi, const R* p = nullptr) {
  const R r2 = fmaOf(dz, dz, t.rxy);
  const R rinv = rsqrtOf(r2);
  const R rinv2 = mulOf(rinv, rinv);
  R mm = m;
  if (Dipole) mm = fmaOf(fmaOf(p[2], dz, t.pxy), rinv2, m);
  if (Order >= 2) {
    const R hd = fmaOf(fmaOf(h[5], dz, t.hz), dz, t.hxy);
    phi = fmaOf(fmaOf(hd, mulOf(rinv2, rinv2), mm), rinv, phi);
  } else {
    phi = fmaOf(mm, rinv, phi);
  }
}

/// nodeCellPotentialZ at offset (dx, dy, dz).
template <class R, int Order, bool Dipole = false>
AG_HD void nodeCellPotential(R dx, R dy, R dz, R m, const R* h, R& phi, const R* p = nullptr) {
  nodeCellPotentialZ<R, Order, Dipole>(nodePlanarTerms<R, Order, Dipole>(dx, dy, h, p), dz, m, h, phi, p);
}

/// A node's x-y terms for nodeCellForceZ: Q.d's x-y parts, qx = q0 dx + q1 dy, qy = q1 dx + q3 dy, qz = q2 dx + q4 dy
/// (the plain quadrupole q), and p.d's (a dipole).
template <class R>
struct PlanarForceTerms {
  PlanarTerms<R> t;
  R qx, qy, qz;
};
template <class R, int Order, bool Dipole = false>
AG_HD PlanarForceTerms<R> nodePlanarForceTerms(R dx, R dy, const R* q, const R* p = nullptr) {
  PlanarForceTerms<R> f;
  f.t = nodePlanarTerms<R, 1, Dipole>(dx, dy, nullptr, p);  // r_xy^2 and p.d's x-y part (the quadrupole's are below)
  f.qx = f.qy = f.qz = R(0);
  if (Order >= 2) {
    f.qx = fmaOf(q[1], dy, mulOf(q[0], dx));
    f.qy = fmaOf(q[3], dy, mulOf(q[1], dx));
    f.qz = fmaOf(q[4], dy, mulOf(q[2], dx));
  }
  return f;
}

/// As nodeCellPotentialZ (but with the plain quadrupole q; the x-y terms in f), plus the acceleration sums,
/// acceleration = -G g with g = m d/r^3 - Q.d/r^5 + (5/2)(d.Q.d) d/r^7. With h = d.Q.d / r^5: phi += m/r + h/2, the
/// radial part d (m/r^3 + (5/2) h/r^2) accumulates in (gx, gy, gz) and Q.d/r^5 in (qx, qy, qz), which the caller
/// subtracts once per batch: two fused multiply-adds per component instead of three operations. A dipole p (Dipole)
/// adds p.d/r^3 to phi, 3 (p.d) d/r^5 to the radial part and p/r^3 to (qx, qy, qz).
template <class R, int Order, bool Dipole = false>
AG_HD void nodeCellForceZ(const PlanarForceTerms<R>& f, R dz, R m, const R* q, R& phi, R& gx, R& gy, R& gz, R& qx,
                          R& qy, R& qz, const R* p = nullptr) {
  const R dx = f.t.dx, dy = f.t.dy;
  const R r2 = fmaOf(dz, dz, f.t.rxy);
  const R rinv = rsqrtOf(r2);
  const R rinv2 = mulOf(rinv, rinv);
  const R mr = mulOf(m, rinv);
  R s = mulOf(mr, rinv2);  // m/r^3
  if (Dipole) {
    const R rinv3 = mulOf(rinv2, rinv);
    const R pd3 = mulOf(fmaOf(p[2], dz, f.t.pxy), rinv3);  // p.d / r^3
    phi = phi + pd3;
    s = fmaOf(mulOf(R(3), pd3), rinv2, s);
    qx = fmaOf(p[0], rinv3, qx);
    qy = fmaOf(p[1], rinv3, qy);
    qz = fmaOf(p[2], rinv3, qz);
  }
  if (Order >= 2) {
    const R qdx = fmaOf(q[2], dz, f.qx), qdy = fmaOf(q[4], dz, f.qy), qdz = fmaOf(q[5], dz, f.qz);
    const R dqd = fmaOf(dz, qdz, fmaOf(dy, qdy, mulOf(dx, qdx)));
    const R rinv5 = mulOf(mulOf(rinv2, rinv2), rinv);
    const R h = mulOf(dqd, rinv5);
    phi = phi + fmaOf(R(0.5), h, mr);
    s = fmaOf(mulOf(R(2.5), h), rinv2, s);
    qx = fmaOf(rinv5, qdx, qx);
    qy = fmaOf(rinv5, qdy, qy);
    qz = fmaOf(rinv5, qdz, qz);
  } else {
    phi = phi + mr;
  }
  gx = fmaOf(s, dx, gx);
  gy = fmaOf(s, dy, gy);
  gz = fmaOf(s, dz, gz);
}

/// nodeCellForceZ at offset (dx, dy, dz).
template <class R, int Order, bool Dipole = false>
AG_HD void nodeCellForce(R dx, R dy, R dz, R m, const R* q, R& phi, R& gx, R& gy, R& gz, R& qx, R& qy, R& qz,
                         const R* p = nullptr) {
  nodeCellForceZ<R, Order, Dipole>(nodePlanarForceTerms<R, Order, Dipole>(dx, dy, q, p), dz, m, q, phi, gx, gy, gz,
                                   qx, qy, qz, p);
}

}  // namespace amrgrav
