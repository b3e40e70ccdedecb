/// \file agreement.h
/// \brief The first collective of every distributed solve: all ranks learn whether any rank failed its checks
/// (and that rank's message), and the global bounds of the cells. After it either every rank goes on or every
/// rank returns the same error: bad input on one rank never leaves the others waiting.
#pragma once
#include <cstddef>
#include <vector>

#include "core/status.h"
#include "core/types.h"

namespace amrgrav {

/// `local`: this rank's check result. lo/hi: this rank's bounds in, the global bounds out (lo > hi where no rank
/// has cells). Returns the failure of the lowest failing rank, prefixed with its number, on every rank. When no rank
/// failed, the solve options that must be equal on every rank (all but `threads`) are compared in the same
/// reduction: a difference is InvalidOption on every rank, naming the options. `opt` null (a rank that failed
/// before it had options) takes part with placeholders; it always carries a failure.
Status agreeToProceed(const Status& local, double lo[3], double hi[3], const SolveOptions* opt);

/// Data a rank gathers to rank 0 in rank order (MPI_Gatherv); `out` is filled on rank 0 only.
Status gatherToRoot(const double* local, std::size_t n, std::vector<double>& out);

}  // namespace amrgrav
