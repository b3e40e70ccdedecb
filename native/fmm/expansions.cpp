/// \file expansions.cpp
/// \brief The FMM's L2L and L2P (see expansions.h). Built with contraction and for several instruction sets, as
/// evaluate.cpp: nothing here decides an interaction list. (P2M and M2M: multipoles.cpp, without contraction.)
#include "fmm/expansions.h"

#include <algorithm>
#include <cstring>

#include "fmm/expansion_lanes.h"

namespace amrgrav {
namespace fmm {
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
