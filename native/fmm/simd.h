/// \file simd.h
/// \brief The FMM's lane type: 8 doubles as a GCC vector (one interaction per lane), and what the generated kernels
/// (m2l_kernels.h) need of it. Any x86-64 target compiles it (the default clone in pieces, AVX-512 clones whole:
/// evaluate.cpp's AG_FMM_CLONES); lanes are summed in lane order, so results do not depend on the instruction set
/// beyond the contraction of a * b + c that each clone's compiler chooses.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>


#ifndef AG_FMM_INLINE
#define AG_FMM_INLINE inline __attribute__((always_inline))
#endif

/// The hot loops (evaluate.cpp, expansions.cpp) are compiled for AVX-512, AVX2 and the baseline and picked at load
/// time (ifunc), as cpu/cpu_walk.cpp's.
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#define AG_FMM_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define AG_FMM_CLONES
#endif

// Vd values cross only always-inline functions: the ABI note about passing them without AVX-512 does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace amrgrav {
namespace fmm {

constexpr int kLanes = 8;
typedef double Vd __attribute__((vector_size(64)));
typedef std::int64_t Vi __attribute__((vector_size(64)));

template <class T> AG_FMM_INLINE T bc(double c);
template <> AG_FMM_INLINE double bc<double>(double c) { return c; }
template <> AG_FMM_INLINE Vd bc<Vd>(double c) { return Vd{} + c; }

AG_FMM_INLINE double vsqrt(double v) { return std::sqrt(v); }
AG_FMM_INLINE Vd vsqrt(Vd v) {
  Vd r;
  for (int l = 0; l < kLanes; ++l) r[l] = std::sqrt(v[l]);
  return r;
}

/// 1/sqrt(r2) in lanes, as physics/interact_k.h's rsqrtOf (the bit-level estimate and four Newton steps: below
/// double rounding), all multiplies and adds. Needs r2 > 0 and finite.
AG_FMM_INLINE Vd vrsqrt(Vd r2) {
  Vi bits;
  std::memcpy(&bits, &r2, sizeof bits);
  bits = (Vi{} + std::int64_t(0x5fe6eb50c7b537a9LL)) - (Vi)((unsigned long long __attribute__((vector_size(64))))bits >> 1);
  Vd y;
  std::memcpy(&y, &bits, sizeof y);
  const Vd h = 0.5 * r2;
  y = y * (1.5 - h * y * y);
  y = y * (1.5 - h * y * y);
  y = y * (1.5 - h * y * y);
  y = y * (1.5 - h * y * y);
  return y;
}

/// Eight rows of eight doubles in, their columns out (c[k][l] = r[l][k]): three rounds of shuffles.
AG_FMM_INLINE void transpose8(const Vd* r, Vd* c) {
  Vd a[8], b[8];
  for (int l = 0; l < 8; l += 2) {
    a[l] = __builtin_shufflevector(r[l], r[l + 1], 0, 8, 2, 10, 4, 12, 6, 14);
    a[l + 1] = __builtin_shufflevector(r[l], r[l + 1], 1, 9, 3, 11, 5, 13, 7, 15);
  }
  for (int l : {0, 1, 4, 5}) {
    b[l] = __builtin_shufflevector(a[l], a[l + 2], 0, 1, 8, 9, 4, 5, 12, 13);
    b[l + 2] = __builtin_shufflevector(a[l], a[l + 2], 2, 3, 10, 11, 6, 7, 14, 15);
  }
  for (int l = 0; l < 4; ++l) {
    c[l] = __builtin_shufflevector(b[l], b[l + 4], 0, 1, 2, 3, 8, 9, 10, 11);
    c[l + 4] = __builtin_shufflevector(b[l], b[l + 4], 4, 5, 6, 7, 12, 13, 14, 15);
  }
}

/// Lanes summed in lane order.
AG_FMM_INLINE double hsum(Vd v) {
  double s = v[0];
  for (int l = 1; l < kLanes; ++l) s += v[l];
  return s;
}

}  // namespace fmm
}  // namespace amrgrav
