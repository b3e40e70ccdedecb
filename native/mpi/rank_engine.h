/// \file rank_engine.h
/// \brief One rank's own work in a distributed solve, on the CPU or on a GPU: its tree, the host view of it that
/// the LETs are chosen from, the walk of its tree and of the received LETs, and its results. The MPI side (the
/// agreement, the summaries, the exchange, the statistics) is the driver's, distributed_solve.cpp, the same for
/// both, so CPU and GPU ranks build the same LETs and can even be mixed in one job. Both walk the received LETs
/// merged into one tree (core/let.h mergeLets).
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "core/let.h"
#include "core/source_tree.h"
#include "core/status.h"
#include "core/types.h"

namespace amrgrav {

struct EwaldWalk;

/// Called in this order, once per solve. After open() every failure aborts the job (the driver's orAbort).
class RankEngine {
 public:
  virtual ~RankEngine() = default;
  /// "cpu" or "cuda" (DistributedStats::backend).
  virtual const char* name() const = 0;
  /// What can fail on this rank alone, before the ranks agree to go ahead: the cells (validateCells' errors), no
  /// device, a backend limit. lo/hi: the bounds of the cells with their extents, or the box when given (empty,
  /// lo > hi, without cells or box).
  virtual Status open(const CellsView& cells, const SolveOptions& opt, double lo[3], double hi[3]) = 0;
  /// Keys (root cube of this rank's cells, the global length `scale`), build, moments, groups; tree statistics
  /// into `st`. May be called with no cells.
  virtual Status build(const CellsView& cells, const SolveOptions& opt, double scale, SolveStats& st) = 0;
  /// Where the walk of the local tree can run beside the LET selection and the exchange (a GPU), it starts here.
  virtual Status startLocalWalk(const SolveOptions& opt) = 0;
  /// True when startLocalWalk started it (its time then counts from there).
  virtual bool walksAlongside() const { return false; }
  /// The local tree as the LET selection reads it (valid until finish) and the summary of the cells.
  virtual Status localSource(SourceTree& tree, RankSummary& summary) = 0;
  /// Periodic boxes: the Ewald table the walk uses (the periodic LET selection needs its view); else null.
  virtual const EwaldWalk* ewald() const { return nullptr; }
  /// Completes the local walk; `progress` moves messages along and is called between pieces of the work.
  virtual Status completeLocalWalk(const SolveOptions& opt, const std::function<Status()>& progress,
                                   SolveStats& st) = 0;
  /// Walks the received LETs (in rank order; none is fine) into the local sums, as one tree (core/let.h
  /// mergeLets) with accumulate set and no self pair; the solve's interaction counts into `st`.
  virtual Status walkReceived(const std::vector<SourceTree>& lets, const SolveOptions& opt, SolveStats& st) = 0;
  /// Scale, self term, scatter into out (its targets); out.stats keeps what the driver filled.
  virtual Status finish(const SolveOptions& opt, SolveResult& out) = 0;
};

/// (The CPU rank lives in distributed_solve.cpp.) The GPU rank (mpi/distributed_cuda.cpp): its device is deviceForLocalRank(nodeLocalRank(), devices); null in a
/// build without CUDA.
std::unique_ptr<RankEngine> makeCudaRankEngine();

}  // namespace amrgrav
