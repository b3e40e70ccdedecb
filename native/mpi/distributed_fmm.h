/// \file distributed_fmm.h
/// \brief The distributed FMM solve (method 'fmm' over MPI, CPU ranks): the MPI side only, the collectives of
/// core/rank_comm.h over amrgrav's communicator and its LET exchange (mpi/let_exchange.h, tags of its own); the
/// rank's work is cpu/fmm_ranks.h, which api/ hands over.
#pragma once
#include <functional>

#include "core/rank_comm.h"
#include "core/status.h"
#include "core/types.h"

namespace amrgrav {

/// One rank's part of the solve over the collectives it is given (cpu/fmm_ranks.h solveFmmRanks).
using RankSolve = std::function<Status(RankComm& comm, const CellsView& cells, const SolveOptions& opt,
                                       SolveResult& out)>;

/// Collective over amrgrav's communicator: every rank calls it with its own cells and the same options. Errors
/// agreed on by the ranks (bad input on any rank, coincident cells) are returned on every rank; any other failure
/// after the first agreement ends the job (mpi_world.h abortMpiWorld), as in the tree's distributed solve. Only for
/// a world of more than one rank (Internal otherwise, and in a build without MPI).
Status solveDistributedFmm(const RankSolve& solve, const CellsView& cells, const SolveOptions& opt,
                           SolveResult& out);

}  // namespace amrgrav
