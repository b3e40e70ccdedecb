/// \file rank_local.h
/// \brief Where one rank of a distributed FMM solve (cpu/fmm_ranks.h) evaluates its own lists: the near field and
/// M2L of the pairs its local walk forms and the downward pass (L2L, L2P). The rank's tree, LETs, the received
/// LETs' M2L and near field and the far images stay the host's (cpu/fmm_ranks.cpp), so CPU and GPU ranks build and
/// send the same LETs and can be mixed in one job. The local lists are the host's, or an evaluator's own when it
/// makes them (makesLists: a GPU's walk on its device, the same lists as the host's, array for array). The
/// evaluators: the CPU's (cpu/fmm_ranks.h makeCpuFmmRankLocal) and the GPU's (cuda/fmm_rank_phase.h); api/ picks one
/// per rank.
#pragma once
#include <functional>

#include "core/status.h"
#include "core/types.h"
#include "fmm/evaluate.h"
#include "fmm/fmm_tree.h"
#include "fmm/interaction_lists.h"

namespace amrgrav {
namespace fmm {

/// Called in this order, once per solve; local() and finish() only on a rank with cells. After open() every failure
/// ends the job (the MPI driver's abort), as any other failure after the ranks' first agreement.
class RankLocal {
 public:
  virtual ~RankLocal() = default;
  /// "cpu" or "cuda" (DistributedStats::backend).
  virtual const char* name() const = 0;
  /// The CUDA device this rank runs on (DistributedStats::device), after open(); -1 on the CPU.
  virtual int device() const { return -1; }
  /// This rank alone, before the ranks agree to go ahead: what can fail here only (no device: NoDevice).
  virtual Status open(const SolveOptions& opt) = 0;
  /// After open(): whether local() walks the local tree for its lists itself, so that the driver builds none.
  virtual bool makesLists(const SolveOptions&) const { return false; }
  /// Inside the LET exchange, once the local lists are built (or, with makesLists, their period set alone: the
  /// evaluator makes them and puts their counts, directedM2L and directedP2P, into `lists`): their work begins. The
  /// CPU's evaluates their near field into `out` (overwriting it) and their M2L into tree.L; a GPU's puts the tree,
  /// the cells and the lists (or walks them there) and their near field on the device and queues the near field
  /// there (out and tree.L untouched: the received LETs' and the far images' host sums go there meanwhile).
  /// `progress` moves messages along; call it between pieces of the work.
  virtual Status local(FmmTree& tree, FmmLists& lists, const SortedCells& sorted, const SolveOptions& opt,
                       int threads, FmmOutput out, const std::function<Status()>& progress) = 0;
  /// After every received LET's M2L and the far images are in tree.L and their direct sums in `out`: what is left
  /// of the local work and the downward pass, so that `out` holds this rank's sums (the CPU: passLocalsDown; a GPU:
  /// tree.L up as the device's initial L, its M2L, L2L and L2P, the sums down and `out` added to them).
  /// Device phases' times into st (secondsUpload, secondsDownload, deviceBytesPerCell).
  virtual Status finish(FmmTree& tree, const SortedCells& sorted, int threads, FmmOutput out, SolveStats& st) = 0;
};

}  // namespace fmm
}  // namespace amrgrav
