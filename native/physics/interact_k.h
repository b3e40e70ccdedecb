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

/// Point mass m at offset (dx, dy, dz) = target - source. A coincident source (r = 0, the cell itself) adds 0.
template <class R>
AG_HD void cellCellPotential(R dx, R dy, R dz, R m, R& phi) {
  R r2 = dx * dx + dy * dy + dz * dz;
  // Written as two selects around an always-safe division so that compilers vectorise it.
  R rinv = rsqrtOf(r2 > R(0) ? r2 : R(1));
  rinv = r2 > R(0) ? rinv : R(0);
  phi += m * rinv;
}

/// As cellCellPotential, plus g += m r / r^3 (the caller multiplies by -G to get the acceleration).
template <class R>
AG_HD void cellCellForce(R dx, R dy, R dz, R m, R& phi, R& gx, R& gy, R& gz) {
  R r2 = dx * dx + dy * dy + dz * dz;
  // Written as two selects around an always-safe division so that compilers vectorise it.
  R rinv = rsqrtOf(r2 > R(0) ? r2 : R(1));
  rinv = r2 > R(0) ? rinv : R(0);
  R mr = m * rinv;
  R mr3 = mr * rinv * rinv;
  phi += mr;
  gx += mr3 * dx;
  gy += mr3 * dy;
  gz += mr3 * dz;
}

/// The potential-only walk takes a node's quadrupole as "half-upper" coefficients
/// h = (Qxx/2, Qxy, Qxz, Qyy/2, Qyz, Qzz/2), made once per list entry, so that (1/2) d.Q.d costs 9 operations.
template <class R>
AG_HD void halfUpperQuadrupole(const R* q, R* h) {
  h[0] = R(0.5) * q[0]; h[1] = q[1]; h[2] = q[2];
  h[3] = R(0.5) * q[3]; h[4] = q[4]; h[5] = R(0.5) * q[5];
}

/// Node of mass m and traceless quadrupole Q (given as half-upper h, see above) at offset d = target - com:
/// phi += m/r + (1/2) d.Q.d / r^5, written as (m + h(d) / r^4) / r with
/// h(d) = dx (h0 dx + h1 dy + h2 dz) + dy (h3 dy + h4 dz) + dz h5 dz: the GPU walk's time is mostly this function,
/// so it is written for the fewest operations. order 1 drops the quadrupole. With Dipole (signed sources, expanded
/// about a centre that is not their centre of mass, tree/moments.cpp) the dipole p adds p.d / r^3 = (p.d / r^2) / r.
template <class R, int Order, bool Dipole = false>
AG_HD void nodeCellPotential(R dx, R dy, R dz, R m, const R* h, R& phi, const R* p = nullptr) {
  R r2 = dx * dx + dy * dy + dz * dz;
  R rinv = rsqrtOf(r2);
  R rinv2 = rinv * rinv;
  R mm = m;
  if (Dipole) mm += (p[0] * dx + p[1] * dy + p[2] * dz) * rinv2;
  if (Order >= 2) {
    R hd = dx * (h[0] * dx + h[1] * dy + h[2] * dz) + dy * (h[3] * dy + h[4] * dz) + dz * (h[5] * dz);
    phi += (mm + hd * (rinv2 * rinv2)) * rinv;
  } else {
    phi += mm * rinv;
  }
}

/// As nodeCellPotential (but with the plain quadrupole q), plus the acceleration sums, acceleration = -G g with
/// g = m d/r^3 - Q.d/r^5 + (5/2)(d.Q.d) d/r^7. With h = d.Q.d / r^5: phi += m/r + h/2, the radial part
/// d (m/r^3 + (5/2) h/r^2) accumulates in (gx, gy, gz) and Q.d/r^5 in (qx, qy, qz), which the caller subtracts
/// once per batch: two fused multiply-adds per component instead of three operations. A dipole p (Dipole) adds
/// p.d/r^3 to phi, 3 (p.d) d/r^5 to the radial part and p/r^3 to (qx, qy, qz).
template <class R, int Order, bool Dipole = false>
AG_HD void nodeCellForce(R dx, R dy, R dz, R m, const R* q, R& phi, R& gx, R& gy, R& gz, R& qx, R& qy, R& qz,
                         const R* p = nullptr) {
  R r2 = dx * dx + dy * dy + dz * dz;
  R rinv = rsqrtOf(r2);
  R rinv2 = rinv * rinv;
  R mr = m * rinv;
  R s = mr * rinv2;  // m/r^3
  if (Dipole) {
    const R rinv3 = rinv2 * rinv;
    const R pd3 = (p[0] * dx + p[1] * dy + p[2] * dz) * rinv3;  // p.d / r^3
    phi += pd3;
    s += R(3) * pd3 * rinv2;
    qx += p[0] * rinv3;
    qy += p[1] * rinv3;
    qz += p[2] * rinv3;
  }
  if (Order >= 2) {
    R qdx = q[0] * dx + q[1] * dy + q[2] * dz;
    R qdy = q[1] * dx + q[3] * dy + q[4] * dz;
    R qdz = q[2] * dx + q[4] * dy + q[5] * dz;
    R dqd = dx * qdx + dy * qdy + dz * qdz;
    R rinv5 = rinv2 * rinv2 * rinv;
    R h = dqd * rinv5;
    phi += mr + R(0.5) * h;
    s += R(2.5) * h * rinv2;
    qx += rinv5 * qdx;
    qy += rinv5 * qdy;
    qz += rinv5 * qdz;
  } else {
    phi += mr;
  }
  gx += s * dx;
  gy += s * dy;
  gz += s * dz;
}

}  // namespace amrgrav
