/// \file particles_phase.h
/// \brief A system solve's particles on the device (core/system.h, physics/softening_k.h). Their tree is built on
/// the device by the cells' own tree phase, in a DeviceState of their own (DeviceState::pointSources: sizes 0,
/// checked on the host by tree/particle_tree.h validateParticles), with the cells' length and mass scales, plus each
/// node's and walk group's softening range: the same tree, groups and ranges as the host's buildParticleTree, so
/// the softened walks' lists are the CPU's. The softened walks (kernel_walk.cu's Soft kernels) take the particles
/// against both trees and the cells and probes against the particles' tree; the particles' own pairs are removed
/// and their results finished into their order.
#pragma once

#include "core/status.h"
#include "core/system.h"
#include "cuda/device_state.h"
#include "cuda/kernels.h"

namespace amrgrav {
namespace cuda {

/// A source tree as a softened walk reads it.
struct SoftSources {
  const uint4* topo = nullptr;
  const D4* mac = nullptr;
  const float4* mq = nullptr;
  const double2* nodeEps = nullptr;  ///< null: unsoftened sources (the cells' tree)
  const double* nodeExtent = nullptr;  ///< null: the MAC radius bounds the sources' distance (the cells' tree)
  DeviceCells cells = {nullptr, nullptr, nullptr, nullptr};
  const double* eps = nullptr;
  unsigned selfPairs = 0;  ///< 1 when the targets are these sources (each meets itself once, not counted)
};

/// The particles on the device, sorted as their tree (in `state`, the particles' DeviceState).
struct DeviceParticles {
  DeviceState* state = nullptr;
  std::size_t n = 0, nodes = 0, groups = 0;
  DeviceCells cells = {nullptr, nullptr, nullptr, nullptr};  ///< sorted, scaled positions; masses
  double* eps = nullptr;                                      ///< per sorted particle, scaled
  double* sums[4] = {};                                       ///< phi, gx, gy, gz (sorted)
  const double2* nodeEps = nullptr;                           ///< per node (smallest, largest) softening
  const double* nodeExtent = nullptr;                         ///< per node its source extent (softening_k.h)
};

/// The particles' tree as a softened walk's sources, and the cells' tree (ds's, unsoftened).
SoftSources particleSources(const DeviceParticles& P);
SoftSources cellSources(const DeviceState& ds);

/// Builds the particles' tree on the device (validate them first: tree/particle_tree.h validateParticles), in
/// ds.particleState[which] (0: the particles'
/// tree; 1: a distributed solve's own particles as targets): lengths times `scale` (the cells', or 0 for the
/// particles' own when there are no cells), masses times ds.massScale (scale 0: the particles' own, then also ds's).
/// direct: sorted only, no tree.
Status buildParticles(DeviceState& ds, const ParticlesView& particles, const SolveOptions& opt, double scale,
                      bool direct, DeviceParticles& P, int which = 0);

/// The particles as a softened walk's targets: their sorted positions and tree-phase groups (groupBegin), their
/// softening; the counters and mass scale of ds.
WalkParams particleTargets(DeviceState& ds, const DeviceParticles& P);

/// The particles' own pairs out of their sums, then scaled and scattered into their order, and down into `dest`.
Status finishParticles(DeviceState& ds, const SolveOptions& opt, DeviceParticles& P, const ResultTargets& dest);

/// The walk's counters, queue capacity and launch bounds when no cell walk prepared them (a solve without cells).
Status prepareSoftWalk(DeviceState& ds);

/// One softened walk: the targets of `targets` (positions, groups, softening; its counters) against `src`, sums
/// written into out[0..3] (phi as folded, g times massScale; accelerations only with opt), then added to add[0..3]
/// when add is not null. Interactions into `total` (added). ranges: the targets' groups are WalkParams::groupRange's,
/// else groupBegin's.
/// cellsPerLane: the targets' groups' (cellsPerLaneFor: the cells' or the points' group size).
Status softWalk(DeviceState& ds, const SolveOptions& opt, const WalkParams& targets, int cellsPerLane, bool ranges,
                const SoftSources& src, double* const* out, double* const* add, WalkTally& total);

/// The particles' walks of the cells' tree (when `cells` is not null: written into P.sums) and of the particles' tree
/// `tree`, which holds these particles (each meets itself once; finishParticles removes that pair), added to them.
/// Interactions into `total` (added).
Status walkParticles(DeviceState& ds, const SolveOptions& opt, DeviceParticles& P, const SoftSources* cells,
                     SoftSources tree, WalkTally& total);

/// walkParticles against their own tree, then their own pairs removed and their results scaled and scattered into
/// `dest`.
Status solveParticles(DeviceState& ds, const SolveOptions& opt, DeviceParticles& P, const SoftSources* cells,
                      const ResultTargets& dest, SystemStats& st);

/// 'direct': the softened sums of every pair with a particle: the cells' (targets, sorted as ds.sortedCells, n)
/// and the probes' (np) from the particles (added to their sums), the particles' from the cells and themselves.
Status directParticles(DeviceState& ds, const SolveOptions& opt, DeviceParticles& P, unsigned n, double* const* cellSums,
                       const DeviceCells& probes, unsigned np, double* const* probeSums, const ResultTargets& dest,
                       SystemStats& st);

}  // namespace cuda
}  // namespace amrgrav
