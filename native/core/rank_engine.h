/// \file rank_engine.h
/// \brief One rank's own work in a distributed solve, on the CPU or on a GPU: its tree, the summary of its cells,
/// the LETs chosen from its tree, the walk of its tree and of the received LETs, and its results. The MPI side (the
/// agreement, the summaries, the exchange, the statistics) is the driver's, mpi/distributed_solve.cpp, the same for
/// both, so CPU and GPU ranks build the same LETs and can even be mixed in one job. Both walk the received LETs
/// merged into one tree (let/let.h mergeLets). The engines are cpu/cpu_rank_engine.h and cuda/cuda_rank_engine.h;
/// api/ picks one and hands it to the driver.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "let/let.h"
#include "core/status.h"
#include "core/system.h"
#include "core/types.h"

namespace amrgrav {

/// Called in this order, once per solve. After open() every failure aborts the job (the driver's orAbort).
class RankEngine {
 public:
  virtual ~RankEngine() = default;
  /// "cpu" or "cuda" (DistributedStats::backend).
  virtual const char* name() const = 0;
  /// The CUDA device this rank runs on (DistributedStats::device), after open(); -1 for a CPU rank.
  virtual int device() const { return -1; }
  /// What can fail on this rank alone, before the ranks agree to go ahead: the cells (validateCells' errors), no
  /// device, a backend limit. lo/hi: the bounds of the cells with their extents, or the box when given (empty,
  /// lo > hi, without cells or box).
  virtual Status open(const CellsView& cells, const SolveOptions& opt, double lo[3], double hi[3]) = 0;
  /// A system solve's probes and targets on this rank (core/system.h), after open() and before the ranks agree:
  /// checked here, kept for build() on. The summary's box of centres and group widths then cover the probes' groups,
  /// the walks cover the targets' and the probes' groups, and finishSystem returns each kind's results. The default
  /// takes a system of cells alone and refuses probes, targets or particles (InvalidOption): an engine that walks
  /// them overrides it (the CPU and CUDA engines take all three).
  virtual Status openSystem(const SystemView& system, const SolveOptions& opt) {
    (void)opt;
    if (system.particles.n > 0)
      return Status::error(ErrorCode::InvalidOption,
                           std::string("particles in a distributed solve run on CPU ranks (backend 'cpu'); the ") +
                               name() + " rank does not take them yet (issue #18)");
    if (system.probes.n > 0 || system.hasTargets())
      return Status::error(ErrorCode::InvalidOption,
                           std::string("probes and target subsets in a distributed solve run on CPU ranks (backend "
                                       "'cpu'); the ") + name() + " rank does not take them yet");
    return Status::success();
  }
  /// Whether this engine walks particles (core/system.h). When any rank has particles, every rank's cells and
  /// probes need the particles' field, so the driver refuses the solve on every rank unless all engines take them.
  virtual bool takesParticles() const { return false; }
  /// This rank's own particles (those openSystem got; none is fine), after build() and before summary(), when
  /// some rank has particles and every engine takesParticles(): their tree on the global length `scale`
  /// (tree/particle_tree.h), walked by this rank's cells, probes and own particles; the own particles become targets
  /// (the summary covers their groups). The other ranks' particles come as particle LETs (walkReceivedParticles).
  /// May fail (the driver's second agreement).
  virtual Status buildParticles(const SolveOptions& opt, double scale) {
    (void)opt, (void)scale;
    return Status::error(ErrorCode::InvalidOption, std::string("the ") + name() + " rank does not take particles");
  }
  /// The particle LET of the own particles' tree for a remote box (let/let.h remoteBoxFor, essentialParticlesFor:
  /// chosen on the host from the tree both backends build alike, so a CPU and a GPU rank send the same bytes),
  /// packed, with its node and particle counts. After buildParticles, on a rank with particles.
  virtual Status takeParticleLet(const RemoteBox& box, const SolveOptions& opt, PackedLet& out, std::size_t& nodes,
                                 std::size_t& particles) {
    (void)box, (void)opt, (void)out, (void)nodes, (void)particles;
    return Status::error(ErrorCode::Internal, std::string("the ") + name() + " rank does not take particles");
  }
  /// Walks the received particle LETs (in rank order; none is fine) as one tree (let/let.h mergeLets) by this
  /// rank's cells (or its subset's groups), probes and own particles, softened, added to their sums. After
  /// walkReceived.
  virtual Status walkReceivedParticles(const std::vector<ReceivedLet>& lets, const SolveOptions& opt) {
    (void)opt;
    if (lets.empty()) return Status::success();
    return Status::error(ErrorCode::Internal, std::string("the ") + name() + " rank does not take particles");
  }
  /// Keys (root cube of this rank's cells, the global length `scale`), the density contrast of fully periodic
  /// boxes (`totalMass`: every rank's masses summed; tree/tree.h applyDensityContrast), build, moments, groups;
  /// tree statistics into `st`. May be called with no cells.
  virtual Status build(const CellsView& cells, const SolveOptions& opt, double scale, double totalMass,
                       SolveStats& st) = 0;
  /// The summary of this rank's cells that the allgather shares (scaled lengths; let/let.h). After build.
  virtual Status summary(RankSummary& out) = 0;
  /// Chooses the LETs for these remote boxes of cell centres, in this order (let/let.h essentialNodesFor, or
  /// essentialNodesForPeriodic for periodic boxes). A GPU selects and packs them all on the device here, before its
  /// local walk is queued; the CPU only keeps the boxes (takeLet chooses each when it is sent).
  virtual Status chooseLets(const std::vector<RemoteBox>& boxes) = 0;
  /// Where the walk of the local tree can run beside the packing and the exchange (a GPU), it starts here.
  virtual Status startLocalWalk(const SolveOptions& opt) = 0;
  /// True when startLocalWalk started it (its time then counts from there).
  virtual bool walksAlongside() const { return false; }
  /// The k-th LET of chooseLets, packed (let/let.h), with its node and cell counts.
  virtual Status takeLet(std::size_t k, PackedLet& out, std::size_t& nodes, std::size_t& cells) = 0;
  /// Completes the local walk; `progress` moves messages along and is called between pieces of the work.
  virtual Status completeLocalWalk(const SolveOptions& opt, const std::function<Status()>& progress,
                                   SolveStats& st) = 0;
  /// All the received LETs (in rank order), when they are here before completeLocalWalk returns (called from its
  /// `progress`, at most once): a GPU uploads and merges them beside its walk. walkReceived then gets the same LETs.
  virtual Status prepareReceived(const std::vector<ReceivedLet>& lets) {
    (void)lets;
    return Status::success();
  }
  /// Walks the received LETs (in rank order; none is fine) into the local sums, as one tree (let/let.h
  /// mergeLets) with accumulate set and no self pair; the solve's interaction counts into `st`.
  virtual Status walkReceived(const std::vector<ReceivedLet>& lets, const SolveOptions& opt, SolveStats& st) = 0;
  /// Scale, self term, scatter into out (its targets); out.stats keeps what the driver filled.
  virtual Status finish(const SolveOptions& opt, SolveResult& out) = 0;
  /// A system solve's finish (instead of finish): the cells' results (at the targets), the probes' and the own
  /// particles' (in the order openSystem got them, with SystemStats' particle fields) into `out`;
  /// `cells` carries the statistics the driver filled (and takes meanPotential over the cells computed). The default
  /// (a system of cells alone, see openSystem): finish into the cells' arrays.
  virtual Status finishSystem(const SolveOptions& opt, SolveResult& cells, SystemResult& out) {
    cells.into = out.cells.into;  // the caller's arrays, or none: new vectors, moved over
    AG_TRY(finish(opt, cells));
    out.cells.potential = std::move(cells.potential);
    out.cells.ax = std::move(cells.ax);
    out.cells.ay = std::move(cells.ay);
    out.cells.az = std::move(cells.az);
    return Status::success();
  }
};

}  // namespace amrgrav
