/// \file mac_k.h
/// \brief The multipole acceptance test for a node against a group's bounding box: the one definition, used by the
/// CPU walk (cpu/cpu_walk.cpp), the CUDA walk (cuda/kernel_walk.cu, a fast-math file: the explicit rounding of
/// physics/rounding.h keeps its double MAC unfused), the LET choice on the host and the device (let/let.cpp,
/// cuda/kernel_let.cu, physics/let_accept_k.h).
#pragma once
#include "core/hostdevice.h"
#include "physics/rounding.h"

namespace amrgrav {

/// Squared distance from point p to the box [lo, hi] (0 inside): per axis the gap (exact 0 inside), then
/// (dx^2 + dy^2) + dz^2, every operation rounded on its own.
template <class Rn = RoundNearest>
AG_HD double distanceSquaredToBox(double px, double py, double pz, const double* lo, const double* hi) {
  const double dx = px < lo[0] ? Rn::sub(lo[0], px) : (px > hi[0] ? Rn::sub(px, hi[0]) : 0.0);
  const double dy = py < lo[1] ? Rn::sub(lo[1], py) : (py > hi[1] ? Rn::sub(py, hi[1]) : 0.0);
  const double dz = pz < lo[2] ? Rn::sub(lo[2], pz) : (pz > hi[2] ? Rn::sub(pz, hi[2]) : 0.0);
  return squaredNorm<Rn>(dx, dy, dz);
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
