/// \file mpi_exports.h
/// \brief The addon's MPI entry points (world, gather, failure agreement, abort) and the conversion of the
/// distributed solve's statistics. Registration and conversion only; the MPI calls live in native/mpi/.
#pragma once
#include <napi.h>

#include "core/types.h"

namespace amrgrav {

/// Adds mpiInit, mpiWorld, mpiFinalize, mpiAbort, mpiGather and mpiFailSolve to `exports`, and finalises MPI
/// when the environment is torn down.
void registerMpiExports(Napi::Env env, Napi::Object exports);

/// {ranks, rank, bytesSent, ...} of a distributed solve.
Napi::Object distributedStatsToJs(Napi::Env env, const DistributedStats& d);

}  // namespace amrgrav
