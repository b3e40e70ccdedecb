/// \file far_images.h
/// \brief The FMM's far periodic images (docs/fmm-design.md, section 7): the dual walk sees the box and its
/// neighbouring images along the periodic axes explicitly (|n_d| <= 1 along each periodic axis: 26 images in a fully
/// periodic box, 8 in a sheet, 2 on a line; interaction_lists.h), and every image farther away enters through the
/// kernel C_far(r) = psi(r) - sum_near 1/|r - n L| (psi the periodic Green's function of ewald/sums.h, the tree's;
/// far_kernel.h), which is smooth in the whole central region: its nearest singularities are two periods away along
/// a periodic axis (psi's linear growth across a sheet and logarithmic growth away from a line are smooth there).
///
/// C_far acts between the cubes of one "frontier" level whose side s is at most a quarter of the shortest period.
/// Two cubes' expansions reach (r_A + r_B) / (distance to C_far's nearest singularity) <= sqrt(3) s / (L_min + s)
/// = 0.35: the far images' truncation error is well below the walk's own M2L. The pass builds its own octree over
/// the cubes (a node: the box of the occupied cubes under it, expanded about its centre by M2M) and walks it from
/// the root with itself: two nodes of a level interact by one M2L each way when they reach no further than two cubes
/// may (0.3465 of the distance to the nearest far image), else both are opened, down to the cubes, which always
/// interact; the nodes' local expansions go down to the cubes by L2L. In a cubic box no node above the cubes
/// qualifies (every pair of cubes interacts, as a plain all-pairs pass would); in a box whose isolated side is long
/// (a tall sheet) the cubes far apart along it interact through their ancestors, and the pass costs ~N_cubes log
/// instead of N_cubes^2 M2L. Centres lie on the grid of half cubes, so the derivatives (far_kernel.h) are kept per
/// (periods in half cubes, order, offset) for the process; they are checked against ewald/sums.h's to third order
/// and against Poisson's equation to order 7 (native/tests/fmm_far_kernel.cpp).
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
///
/// `sum` (a distributed solve, fmm/fmm_let.h): the far field needs every rank's cells. The frontier cubes' multipoles
/// (dense: cube (ix, iy, iz) at ((iz per + iy) per + ix) termCount(p), per = farCubesPerAxis) are summed over the
/// ranks by `sum` (collective: every rank calls it once, cells or none), and the far pass runs over every rank's
/// cubes (the same octree and pairs on every rank), each rank taking its own cubes' local expansions.
/// `adds` (with `sum`): whether this rank adds a frontier node's multipoles, which are every rank's for a shared node
/// (fmm_tree.h SharedNodes): only its lowest rank adds them.
using FarCubeSum = std::function<Status(std::vector<double>& dense)>;
Status addFarImages(const SortedCells& cells, const double period[3], int threads, FmmTree& tree, FmmOutput out,
                    const FarCubeSum& sum = {}, const std::function<bool(std::uint32_t node)>& adds = {});

/// Frontier cubes per axis of the root cube of side `rootSide` (the same lengths as `period`; 0: an isolated axis).
int farCubesPerAxis(const double period[3], double rootSide);

}  // namespace fmm
}  // namespace amrgrav
