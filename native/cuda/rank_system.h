/// \file rank_system.h
/// \brief A GPU rank's part of a distributed system solve (core/rank_engine.h openSystem, buildParticles,
/// finishSystem; mpi/distributed_solve.cpp): its probes, and its own particles as sources and targets (their tree
/// built on the device, as a single process builds it), beside the rank's cells (rank_phase.h); the other ranks'
/// particles arrive as particle LETs. The walks are the single-process solve's (system_phase.cu): the probes against
/// the local tree and the received LETs; the cells and the probes against the own particles' tree (softened); the
/// own particles against the local tree, the LETs and their own tree; then all of them against the received particle
/// LETs, merged on the host (let/let.h mergeLets) and uploaded in the softened walk's layout. The particle LETs this
/// rank sends are chosen on the host from the host's build of the own particles' tree (tree/particle_tree.h, the
/// tree the device builds): the bytes a CPU rank would send. A subset of target cells (rank_phase.h
/// rankStartLocalWalk) narrows the cells' walks of the particles' trees to its groups, as their other walks.
#pragma once
#include <cstddef>
#include <vector>

#include "core/status.h"
#include "core/system.h"
#include "cuda/device_state.h"
#include "cuda/particles_phase.h"
#include "cuda/probes_phase.h"
#include "let/let.h"
#include "tree/particle_tree.h"

namespace amrgrav {
namespace cuda {

/// The received particle LETs as one softened source tree on the device (the walk's layout, masses times massScale).
struct DeviceParticleForest {
  DeviceBuffer<uint4> topo;
  DeviceBuffer<D4> mac;
  DeviceBuffer<float4> mq;
  DeviceBuffer<double2> nodeEps;
  DeviceBuffer<double> nodeExtent, cells[4], eps;
};

struct RankSystem {
  SystemView sys;              ///< this rank's probes and particles (openSystem; cells: rank_phase.h's)
  bool hasCells = false;
  bool particles = false;      ///< some rank has particles: the particles' trees below are walked
  DeviceProbes probes;
  DeviceParticles own;         ///< this rank's own particles (sources and targets)
  ParticleTree hostTree;       ///< their tree on the host, for the particle LETs (built at the first one)
  bool hostTreeBuilt = false;
  double scale = 0;            ///< the global length scale (buildParticles')
  LetSelection selection;
  LetForest forest;            ///< the received particle LETs, merged on the host
  std::vector<uint4> hostTopo;  ///< and converted to the device layout
  std::vector<D4> hostMac;
  std::vector<float4> hostMQ;
  std::vector<double2> hostEps;
  DeviceParticleForest received;
  SystemStats st;
};

/// After the cells' build (rankBuild, or none on a rank without cells: the global length `scale` and the mass
/// scale of every rank's mass `totalMass`): the probes sorted and uploaded.
Status rankSystemBuild(DeviceState& ds, RankSystem& r, const SolveOptions& opt, double scale, double totalMass);

/// This rank's own particles (r.sys.particles; none is fine): their tree on the device, as sources and targets.
Status rankSystemParticles(DeviceState& ds, RankSystem& r, const SolveOptions& opt, double scale);

/// The particle LET for `box` (let/let.h essentialParticlesFor) from the host's tree of the own particles, packed.
Status rankSystemParticleLet(RankSystem& r, const RemoteBox& box, const SolveOptions& opt, PackedLet& out,
                             std::size_t& nodes, std::size_t& particles);

/// The received particle LETs (rank order), merged and uploaded, walked by the cells (or a subset's groups), the
/// probes and the own particles, softened, added to their sums.
Status rankSystemReceivedParticles(DeviceState& ds, RankSystem& r, const ReceivedLet* lets, std::size_t count,
                                   const SolveOptions& opt);

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
