/// \file far_images.h
/// \brief The FMM's far periodic images (docs/fmm-design.md, section 7): the dual walk sees the box and its
/// neighbouring images along the periodic axes explicitly (|n_d| <= 1 along each periodic axis: 26 images in a fully
/// periodic box, 8 in a sheet, 2 on a line; interaction_lists.h), and every image farther away enters through the
/// kernel C_far(r) = psi(r) - sum_near 1/|r - n L| (psi the periodic Green's function of ewald/sums.h, the tree's;
/// far_kernel.h), which is smooth in the whole central region: its nearest singularities are two periods away along
/// a periodic axis (psi's linear growth across a sheet and logarithmic growth away from a line are smooth there).
///
/// C_far acts between the cubes of one "frontier" level whose side s is at most a quarter of the shortest period,
/// by one M2L per pair of cubes with C_far's derivatives at the cubes' offset (always a whole number of s per axis,
/// since both are cube centres). Two cubes' expansions reach (r_A + r_B) / (distance to C_far's nearest singularity)
/// <= sqrt(3) s / (L_min + s) = 0.35: the far images' truncation error is well below the walk's own M2L. The
/// derivatives (far_kernel.h) are kept per (periods in s, order) for the process and are checked against
/// ewald/sums.h's to third order and against Poisson's equation to order 7 (native/tests/fmm_far_kernel.cpp).
///
/// Frontier cubes are the tree's nodes of that level; cells in shallower leaves (small or coarse meshes) are binned
/// into the level's cubes here, with their own P2M and L2P.
#pragma once
#include <vector>

#include "core/status.h"
#include "fmm/evaluate.h"
#include "fmm/fmm_tree.h"

namespace amrgrav {
namespace fmm {

/// At most this many frontier cubes (the far pass is one M2L per pair of them): boxes whose aspect ratio needs more
/// (a frontier side of a quarter of the shortest period) are refused with a typed error.
constexpr int kMaxFarCubes = 4096;

/// Adds the far images' local expansions: into L of the tree's frontier nodes (before the downward pass), and for
/// cells in shallower leaves directly into `out` (after the near field: evaluateP2P overwrites). `period`: the
/// box's sides along its periodic axes in the solve's scaled lengths, 0 along its isolated ones.
Status addFarImages(const SortedCells& cells, const double period[3], int threads, FmmTree& tree, FmmOutput out);

}  // namespace fmm
}  // namespace amrgrav
