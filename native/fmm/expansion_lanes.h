/// \file expansion_lanes.h
/// \brief What the FMM's exact shifts (expansions.cpp, multipoles.cpp) share: the monomials of kLanes offsets at once
/// and a leaf's cells loaded into lanes.
#pragma once
#include <cstdint>

#include "fmm/multi_index.h"
#include "fmm/simd.h"
#include "tree/tree.h"

namespace amrgrav {
namespace fmm {

constexpr int kMaxTerms = termCount(7);

/// out[t] = h^n / n! for every term, in lanes (T = Vd) or not (T = double).
template <class T>
AG_FMM_INLINE void monomials(const MultiIndex& mi, T hx, T hy, T hz, T* out) {
  const T h[3] = {hx, hy, hz};
  out[0] = bc<T>(1.0);
  for (int t = 1; t < mi.terms; ++t) out[t] = out[mi.monoPrev[t]] * h[mi.monoAxis[t]] * mi.monoScale[t];
}

/// Offsets from `c` of the cells [j, j + kLanes) (those at or past e: offset 0, mass 0).
AG_FMM_INLINE void laneOffsets(const SortedCells& s, std::uint32_t j, std::uint32_t e, const double* c, Vd& hx, Vd& hy,
                               Vd& hz, Vd& m) {
  for (int l = 0; l < kLanes; ++l) {
    const bool in = j + std::uint32_t(l) < e;
    hx[l] = in ? s.x[j + l] - c[0] : 0.0;
    hy[l] = in ? s.y[j + l] - c[1] : 0.0;
    hz[l] = in ? s.z[j + l] - c[2] : 0.0;
    m[l] = in ? s.mass[j + l] : 0.0;
  }
}

}  // namespace fmm
}  // namespace amrgrav
