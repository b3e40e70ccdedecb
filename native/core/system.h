/// \file system.h
/// \brief One solve over several kinds of points (issue #18): the cells (sources and targets, as Backend::solve),
/// probes (targets only, anywhere: analysis points, a coupled code's particles asking for the field) and an optional
/// subset of the cells to compute (`targets`: per-level or active-subset solves; every cell stays a source) and
/// particles (softened point sources and targets: sinks, stars, dark matter; physics/softening_k.h). Each kind gets
/// its results in its own input order.
///
/// Particles. Each has a position, a mass (>= 0) and a softening length eps > 0 (cm, Plummer-equivalent: its
/// potential at its own centre is -G m / eps with either kernel, SolveOptions::softening), per particle or one value
/// for all. The particles form a source tree of their own beside the cells' (tree/particle_tree.h): the cells walk
/// both trees, the particles walk both, the probes walk both. A pair is softened by max(eps_i, eps_j) (cells and
/// probes: 0), so the cells' force on the particles is minus the particles' on the cells. A particle's potential
/// leaves out its own pair (no self term); a probe on a particle feels that particle's softened -G m / eps.
///
/// What a probe receives. Every cell acts on a probe as a point mass at its centre, with the solve's tree (or direct)
/// rules, exactly as it acts on another cell: the probe's group takes the lists the MAC gives for the box of the
/// probes' positions. A probe has no self term (it has no mass and no size). A probe exactly at a cell's centre gets
/// every source except that cell's point term, which is 1/0 and is left out (physics/interact_k.h: a coincident source
/// adds 0) just as a cell leaves out its own pair; so with the same interaction lists (direct summation, or small
/// theta) it equals that cell's potential without the cell's self term, and with the self term 'none' the cell's
/// potential itself. In a periodic box the coincident cell's other images still act (its Ewald correction, as for the
/// cell itself).
///
/// Where probes may be. Isolated axes: anywhere (finite); the field of the cells in free space, also outside the box
/// and the root cube. Periodic axes: the position is wrapped into [lo, hi) of the box (the potential is periodic, so
/// the value is the one at the given position). Along the isolated axes of a partly periodic box a probe must lie in
/// the box (the Ewald table covers separations within the box only): InvalidInput otherwise.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/types.h"

namespace amrgrav {

/// Borrowed view of target-only points (cm).
struct PointsView {
  const double* x = nullptr;
  const double* y = nullptr;
  const double* z = nullptr;
  std::size_t n = 0;
};

/// Borrowed view of softened point sources (cm, g). softening: per particle (n values) or null for
/// `softeningValue` for all.
struct ParticlesView {
  const double* x = nullptr;
  const double* y = nullptr;
  const double* z = nullptr;
  const double* mass = nullptr;
  const double* softening = nullptr;
  double softeningValue = 0;
  std::size_t n = 0;
  double softeningOf(std::size_t i) const { return softening ? softening[i] : softeningValue; }
};

/// What one system solve is given. With targets set, only the cells whose caller indices are listed are computed
/// (results in the list's order; no index twice); the potential there is bitwise that of the full solve.
struct SystemView {
  CellsView cells;
  ParticlesView particles;
  PointsView probes;
  const std::uint32_t* targets = nullptr;  ///< caller's cell indices; null: every cell
  std::size_t targetCount = 0;
  bool hasTargets() const { return targets != nullptr; }
  /// Cells whose results are returned.
  std::size_t cellResults() const { return hasTargets() ? targetCount : cells.n; }
};

/// What the system's parts cost beside SolveStats (which counts the cells' walk: with targets, of their groups only).
struct SystemStats {
  std::size_t targets = 0;       ///< cells computed (all of them without a subset)
  std::size_t targetGroups = 0;  ///< cell groups walked (SolveStats::groups: all of them; direct: 0)
  std::size_t probes = 0, probeGroups = 0;
  std::uint64_t probeApprox = 0, probeDirect = 0;  ///< node-probe and cell-probe interactions, summed over probes
  double secondsProbes = 0;      ///< sorting, walking and finishing the probes
  std::size_t particles = 0, particleGroups = 0, particleNodes = 0;
  /// node and point interactions of the softened walks (particle targets against both trees, cell and probe targets
  /// against the particles' tree), summed over targets
  std::uint64_t particleApprox = 0, particleDirect = 0;
  double secondsParticles = 0;   ///< the particles' tree, their walks and finish
};

struct SystemResult {
  PointResults cells;      ///< one per cell, or per target in the targets' order
  PointResults particles;  ///< one per particle, in the particles' order
  PointResults probes;     ///< one per probe, in the probes' order
  SolveStats stats;
  SystemStats system;
};

}  // namespace amrgrav
