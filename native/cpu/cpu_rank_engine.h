/// \file cpu_rank_engine.h
/// \brief The CPU rank of a distributed solve (core/rank_engine.h): the CPU backend's key sort, tree, moments and
/// groups on this rank's cells, each LET chosen and packed as it is sent, the local walk in slices between which
/// messages move along, and the received LETs walked as one merged tree. No MPI here: the MPI driver
/// (mpi/distributed_solve.h) gets it from api/ as a RankEngine.
#pragma once
#include <memory>

#include "core/rank_engine.h"

namespace amrgrav {

/// A CPU rank for one distributed solve (its threads: SolveOptions::threads).
std::unique_ptr<RankEngine> makeCpuRankEngine();

}  // namespace amrgrav
