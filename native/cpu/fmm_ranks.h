/// \file fmm_ranks.h
/// \brief One rank's part of a distributed FMM solve (method 'fmm' over MPI; fmm/fmm_let.h, docs/fmm-design.md
/// section 8), over the collectives of core/rank_comm.h: no MPI here (mpi/distributed_fmm.h drives it). The host does
/// the rank's tree, lists, LETs, the received LETs and the far images; its own lists' evaluation and the downward pass
/// are a fmm::RankLocal's (fmm/rank_local.h): the CPU's here, or a GPU's (cuda/fmm_rank_phase.h).
#pragma once
#include <memory>

#include "core/rank_comm.h"
#include "core/status.h"
#include "core/types.h"
#include "fmm/rank_local.h"

namespace amrgrav {

/// Collective: every rank passes its own cells (none is fine) and gets the potential (and accelerations) of all
/// ranks' cells at them. Sequence: check and agree (bounds, options) -> the global length scale, total mass and
/// smallest cell -> key sort on the root cube of all the cells (the one-process tree's), density contrast, agree again ->
/// the shared top (fmm/shared_top.h: the one-process nodes with cells on several ranks and their global counts;
/// periodic: the shared leaves' own near field) -> the FMM tree over the own cells, shared nodes split by their global
/// counts and their centres, radii and multipoles completed over the ranks, the MAC's scales reduced over every rank
/// (every rank's nodes and pair decisions are then those of one process with all cells) -> every rank's reach (its
/// leaves, its nodes by radius class) allgathered -> for every other rank with cells its LET chosen and packed
/// (fmm/fmm_let.h) and sent while the local lists, P2P and M2L run -> the received LETs, in rank order, traversed
/// one-sided into the local expansions and the near field (the one-process pairs that the local walk does not form)
/// -> periodic: the far images from every rank's frontier cubes (summed; a shared cube by its lowest rank) -> the
/// downward pass, G, self term, scatter. Failures after the first agreement are returned as they are: the MPI driver
/// ends the job on them. `local` evaluates the local lists (local(): inside the exchange, with the lists) and does
/// the downward pass (finish(): after the received LETs and the far images); it is opened before the first agreement.
Status solveFmmRanks(RankComm& comm, fmm::RankLocal& local, const CellsView& cells, const SolveOptions& opt,
                     SolveResult& out);

/// The CPU's evaluation of a rank's own lists (fmm/evaluate.h evaluateP2P, evaluateM2L) and downward pass
/// (fmm/fmm_solve.h passLocalsDown), the one-process FMM's steps.
std::unique_ptr<fmm::RankLocal> makeCpuFmmRankLocal();

}  // namespace amrgrav
