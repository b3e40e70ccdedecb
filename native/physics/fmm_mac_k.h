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
///      with a cruder bound); a tolerance of 0 skips this test.
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

/// The pair test (see the file comment). ca, cb: expansion centres; ra, rb: radii; rca, rcb: critical radii
/// (fmmCriticalRadius); ma, mb: total |mass|; lowA, lowB: fmmPotentialLowerBound; order: the expansion order p.
template <class Rn = RoundNearest>
AG_HD bool fmmPairAccepts(const double* ca, double ra, double rca, double ma, double lowA, const double* cb, double rb,
                          double rcb, double mb, double lowB, int order, double tolerance) {
  const double R2 = squaredNorm<Rn>(Rn::sub(ca[0], cb[0]), Rn::sub(ca[1], cb[1]), Rn::sub(ca[2], cb[2]));
  const double s = Rn::add(rca, rcb);
  if (!(Rn::mul(s, s) < R2)) return false;
  if (tolerance <= 0) return true;
  const double R = Rn::sqrt(R2), sr = Rn::add(ra, rb);
  const double q = Rn::div(sr, R);
  double qp = q;  // q^(p+1) by repeated products: the same bits wherever it runs (pow's may differ)
  for (int k = 0; k < order; ++k) qp = Rn::mul(qp, q);
  const double e = Rn::div(qp, Rn::sub(R, sr));
  return Rn::mul(mb, e) <= Rn::mul(tolerance, lowA) && Rn::mul(ma, e) <= Rn::mul(tolerance, lowB);
}

}  // namespace amrgrav
