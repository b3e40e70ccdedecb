/// \file let_accept_k.h
/// \brief When a LET may carry a node childless for a remote box of cell centres: the test of the host's
/// essentialNodesFor / essentialNodesForPeriodic (core/let.h), shared with the GPU rank's selection
/// (cuda/kernel_let.cu, compiled without FMA contraction so that both choose the same nodes).
#pragma once
#include <math.h>

#include "core/hostdevice.h"
#include "core/mac_k.h"

namespace amrgrav {

/// Would the receiving periodic walk accept node (com, R) for every group inside [lo, hi]? For every image of it
/// that a group of the box could see (the image nearest the group's centre), the MAC holds for the whole box and the
/// image's other copies and the table's reach allow its expansion. With a margin of 1e-9, so that rounding can
/// never make the receiver open a node that was not sent open. View: an EwaldTableViewOf (its period, invPeriod and
/// reach).
template <class View>
AG_HD bool periodicBoxAccepts(const View& v, const double* com, double R, const double lo[3], const double hi[3]) {
  const double kMargin = 1 + 1e-9;
  long kLo[3] = {0, 0, 0}, kHi[3] = {0, 0, 0};
  for (int d = 0; d < 3; ++d) {
    if (v.period[d] <= 0) continue;
    // the receiver's shift is P rint((group centre - com) / P), monotone in the group centre
    kLo[d] = long(rint((lo[d] - com[d]) * v.invPeriod[d]));
    kHi[d] = long(rint((hi[d] - com[d]) * v.invPeriod[d]));
  }
  for (long kx = kLo[0]; kx <= kHi[0]; ++kx)
    for (long ky = kLo[1]; ky <= kHi[1]; ++ky)
      for (long kz = kLo[2]; kz <= kHi[2]; ++kz) {
        const long k[3] = {kx, ky, kz};
        double s[3];
        for (int d = 0; d < 3; ++d) {
          s[d] = com[d] + double(k[d]) * v.period[d];
          if (v.period[d] <= 0) continue;
          const double a = hi[d] - s[d], b = s[d] - lo[d];
          const double far = a > b ? a : b;
          if (!(far * kMargin <= v.reach[d] && v.period[d] - far * kMargin > R * kMargin)) return false;
        }
        if (!macAccepts(s[0], s[1], s[2], R * kMargin, lo, hi)) return false;
      }
  return true;
}

}  // namespace amrgrav
