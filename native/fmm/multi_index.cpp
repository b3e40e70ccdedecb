/// \file multi_index.cpp
/// \brief The FMM's multi-index tables (see multi_index.h).
#include "fmm/multi_index.h"

namespace amrgrav {
namespace fmm {

int MultiIndex::at(int a, int b, int c) const {
  if (a < 0 || b < 0 || c < 0 || a + b + c > order) return -1;
  // terms of degree < d come first (termCount(d - 1)); within degree d, a descending, then b descending
  const int d = a + b + c;
  const int before = d == 0 ? 0 : termCount(d - 1);
  const int ahead = (d - a) * (d - a + 1) / 2;  // terms of degree d with a larger a
  return before + ahead + (d - a - b);
}

const MultiIndex& MultiIndex::of(int p) {
  static const std::vector<MultiIndex> tables = [] {
    std::vector<MultiIndex> v;
    for (int q = 0; q <= 7; ++q) v.emplace_back(q);
    return v;
  }();
  return tables.at(std::size_t(p));
}

MultiIndex::MultiIndex(int p) : order(p), terms(termCount(p)) {
  for (int d = 0; d <= p; ++d)
    for (int a = d; a >= 0; --a)
      for (int b = d - a; b >= 0; --b) {
        n.push_back({a, b, d - a - b});
        degree.push_back(d);
      }
  monoPrev.assign(terms, -1);
  monoAxis.assign(terms, 0);
  monoScale.assign(terms, 1.0);
  for (int t = 1; t < terms; ++t)
    for (int i = 0; i < 3; ++i)
      if (n[t][i] > 0) {
        std::array<int, 3> m = n[t];
        m[i] -= 1;
        monoPrev[t] = at(m[0], m[1], m[2]);
        monoAxis[t] = i;
        monoScale[t] = 1.0 / n[t][i];
        break;
      }
  for (int t = 0; t < terms; ++t)
    for (int j = 0; j < terms; ++j) {
      const int nj = at(n[t][0] - n[j][0], n[t][1] - n[j][1], n[t][2] - n[j][2]);
      if (nj >= 0) { m2mN.push_back(t); m2mJ.push_back(j); m2mNJ.push_back(nj); }
      const int kj = at(n[t][0] + n[j][0], n[t][1] + n[j][1], n[t][2] + n[j][2]);
      if (kj >= 0) { l2lK.push_back(t); l2lJ.push_back(j); l2lKJ.push_back(kj); }
    }
  for (int i = 0; i < 3; ++i) {
    plusAxis[i].assign(terms, -1);
    for (int t = 0; t < terms; ++t) {
      std::array<int, 3> m = n[t];
      m[i] += 1;
      plusAxis[i][t] = at(m[0], m[1], m[2]);
    }
  }
}

}  // namespace fmm
}  // namespace amrgrav
