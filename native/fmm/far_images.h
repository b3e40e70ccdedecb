/// \file far_images.h
/// \brief The FMM's far periodic images (fully periodic boxes; docs/fmm-design.md, section 7): the dual walk sees the
/// box and its 26 neighbouring images explicitly (interaction_lists.h), and every image farther away enters through
/// the kernel C_far(r) = psi(r) - sum_{|n|_inf <= 1} 1/|r - n L| (psi the zero-mean periodic Green's function of
/// ewald/sums.h), which is smooth in the whole central region: its nearest singularities are two periods away.
///
/// C_far acts between the cubes of one "frontier" level whose side s is at most a quarter of the shortest period,
/// by one M2L per pair of cubes with C_far's derivatives at the cubes' offset (always a whole number of s per axis,
/// since both are cube centres). Two cubes' expansions reach (r_A + r_B) / (distance to C_far's nearest singularity)
/// <= sqrt(3) s / (L_min + s) = 0.35: the far images' truncation error is well below the walk's own M2L. The
/// derivatives come from Ewald sums differentiated to order p (real space through the radial derivatives of
/// erfc(a r)/r, the 27 near images as -erf(a r)/r, smooth at r = 0; reciprocal space term by term), are kept per
/// (periods in s, order) for the process, and are checked against ewald/sums.h's to third order (native/tests).
///
/// Frontier cubes are the tree's nodes of that level; cells in shallower leaves (small or coarse meshes) are binned
/// into the level's cubes here, with their own P2M and L2P.
#pragma once
#include <functional>
#include <vector>

#include "core/status.h"
#include "fmm/evaluate.h"
#include "fmm/fmm_tree.h"

namespace amrgrav {
namespace fmm {

/// At most this many frontier cubes (the far pass is one M2L per pair of them): boxes whose aspect ratio needs more
/// (a frontier side of a quarter of the shortest period) are refused with a typed error.
constexpr int kMaxFarCubes = 4096;

/// Derivatives of C_far up to order p (termCount(p) values in fmm/multi_index.h's order) at the offset `offset`
/// (in units of the frontier side s = 1) for the periods `period` (also in units of s). Exposed for the tests.
std::vector<double> farKernelDerivatives(const double period[3], int order, const double offset[3]);

/// Adds the far images' local expansions: into L of the tree's frontier nodes (before the downward pass), and for
/// cells in shallower leaves directly into `out` (after the near field: evaluateP2P overwrites). `period`: the
/// box's sides in the solve's scaled lengths.
///
/// `sum` (a distributed solve, fmm/fmm_let.h): the far field needs every rank's cells. The frontier cubes' multipoles
/// (dense: cube (ix, iy, iz) at ((iz per + iy) per + ix) termCount(p), per = farCubesPerAxis) are summed over the
/// ranks by `sum` (collective: every rank calls it once, cells or none), and every cube of any rank is a source.
using FarCubeSum = std::function<Status(std::vector<double>& dense)>;
Status addFarImages(const SortedCells& cells, const double period[3], int threads, FmmTree& tree, FmmOutput out,
                    const FarCubeSum& sum = {});

/// Frontier cubes per axis of the root cube of side `rootSide` (the same lengths as `period`).
int farCubesPerAxis(const double period[3], double rootSide);

}  // namespace fmm
}  // namespace amrgrav
