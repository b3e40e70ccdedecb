/// \file softening_k.h
/// \brief Softened gravity of particles (issue #18), the one definition used by the CPU walk, the CUDA walk and
/// the direct sums: the pair kernels, the Plummer kernel's node expansion and the extra acceptance rule a node must
/// pass when softening is in play. Convention as physics/interact_k.h: phi accumulates m/r-type terms without -G,
/// g accumulates m d / r^3-type terms (d = target - source; acceleration = -G g).
///
/// Softening lengths. A particle's softening eps is the Plummer-equivalent length for both kernels (Gadget's
/// convention): a particle's potential at its own centre is -G m / eps with either kernel. The spline kernel is the
/// cubic spline of radius h = kSplineRadius eps (Monaghan & Lattanzio 1985, as Gadget uses it), exactly Newtonian
/// for r >= h. Plummer: -G m / sqrt(r^2 + eps^2), never exactly Newtonian. Cells and probes have eps 0.
///
/// Pairs. A pair is softened by eps_ij = max(eps_i, eps_j) (symmetric, so momentum is exchanged consistently): a
/// cell-cell pair is Newtonian, a cell-particle pair takes the particle's softening. With eps_ij = 0 a coincident
/// pair adds 0 (the cells' rule); with eps_ij > 0 it adds m W(0) = m / eps and no force. A particle's own pair
/// (the particle tree's walk meets every particle once) is taken out afterwards: its value is exactly m / eps_i.
///
/// Nodes. A node accepted by the MAC must also be exact for the softening of every pair it stands for:
///  - spline: every source of the node beyond h_ij of every target of the group. The sources lie within b of the
///    node's centre of mass, b the node's source extent: for a particles' tree its extent (nodeExtent below: the
///    largest |x_j - com| over its particles, bounded from above under every rounding), for a tree without one (the
///    cells' tree, a received LET) its macRadius (l / theta + delta >= sqrt(3)/2 l + delta for theta <= 1, far
///    looser: about 2.4 l at theta 0.42 against b <= sqrt(3)/2 l + delta). The rule is distance(group box, com) >
///    kSplineRadius max(eps_group_max, eps_node_max) + b; the node then acts through the Newtonian kernels
///    (physics/interact_k.h), exactly. (A node's own targets are never inside that reach of it, so each particle's
///    own leaf is always opened: the own pair softWalk's callers take out.)
///  - plummer: the node's pairs share one softening per target, max(eps_i, eps_node), which holds when the node's
///    softenings are all equal or all at most the group's smallest; the node then acts through the Taylor expansion
///    of the softened kernel (plummerNode*), exact to the expansion's order. Other nodes are opened.
#pragma once
#include <cstdint>

#include "core/hostdevice.h"
#include "core/types.h"
#include "physics/interact_k.h"
#include "physics/mac_k.h"
#include "physics/rounding.h"

