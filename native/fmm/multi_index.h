/// \file multi_index.h
/// \brief The multi-indices n = (a, b, c), |n| = a + b + c <= p, of the FMM's Cartesian expansions, and the index
/// tables of the exact shifts (P2M, M2M, L2L, L2P). Conventions, shared with the generated M2L (m2l_kernels.h):
/// multipoles M[n] = sum m d^n / n! about a node's centre (d = cell - centre), local coefficients L[k] = the k-th
/// derivative of the potential sum m/r at the centre; terms numbered by degree, then a descending, then b descending.
#pragma once
#include <array>
#include <vector>

namespace amrgrav {
namespace fmm {

/// Terms of order p: (p+1)(p+2)(p+3)/6.
constexpr int termCount(int p) { return (p + 1) * (p + 2) * (p + 3) / 6; }

struct MultiIndex {
  int order = 0, terms = 0;
  std::vector<std::array<int, 3>> n;  ///< term -> (a, b, c)
  std::vector<int> degree;
  /// Monomials h^n / n! by one product each: term t from term monoPrev[t] times h[monoAxis[t]] / n[t][axis].
  std::vector<int> monoPrev, monoAxis;
  std::vector<double> monoScale;       ///< 1 / n[t][monoAxis[t]]
  /// M2M: M_parent[n] += M_child[j] s^(n-j)/(n-j)!, one entry (n, j, n-j) per pair; L2L: L_child[k] += L_parent[k+j]
  /// s^j/j!, one entry (k, j, k+j) per pair (s = child centre - parent centre).
  std::vector<int> m2mN, m2mJ, m2mNJ, l2lK, l2lJ, l2lKJ;
  /// term k -> term k + e_i (-1 past the order): the gradient's coefficients in L2P.
  std::vector<int> plusAxis[3];

  explicit MultiIndex(int p);
  /// The process's tables of order p in [0, 7] (made once, on first use: a solve reads them in several phases).
  static const MultiIndex& of(int p);
  /// -1 when |(a, b, c)| > p or a component is negative.
  int at(int a, int b, int c) const;
};

}  // namespace fmm
}  // namespace amrgrav
