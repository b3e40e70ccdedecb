/// \file cpu_walk.h
/// \brief The CPU group walk: per group of cells, build the interaction lists with the conservative group MAC
/// (the semantics of the GPU warp vote), then evaluate them for every cell of the group.
#pragma once
#include <cstdint>

#include "tree/source_tree.h"
#include "tree/tree.h"

namespace amrgrav {
struct EwaldWalk;
}

namespace amrgrav {

struct WalkOutput {
  double* phi;             ///< per sorted cell, sum of m/r terms (unscaled)
  double *gx, *gy, *gz;    ///< null unless accelerations are wanted
  std::uint64_t approx = 0, direct = 0;
};

/// How one walk over a source tree meets the output.
struct WalkPass {
  bool accumulate = false;        ///< add to the output (a further source tree) instead of overwriting it
  bool sourcesAreTargets = true;  ///< the targets' own tree: each cell meets itself once (not counted in stats)
  /// Periodic, expanding groups: take each source's correction at the first usable node of its path
  /// (ewald/expansion_k.h). Off for received LETs, whose pruning assumed every node's own nearest image.
  bool hoistCorrection = true;
};

/// Walks groups [gb, ge) against the sources of `src`; results in sorted order, unscaled, as walkAllGroups.
/// out.approx and out.direct are incremented. Walking the local tree, then each received LET with accumulate set,
/// gives every cell the sum over the whole distribution in a fixed order. With `ewald` (periodic boxes; `src` must
/// then carry its nodes' second moments), nodes and cells act through their nearest images plus the tabulated
/// correction.
void walkGroups(const SourceTree& src, const SortedCells& targets, const Groups& groups, std::size_t gb,
                std::size_t ge, const SolveOptions& opt, int threads, WalkPass pass, WalkOutput& out,
                const EwaldWalk* ewald = nullptr);

/// Walks every group; results in sorted order, unscaled (phi = sum m/r, g = sum m d/r^3 + ...). With `ewald`
/// (periodic boxes), nodes and cells act through their nearest images plus the tabulated correction.
void walkAllGroups(const Octree& tree, const SortedCells& cells, const Groups& groups, const SolveOptions& opt,
                   int threads, WalkOutput& out, const EwaldWalk* ewald = nullptr);

/// Direct summation over all cells in sorted order, unscaled (the self pair contributes 0).
void directAll(const SortedCells& cells, bool accelerations, int threads, WalkOutput& out);

/// Direct summation at target-only points (probes, tree/system_points.h: sorted, scaled, no masses) over all the
/// cells `sources`, unscaled; a source at a point's position adds 0. out.direct counts every pair.
void directAt(const SortedCells& sources, const SortedCells& points, bool accel, int threads, WalkOutput& out);

}  // namespace amrgrav
