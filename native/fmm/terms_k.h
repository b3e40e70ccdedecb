/// \file terms_k.h
/// \brief fmm/multi_index.h's term tables as constexpr functions of the term, for kernels that unroll over the terms
/// at compile time (cuda/kernel_fmm.cu's L2P: every index a constant, so the monomials stay in registers). The same
/// numbering (by degree, then a descending, then b descending) and the same monomial recurrence (term t from
/// monoPrev(t) times h along monoAxis(t) times monoScale(t)); native/tests/fmm_terms.cpp checks them against
/// MultiIndex.
#pragma once
#include "core/hostdevice.h"

namespace amrgrav {
namespace fmm {

/// Terms of degree <= p (as multi_index.h termCount, callable on the device).
AG_HD constexpr int termsUpTo(int p) { return p < 0 ? 0 : (p + 1) * (p + 2) * (p + 3) / 6; }

/// The harmonic layout (fmm/m2l_kernels.h foldMultipoles, the M2L's folded multipoles): the (p+1)^2 terms with
/// c <= 1, each node's padded to a multiple of 8 doubles (one lane block of the CPU's M2L).
AG_HD constexpr int harmonicTermsOf(int p) { return (p + 1) * (p + 1); }
AG_HD constexpr int harmonicStrideOf(int p) { return (harmonicTermsOf(p) + 7) / 8 * 8; }

/// The index of (a, b, c) (any order p >= a + b + c), -1 when a component is negative.
AG_HD constexpr int termIndex(int a, int b, int c) {
  if (a < 0 || b < 0 || c < 0) return -1;
  const int d = a + b + c;
  return termsUpTo(d - 1) + (d - a) * (d - a + 1) / 2 + (d - a - b);
}

/// Exponent `axis` (0, 1, 2) of term t.
AG_HD constexpr int termExponent(int t, int axis) {
  int d = 0;
  while (termsUpTo(d) <= t) ++d;
  int r = t - termsUpTo(d - 1);
  for (int a = d; a >= 0; --a) {
    const int nb = d - a + 1;  // terms of degree d with this a: c = 0 .. d - a
    if (r < nb) return axis == 0 ? a : axis == 1 ? d - a - r : r;
    r -= nb;
  }
  return 0;
}

AG_HD constexpr int termDegree(int t) { return termExponent(t, 0) + termExponent(t, 1) + termExponent(t, 2); }

/// The monomials' recurrence (t > 0): the first axis with a positive exponent, the term one lower along it, and
/// 1 / that exponent.
AG_HD constexpr int monoAxisOf(int t) { return termExponent(t, 0) > 0 ? 0 : termExponent(t, 1) > 0 ? 1 : 2; }
AG_HD constexpr int monoPrevOf(int t) {
  const int i = monoAxisOf(t);
  return termIndex(termExponent(t, 0) - (i == 0), termExponent(t, 1) - (i == 1), termExponent(t, 2) - (i == 2));
}
AG_HD constexpr double monoScaleOf(int t) { return 1.0 / termExponent(t, monoAxisOf(t)); }

/// Monomial t (t > 0) from monomial monoPrevOf(t): prev times h along monoAxisOf(t) times monoScaleOf(t), in
/// expansions.cpp's order of the products (so the same bits).
template <int t>
AG_HD double monomialFrom(double prev, const double* h) {
  constexpr int ax = monoAxisOf(t);
  constexpr double sc = monoScaleOf(t);
  return prev * h[ax] * sc;
}

/// Term t + e_axis (the gradient's coefficients in L2P).
AG_HD constexpr int plusAxisOf(int t, int axis) {
  return termIndex(termExponent(t, 0) + (axis == 0), termExponent(t, 1) + (axis == 1),
                   termExponent(t, 2) + (axis == 2));
}

}  // namespace fmm
}  // namespace amrgrav
