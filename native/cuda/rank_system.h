/// \file rank_system.h
/// \brief A GPU rank's part of a distributed system solve (core/rank_engine.h openSystem, buildParticles,
/// finishSystem; mpi/distributed_solve.cpp): its probes and its own particles as targets, and every rank's particles
/// as sources (their tree, built on the device from the gathered set: the same on every rank), beside the rank's
/// cells (rank_phase.h). The walks are the single-process solve's (system_phase.cu): the probes against the local
/// tree and the received LETs; the cells and the probes against the particles' tree (softened); the own particles
/// against the local tree, the LETs and the particles' tree. A subset of target cells (rank_phase.h
/// rankStartLocalWalk) narrows the cells' walks of the particles' tree to its groups, as their other walks.
#pragma once
#include <cstddef>
#include <vector>

#include "core/status.h"
#include "core/system.h"
#include "cuda/device_state.h"
#include "cuda/particles_phase.h"
#include "cuda/probes_phase.h"
#include "let/let.h"

namespace amrgrav {
namespace cuda {

struct RankSystem {
  SystemView sys;              ///< this rank's probes and particles (openSystem; cells: rank_phase.h's)
  bool hasCells = false;
  bool particles = false;      ///< some rank has particles: the particles' tree below is walked
  DeviceProbes probes;
  DeviceParticles all, own;    ///< every rank's particles (sources) and this rank's own (targets)
  SystemStats st;
};

/// After the cells' build (rankBuild, or none on a rank without cells: the global length `scale` and the mass
/// scale of every rank's mass `totalMass`): the probes sorted and uploaded.
Status rankSystemBuild(DeviceState& ds, RankSystem& r, const SolveOptions& opt, double scale, double totalMass);

/// Every rank's particles (all: gathered in rank order; this rank's own are [ownBegin, ownBegin + ownCount)): their
/// tree, and the own particles as targets in a tree of their own (the same scaled values).
Status rankSystemParticles(DeviceState& ds, RankSystem& r, const ParticlesView& all, std::size_t ownBegin,
                           std::size_t ownCount, const SolveOptions& opt, double scale);

/// The summary's box of centres and group widths grown over the probes' and the own particles' groups.
Status rankSystemSummary(DeviceState& ds, RankSystem& r, RankSummary& out);

/// After the local walk of the cells: the probes' walk of the local tree, the softened walks of the particles' tree
/// by the cells and the probes, the own particles' walks of the local tree and of the particles' tree.
Status rankSystemLocal(DeviceState& ds, RankSystem& r, const SolveOptions& opt);

/// After the cells' walk of the received LETs (uploaded then, or here on a rank without cells): the probes' and the
/// own particles' walks of them.
Status rankSystemReceived(DeviceState& ds, RankSystem& r, const ReceivedLet* lets, std::size_t count,
                          const SolveOptions& opt);

/// The probes' and the own particles' results into `out` (the cells': rankFinish), and the system's statistics.
Status rankSystemFinish(DeviceState& ds, RankSystem& r, const SolveOptions& opt, SystemResult& out);

}  // namespace cuda
}  // namespace amrgrav
