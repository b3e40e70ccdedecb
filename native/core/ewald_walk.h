/// \file ewald_walk.h
/// \brief What a periodic walk needs besides the tree: the table view in the walk's (scaled) lengths, and each
/// node's second moment S = sum m |x - com|^2 (the trace the traceless quadrupole drops; the correction C is not
/// harmonic in a fully periodic box, lap C = 4 pi / V, so its node expansion needs S).
#pragma once
#include <memory>
#include <vector>

#include "core/ewald_lookup_k.h"
#include "core/ewald_table.h"
#include "core/status.h"
#include "core/tree.h"

namespace amrgrav {

struct EwaldWalk {
  EwaldTableView view;
  std::vector<double> nodeS;                ///< per node, scaled lengths
  std::shared_ptr<const EwaldTable> table;  ///< keeps view.coef alive
};

/// Gets the table for the options' box and periodic axes (memory, disk cache or build) and fills `out` for a
/// tree in the scaled lengths of `cells`. Records the time and the table's source in `stats`.
Status prepareEwaldTable(const SolveOptions& opt, double lengthScale, int threads, EwaldWalk& out, SolveStats& stats);

/// S of every node, bottom-up with the parallel-axis theorem.
std::vector<double> nodeSecondMoments(const SortedCells& cells, const Octree& tree);

/// The image of a node that a group sees, and whether the group may use the node's expansion there.
/// The node (com, MAC radius R = l/theta + delta) is placed at the image whose com is nearest the group's centre
/// (`shifted`). For every mass j of the node, psi(t - x_j) = 1/|t - x_j - s| + C_ext(t - x_j - s) holds exactly for
/// that one shift s, with C_ext(x) = psi(x) - 1/|x| the correction continued beyond the half box (the table
/// reaches 9/16 of a period). Both parts are expanded about the shifted com, so the node is usable when:
///  (1) the MAC holds at the shifted com (tested by the caller, with the shifted com);
///  (2) every separation group point - shifted com lies within the table's reach on each periodic axis;
///  (3) the node's other images, C_ext's singularities, also satisfy the MAC: they are at least
///      P - (largest separation along that axis) away, which must exceed R.
/// A node that fails (2) or (3) is opened; its cells then take their own nearest images. This replaces the
/// classic "open every node that straddles the half-box distance", which opens a whole shell of cells around
/// the half-box surface for each group of 32.
AG_HD bool periodicNodeImage(const EwaldTableView& v, const double* glo, const double* ghi, const double* com,
                             double macRadius, double shifted[3]) {
  bool ok = true;
  for (int d = 0; d < 3; ++d) {
    shifted[d] = com[d];
    if (v.period[d] <= 0) continue;
    const double P = v.period[d];
    const double sep = 0.5 * (glo[d] + ghi[d]) - com[d];
    shifted[d] = com[d] + (sep - nearestImage(sep, P, v.invPeriod[d]));  // a whole number of periods
    const double far = ghi[d] - shifted[d] > shifted[d] - glo[d] ? ghi[d] - shifted[d] : shifted[d] - glo[d];
    ok = ok && far <= v.reach[d] && P - far > macRadius;
  }
  return ok;
}

}  // namespace amrgrav
