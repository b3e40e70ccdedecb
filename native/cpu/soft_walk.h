/// \file soft_walk.h
/// \brief The CPU backend's softened walks and direct sums (particles in a system solve, core/system.h, issue #18):
/// targets with softening lengths (particles; 0 for cells and probes) against a source tree with them (the
/// particles' tree, tree/particle_tree.h) or without (the cells' tree). Lists: soft_lists.h (box MAC and the
/// softening rule); accepted nodes act through the Newtonian node kernels (spline: exact there) or the Plummer
/// expansion with eps = max(target eps, node's largest eps); opened leaves' sources through the softened pair
/// kernels with eps = max(target eps, source eps) (physics/softening_k.h). Sources outer, a group's targets inner:
/// each target's sum has a fixed order, so the result is the same for any thread count.
#pragma once
#include <cstddef>

#include "cpu/cpu_walk.h"
#include "tree/source_tree.h"
#include "tree/tree.h"

namespace amrgrav {

/// Walks every group of `groups` (targets: sorted, scaled; targetEps per sorted target, scaled, or null for 0;
/// groupEpsMin/Max per group or null for 0) against `src`; sums unscaled as walkGroups' (phi = sum m K, g = sum m d
/// F), added to `out` with pass.accumulate, else written. With pass.sourcesAreTargets (a particle tree walked by its
/// own particles) every target meets itself once in an opened leaf: that pair adds m/eps (the kernel at 0), left for
/// the caller to take out, and is not counted. out.approx and out.direct are incremented. Needs opt.softening's
/// node data: Plummer walks need src.secondMoment.
void walkSoftGroups(const SourceTree& src, const SortedCells& targets, const double* targetEps, const Groups& groups,
                    const double* groupEpsMin, const double* groupEpsMax, const SolveOptions& opt, int threads,
                    WalkPass pass, WalkOutput& out);

/// Softened direct sums, added to `out`: every target of `targets` (sorted, scaled; targetEps or null for 0) over
/// every source of `sources` (sourceEps or null for 0), with the pair softening. skipSelf: the targets are the
/// sources (same order) and a target leaves out its own pair. out.direct counts the pairs summed.
void directSoft(const SortedCells& sources, const double* sourceEps, const SortedCells& targets,
                const double* targetEps, SofteningKernel kernel, bool accel, bool skipSelf, int threads,
                WalkOutput& out);

}  // namespace amrgrav
