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

/// Node of mass m and traceless quadrupole q (xx, xy, xz, yy, yz, zz) at offset d = target - com:
/// phi += m/r + (1/2) d.Q.d / r^5, written as (m + (1/2) d.Q.d / r^4) / r: two fused multiply-adds after d.Q.d
/// (the GPU walk's cost is mostly this function). order 1 drops the quadrupole.
template <class R, int Order>
AG_HD void nodeCellPotential(R dx, R dy, R dz, R m, const R* q, R& phi) {
  R r2 = dx * dx + dy * dy + dz * dz;
  R rinv = rsqrtOf(r2);
  if (Order >= 2) {
    R rinv2 = rinv * rinv;
    R qdx = q[0] * dx + q[1] * dy + q[2] * dz;
    R qdy = q[1] * dx + q[3] * dy + q[4] * dz;
    R qdz = q[2] * dx + q[4] * dy + q[5] * dz;
    R dqd = dx * qdx + dy * qdy + dz * qdz;
    phi += (m + R(0.5) * dqd * (rinv2 * rinv2)) * rinv;
  } else {
    phi += m * rinv;
  }
}

/// As nodeCellPotential, plus g = m d/r^3 - Q.d/r^5 + (5/2)(d.Q.d) d/r^7, so that acceleration = -G g.
/// With h = d.Q.d / r^5: phi += m/r + h/2, g = d (m/r^3 + (5/2) h/r^2) - Q.d / r^5.
template <class R, int Order>
AG_HD void nodeCellForce(R dx, R dy, R dz, R m, const R* q, R& phi, R& gx, R& gy, R& gz) {
  R r2 = dx * dx + dy * dy + dz * dz;
  R rinv = rsqrtOf(r2);
  R rinv2 = rinv * rinv;
  R mr = m * rinv;
  R s = mr * rinv2;  // m/r^3
  if (Order >= 2) {
    R qdx = q[0] * dx + q[1] * dy + q[2] * dz;
    R qdy = q[1] * dx + q[3] * dy + q[4] * dz;
    R qdz = q[2] * dx + q[4] * dy + q[5] * dz;
    R dqd = dx * qdx + dy * qdy + dz * qdz;
    R rinv5 = rinv2 * rinv2 * rinv;
    R h = dqd * rinv5;
    phi += mr + R(0.5) * h;
    s += R(2.5) * h * rinv2;
    gx += s * dx - rinv5 * qdx;
    gy += s * dy - rinv5 * qdy;
    gz += s * dz - rinv5 * qdz;
  } else {
    phi += mr;
    gx += s * dx;
    gy += s * dy;
    gz += s * dz;
  }
}

}  // namespace amrgrav
