/// \file expansions.h
/// \brief The FMM's exact expansion shifts per node (fmm/multi_index.h's conventions): P2M at a leaf or M2M from the
/// children (upward), L2L into the children or L2P at a leaf's cells (downward). M2L is evaluate.h's.
#pragma once
#include <cstddef>

#include "fmm/evaluate.h"
#include "fmm/fmm_tree.h"
#include "fmm/multi_index.h"

namespace amrgrav {
namespace fmm {

/// M of node i about its centre: from its cells at a leaf (P2M), else from its children's M (M2M), which must be
/// done. Cells kLanes at a time in lanes, the lanes summed in lane order at the end. Without contraction
/// (multipoles.cpp), in fmm/upward_k.h's order: the device's upward pass gives the same bits.
void multipolesOfNode(const MultiIndex& mi, const SortedCells& cells, std::size_t i, FmmTree& tree);

/// Node i's L, which must be complete: shifted into each child's L (L2L), or at a leaf evaluated at its cells and
/// added to `out` (L2P; g gets minus the expansion's gradient).
void localsOfNode(const MultiIndex& mi, const SortedCells& cells, std::size_t i, FmmTree& tree, FmmOutput out);

}  // namespace fmm
}  // namespace amrgrav
