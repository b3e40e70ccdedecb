/// \file fmm_mac_k.h
/// \brief The fast multipole method's rules that decide its interaction lists: the pair acceptance test of the dual
/// tree walk and the per-node quantities it reads. One definition for the CPU FMM (native/fmm/) and a future CUDA
/// one, over a rounding policy (physics/rounding.h) so that both build the same lists.
///
/// A node pair (A, B) is accepted for one M2L each way (docs/fmm-design.md, section 3) when
///   1. r_A + r_B < theta R (Dehnen 2002's opening angle, as (r_A/theta + r_B/theta)^2 < R^2), and
///   2. the pair's truncation error bound e = ((r_A + r_B) / R)^(p+1) / (R - r_A - r_B), times the source's total
///      |mass|, is at most `tolerance` times a lower bound of the target's potential, both ways:
///      |M_B| e <= tolerance phiLow_A and |M_A| e <= tolerance phiLow_B (after Dehnen 2014's error-controlled MAC,
///      with a cruder bound); a tolerance of 0 skips this test and the next;
///   2b. for each side X = A, B that is a leaf: the target side's part of that error relative to the pair's own
///      potential, (r_X / R)^(p+1) (R + r_A + r_B) / (R - r_X) <= kFmmTargetSide tolerance (fmmTargetSideError).
///      (r_X / R)^(p+1) / (R - r_X) bounds the truncation of X's local expansion for a unit point source at the other
///      centre, and (R + r_A + r_B) / |M_Y| bounds from above 1 / (Y's potential at any cell of X), so each accepted
///      pair's target-side error is at most kFmmTargetSide tolerance times its own share of the cell's potential, and
///      their sum over every source of a cell at most kFmmTargetSide tolerance times the cell's potential, however
///      finely the walk splits the sources. Test 2 alone bounds each pair against one fixed lower bound, so its
///      errors add with the number of sources, and a leaf that cannot be opened (a coarse 4^3 leaf beside a refined
///      region) collects them by the hundred, each with the same sign: opening the small source does not shrink the
///      target's truncation (docs/fmm-design.md, section 3: "Every cell of random AMR meshes"). Leaves only: the walk
///      opens the larger node of a failing pair, so an internal target meets no source much smaller than itself
///      (none of the coherent hundreds), and on uniform grids the test would only add M2L (+20% at 64^3 if applied to
///      every node);
///   3. with accelerations (a limit > 0, fmmAccelLimit): the bound of the pair's error in the gradient,
///      e_g = (p + 1) q^p / (R - r_A - r_B)^2 with q = (r_A + r_B) / R, times the larger |mass| of the two, is at most
///      that limit (an acceleration, the same for every node): max(|M_A|, |M_B|) e_g <= accelLimit. The gradient's
///      truncation is one order lower than the potential's (L2P differentiates L of degree <= p: the first omitted
///      derivative of 1/R, of order p + 1, multiplies a target offset of degree p - |n| instead of p + 1 - |n|), and
///      its relative size grows as 1 / (R - r_A - r_B) for close pairs, so test 2 does not bound it
///      (docs/fmm-design.md, section 3: accelerations). e_g bounds the omitted terms' series
///      sum_(m > p) m q^(m-1) / R^2 = q^p ((p + 1) - p q) / (R - r_A - r_B)^2 from above, with each factor monotone in
///      q, R and r, so that fmm_let_k.h's LET proof holds for it.
/// R is the distance between the expansion centres, r a node's largest distance from its centre to one of its
/// cells' centres, phiLow = |M_root| / (the distance from the node's centre to the root cube's farthest corner +
/// r): no cell of the node has a smaller sum of |m|/r over all cells.
#pragma once
#include "core/hostdevice.h"
#include "physics/rounding.h"