namespace amrgrav {

/// The spline kernel's radius in Plummer-equivalent softening lengths (h = 2.8 eps).
constexpr double kSplineRadius = 2.8;

/// A pair's softening: max(eps_i, eps_j).
template <class R>
AG_HD R pairSoftening(R a, R b) {
  return a > b ? a : b;
}

/// The spline kernel's potential and force factors at u = r / h < 1, as multiples of 1/h and 1/h^3: pot = m w / h
/// (w = -W, positive; 2.8 at u = 0, 1/u at u = 1) and g = m d f / h^3 (f = 1/u^3 at u = 1).
template <class R>
AG_HD void splineInside(R u, R& w, R& f) {
  const R u2 = u * u;
  if (u < R(0.5)) {
    w = R(2.8) - u2 * (R(16.0 / 3.0) + u2 * (R(6.4) * u - R(9.6)));
    f = R(32.0 / 3.0) + u2 * (R(32) * u - R(38.4));
  } else {
    const R inv = R(1) / u;
    w = R(3.2) - R(1.0 / 15.0) * inv - u2 * (R(32.0 / 3.0) + u * (R(-16) + u * (R(9.6) - R(32.0 / 15.0) * u)));
    f = R(64.0 / 3.0) - R(48) * u + R(38.4) * u2 - R(32.0 / 3.0) * u2 * u - R(1.0 / 15.0) * inv * inv * inv;
  }
}

/// Point mass m softened by eps (pair softening, >= 0) at offset d = target - source: phi += m K(r).
/// spline: K = W(r, h) inside h = 2.8 eps, 1/r beyond; plummer: 1/sqrt(r^2 + eps^2); eps 0 or a coincident
/// unsoftened pair: the cells' rule (1/r, 0 at r = 0).
template <class R>
AG_HD void softPairPotential(R dx, R dy, R dz, R m, R eps, SofteningKernel kernel, R& phi) {
  const R r2 = dx * dx + dy * dy + dz * dz;
  if (eps > R(0) && kernel == SofteningKernel::Plummer) {
    phi += m * rsqrtOf(r2 + eps * eps);
    return;
  }
  const R h = R(kSplineRadius) * eps;
  if (r2 >= h * h) {  // Newtonian (and every unsoftened pair)
    R rinv = rsqrtOf(r2 > R(0) ? r2 : R(1));
    phi += r2 > R(0) ? m * rinv : R(0);
    return;
  }
  const R hinv = R(1) / h;
  R w, f;
  splineInside(agSqrt(r2) * hinv, w, f);
  phi += m * w * hinv;
}

/// As softPairPotential, plus g += m d F(r) (F = 1/r^3 when Newtonian).
template <class R>
AG_HD void softPairForce(R dx, R dy, R dz, R m, R eps, SofteningKernel kernel, R& phi, R& gx, R& gy, R& gz) {
  const R r2 = dx * dx + dy * dy + dz * dz;
  R pot, fac;
  if (eps > R(0) && kernel == SofteningKernel::Plummer) {
    const R rinv = rsqrtOf(r2 + eps * eps);
    pot = m * rinv;
    fac = pot * rinv * rinv;
  } else {
    const R h = R(kSplineRadius) * eps;
    if (r2 >= h * h) {
      R rinv = rsqrtOf(r2 > R(0) ? r2 : R(1));
      rinv = r2 > R(0) ? rinv : R(0);
      pot = m * rinv;
      fac = pot * rinv * rinv;
    } else {
      const R hinv = R(1) / h;
      R w, f;
      splineInside(agSqrt(r2) * hinv, w, f);
      pot = m * w * hinv;
      fac = m * f * hinv * hinv * hinv;
    }
  }
  phi += pot;
  gx += fac * dx;
  gy += fac * dy;
  gz += fac * dz;
}

/// A node (mass m, traceless quadrupole q = sum m (3 s s - s^2 I) about com, trace s2 = sum m s^2) under the
/// Plummer kernel of softening eps, at offset d = target - com: the Taylor expansion of sum m / sqrt(|d - s|^2 +
/// eps^2) to second order, rho^2 = r^2 + eps^2:
///   phi += m / rho + (1/2) d.Q.d / rho^5 - (1/2) s2 eps^2 / rho^5
/// (the last term is the trace the traceless Q drops: the softened kernel is not harmonic). order 1: m / rho.
template <class R, int Order>
AG_HD void plummerNodePotential(R dx, R dy, R dz, R m, const R* q, R s2, R eps, R& phi) {
  const R rho2 = dx * dx + dy * dy + dz * dz + eps * eps;
  const R rinv = rsqrtOf(rho2);
  if (Order >= 2) {
    const R dqd = dx * (q[0] * dx + q[1] * dy + q[2] * dz) + dy * (q[1] * dx + q[3] * dy + q[4] * dz) +
                  dz * (q[2] * dx + q[4] * dy + q[5] * dz);
    const R rinv2 = rinv * rinv;
    phi += (m + R(0.5) * (dqd - s2 * eps * eps) * rinv2 * rinv2) * rinv;
  } else {
    phi += m * rinv;
  }
}

/// As plummerNodePotential, plus g = -grad of it:
///   g += m d / rho^3 - Q.d / rho^5 + (5/2) (d.Q.d - s2 eps^2) d / rho^7.
template <class R, int Order>
AG_HD void plummerNodeForce(R dx, R dy, R dz, R m, const R* q, R s2, R eps, R& phi, R& gx, R& gy, R& gz) {
  const R rho2 = dx * dx + dy * dy + dz * dz + eps * eps;
  const R rinv = rsqrtOf(rho2);
  const R rinv2 = rinv * rinv;
  R p = m * rinv, s = p * rinv2;  // m / rho, m / rho^3
  R cx = 0, cy = 0, cz = 0;
  if (Order >= 2) {
    const R qdx = q[0] * dx + q[1] * dy + q[2] * dz;
    const R qdy = q[1] * dx + q[3] * dy + q[4] * dz;
    const R qdz = q[2] * dx + q[4] * dy + q[5] * dz;
    const R rinv5 = rinv2 * rinv2 * rinv;
    const R t = (dx * qdx + dy * qdy + dz * qdz - s2 * eps * eps) * rinv5;  // (d.Q.d - s2 eps^2) / rho^5
    p += R(0.5) * t;
    s += R(2.5) * t * rinv2;
    cx = qdx * rinv5;
    cy = qdy * rinv5;
    cz = qdz * rinv5;
  }
  phi += p;
  gx += s * dx - cx;
  gy += s * dy - cy;
  gz += s * dz - cz;
}

/// The softening a node's pairs have for a group (the rule above), given the node's softenings [nodeMin, nodeMax]
/// and the group's [groupMin, groupMax]: may the MAC-accepted node act as a whole? `distance2` is the squared
/// distance from the group box to the node's centre (mac_k.h distanceSquaredToBox, rounded as there);
/// `sourceExtent` bounds the distance of the node's sources from that centre: its nodeExtent where the tree has
/// one (a particles' tree), else its macRadius. Every operation is rounded on its own (physics/rounding.h) so that
/// the CPU and the GPU decide alike.
template <class Rn = RoundNearest>
AG_HD bool softeningAccepts(SofteningKernel kernel, double distance2, double sourceExtent, double groupMin,
                            double groupMax, double nodeMin, double nodeMax) {
  if (kernel == SofteningKernel::Plummer) return nodeMin == nodeMax || nodeMax <= groupMin;
  const double eps = groupMax > nodeMax ? groupMax : nodeMax;
  if (eps == 0.0) return true;  // no softened pair
  const double reach = Rn::add(Rn::mul(kSplineRadius, eps), sourceExtent);
  return distance2 > Rn::mul(reach, reach);
}

// ---- a node's source extent b (the spline rule's bound on how far its sources lie from its centre of mass)
//
// Bottom-up over the particles' tree, the same on the host (tree/particle_tree.cpp) and the device
// (cuda/kernel_particles.cu), every operation rounded on its own, so both give the same bits (max picks exactly,
// in any order):
//   leaf:           b = up(sqrt(max_j |x_j - com|^2)) over its particles
//   internal node:  b = max_c up(|com_c - com| + b_c) over its children
// up() multiplies by kExtentRoundUp = 1 + 2^-50: the rounded |x - com| (a difference, three squares, two sums and
// a square root, each with a relative error of at most 2^-53) is within 4 2^-53 of the true distance, the sum with
// b_c adds one more, and up() raises the result by at least 7 2^-53 of it (8 less its own rounding), so b bounds
// the true distance of every particle of the node from its (rounded) centre of mass, whatever the rounding.
// Massless particles count too (a looser bound, still a bound); an empty node's b is that of its massless
// particles about its cube's centre (the walks skip it).

constexpr double kExtentRoundUp = 1.0 + 0x1p-50;

/// Squared distance |p - c|^2, per axis differences then (dx^2 + dy^2) + dz^2.
template <class Rn = RoundNearest>
AG_HD double extentDistance2(double px, double py, double pz, const double* c) {
  return squaredNorm<Rn>(Rn::sub(px, c[0]), Rn::sub(py, c[1]), Rn::sub(pz, c[2]));
}

/// A leaf's extent from the largest squared distance of its particles from its centre of mass (0 for none).
template <class Rn = RoundNearest>
AG_HD double leafExtent(double maxDistance2) {
  return Rn::mul(Rn::sqrt(maxDistance2), kExtentRoundUp);
}

/// A child's bound on its parent's extent: up(|com_c - com| + b_c). The parent's b is the largest over its children.
template <class Rn = RoundNearest>
AG_HD double childExtent(const double* childCom, double childExtent, const double* com) {
  const double d = Rn::sqrt(extentDistance2<Rn>(childCom[0], childCom[1], childCom[2], com));
  return Rn::mul(Rn::add(d, childExtent), kExtentRoundUp);
}

}  // namespace amrgrav
