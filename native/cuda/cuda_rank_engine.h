/// \file cuda_rank_engine.h
/// \brief The GPU rank of a distributed solve (core/rank_engine.h): the CUDA backend's tree on this rank's device,
/// the LETs chosen and packed on the device before the local walk is queued, downloaded on a second stream and sent
/// while it runs, and the received LETs walked on the device as one forest into the same sums. A system solve's
/// probes and particles (rank_system.h) and subset of target cells (rank_phase.h rankStartLocalWalk) as on a CPU
/// rank. Plain C++, no MPI: the MPI driver (mpi/distributed_solve.h) gets it from api/ as a RankEngine.
#pragma once
#include <functional>
#include <memory>

#include "core/rank_engine.h"

namespace amrgrav {

/// The GPU rank. `deviceFor(deviceCount)` picks this rank's device when a solve opens (api/ passes
/// deviceForLocalRank(nodeLocalRank(), deviceCount)); a rank without a device fails open() with NoDevice. One device
/// state per process and device is kept between solves (its buffers are reused every step).
std::unique_ptr<RankEngine> makeCudaRankEngine(std::function<int(int deviceCount)> deviceFor);

}  // namespace amrgrav
