/// \file moments_k.h
/// \brief The node moments and MAC radii: how a node's mass, expansion centre, quadrupole, dipole (signed sources),
/// second-moment trace S, extent box and MAC radius follow from its cells (a leaf) or its children. The one
/// definition, used by tree/moments.cpp and ewald/walk_setup.cpp on the host and cuda/kernel_moments.cu on the
/// device, so that both backends give every node the same bits and the walks the same lists. Also the node cube's
/// geometry (tree/build.cpp, the Barnes MAC's length and centre), a cell's extent (the root cube and the Bonsai
/// MAC's box) and the density contrast's source mass.
///
/// Each function is one step of the bottom-up sweep; the callers (a reverse sweep on the host, one launch per level
/// on the device) call them in the same order over the same cells and children, so the sums round alike. Every
/// operation is rounded on its own (physics/rounding.h).
#pragma once
#include <cmath>
#include <cstdint>

#include "core/hostdevice.h"
#include "physics/rounding.h"

namespace amrgrav {

/// The MAC radius of a node with no mass at all (and, for signed sources, no |mass|): every walk skips it and a
/// LET carries it childless.
constexpr double kEmptyNodeMacRadius = -1.0;
/// Is this MAC radius the empty node's marker?
AG_HD bool nodeIsEmpty(double macRadius) { return macRadius < 0.0; }

// ---- geometry

/// Side of a node's cube at tree level `level` (the root is level 0): rootSide / 2^level.
template <class Rn = RoundNearest>
AG_HD double nodeCubeSide(double rootSide, int level) {
  return Rn::div(rootSide, double(1u << level));
}

/// Centre of a node's cube along one axis: lo + (i + 1/2) side, i the cube's integer coordinate at its level
/// (i + 1/2 is exact: i < 2^21).
template <class Rn = RoundNearest>
AG_HD double nodeCubeCentre(double rootLo, std::uint32_t i, double side) {
  return Rn::add(rootLo, Rn::mul(double(i) + 0.5, side));
}

/// Half a cell's side: the cell covers [x - h, x + h] per axis.
template <class Rn = RoundNearest>
AG_HD double cellHalfSize(double size) {
  return Rn::mul(0.5, size);
}

/// Grows [lo, hi] along one axis by a cell at x of half side h (cellHalfSize): lo = min(lo, x - h), hi = max(hi,
/// x + h), as std::min / std::max pick. The root cube's bounds and a node's extent box.
template <class Rn = RoundNearest>
AG_HD void growByCell(double& lo, double& hi, double x, double h) {
  lo = stdMin(lo, Rn::sub(x, h));
  hi = stdMax(hi, Rn::add(x, h));
}

// ---- first pass: mass, weight, first moments and extent box of a node

/// What the first pass sums over a node's cells or children, in this order.
struct NodeSums {
  double M;        ///< mass (signed for signed sources)
  double A;        ///< sum |m| (signed sources only; else left 0: the weight is M)
  double sx, sy, sz;  ///< first moments sum m x (they place a centre of mass; not used for signed sources)
  double lo[3], hi[3];  ///< tight box around the cells' extents
};

/// Empty sums: zero moments, an empty box (lo = +inf, hi = -inf).
AG_HD NodeSums emptyNodeSums() {
  NodeSums s;
  s.M = s.A = s.sx = s.sy = s.sz = 0.0;
  AG_RULE_UNROLL
  for (int d = 0; d < 3; ++d) {
    s.lo[d] = INFINITY;
    s.hi[d] = -INFINITY;
  }
  return s;
}

/// The node's weight, which decides whether it is empty and scales the signed sources' delta: M, or sum |m|.
AG_HD double nodeWeight(const NodeSums& s, bool signedSources) { return signedSources ? s.A : s.M; }

/// A leaf's cell (centre x, y, z, mass m, side size) into the sums. firstMoments false leaves sx, sy, sz alone
/// (a node whose centre of mass is known already: the device's recomputed leaves).
template <class Rn = RoundNearest>
AG_HD void addCellToSums(NodeSums& s, double x, double y, double z, double m, double size, bool signedSources,
                         bool firstMoments = true) {
  s.M = Rn::add(s.M, m);
  if (signedSources) s.A = Rn::add(s.A, Rn::abs(m));
  if (firstMoments) {
    s.sx = Rn::add(s.sx, Rn::mul(m, x));
    s.sy = Rn::add(s.sy, Rn::mul(m, y));
    s.sz = Rn::add(s.sz, Rn::mul(m, z));
  }
  const double h = cellHalfSize<Rn>(size);
  growByCell<Rn>(s.lo[0], s.hi[0], x, h);
  growByCell<Rn>(s.lo[1], s.hi[1], y, h);
  growByCell<Rn>(s.lo[2], s.hi[2], z, h);
}

/// A child (mass m, weight a = its sum |m| for signed sources, expansion centre com, extent box [lo, hi]) into
/// its parent's sums.
template <class Rn = RoundNearest>
AG_HD void addChildToSums(NodeSums& s, double m, double a, const double* com, const double* lo, const double* hi,
                          bool signedSources) {
  s.M = Rn::add(s.M, m);
  if (signedSources) s.A = Rn::add(s.A, a);
  s.sx = Rn::add(s.sx, Rn::mul(m, com[0]));
  s.sy = Rn::add(s.sy, Rn::mul(m, com[1]));
  s.sz = Rn::add(s.sz, Rn::mul(m, com[2]));
  AG_RULE_UNROLL
  for (int d = 0; d < 3; ++d) {
    s.lo[d] = stdMin(s.lo[d], lo[d]);
    s.hi[d] = stdMax(s.hi[d], hi[d]);
  }
}

// ---- the MAC's frame and the expansion centre

/// The MAC's length l and centre: Barnes (bonsai false) the node cube's side and centre, Bonsai the longest side
/// and the centre of the tight box around the cells' extents (std::max({a, b, c}): the first largest).
template <class Rn = RoundNearest>
AG_HD void macFrame(bool bonsai, const NodeSums& s, double cubeSide, const double* cubeCentre, double& l,
                    double ctr[3]) {
  if (bonsai) {
    l = Rn::sub(s.hi[0], s.lo[0]);
    const double l1 = Rn::sub(s.hi[1], s.lo[1]), l2 = Rn::sub(s.hi[2], s.lo[2]);
    if (l < l1) l = l1;
    if (l < l2) l = l2;
    AG_RULE_UNROLL
    for (int d = 0; d < 3; ++d) ctr[d] = Rn::mul(0.5, Rn::add(s.lo[d], s.hi[d]));
  } else {
    l = cubeSide;
    AG_RULE_UNROLL
    for (int d = 0; d < 3; ++d) ctr[d] = cubeCentre[d];
  }
}

/// The expansion centre: for signed sources the MAC's centre, about which the dipole is kept (a centre of mass is
/// undefined when the masses sum to ~0; the centre of |m| left 3x the error on smooth perturbations, so the lists
/// depend on the masses only through delta and the expansions are linear in them); else the centre of mass, or
/// for a massless node the cube's centre (the walks skip it).
template <class Rn = RoundNearest>
AG_HD void expansionCentre(const NodeSums& s, bool signedSources, const double* ctr, const double* cubeCentre,
                           double cm[3]) {
  if (signedSources) {
    AG_RULE_UNROLL
    for (int d = 0; d < 3; ++d) cm[d] = ctr[d];
  } else if (s.M > 0) {
    cm[0] = Rn::div(s.sx, s.M);
    cm[1] = Rn::div(s.sy, s.M);
    cm[2] = Rn::div(s.sz, s.M);
  } else {
    AG_RULE_UNROLL
    for (int d = 0; d < 3; ++d) cm[d] = cubeCentre[d];
  }
}

// ---- second pass: quadrupole, dipole and S about the expansion centre

/// d = p - c, per axis.
template <class Rn = RoundNearest>
AG_HD void offsetFrom(const double* p, const double* c, double d[3]) {
  AG_RULE_UNROLL
  for (int k = 0; k < 3; ++k) d[k] = Rn::sub(p[k], c[k]);
}

/// Adds m (3 d d^T - |d|^2 I) to q (xx, xy, xz, yy, yz, zz): the traceless quadrupole of a mass m at offset d.
template <class Rn = RoundNearest>
AG_HD void addQuadrupole(double* q, double m, double dx, double dy, double dz) {
  const double d2 = squaredNorm<Rn>(dx, dy, dz);
  q[0] = Rn::add(q[0], Rn::mul(m, Rn::sub(Rn::mul(Rn::mul(3.0, dx), dx), d2)));
  q[1] = Rn::add(q[1], Rn::mul(m, Rn::mul(Rn::mul(3.0, dx), dy)));
  q[2] = Rn::add(q[2], Rn::mul(m, Rn::mul(Rn::mul(3.0, dx), dz)));
  q[3] = Rn::add(q[3], Rn::mul(m, Rn::sub(Rn::mul(Rn::mul(3.0, dy), dy), d2)));
  q[4] = Rn::add(q[4], Rn::mul(m, Rn::mul(Rn::mul(3.0, dy), dz)));
  q[5] = Rn::add(q[5], Rn::mul(m, Rn::sub(Rn::mul(Rn::mul(3.0, dz), dz), d2)));
}

/// D.s, (D0 s0 + D1 s1) + D2 s2: a child's dipole D along the shift s to its parent's centre. The quadrupole's
/// and S's dipole terms both take it (computed once).
template <class Rn = RoundNearest>
AG_HD double dipoleDot(const double* D, const double* s) {
  return Rn::add(Rn::add(Rn::mul(D[0], s[0]), Rn::mul(D[1], s[1])), Rn::mul(D[2], s[2]));
}

/// The dipole's part of shifting a child's quadrupole to the parent's centre (s = child centre - parent centre,
/// ds = dipoleDot(D, s)): 3 (D s^T + s D^T) - 2 (D.s) I, the cross terms of 3 (d + s)(d + s)^T - |d + s|^2 I summed
/// with weights m.
template <class Rn = RoundNearest>
AG_HD void addDipoleShift(double* q, const double* D, const double* s, double ds) {
  const double ds2 = Rn::mul(2.0, ds);
  q[0] = Rn::add(q[0], Rn::sub(Rn::mul(Rn::mul(6.0, D[0]), s[0]), ds2));
  q[1] = Rn::add(q[1], Rn::mul(3.0, Rn::add(Rn::mul(D[0], s[1]), Rn::mul(s[0], D[1]))));
  q[2] = Rn::add(q[2], Rn::mul(3.0, Rn::add(Rn::mul(D[0], s[2]), Rn::mul(s[0], D[2]))));
  q[3] = Rn::add(q[3], Rn::sub(Rn::mul(Rn::mul(6.0, D[1]), s[1]), ds2));
  q[4] = Rn::add(q[4], Rn::mul(3.0, Rn::add(Rn::mul(D[1], s[2]), Rn::mul(s[1], D[2]))));
  q[5] = Rn::add(q[5], Rn::sub(Rn::mul(Rn::mul(6.0, D[2]), s[2]), ds2));
}

/// A leaf's cell of mass m at offset d = x - cm from the expansion centre: its dipole m d.
template <class Rn = RoundNearest>
AG_HD void addCellDipole(double* D, double m, const double* d) {
  AG_RULE_UNROLL
  for (int k = 0; k < 3; ++k) D[k] = Rn::add(D[k], Rn::mul(m, d[k]));
}

/// A leaf's cell of mass m at offset d from the expansion centre: S += m |d|^2.
template <class Rn = RoundNearest>
AG_HD double addCellSecondMoment(double S, double m, const double* d) {
  return Rn::add(S, Rn::mul(m, squaredNorm<Rn>(d[0], d[1], d[2])));
}

/// A child (quadrupole qc, mass m) at offset s = child centre - parent centre, into its parent's quadrupole: the
/// parallel-axis theorem, qc + m (3 s s^T - |s|^2 I). A child with a dipole (signed sources: its expansion centre
/// is not its centre of mass) then adds addDipoleShift's terms.
template <class Rn = RoundNearest>
AG_HD void addChildQuadrupole(double* q, const double* qc, double m, const double* s) {
  AG_RULE_UNROLL
  for (int r = 0; r < 6; ++r) q[r] = Rn::add(q[r], qc[r]);
  addQuadrupole<Rn>(q, m, s[0], s[1], s[2]);
}

/// A child's dipole Dc about its own centre, moved to the parent's: D += Dc + m s.
template <class Rn = RoundNearest>
AG_HD void addChildDipole(double* D, const double* Dc, double m, const double* s) {
  AG_RULE_UNROLL
  for (int k = 0; k < 3; ++k) D[k] = Rn::add(D[k], Rn::add(Dc[k], Rn::mul(m, s[k])));
}

/// A child's second-moment trace Sc into its parent's (parallel-axis): S + (Sc + m |s|^2). A child with a dipole
/// then adds addDipoleSecondMoment's term.
template <class Rn = RoundNearest>
AG_HD double addChildSecondMoment(double S, double Sc, double m, const double* s) {
  return Rn::add(S, Rn::add(Sc, Rn::mul(m, squaredNorm<Rn>(s[0], s[1], s[2]))));
}

/// The dipole's part of moving a child's S to the parent's centre: S + 2 ds, ds = dipoleDot(Dc, s).
template <class Rn = RoundNearest>
AG_HD double addDipoleSecondMoment(double S, double ds) {
  return Rn::add(S, Rn::mul(2.0, ds));
}

/// The order in which a parent takes a child k, on the host (tree/moments.cpp, ewald/walk_setup.cpp) and the
/// device (cuda/kernel_moments.cu) alike, s = offsetFrom(child centre, parent centre):
///   addChildQuadrupole(q, ...); S = addChildSecondMoment(S, ...);
///   with dipoles: ds = dipoleDot(Dc, s); addDipoleShift(q, Dc, s, ds); addChildDipole(D, ...);
///                 S = addDipoleSecondMoment(S, ds).
/// (q, D and S are separate sums, so only the order within each matters.)

// ---- the MAC radius

/// MAC radius l/theta + delta, or kEmptyNodeMacRadius for a node of weight W = 0 (nodeWeight). delta is the offset
/// of the centre of mass from the MAC's centre ctr: |cm - ctr|; for signed sources (D, the dipole about cm = ctr,
/// read only then) |D + M (cm - ctr)| / W, the same offset weighted by |m| (|com - centre| again when no mass is
/// negative; delta = 0 left 3x the error on smooth perturbations, bench/RESULTS.md).
template <class Rn = RoundNearest>
AG_HD double nodeMacRadius(double l, double theta, double M, double W, bool signedSources, const double* D,
                           const double* cm, const double* ctr) {
  double delta;
  if (signedSources && W > 0) {
    double e[3];
    AG_RULE_UNROLL
    for (int d = 0; d < 3; ++d) e[d] = Rn::add(D[d], Rn::mul(M, Rn::sub(cm[d], ctr[d])));
    delta = Rn::div(Rn::sqrt(squaredNorm<Rn>(e[0], e[1], e[2])), W);
  } else {
    delta = Rn::sqrt(squaredNorm<Rn>(Rn::sub(cm[0], ctr[0]), Rn::sub(cm[1], ctr[1]), Rn::sub(cm[2], ctr[2])));
  }
  const double r = Rn::add(Rn::div(l, theta), delta);  // always computed: the device then selects, no branch
  return W > 0 ? r : kEmptyNodeMacRadius;
}

// ---- the density contrast

/// A cell's source mass in a fully periodic solve for the density contrast: m - rho size^3 (rho in the scaled
/// units of size).
template <class Rn = RoundNearest>
AG_HD double contrastMass(double m, double rho, double size) {
  return Rn::sub(m, Rn::mul(rho, Rn::mul(Rn::mul(size, size), size)));
}

}  // namespace amrgrav
