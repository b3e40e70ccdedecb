/// \file mac_k.h
/// \brief The multipole acceptance test for a node against a group's bounding box: the one definition, used by the
/// CPU walk (cpu/cpu_walk.cpp), the CUDA walk (cuda/kernel_walk.cu, a fast-math file: the explicit rounding of
/// physics/rounding.h keeps its double MAC unfused), the LET choice on the host and the device (let/let.cpp,
/// cuda/kernel_let.cu, physics/let_accept_k.h).
#pragma once
#include "core/hostdevice.h"
#include "physics/rounding.h"

namespace amrgrav {

/// The gap from coordinate p to [lo, hi] along one axis (exact 0 inside). Both differences are made and one kept:
/// no branch, so that a loop over several points vectorises (cpu/walk_lists.cpp).
template <class Rn = RoundNearest>
AG_HD double boxGap(double p, double lo, double hi) {
  const double below = Rn::sub(lo, p), above = Rn::sub(p, hi);
  const double outside = p > hi ? above : 0.0;
  return p < lo ? below : outside;
}

/// Squared distance from point p to the box [lo, hi] (0 inside): per axis the gap (boxGap), then
/// (dx^2 + dy^2) + dz^2, every operation rounded on its own.
template <class Rn = RoundNearest>
AG_HD double distanceSquaredToBox(double px, double py, double pz, const double* lo, const double* hi) {
  return squaredNorm<Rn>(boxGap<Rn>(px, lo[0], hi[0]), boxGap<Rn>(py, lo[1], hi[1]), boxGap<Rn>(pz, lo[2], hi[2]));
}

/// Accept the node (com, macRadius = l/theta + delta) for every point in the box: distance^2 > macRadius^2, the
/// conservative form of the warp's all() vote, since the box's nearest point is the hardest cell to satisfy.
/// A point is a degenerate box (lo = hi = p): the vote's per-cell test.
template <class Rn = RoundNearest>
AG_HD bool macAccepts(double comx, double comy, double comz, double macRadius, const double* groupLo,
                      const double* groupHi) {
  return distanceSquaredToBox<Rn>(comx, comy, comz, groupLo, groupHi) > Rn::mul(macRadius, macRadius);
}

}  // namespace amrgrav
