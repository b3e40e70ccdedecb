/// \file fmm_terms.cpp
/// \brief amrgrav_fmm_terms: fmm/terms_k.h's constexpr term tables (the device L2P's compile-time indices) against
/// fmm/multi_index.h's MultiIndex at orders 3..7: exponents, the monomial recurrence (its scale bit for bit) and the
/// gradient's terms. CTest (label cpu).
#include <cstdio>
#include <string>

#include "fmm/multi_index.h"
#include "fmm/terms_k.h"
#include "tests/check_report.h"

using namespace amrgrav;
using namespace amrgrav::fmm;
using namespace amrgrav::tests;

static_assert(termsUpTo(7) == 120 && termIndex(0, 0, 7) == 119 && monoPrevOf(119) == 83, "evaluated at compile time");

int main() {
  for (int p = 3; p <= 7; ++p) {
    const MultiIndex mi(p);
    bool ok = termsUpTo(p) == mi.terms;
    int bad = -1;
    for (int t = 0; t < mi.terms && ok; ++t) {
      for (int d = 0; d < 3; ++d)  // past the order: MultiIndex says -1, terms_k.h the next order's index
        ok = ok && termExponent(t, d) == mi.n[t][d] &&
             (mi.plusAxis[d][t] < 0 ? plusAxisOf(t, d) >= mi.terms : plusAxisOf(t, d) == mi.plusAxis[d][t]);
      ok = ok && termIndex(mi.n[t][0], mi.n[t][1], mi.n[t][2]) == t && termDegree(t) == mi.degree[t];
      if (t > 0)
        ok = ok && monoPrevOf(t) == mi.monoPrev[t] && monoAxisOf(t) == mi.monoAxis[t] &&
             monoScaleOf(t) == mi.monoScale[t];
      if (!ok) bad = t;
    }
    check("order" + std::to_string(p), ok,
          std::to_string(mi.terms) + " terms" + (bad >= 0 ? ", first difference at term " + std::to_string(bad) : ""));
  }
  std::printf("%d checks, %d failed\n", gChecks, gFailed);
  return gFailed == 0 ? 0 : 1;
}
