/// \file let_accept_k.h
/// \brief When a LET may carry a node childless for a remote box of cell centres: the test of the host's
/// essentialNodesFor / essentialNodesForPeriodic (let/let.h), shared with the GPU rank's selection
/// (cuda/kernel_let.cu): every operation rounded on its own (physics/rounding.h), so that both choose the same
/// nodes.
#pragma once
#include "core/hostdevice.h"
#include "core/types.h"
#include "physics/mac_k.h"
#include "physics/rounding.h"
#include "physics/softening_k.h"

namespace amrgrav {

/// Would the receiving periodic walk accept node (com, R) for every group of the remote box [lo, hi] of cell
/// centres? A group takes the node's image nearest its centre (physics/image_k.h periodicNodeImage), and may use
/// the node there when the MAC holds, the group's points lie within the table's reach of the image, and the node's
/// other copies are more than R away. For each image s = com + kP that some group centre in the box may pick, the
/// groups that pick it have their centres within P/2 of s (and in the box) and their half-widths at most W (the
/// remote rank's largest group half-width per axis; W = infinity: any group inside the box): every one of them lies
/// in the box B_k = [max(lo, s - P/2 - W), min(hi, s + P/2 + W)] and reaches at most min(max(b - s, s - a) + W,
/// whole box) from s, with [a, b] its centres' range. The node travels childless when all of them would accept it.
/// With a margin of 1e-9, so that rounding can never make the receiver open a node that was not sent open.
/// View: an EwaldTableViewOf (its period, invPeriod and reach).
template <class Rn = RoundNearest, class View>
AG_HD bool periodicBoxAccepts(const View& v, const double* com, double R, const double lo[3], const double hi[3],
                              const double W[3]) {
  const double kMargin = 1 + 1e-9;
  long kLo[3] = {0, 0, 0}, kHi[3] = {0, 0, 0};
  for (int d = 0; d < 3; ++d) {
    if (v.period[d] <= 0) continue;
    // the receiver's shift is P rint((group centre - com) / P), monotone in the group centre
    kLo[d] = long(Rn::rint(Rn::mul(Rn::sub(lo[d], com[d]), v.invPeriod[d])));
    kHi[d] = long(Rn::rint(Rn::mul(Rn::sub(hi[d], com[d]), v.invPeriod[d])));
  }
  const double Rm = Rn::mul(R, kMargin);
  for (long kx = kLo[0]; kx <= kHi[0]; ++kx)
    for (long ky = kLo[1]; ky <= kHi[1]; ++ky)
      for (long kz = kLo[2]; kz <= kHi[2]; ++kz) {
        const long k[3] = {kx, ky, kz};
        double s[3], blo[3], bhi[3];
        for (int d = 0; d < 3; ++d) {
          s[d] = Rn::add(com[d], Rn::mul(double(k[d]), v.period[d]));
          blo[d] = lo[d];
          bhi[d] = hi[d];
          if (v.period[d] <= 0) continue;
          const double half = Rn::mul(Rn::mul(0.5, v.period[d]), kMargin);  // ties and rounding: the wider range
          const double sLo = Rn::sub(s[d], half), sHi = Rn::add(s[d], half);
          const double a = lo[d] > sLo ? lo[d] : sLo;
          const double b = hi[d] < sHi ? hi[d] : sHi;
          const double up = Rn::sub(hi[d], s[d]), down = Rn::sub(s[d], lo[d]);
          const double whole = up > down ? up : down;
          const double cUp = Rn::sub(b, s[d]), cDown = Rn::sub(s[d], a);
          const double centres = cUp > cDown ? cUp : cDown;
          const double reached = Rn::add(centres, W[d]);
          const double far = reached < whole ? reached : whole;
          const double farM = Rn::mul(far, kMargin);
          if (!(farM <= v.reach[d] && Rn::sub(v.period[d], farM) > Rm)) return false;
          const double aW = Rn::sub(a, W[d]), bW = Rn::add(b, W[d]);
          if (aW > blo[d]) blo[d] = aW;
          if (bW < bhi[d]) bhi[d] = bW;
        }
        if (!macAccepts<Rn>(s[0], s[1], s[2], Rm, blo, bhi)) return false;
      }
  return true;
}

/// Would the receiving softened walk accept the particle node (com, MAC radius R, source extent b, softenings
/// [nodeMin, nodeMax]) for every group of the remote box [lo, hi] (remoteBoxFor: the receiver's box of centres,
/// grown by its particles' spline reach)? The walk's test (cpu/soft_lists.cpp, cuda/kernel_walk.cu) is the box MAC
/// and softeningAccepts for the group's softening range. Every group box lies in the ungrown box, so:
///  - the MAC for [lo, hi] holds for every group inside (as for the cells' LETs);
///  - spline: distance(group, com) >= distance([lo, hi], com) + growth > kSplineRadius nodeMax + b + kSplineRadius
///    eps_receiver_max >= kSplineRadius max(eps_group_max, nodeMax) + b (the growth is the receiver's largest
///    spline reach plus a rounding margin; without particles there is no growth and the group's softening is 0:
///    the same rounded test on a box that holds the group's, which rounds to no smaller a distance);
///  - plummer: nodeMin == nodeMax, or nodeMax <= softMin, the smallest softening of the receiver's targets (0 when
///    it has cells or probes) and so at most every group's smallest.
template <class Rn = RoundNearest>
AG_HD bool particleBoxAccepts(SofteningKernel kernel, const double* com, double R, double extent, double nodeMin,
                              double nodeMax, double softMin, const double lo[3], const double hi[3]) {
  if (!macAccepts<Rn>(com[0], com[1], com[2], R, lo, hi)) return false;
  return softeningAccepts<Rn>(kernel, distanceSquaredToBox<Rn>(com[0], com[1], com[2], lo, hi), extent, softMin, 0.0,
                              nodeMin, nodeMax);
}

}  // namespace amrgrav
