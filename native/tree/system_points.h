/// \file system_points.h
/// \brief The non-cell parts of a system solve (core/system.h) as the walk takes them, the same on both backends
/// (the CUDA backend uploads what these make on the host, so its groups are the CPU's): the probes sorted by the
/// solve's Morton keys and grouped like cells, and the groups of cells that hold a subset of targets.
#pragma once
#include <cstdint>
#include <vector>

#include "core/system.h"
#include "tree/tree.h"

namespace amrgrav {

/// The probes as walk targets: wrapped into the box along periodic axes (core/system.h), Morton keys on the solve's
/// root cube (`root`, scaled; a probe outside it takes the key of the nearest face, which only affects which group it
/// joins), stably sorted, positions scaled by `scale` (the cells' SortedCells::scale). `out.order` maps sorted
/// positions to the caller's probe indices; mass and size stay empty (probes are not sources). Their groups: the
/// leaves of an octree over these keys with at most groupSize probes each (tree/build.cpp; a finest-level leaf holding
/// more, coincident probes, is cut into groups of groupSize), so that a group is one
/// octree cube however sparse the probes are (runs of groupSize consecutive keys would span the domain), with the
/// bounding box of its positions. Validate first (validateProbes).
void sortProbes(const PointsView& probes, const RootCube& root, double scale, const SolveOptions& opt,
                SortedCells& out, Groups& groups);

/// The position along [lo, hi) of x on a periodic axis of period hi - lo (x itself when already in [lo, hi]).
double wrapIntoBox(double x, double lo, double hi);

/// Each caller index's sorted position (the inverse of SortedCells::order).
std::vector<std::uint32_t> sortedPositions(const SortedCells& cells);

/// The groups (ascending) that hold at least one of the targets (caller's cell indices; sortedOf: sortedPositions).
std::vector<std::uint32_t> groupsHoldingTargets(const Groups& groups, const std::vector<std::uint32_t>& sortedOf,
                                                const std::uint32_t* targets, std::size_t count);

/// The groups listed (begin, count and box of each), in the list's order: a walk over them is the full walk's over
/// those groups, bit for bit (a group's sums depend on nothing but the group).
Groups pickGroups(const Groups& groups, const std::vector<std::uint32_t>& which);

}  // namespace amrgrav