namespace amrgrav {

/// r / theta: the node's part of test 1.
template <class Rn = RoundNearest>
AG_HD double fmmCriticalRadius(double radius, double theta) {
  return Rn::div(radius, theta);
}

/// The lower bound phiLow of the potential (sum of |m|/r, no G) at the node's cells: rootAbsMass over the distance
/// from the node's centre c to the farthest corner of the root cube [lo, lo + side)^3, plus the node's radius.
template <class Rn = RoundNearest>
AG_HD double fmmPotentialLowerBound(const double* c, double radius, const double* rootLo, double rootSide,
                                    double rootAbsMass) {
  double d[3];
  AG_RULE_UNROLL
  for (int k = 0; k < 3; ++k) d[k] = stdMax(Rn::sub(c[k], rootLo[k]), Rn::sub(Rn::add(rootLo[k], rootSide), c[k]));
  return Rn::div(rootAbsMass, Rn::add(Rn::sqrt(squaredNorm<Rn>(d[0], d[1], d[2])), radius));
}

/// Test 3's limit (an acceleration, no G): accelTolerance times |M_root| / side^2 of the root cube, the field of
/// the whole |mass| at one side's distance; 0 when accelTolerance is 0 (no test 3). Relative to this scale rather
/// than to each cell's |a|, which may vanish (a sphere's centre); on every mesh measured |M_root| / side^2 is 2.5-26x
/// below the largest |a| (docs/fmm-design.md, section 3).
template <class Rn = RoundNearest>
AG_HD double fmmAccelLimit(double accelTolerance, double rootAbsMass, double rootSide) {
  return accelTolerance > 0 ? Rn::mul(accelTolerance, Rn::div(rootAbsMass, Rn::mul(rootSide, rootSide))) : 0.0;
}

/// Test 3's bound e_g = (p + 1) q^p / (R - sr)^2 (see the file comment) from q = sr / R and R - sr, both computed
/// by the caller as for test 2; per unit source |mass|.
template <class Rn = RoundNearest>
AG_HD double fmmAccelPairError(double q, double gap, int order) {
  double qp = 1;  // q^p by repeated products, as test 2's power
  for (int k = 0; k < order; ++k) qp = Rn::mul(qp, q);
  return Rn::div(Rn::mul(double(order + 1), qp), Rn::mul(gap, gap));
}

/// Test 2b's limit over the tolerance: the largest measured error of the potential at every cell of random AMR meshes
/// is ~2% of test 2b's bound (docs/fmm-design.md, section 3), so 2 keeps 2e-5 at the default tolerance with margin.
constexpr double kFmmTargetSide = 2;

/// Test 2b's bound (see the file comment): (rt / R)^(p+1) (R + sr) / (R - rt) for the target radius rt, sr = r_A +
/// r_B. Non-decreasing in rt and sr and non-increasing in R, each operation monotone, so that fmm_let_k.h's LET
/// proof holds for it; mass-free, so the same both ways but for rt.
template <class Rn = RoundNearest>
AG_HD double fmmTargetSideError(double rt, double R, double sr, int order) {
  const double qt = Rn::div(rt, R);
  double qp = qt;  // qt^(p+1) by repeated products, as test 2's power
  for (int k = 0; k < order; ++k) qp = Rn::mul(qp, qt);
  return Rn::div(Rn::mul(qp, Rn::add(R, sr)), Rn::sub(R, rt));
}

/// The pair test (see the file comment). ca, cb: expansion centres; ra, rb: radii; rca, rcb: critical radii
/// (fmmCriticalRadius); ma, mb: total |mass|; lowA, lowB: fmmPotentialLowerBound; order: the expansion order p;
/// accelLimit: fmmAccelLimit (0: no test 3, and then the same operations and bits as without it); leafA, leafB: whether
/// each node is a leaf of the (one-process) tree, for test 2b.
template <class Rn = RoundNearest>
AG_HD bool fmmPairAccepts(const double* ca, double ra, double rca, double ma, double lowA, const double* cb, double rb,
                          double rcb, double mb, double lowB, int order, double tolerance, double accelLimit,
                          bool leafA, bool leafB) {
  const double R2 = squaredNorm<Rn>(Rn::sub(ca[0], cb[0]), Rn::sub(ca[1], cb[1]), Rn::sub(ca[2], cb[2]));
  const double s = Rn::add(rca, rcb);
  if (!(Rn::mul(s, s) < R2)) return false;
  if (tolerance <= 0 && accelLimit <= 0) return true;
  const double R = Rn::sqrt(R2), sr = Rn::add(ra, rb);
  const double q = Rn::div(sr, R);
  if (tolerance > 0) {
    double qp = q;  // q^(p+1) by repeated products: the same bits wherever it runs (pow's may differ)
    for (int k = 0; k < order; ++k) qp = Rn::mul(qp, q);
    const double e = Rn::div(qp, Rn::sub(R, sr));
    if (!(Rn::mul(mb, e) <= Rn::mul(tolerance, lowA) && Rn::mul(ma, e) <= Rn::mul(tolerance, lowB))) return false;
    const double side = Rn::mul(kFmmTargetSide, tolerance);  // test 2b
    if ((leafA && !(fmmTargetSideError<Rn>(ra, R, sr, order) <= side)) ||
        (leafB && !(fmmTargetSideError<Rn>(rb, R, sr, order) <= side)))
      return false;
  }
  return accelLimit <= 0 || Rn::mul(stdMax(ma, mb), fmmAccelPairError<Rn>(q, Rn::sub(R, sr), order)) <= accelLimit;
}

/// Signed sources (fully periodic boxes: the density contrast, expansions about cube centres; docs/fmm-design.md,
/// section 7): test 1 as fmmPairAccepts, then the truncation error estimated from each source's multipole norms
/// Q_n = |M^(n)| (the norm of its order-n moments: |m| d^n for one mass at distance d), after Dehnen (2014): the
/// omitted terms of order p + 1 pair source order n with target order p + 1 - n, so
///   e_(B->A) = [sum_(n=0..p) C(p+1, n) Q^B_n r_A^(p+1-n) + max(Q^B_p r_B, Q^B_(p-1) r_B^2)] / (R^(p+1) (R - r_A - r_B))
/// (the order p + 1 norm, not kept, estimated from the two highest kept: a symmetric distribution has no odd ones),
/// and each side's must be at most tolerance times `scale` (a scale of |phi|). With every Q^B_n <= |M| r_B^n this
/// is at most fmmPairAccepts's bound; a smooth source (small high-order norms) leaves mostly the target side's
/// truncation, r_A^(p+1) |M| / R^(p+2). qa, qb: order + 1 norms each. A tolerance of 0 skips the error test.
template <class Rn = RoundNearest>
AG_HD double fmmSignedPairError(const double* qb, double ra, double rb, double R, int order) {
  // sum_n C(p+1, n) Q_n ra^(p+1-n), the binomial coefficients by their recurrence (exact in doubles)
  double sum = 0, binom = 1;
  double pw[9];
  pw[0] = 1;
  for (int k = 1; k <= order + 1; ++k) pw[k] = Rn::mul(pw[k - 1], ra);
  for (int n = 0; n <= order; ++n) {
    sum = Rn::add(sum, Rn::mul(Rn::mul(binom, qb[n]), pw[order + 1 - n]));
    binom = Rn::div(Rn::mul(binom, double(order + 1 - n)), double(n + 1));
  }
  const double top = stdMax(Rn::mul(qb[order], rb), Rn::mul(qb[order - 1], Rn::mul(rb, rb)));
  double Rp = R;  // R^(p+1) by repeated products
  for (int k = 0; k < order; ++k) Rp = Rn::mul(Rp, R);
  return Rn::div(Rn::add(sum, top), Rn::mul(Rp, Rn::sub(R, Rn::add(ra, rb))));
}

template <class Rn = RoundNearest>
AG_HD bool fmmSignedPairAccepts(const double* ca, double ra, double rca, const double* qa, const double* cb, double rb,
                                double rcb, const double* qb, double scale, int order, double tolerance) {
  const double R2 = squaredNorm<Rn>(Rn::sub(ca[0], cb[0]), Rn::sub(ca[1], cb[1]), Rn::sub(ca[2], cb[2]));
  const double s = Rn::add(rca, rcb);
  if (!(Rn::mul(s, s) < R2)) return false;
  if (tolerance <= 0) return true;
  const double R = Rn::sqrt(R2), limit = Rn::mul(tolerance, scale);
  return fmmSignedPairError<Rn>(qb, ra, rb, R, order) <= limit && fmmSignedPairError<Rn>(qa, rb, ra, R, order) <= limit;
}

/// Which node of a failing pair the dual walk opens when both have children: the larger radius, and on a tie
/// (regular grids: equal radii everywhere) the one whose centre is lexicographically smaller (x, y, z; A when equal).
/// The choice depends on the pair, not on which node the walk holds first, so a distributed FMM's one-sided traversal
/// of a received LET (fmm/fmm_let.h) forms the pairs the one-process walk forms where the ranks' trees have the
/// one-process tree's nodes.
AG_HD bool fmmOpensFirst(double ra, const double* ca, double rb, const double* cb) {
  if (ra != rb) return ra > rb;
  for (int k = 0; k < 3; ++k)
    if (ca[k] != cb[k]) return ca[k] < cb[k];
  return true;
}

}  // namespace amrgrav
