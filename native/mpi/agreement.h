/// \file agreement.h
/// \brief The first collective of every distributed solve: all ranks learn whether any rank failed its checks
/// (and that rank's message), and the global bounds of the cells. After it either every rank goes on or every
/// rank returns the same error: bad input on one rank never leaves the others waiting.
#pragma once
#include <cstddef>
#include <vector>

#include "core/status.h"

namespace amrgrav {

/// `local`: this rank's check result. lo/hi: this rank's bounds in, the global bounds out (lo > hi where no rank
/// has cells). Returns the failure of the lowest failing rank, prefixed with its number, on every rank.
Status agreeToProceed(const Status& local, double lo[3], double hi[3]);

/// Data a rank gathers to rank 0 in rank order (MPI_Gatherv); `out` is filled on rank 0 only.
Status gatherToRoot(const double* local, std::size_t n, std::vector<double>& out);

}  // namespace amrgrav
