/// \file near_single_k.h
/// \brief The near field's computed pairs in single precision (the CUDA backend's default for regular target
/// leaves, CudaOptions::fmmNearSingle; docs/fmm-design.md, "Computed pairs in single precision"): one rule for the
/// device kernel and its host emulation (native/tests/fmm_near_single.cpp).
///
/// A pair's sum over a batch of source cells is m / r (and m d / r^3) in float: positions relative to an origin near
/// the target leaf (its expansion centre), rounded once from the double differences, so |d| keeps float's relative
/// precision of the offset from that origin (~6e-8 of a near-field length); masses scaled by a power of two per
/// batch of 32 (the batch's largest exponent), so any double mass fits float's range and the scale is exact; a
/// reciprocal square root on the multi-function unit. The batch's float sums go into the cell's double total, the
/// scale undone exactly. A pair's relative error is a few float roundings (~3e-7 at worst); the near field is a part of
/// phi, so a cell's potential moves by ~1e-7 of itself, far below the FMM's 2e-5 (measured in the test and on the GPU,
/// bench/RESULTS.md). The table steps and the far field stay in double.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/hostdevice.h"

namespace amrgrav {
namespace fmm {

/// A staged source cell: its position relative to the origin and its scaled mass (16 bytes: one vector load).
struct alignas(16) NearSourceF {
  float x, y, z, m;
};

constexpr int kNearBatch = 32;  ///< source cells per mass scale (a warp's staged cells)

/// The biased exponent field of |m|, clamped to 1 .. 2045 (zero and subnormals: 1) so that both scales below exist.
AG_HD int massExponentOf(double m) {
  std::uint64_t b;
#ifdef __CUDA_ARCH__
  b = static_cast<std::uint64_t>(__double_as_longlong(m));
#else
  std::memcpy(&b, &m, sizeof b);
#endif
  const int e = int((b >> 52) & 0x7ff);
  return e < 1 ? 1 : e < 2045 ? e : 2045;
}

/// The power of two 2^(k - 1023) from its biased exponent k (1 .. 2046).
AG_HD double powerOfTwo(int k) {
  const std::uint64_t b = std::uint64_t(k) << 52;
#ifdef __CUDA_ARCH__
  return __longlong_as_double(static_cast<long long>(b));
#else
  double v;
  std::memcpy(&v, &b, sizeof v);
  return v;
#endif
}

/// The batch's scale down, 2^(1023 - e): |m| * it < 2 for every mass of exponent field <= e, exactly (< 4 for the
/// masses above 2^1022 that massExponentOf clamps).
AG_HD double massScaleDown(int e) { return powerOfTwo(2046 - e); }
/// Its inverse, which the batch's float sums are multiplied by.
AG_HD double massScaleUp(int e) { return powerOfTwo(e); }

/// A source cell staged: (x - origin) rounded to float per axis, m times the batch's scale.
AG_HD NearSourceF nearSource(double x, double y, double z, double m, const double origin[3], double scaleDown) {
  return NearSourceF{float(x - origin[0]), float(y - origin[1]), float(z - origin[2]), float(m * scaleDown)};
}

/// 1 / sqrt(r2) in float. The device's is the multi-function unit's estimate with subnormals flushed (rsqrtf adds a
/// test and two scalings for them a pair): a pair's r2 is at least (h/2)^2 in lengths scaled near 1 (tree/tree.h),
/// far above float's smallest normal (1.2e-38).
AG_HD float reciprocalSqrtF(float r2) {
#ifdef __CUDA_ARCH__
  float y;
  asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(r2));
  return y;
#else
  return 1.0f / std::sqrt(r2);
#endif
}

/// One pair's terms (float here, double in the double kernel, cuda/kernel_fmm.cu fmmP2PComputed): q += m / r and, with
/// Accel, g += m d / r^3, given rinv = 1 / r (d = target - source).
template <bool Accel, class T>
AG_HD void addNearPair(T dx, T dy, T dz, T m, T rinv, T& q, T g[3]) {
  q += m * rinv;
  if constexpr (Accel) {
    const T t = m * (rinv * rinv * rinv);
    g[0] += t * dx;
    g[1] += t * dy;
    g[2] += t * dz;
  }
}

/// The sums over sources s[0 .. n) of one batch at target position (xi, yi, zi) (relative to the same origin):
/// q += m / r and, with Accel, g += m d / r^3 (d = target - source), in order. The computed pairs never hold a cell
/// with itself (a regular leaf meets itself by table).
template <bool Accel>
AG_HD void nearBatchSums(const NearSourceF* s, unsigned n, float xi, float yi, float zi, float& q, float g[3]) {
#ifdef __CUDA_ARCH__
#pragma unroll 8  // 8 reciprocal square roots in flight; the sums stay in order
#endif
  for (unsigned k = 0; k < n; ++k) {
    const NearSourceF c = s[k];
    const float dx = xi - c.x, dy = yi - c.y, dz = zi - c.z;
    const float r2 = dx * dx + dy * dy + dz * dz;
    addNearPair<Accel>(dx, dy, dz, c.m, reciprocalSqrtF(r2), q, g);
  }
}

}  // namespace fmm
}  // namespace amrgrav
