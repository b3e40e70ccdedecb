/// \file expansions.cpp
/// \brief The FMM's P2M, M2M, L2L and L2P (see expansions.h). Built with contraction and for several instruction
/// sets, as evaluate.cpp: nothing here decides an interaction list.
#include "fmm/expansions.h"

#include <algorithm>
#include <cstring>

#include "fmm/simd.h"

namespace amrgrav {
namespace fmm {
namespace {

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

}  // namespace

AG_FMM_CLONES void multipolesOfNode(const MultiIndex& mi, const SortedCells& s, std::size_t i, FmmTree& t) {
  const Octree& o = t.topo;
  const int nt = t.terms;
  double* Mi = &t.M[i * t.mStride];
  const double* c = &t.centre[3 * i];
  if (o.isLeaf(i)) {
    Vd acc[kMaxTerms], mono[kMaxTerms];
    for (int q = 0; q < nt; ++q) acc[q] = Vd{};
    const std::uint32_t b = o.cellBegin[i], e = b + o.cellCount[i];
    for (std::uint32_t j = b; j < e; j += kLanes) {
      Vd hx, hy, hz, m;
      laneOffsets(s, j, e, c, hx, hy, hz, m);
      monomials(mi, hx, hy, hz, mono);
      for (int q = 0; q < nt; ++q) acc[q] += m * mono[q];
    }
    for (int q = 0; q < nt; ++q) Mi[q] = hsum(acc[q]);
    return;
  }
  // M2M with the children in lanes (at most 8): their multipoles transposed into lanes, one shift per lane
  Vd hx{}, hy{}, hz{}, mono[kMaxTerms], Mc[kMaxTerms + 8], acc[kMaxTerms];
  const double* rows[kLanes] = {};
  for (std::uint32_t k = 0; k < o.childCount[i]; ++k) {
    const std::size_t ch = o.childBegin[i] + k;
    hx[k] = t.centre[3 * ch] - c[0];
    hy[k] = t.centre[3 * ch + 1] - c[1];
    hz[k] = t.centre[3 * ch + 2] - c[2];
    rows[k] = &t.M[ch * t.mStride];
  }
  monomials(mi, hx, hy, hz, mono);
  for (int blk = 0; blk < t.mStride / 8; ++blk) {
    Vd r[kLanes];
    for (int l = 0; l < kLanes; ++l) {
      if (rows[l]) std::memcpy(&r[l], rows[l] + 8 * blk, sizeof(Vd));
      else r[l] = Vd{};  // no child in this lane: no multipoles
    }
    transpose8(r, &Mc[8 * blk]);
  }
  for (int q = 0; q < nt; ++q) acc[q] = Vd{};
  for (std::size_t q = 0; q < mi.m2mN.size(); ++q) acc[mi.m2mN[q]] += Mc[mi.m2mJ[q]] * mono[mi.m2mNJ[q]];
  for (int q = 0; q < nt; ++q) Mi[q] = hsum(acc[q]);
}

AG_FMM_CLONES void localsOfNode(const MultiIndex& mi, const SortedCells& s, std::size_t i, FmmTree& t, FmmOutput out) {
  const Octree& o = t.topo;
  const int nt = t.terms;
  const double* Li = &t.L[i * nt];
  const double* c = &t.centre[3 * i];
  if (!o.isLeaf(i)) {
    // L2L with the children in lanes (at most 8): one shift per lane, then each lane added to its child's L
    Vd hx{}, hy{}, hz{}, mono[kMaxTerms], acc[kMaxTerms];
    const std::uint32_t nc = o.childCount[i], c0 = o.childBegin[i];
    for (std::uint32_t k = 0; k < nc; ++k) {
      hx[k] = t.centre[3 * (c0 + k)] - c[0];
      hy[k] = t.centre[3 * (c0 + k) + 1] - c[1];
      hz[k] = t.centre[3 * (c0 + k) + 2] - c[2];
    }
    monomials(mi, hx, hy, hz, mono);
    for (int q = 0; q < nt; ++q) acc[q] = Vd{};
    for (std::size_t q = 0; q < mi.l2lK.size(); ++q) acc[mi.l2lK[q]] += Li[mi.l2lKJ[q]] * mono[mi.l2lJ[q]];
    for (std::uint32_t k = 0; k < nc; ++k) {
      double* Lc = &t.L[(c0 + k) * nt];
      for (int q = 0; q < nt; ++q) Lc[q] += acc[q][k];
    }
    return;
  }
  // the gradient's terms: those of degree < p (terms are numbered by degree)
  const int ng = termCount(mi.order - 1);
  Vd mono[kMaxTerms];
  const std::uint32_t b = o.cellBegin[i], e = b + o.cellCount[i];
  for (std::uint32_t j = b; j < e; j += kLanes) {
    Vd hx, hy, hz, m;
    laneOffsets(s, j, e, c, hx, hy, hz, m);
    monomials(mi, hx, hy, hz, mono);
    Vd p{};
    for (int q = 0; q < nt; ++q) p += Li[q] * mono[q];
    Vd f[3] = {Vd{}, Vd{}, Vd{}};
    if (out.gx)
      for (int q = 0; q < ng; ++q)
        for (int d = 0; d < 3; ++d) f[d] += Li[mi.plusAxis[d][q]] * mono[q];
    const int lanes = int(std::min<std::uint32_t>(kLanes, e - j));
    for (int l = 0; l < lanes; ++l) {
      out.phi[j + l] += p[l];
      if (!out.gx) continue;
      out.gx[j + l] -= f[0][l];
      out.gy[j + l] -= f[1][l];
      out.gz[j + l] -= f[2][l];
    }
  }
}

}  // namespace fmm
}  // namespace amrgrav
