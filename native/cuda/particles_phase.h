/// \file particles_phase.h
/// \brief A system solve's particles on the device (core/system.h, physics/softening_k.h). Their tree is built on
/// the host by the CPU backend's code (tree/particle_tree.h), so the softened walks' lists are the CPU's, and
/// uploaded in the walk's layout; the softened walks (kernel_walk.cu's Soft kernels) take the particles against
/// both trees and the cells and probes against the particles' tree; the particles' own pairs are removed and their
/// results finished into their order.
#pragma once
#include <vector>

#include "core/status.h"
#include "core/system.h"
#include "cuda/device_state.h"
#include "cuda/kernels.h"
#include "tree/particle_tree.h"

namespace amrgrav {
namespace cuda {

/// A source tree as a softened walk reads it.
struct SoftSources {
  const uint4* topo = nullptr;
  const D4* mac = nullptr;
  const float4* mq = nullptr;
  const double2* nodeEps = nullptr;  ///< null: unsoftened sources (the cells' tree)
  DeviceCells cells = {nullptr, nullptr, nullptr, nullptr};
  const double* eps = nullptr;
  unsigned selfPairs = 0;  ///< 1 when the targets are these sources (each meets itself once, not counted)
};

/// The particles on the device, sorted as their tree (host copies kept while uploads may read them).
struct DeviceParticles {
  ParticleTree host;
  std::size_t n = 0, nodes = 0, groups = 0;
  std::vector<uint4> topo;
  std::vector<D4> mac;
  std::vector<float4> mq;
  std::vector<double2> nodeEps, groupEps;
  std::vector<uint2> range;
  DeviceCells cells = {nullptr, nullptr, nullptr, nullptr};  ///< sorted, scaled positions; masses
  double* eps = nullptr;                                      ///< per sorted particle, scaled
  double* sums[4] = {};                                       ///< phi, gx, gy, gz (sorted)
};

/// The particles' tree as a softened walk's sources (uploaded), and the cells' tree (ds's, unsoftened).
SoftSources particleSources(const DeviceState& ds, const DeviceParticles& P);
SoftSources cellSources(const DeviceState& ds);

/// Validates and builds the particles' tree on the host (lengths times `scale`: the cells', or 0 for the particles'
/// own when there are no cells) and uploads it with the particles as targets.
Status uploadParticles(DeviceState& ds, const ParticlesView& particles, const SolveOptions& opt, double scale,
                       DeviceParticles& P);

/// The walk's counters, queue capacity and launch bounds when no cell walk prepared them (a solve without cells).
Status prepareSoftWalk(DeviceState& ds);

/// One softened walk: the targets of `targets` (positions, groups, group ranges, softening; its counters) against
/// `src`, sums written into out[0..3] (phi as folded, g times massScale; accelerations only with opt), then added
/// to add[0..3] when add is not null. Interactions into `total` (added). ranges: the targets' groups are
/// WalkParams::groupRange's.
Status softWalk(DeviceState& ds, const SolveOptions& opt, const WalkParams& targets, bool ranges,
                const SoftSources& src, double* const* out, double* const* add, WalkTally& total);

/// The particles' walks against the cells' tree (when `cells` is not null) and their own, their own pairs removed,
/// their results scaled and scattered into `dest`.
Status solveParticles(DeviceState& ds, const SolveOptions& opt, DeviceParticles& P, const SoftSources* cells,
                      const ResultTargets& dest, SystemStats& st);

/// 'direct': the softened sums of every pair with a particle: the cells' (targets, sorted as ds.sortedCells, n)
/// and the probes' (np) from the particles (added to their sums), the particles' from the cells and themselves.
Status directParticles(DeviceState& ds, const SolveOptions& opt, DeviceParticles& P, unsigned n, double* const* cellSums,
                       const DeviceCells& probes, unsigned np, double* const* probeSums, const ResultTargets& dest,
                       SystemStats& st);

}  // namespace cuda
}  // namespace amrgrav
