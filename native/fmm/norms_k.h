/// \file norms_k.h
/// \brief A node's multipole norms |M^(n)| = sqrt(sum_(|k| = n) n! k! M_k^2), n = 0..p, which the signed sources'
/// pair test reads (physics/fmm_mac_k.h fmmSignedPairAccepts; periodic boxes, fmm/fmm_tree.h FmmTree::norms): one
/// rule for the host's buildFmmTree and the device's tree (cuda/kernel_fmm_lists.cu), so both give the same bits
/// and the lists' MAC decides alike. The terms in their order, each (w M) M added to its degree's sum unfused.
#pragma once
#include "core/hostdevice.h"
#include "physics/rounding.h"

namespace amrgrav {
namespace fmm {

/// q[0 .. order] of the multipoles M (terms of them) with weights w[k] = n! k! and degrees degree[k] (fmm/fmm_tree.h
/// multipoleNormWeights, fmm/multi_index.h MultiIndex::degree).
template <class Rn = RoundNearest>
AG_HD void fmmMultipoleNorms(const double* M, int terms, const double* w, const int* degree, int order, double* q) {
  for (int n = 0; n <= order; ++n) q[n] = 0.0;
  for (int k = 0; k < terms; ++k) q[degree[k]] = Rn::add(q[degree[k]], Rn::mul(Rn::mul(w[k], M[k]), M[k]));
  for (int n = 0; n <= order; ++n) q[n] = Rn::sqrt(q[n]);
}

}  // namespace fmm
}  // namespace amrgrav
