/// \file multipoles.cpp
/// \brief The FMM's P2M and M2M (expansions.h multipolesOfNode). Compiled without contraction (CMakeLists.txt), for
/// several instruction sets: every product and sum rounds on its own, in the lane order of fmm/upward_k.h, so the
/// device's upward pass (cuda/kernel_fmm_tree.cu), which runs upward_k.h's terms, gives the same bits on any clone.
#include <cstring>

#include "fmm/expansion_lanes.h"
#include "fmm/expansions.h"

namespace amrgrav {
namespace fmm {

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

}  // namespace fmm
}  // namespace amrgrav
