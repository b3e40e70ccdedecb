/// \file lookup_k.h
/// \brief Table lookup of the Ewald correction C(r) = psi(r) - 1/|r| and of the periodic offsets, shared by the CPU
/// backend and (later) CUDA. The table is one plain array of doubles, kEwaldCoefs per grid point, x fastest:
/// C, grad (3), Hessian (xx xy xz yy yz zz), third derivatives (xxx xxy xxz xyy xyz xzz yyy yyz yzz zzz) at the
/// points (i h_x, j h_y, k h_z) of the octant (C is even in every coordinate), out to 9/16 of a period on periodic
/// axes (C continued beyond the half box, for nodes seen across it) and the full side on isolated ones. A lookup takes the
/// nearest grid point and evaluates the third-order Taylor expansion there (error ~ h^4, see bench/RESULTS.md).
#pragma once
#include <cmath>
#include <type_traits>

#include "core/hostdevice.h"

namespace amrgrav {

/// The kernels below must inline into the CPU walk's loops to vectorise there.
#if defined(__CUDACC__)
#define AG_EWALD_HD AG_HD
#else
#define AG_EWALD_HD inline __attribute__((always_inline))
#endif

/// Taylor coefficients per table point: C, gradient (3), Hessian (6), third derivatives (10).
constexpr int kEwaldCoefs = 20;

/// Everything a kernel needs, by value. Coef is the coefficients' type: double on the CPU, float for the CUDA
/// walk's copy (the geometry stays double on both, so group decisions are the same bits).
template <class Coef>
struct EwaldTableViewOf {
  const Coef* coef = nullptr;    ///< kEwaldCoefs per point, (n[0]+1)(n[1]+1)(n[2]+1) points
  int n[3] = {0, 0, 0};          ///< intervals per axis
  double h[3] = {1, 1, 1};       ///< grid spacing, in table units (the table's box has its longest side 1)
  double invH[3] = {1, 1, 1};
  double invUnit = 1;            ///< 1 / (the caller's length of the table's unit): r_table = r * invUnit
  double period[3] = {0, 0, 0};  ///< periods in the caller's lengths, 0 for an isolated axis
  double invPeriod[3] = {0, 0, 0};
  double reach[3] = {0, 0, 0};   ///< periodic axes: the table covers separations up to this (9/16 of the period)

