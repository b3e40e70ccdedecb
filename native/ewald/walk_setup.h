/// \file walk_setup.h
/// \brief What a periodic walk needs besides the tree: the table view in the walk's (scaled) lengths, and each
/// node's second moment S = sum m |x - com|^2 (the trace the traceless quadrupole drops; the correction C is not
/// harmonic in a fully periodic box, lap C = 4 pi / V, so its node expansion needs S).
#pragma once
#include <memory>
#include <vector>

#include "ewald/lookup_k.h"
#include "ewald/table.h"
#include "core/status.h"
#include "tree/tree.h"

namespace amrgrav {

struct EwaldWalk {
  EwaldTableView view;
  std::vector<double> nodeS;                ///< per node, scaled lengths
  std::shared_ptr<const EwaldTable> table;  ///< keeps view.coef alive
};

/// Gets the table for the options' box and periodic axes (memory, disk cache or build) and fills `out` for a
/// tree in the scaled lengths of `cells`. Records the time and the table's source in `stats`.
Status prepareEwaldTable(const SolveOptions& opt, double lengthScale, int threads, EwaldWalk& out, SolveStats& stats);

/// S of every node about its com (the expansion centre), bottom-up with the parallel-axis theorem (and the
/// children's dipoles when the tree has them).
std::vector<double> nodeSecondMoments(const SortedCells& cells, const Octree& tree);

}  // namespace amrgrav
