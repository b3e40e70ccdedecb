/// \file fmm_solve.h
/// \brief The fast multipole method's far field on the CPU (SolveOptions::method 'fmm'): Dehnen's symmetric
/// Cartesian FMM (W. Dehnen, ApJ 536, L39, 2000; J. Comput. Phys. 179, 27, 2002) with an error-bound MAC after
/// Dehnen (Comput. Astrophys. Cosmol. 1, 1, 2014); design and measurements: docs/fmm-design.md.
/// Isolated, fully periodic and partly periodic boxes (sheets, lines: the near images along the periodic axes
/// walked, the far ones through one kernel at a frontier level: far_images.h), one process; the caller
/// (cpu/cpu_backend.cpp) sorts the cells, removes the mean density (fully periodic) and applies G and the self term.
#pragma once
#include <cstdint>
#include <vector>

#include "core/status.h"
#include "core/types.h"
#include "fmm/evaluate.h"
#include "tree/tree.h"

namespace amrgrav {
namespace fmm {

/// phi = sum m/r and, with out.gx, g = sum m d/r^3 (d = target - source) at every sorted cell, each cell's own pair
/// left out, in scaled lengths (as cpu/cpu_walk.h's walk). Bitwise the same for any thread count. Fills the stats'
/// phase times, node counts and interactions: approxInteractions = directed M2L (node-node), directInteractions =
/// directed P2P cell pairs.
Status solveFmm(const std::vector<std::uint64_t>& sortedKeys, const RootCube& root, const SortedCells& cells,
                const SolveOptions& opt, int threads, FmmOutput out, SolveStats& stats);

/// The downward pass: L2L from the root down, a level at a time (a node's L is complete once its parent's level is
/// done), and L2P at the leaves, added to `out`; the nodes of a level in parallel, each writing only its children or
/// its own cells.
void passLocalsDown(const SortedCells& cells, int threads, FmmTree& tree, FmmOutput out);

}  // namespace fmm
}  // namespace amrgrav