  /// The same view over another copy of the coefficients (the device's float table).
  template <class C>
  EwaldTableViewOf<C> over(const C* c) const {
    EwaldTableViewOf<C> v;
    v.coef = c;
    v.invUnit = invUnit;
    for (int d = 0; d < 3; ++d) {
      v.n[d] = n[d];
      v.h[d] = h[d];
      v.invH[d] = invH[d];
      v.period[d] = period[d];
      v.invPeriod[d] = invPeriod[d];
      v.reach[d] = reach[d];
    }
    return v;
  }
};
using EwaldTableView = EwaldTableViewOf<double>;

/// rint on host and device.
template <class R>
AG_EWALD_HD R roundHalfEven(R v) {
#if defined(__CUDA_ARCH__)
  return ::rint(v);
#else
  return std::rint(v);
#endif
}

/// The nearest periodic image of a separation along one axis (invP = 0 leaves an isolated axis unchanged).
template <class R>
AG_EWALD_HD R nearestImage(R d, R P, R invP) {
  return d - P * roundHalfEven(d * invP);
}

/// C and derivatives at separation (dx, dy, dz) (already the nearest image). Deriv: 0 = C only, 1 = + gradient,
/// 2 = + Hessian (6), 3 = + third derivatives (10, constant over the cell). All in the caller's units.
/// V is EwaldTableView (double coefficients, the CPU) or a view of the same fields with float coefficients
/// (the CUDA walk); R is the arithmetic type.
template <int Deriv, class V, class R>
AG_EWALD_HD void ewaldLookup(const V& t, R dx, R dy, R dz, R* c, R* g, R* H, R* T) {
  // written without loops or branches (selects only) so that the CPU's target loops vectorise with gathers
  const R iu = R(t.invUnit);
  const R ax = dx * iu, ay = dy * iu, az = dz * iu;
  const R s[3] = {ax < 0 ? R(-1) : R(1), ay < 0 ? R(-1) : R(1), az < 0 ? R(-1) : R(1)};
  const R ux = ax * s[0], uy = ay * s[1], uz = az * s[2];
  int ix = int(ux * R(t.invH[0]) + R(0.5)), iy = int(uy * R(t.invH[1]) + R(0.5)), iz = int(uz * R(t.invH[2]) + R(0.5));
  ix = ix > t.n[0] ? t.n[0] : ix;
  iy = iy > t.n[1] ? t.n[1] : iy;
  iz = iz > t.n[2] ? t.n[2] : iz;
  const R d[3] = {ux - R(ix) * R(t.h[0]), uy - R(iy) * R(t.h[1]), uz - R(iz) * R(t.h[2])};
  // a 32-bit element offset (not a pointer) so that compilers can turn the loads into gathers
  const int off = kEwaldCoefs * (ix + (t.n[0] + 1) * (iy + (t.n[1] + 1) * iz));
#if defined(__CUDA_ARCH__)
  // the device's float table: a point's 20 coefficients (80 bytes, 16-byte aligned) as five read-only vector loads
  static_assert(std::is_same<typename std::remove_cv<typename std::remove_pointer<decltype(t.coef)>::type>::type,
                             float>::value, "the device table holds floats");
  R cf[kEwaldCoefs];
  const float4* v4 = reinterpret_cast<const float4*>(t.coef + off);
#pragma unroll
  for (int k = 0; k < kEwaldCoefs / 4; ++k) {
    const float4 q = __ldg(v4 + k);
    cf[4 * k] = R(q.x); cf[4 * k + 1] = R(q.y); cf[4 * k + 2] = R(q.z); cf[4 * k + 3] = R(q.w);
  }
  auto p = [&cf](int j) { return cf[j]; };
#else
  const auto* coef = t.coef;
  auto p = [coef, off](int j) { return R(coef[off + j]); };
#endif
  const R x = d[0], y = d[1], z = d[2];
  // third-order tensor contracted once with d: T_ij. = sum_k T_ijk d_k (xx xy xz yy yz zz)
  const R txx = p(10) * x + p(11) * y + p(12) * z, txy = p(11) * x + p(13) * y + p(14) * z;
  const R txz = p(12) * x + p(14) * y + p(15) * z, tyy = p(13) * x + p(16) * y + p(17) * z;
  const R tyz = p(14) * x + p(17) * y + p(18) * z, tzz = p(15) * x + p(18) * y + p(19) * z;
  // Hessian at the point, to first order: H + T.d
  const R hxx = p(4) + txx, hxy = p(5) + txy, hxz = p(6) + txz;
  const R hyy = p(7) + tyy, hyz = p(8) + tyz, hzz = p(9) + tzz;
  // gradient: g + H d + (1/2) T.d.d ; value: C + g.d + (1/2) d.H.d + (1/6) T.d.d.d
  const R hdx0 = p(4) * x + p(5) * y + p(6) * z, hdy0 = p(5) * x + p(7) * y + p(8) * z;
  const R hdz0 = p(6) * x + p(8) * y + p(9) * z;
  const R tdx = txx * x + txy * y + txz * z, tdy = txy * x + tyy * y + tyz * z, tdz = txz * x + tyz * y + tzz * z;
  const R u = iu, u2 = u * u;
  *c = u * (p(0) + p(1) * x + p(2) * y + p(3) * z + R(0.5) * (hdx0 * x + hdy0 * y + hdz0 * z) +
            (R(1) / R(6)) * (tdx * x + tdy * y + tdz * z));
  if (Deriv >= 1) {
    g[0] = s[0] * u2 * (p(1) + hdx0 + R(0.5) * tdx);
    g[1] = s[1] * u2 * (p(2) + hdy0 + R(0.5) * tdy);
    g[2] = s[2] * u2 * (p(3) + hdz0 + R(0.5) * tdz);
  }
  if (Deriv >= 2) {
    const R u3 = u2 * u;
    H[0] = u3 * hxx; H[1] = s[0] * s[1] * u3 * hxy; H[2] = s[0] * s[2] * u3 * hxz;
    H[3] = u3 * hyy; H[4] = s[1] * s[2] * u3 * hyz; H[5] = u3 * hzz;
  }
  if (Deriv >= 3) {
    const R u4 = u2 * u2;
    // xxx xxy xxz xyy xyz xzz yyy yyz yzz zzz: the sign of T_ijk is s_i s_j s_k
    T[0] = s[0] * u4 * p(10); T[1] = s[1] * u4 * p(11); T[2] = s[2] * u4 * p(12);
    T[3] = s[0] * u4 * p(13); T[4] = s[0] * s[1] * s[2] * u4 * p(14); T[5] = s[0] * u4 * p(15);
    T[6] = s[1] * u4 * p(16); T[7] = s[2] * u4 * p(17); T[8] = s[1] * u4 * p(18); T[9] = s[2] * u4 * p(19);
  }
}

/// Correction of a point mass m at separation d (nearest image): phi += m C(d); g += -m grad C (the caller scales
/// by -G, as for the 1/r part). d = 0 (the cell itself) gives its images' potential m C(0).
template <bool Accel, class V, class R>
AG_EWALD_HD void ewaldCellCorrection(const V& t, R dx, R dy, R dz, R m, R& phi, R& gx, R& gy, R& gz) {
  R c, g[3];
  ewaldLookup<Accel ? 1 : 0>(t, dx, dy, dz, &c, g, (R*)nullptr, (R*)nullptr);
  phi += m * c;
  if (Accel) { gx -= m * g[0]; gy -= m * g[1]; gz -= m * g[2]; }
}

/// Derivatives of C that a node's correction needs: order 2 adds the quadrupole's Hessian (and, with accelerations,
/// its gradient); the dipole of signed sources one order more than the monopole.
AG_HD constexpr int ewaldNodeDerivatives(int order, bool accel) { return order >= 2 ? (accel ? 3 : 2) : (accel ? 2 : 1); }

/// The node correction of ewaldNodeCorrection from C and its derivatives at the separation (c, g, H and T as
/// ewaldLookup gives them; H and T read only up to ewaldNodeDerivatives(Order, Accel)). Also used by the CPU walk
/// with derivatives read from a lattice (cpu/ewald_lattice.h).
template <int Order, bool Accel, bool Dipole, class R>
AG_EWALD_HD void ewaldNodeTerms(R c, const R* g, const R* H, const R* T, R m, const R* q, R S, R& phi, R& gx, R& gy,
                                R& gz, const R* p) {
  const R sixth = R(1) / R(6);
  R val = m * c;
  if (Order >= 2) {
    const double qh = q[0] * H[0] + q[3] * H[3] + q[5] * H[5] + 2 * (q[1] * H[1] + q[2] * H[2] + q[4] * H[4]);
    val += sixth * qh + (S / R(6)) * (H[0] + H[3] + H[5]);
  }
  if (Dipole) val -= p[0] * g[0] + p[1] * g[1] + p[2] * g[2];
  phi += val;
  if (Accel) {
    R ax = m * g[0], ay = m * g[1], az = m * g[2];
    if (Order >= 2) {
      // d/dx_k of Q:H = sum_ij Q_ij T_ijk; lap C's gradient = sum_i T_iik
      const double qtx = q[0] * T[0] + q[3] * T[3] + q[5] * T[5] + 2 * (q[1] * T[1] + q[2] * T[2] + q[4] * T[4]);
      const double qty = q[0] * T[1] + q[3] * T[6] + q[5] * T[8] + 2 * (q[1] * T[3] + q[2] * T[4] + q[4] * T[7]);
      const double qtz = q[0] * T[2] + q[3] * T[7] + q[5] * T[9] + 2 * (q[1] * T[4] + q[2] * T[5] + q[4] * T[8]);
      const double lx = T[0] + T[3] + T[5], ly = T[1] + T[6] + T[8], lz = T[2] + T[7] + T[9];
      ax += sixth * qtx + (S / R(6)) * lx;
      ay += sixth * qty + (S / R(6)) * ly;
      az += sixth * qtz + (S / R(6)) * lz;
    }
    if (Dipole) {  // grad(-p.grad C) = -H p
      ax -= H[0] * p[0] + H[1] * p[1] + H[2] * p[2];
      ay -= H[1] * p[0] + H[3] * p[1] + H[4] * p[2];
      az -= H[2] * p[0] + H[4] * p[1] + H[5] * p[2];
    }
    gx -= ax;
    gy -= ay;
    gz -= az;
  }
}

/// Correction of a node (mass m, traceless quadrupole q = xx xy xz yy yz zz, trace of the second moment
/// S = sum m |x - com|^2) at separation d from its com: the Taylor series of sum_j m_j C(d - (x_j - com)) to
/// second order, m C + (1/6) Q:H + (S/6) lap C (Order 1: m C only). With Dipole (signed sources, tree/moments.cpp)
/// the dipole p = sum m (x - com) adds -p.grad C (and -H p to the gradient).
template <int Order, bool Accel, bool Dipole = false, class V, class R>
AG_EWALD_HD void ewaldNodeCorrection(const V& t, R dx, R dy, R dz, R m, const R* q, R S, R& phi, R& gx, R& gy,
                                     R& gz, const R* p = nullptr) {
  if (Order < 2 && !Dipole) {
    ewaldCellCorrection<Accel>(t, dx, dy, dz, m, phi, gx, gy, gz);
    return;
  }
  constexpr int kDeriv = ewaldNodeDerivatives(Order, Accel);
  R c, g[3], H[6], T[10];
  ewaldLookup<kDeriv>(t, dx, dy, dz, &c, g, H, T);
  ewaldNodeTerms<Order, Accel, Dipole>(c, g, H, T, m, q, S, phi, gx, gy, gz, p);
}

}  // namespace amrgrav
