/// \file fmm_ranks.h
/// \brief One rank's part of a distributed FMM solve (method 'fmm' over MPI, CPU ranks; fmm/fmm_let.h,
/// docs/fmm-design.md section 8), over the collectives of core/rank_comm.h: no MPI here (mpi/distributed_fmm.h
/// drives it).
#pragma once
#include "core/rank_comm.h"
#include "core/status.h"
#include "core/types.h"

namespace amrgrav {

/// Collective: every rank passes its own cells (none is fine) and gets the potential (and accelerations) of all
/// ranks' cells at them. Sequence: check and agree (bounds, options) -> the global length scale, total mass and
/// smallest cell -> key sort on the root cube of all the cells (the one-process tree's), density contrast, agree again ->
/// the FMM tree over the own cells with the MAC's scales reduced over every rank (so the pair decisions are those of
/// one process with all cells) -> the leaves' reach allgathered -> for every other rank with cells its LET chosen
/// and packed (fmm/fmm_let.h) and sent while the local lists, P2P and M2L run -> the received LETs, in rank order,
/// traversed one-sided into the local expansions and the near field -> periodic: the far images from every rank's
/// frontier cubes (summed) -> the downward pass, G, self term, scatter. Failures after the first agreement are
/// returned as they are: the MPI driver ends the job on them.
Status solveFmmRanks(RankComm& comm, const CellsView& cells, const SolveOptions& opt, SolveResult& out);

}  // namespace amrgrav
