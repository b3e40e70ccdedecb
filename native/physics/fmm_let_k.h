/// \file fmm_let_k.h
/// \brief The FMM's LET rule (a distributed FMM, docs/fmm-design.md section 8): whether a node of the sending rank's
/// FMM tree may travel childless to a receiving rank, i.e. whether every pair the receiver could form with it is
/// accepted by the one-process pair test (physics/fmm_mac_k.h). One definition over a rounding policy, as the MAC.
///
/// What the receiver does with a received LET (fmm/fmm_let.h): a one-sided dual traversal of its own tree (targets)
/// against the LET (sources) that makes the one-process walk's decisions: fmmPairAccepts / fmmSignedPairAccepts on
/// each pair (a, b), and for a failing pair the node interaction_lists.cpp opens (b when a is a leaf, a when b is a
/// leaf, else fmmOpensFirst). A node sent childless cannot be opened, so it may travel childless only when every
/// pair that would open it passes: a pair with one of the receiver's leaves, or (b internal) with a receiver node of
/// radius <= r_b (fmmOpensFirst opens the larger). The receiver summarises its leaves, and its nodes by radius class,
/// in FmmReach bounds: the box of their expansion centres, the largest radius, critical radius and |mass|, the
/// smallest potential lower bound (isolated) and the largest multipole norm of each order (periodic). The tests
/// below are the pair tests with the target's quantities replaced by those bounds and the distance by the distance
/// from the source's centre to the box. Proof that the bound is safe: for a node a of the receiver, each axis of
/// the centres' difference satisfies |fl(c_a - c_b)| >= fl(lo - c_b) (or fl(c_b - hi), or 0) because c_a lies in
/// [lo, hi] and correctly rounded subtraction is monotone; squares, sums, sqrt, products and quotients of
/// non-negative numbers are monotone too, so the computed R2 of the real pair is at least the bound's, the computed
/// radii sums, truncation errors and |mass| products at most the bound's, and the lower bounds at least: every
/// inequality the bound passes, the real pair passes, in the same floating-point arithmetic. Checked on random
/// inputs in native/tests/physics_rules.cpp.
#pragma once
#include "core/hostdevice.h"
#include "physics/fmm_mac_k.h"
#include "physics/rounding.h"

namespace amrgrav {

/// The squared distance from c to the box [lo, hi] (0 inside), per axis as the pair test's difference of centres.
template <class Rn = RoundNearest>
AG_HD double fmmBoxDistance2(const double* lo, const double* hi, const double* c) {
  double d[3];
  AG_RULE_UNROLL
  for (int k = 0; k < 3; ++k) d[k] = c[k] < lo[k] ? Rn::sub(lo[k], c[k]) : c[k] > hi[k] ? Rn::sub(c[k], hi[k]) : 0.0;
  return squaredNorm<Rn>(d[0], d[1], d[2]);
}

/// Isolated boxes: fmmPairAccepts(a, b) holds for every receiver node a with its centre in [lo, hi], radius <= raMax,
/// critical radius <= rcaMax, |mass| <= maMax and lower bound >= lowAMin. cb, rb, rcb, mb, lowB: the source node's
/// (its centre moved by an image shift where there is one). accelLimit: the solve's (fmmAccelLimit, the same on
/// every rank); test 2b's and test 3's bounds grow with q and r and fall with R, each factor monotone, so the proof
/// above holds. Test 2b is applied to the receiver's side as if its node were a leaf (the stricter case: the reach
/// does not say), and to the source's side when leafB (the node is a leaf of the one-process tree).
template <class Rn = RoundNearest>
AG_HD bool fmmBoxAccepts(const double* lo, const double* hi, double raMax, double rcaMax, double maMax, double lowAMin,
                         const double* cb, double rb, double rcb, double mb, double lowB, int order, double tolerance,
                         double accelLimit, bool leafB) {
  const double R2 = fmmBoxDistance2<Rn>(lo, hi, cb);
  const double s = Rn::add(rcaMax, rcb);
  if (!(Rn::mul(s, s) < R2)) return false;
  if (tolerance <= 0 && accelLimit <= 0) return true;
  const double R = Rn::sqrt(R2), sr = Rn::add(raMax, rb);
  const double q = Rn::div(sr, R);
  if (tolerance > 0) {
    double qp = q;
    for (int k = 0; k < order; ++k) qp = Rn::mul(qp, q);
    const double e = Rn::div(qp, Rn::sub(R, sr));
    if (!(Rn::mul(mb, e) <= Rn::mul(tolerance, lowAMin) && Rn::mul(maMax, e) <= Rn::mul(tolerance, lowB))) return false;
    const double side = Rn::mul(kFmmTargetSide, tolerance);  // test 2b, at the largest receiver radius
    if (!(fmmTargetSideError<Rn>(raMax, R, sr, order) <= side) ||
        (leafB && !(fmmTargetSideError<Rn>(rb, R, sr, order) <= side)))
      return false;
  }
  return accelLimit <= 0 || Rn::mul(stdMax(maMax, mb), fmmAccelPairError<Rn>(q, Rn::sub(R, sr), order)) <= accelLimit;
}

/// Fully periodic boxes (signed sources): fmmSignedPairAccepts(a, b) holds for every receiver node a with its
/// centre in [lo, hi], radius <= raMax, critical radius <= rcaMax and multipole norms qa[n] <= qaMax[n]. `scale`: the
/// solve's scale of |phi| (the same on every rank).
template <class Rn = RoundNearest>
AG_HD bool fmmSignedBoxAccepts(const double* lo, const double* hi, double raMax, double rcaMax, const double* qaMax,
                               const double* cb, double rb, double rcb, const double* qb, double scale, int order,
                               double tolerance) {
  const double R2 = fmmBoxDistance2<Rn>(lo, hi, cb);
  const double s = Rn::add(rcaMax, rcb);
  if (!(Rn::mul(s, s) < R2)) return false;
  if (tolerance <= 0) return true;
  const double R = Rn::sqrt(R2), limit = Rn::mul(tolerance, scale);
  return fmmSignedPairError<Rn>(qb, raMax, rb, R, order) <= limit &&
         fmmSignedPairError<Rn>(qaMax, rb, raMax, R, order) <= limit;
}

}  // namespace amrgrav
