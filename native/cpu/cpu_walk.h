/// \file cpu_walk.h
/// \brief The CPU group walk: per group of cells, build the interaction lists with the conservative group MAC
/// (the semantics of the GPU warp vote), then evaluate them for every cell of the group.
#pragma once
#include <cstdint>

#include "core/tree.h"

namespace amrgrav {
struct EwaldWalk;
}

namespace amrgrav {

struct WalkOutput {
  double* phi;             ///< per sorted cell, sum of m/r terms (unscaled)
  double *gx, *gy, *gz;    ///< null unless accelerations are wanted
  std::uint64_t approx = 0, direct = 0;
};

/// Walks every group; results in sorted order, unscaled (phi = sum m/r, g = sum m d/r^3 + ...). With `ewald`
/// (periodic boxes), nodes and cells act through their nearest images plus the tabulated correction.
void walkAllGroups(const Octree& tree, const SortedCells& cells, const Groups& groups, const SolveOptions& opt,
                   int threads, WalkOutput& out, const EwaldWalk* ewald = nullptr);

/// Direct summation over all cells in sorted order, unscaled (the self pair contributes 0).
void directAll(const SortedCells& cells, bool accelerations, int threads, WalkOutput& out);

}  // namespace amrgrav
