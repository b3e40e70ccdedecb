/// \file mac_k.h
/// \brief The multipole acceptance test for a node against a group's bounding box, shared by CPU and CUDA.
#pragma once
#include "core/hostdevice.h"

namespace amrgrav {

/// Squared distance from point p to the box [lo, hi] (0 inside).
template <class R>
AG_HD R distanceSquaredToBox(R px, R py, R pz, const R* lo, const R* hi) {
  R dx = px < lo[0] ? lo[0] - px : (px > hi[0] ? px - hi[0] : R(0));
  R dy = py < lo[1] ? lo[1] - py : (py > hi[1] ? py - hi[1] : R(0));
  R dz = pz < lo[2] ? lo[2] - pz : (pz > hi[2] ? pz - hi[2] : R(0));
  return dx * dx + dy * dy + dz * dz;
}

/// Accept the node (com, macRadius = l/theta + delta) for every point in the box: the conservative form of the
/// warp's all() vote, since the box's nearest point is the hardest cell to satisfy.
template <class R>
AG_HD bool macAccepts(R comx, R comy, R comz, R macRadius, const R* groupLo, const R* groupHi) {
  return distanceSquaredToBox(comx, comy, comz, groupLo, groupHi) > macRadius * macRadius;
}

}  // namespace amrgrav
