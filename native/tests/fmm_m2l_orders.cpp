/// \file fmm_m2l_orders.cpp
/// \brief amrgrav_fmm_m2l_orders: the FMM's adaptive pair order (physics/fmm_mac_k.h fmmSignedPairOrder; evaluate.cpp
/// applies an order-q M2L to the first terms of the tree's order-p expansions) rests on one property of the
/// generated kernels (m2l_kernels.h): the order-q one-sided M2L is the order-p one truncated at |n| + |k| <= q, with
/// the multipoles, local coefficients and derivatives of degree <= q at the same places (terms numbered by degree:
/// multi_index.h). For a target term n of degree d that is the order-p M2L with the source's multipoles cut at degree
/// q - d. Checked for q = 3..p and p = 4..7 at random offsets and multipoles (with and without dipole terms), in
/// double and in lanes. Exits 1 on any failure; CTest runs it (label cpu).
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "fmm/multi_index.h"
#include "fmm/simd.h"
#include "fmm/m2l_kernels.h"

using namespace amrgrav::fmm;

namespace {

int gChecks = 0, gFailed = 0;

template <int P, class T> void derivatives(T x, T y, T z, T* D) {
  if constexpr (P == 3) derivatives3(x, y, z, D);
  else if constexpr (P == 4) derivatives4(x, y, z, D);
  else if constexpr (P == 5) derivatives5(x, y, z, D);
  else if constexpr (P == 6) derivatives6(x, y, z, D);
  else derivatives7(x, y, z, D);
}
template <int P, bool Dip, class T> void m2lOne(const T* D, const T* M, T* L) {
  if constexpr (Dip) {
    if constexpr (P == 3) m2lOne3(D, M, L);
    else if constexpr (P == 4) m2lOne4(D, M, L);
    else if constexpr (P == 5) m2lOne5(D, M, L);
    else if constexpr (P == 6) m2lOne6(D, M, L);
    else m2lOne7(D, M, L);
  } else {
    if constexpr (P == 3) m2lOne3nd(D, M, L);
    else if constexpr (P == 4) m2lOne4nd(D, M, L);
    else if constexpr (P == 5) m2lOne5nd(D, M, L);
    else if constexpr (P == 6) m2lOne6nd(D, M, L);
    else m2lOne7nd(D, M, L);
  }
}

/// Order Q against order P (Q <= P) at one offset and one set of multipoles, in double and in lanes.
template <int Q, int P, bool Dip>
void compare(std::mt19937_64& g, double& worst) {
  constexpr int NQ = termCount(Q), NP = termCount(P);
  const MultiIndex& mi = MultiIndex::of(P);
  std::uniform_real_distribution<double> u(-1, 1);
  double r[3];
  do {
    for (double& v : r) v = 4 * u(g);
  } while (std::sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]) < 1.5);
  std::vector<double> M(NP), Dq(NQ), Dp(NP), Lq(NQ, 0.0);
  for (int k = 0; k < NP; ++k) M[k] = u(g) * std::pow(0.5, mi.degree[k]);
  if (!Dip) M[1] = M[2] = M[3] = 0;  // centres of mass: no dipole
  derivatives<Q>(r[0], r[1], r[2], Dq.data());
  derivatives<P>(r[0], r[1], r[2], Dp.data());
  m2lOne<Q, Dip>(Dq.data(), M.data(), Lq.data());
  // lanes: the same in lane 3 of 8 (the others another offset)
  Vd xs = Vd{} + 2.5, ys = Vd{} + 0.5, zs = Vd{} - 1.0, Dv[NQ], Mv[NQ], Lv[NQ];
  xs[3] = r[0];
  ys[3] = r[1];
  zs[3] = r[2];
  derivatives<Q>(xs, ys, zs, Dv);
  for (int k = 0; k < NQ; ++k) {
    Mv[k] = Vd{} + M[k];
    Lv[k] = Vd{};
  }
  m2lOne<Q, Dip>(Dv, Mv, Lv);
  double scale = 0;
  for (int k = 0; k < NQ; ++k) scale = std::max(scale, std::fabs(Lq[k]));
  for (int d = 0; d <= Q; ++d) {
    std::vector<double> Mc(M), Lp(NP, 0.0);
    for (int k = 0; k < NP; ++k)
      if (mi.degree[k] > Q - d) Mc[k] = 0;  // the source's terms with |n| + |k| <= Q for targets of degree d
    m2lOne<P, Dip>(Dp.data(), Mc.data(), Lp.data());
    for (int n = 0; n < NQ; ++n) {
      if (mi.degree[n] != d) continue;
      worst = std::max(worst, std::fabs(Lq[n] - Lp[n]) / scale);
      worst = std::max(worst, std::fabs(Lv[n][3] - Lq[n]) / scale);
    }
  }
}

template <int Q, int P>
void caseOf(std::mt19937_64& g) {
  if constexpr (Q <= P) {
    for (bool dip : {true, false}) {
      double worst = 0;
      for (int k = 0; k < 200; ++k) {
        if (dip) compare<Q, P, true>(g, worst);
        else compare<Q, P, false>(g, worst);
      }
      ++gChecks;
      const bool ok = worst <= 1e-13;
      if (!ok) ++gFailed;
      std::printf("%s order %d within order %d%s: %.3e of max |L| (tolerance 1e-13)\n", ok ? "PASS" : "FAIL", Q, P,
                  dip ? "" : " (no dipoles)", worst);
    }
  }
}

template <int P>
void orderP(std::mt19937_64& g) {
  caseOf<3, P>(g);
  caseOf<4, P>(g);
  caseOf<5, P>(g);
  caseOf<6, P>(g);
  caseOf<7, P>(g);
}

}  // namespace

int main() {
  std::mt19937_64 g(21);
  orderP<4>(g);
  orderP<5>(g);
  orderP<6>(g);
  orderP<7>(g);
  std::printf("fmm_m2l_orders: %d checks, %d failed\n", gChecks, gFailed);
  return gFailed ? 1 : 0;
}
