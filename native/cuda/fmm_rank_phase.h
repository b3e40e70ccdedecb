/// \file fmm_rank_phase.h
/// \brief A GPU rank of a distributed FMM solve (cpu/fmm_ranks.h, fmm/rank_local.h): the host's tree (the CPU rank's)
/// put on this rank's device, its lists walked and its near field's tiles built there (the one-process FMM's device
/// phases on a host-made tree, as fmm_periodic_phase.h with the host's tree: the same pairs as a CPU rank's; with
/// CudaOptions' device lists or tiles off, the host's lists and tiles put up instead), the P2P queued while the LETs
/// move (the device's near field runs beside the host's work on the received LETs), then, once the received LETs' M2L
/// and the far images are in the host's L, that L up as the device's initial L, the device's M2L, L2L and L2P, the
/// sums down and the host's (the received LETs' near field, the far images of shallow leaves) added. Plain C++, no
/// MPI: api/ hands it to the FMM's MPI driver (mpi/distributed_fmm.h).
#pragma once
#include <functional>
#include <memory>

#include "cuda/cuda_backend.h"
#include "fmm/rank_local.h"

namespace amrgrav {

/// The GPU's evaluation of a rank's own lists. `deviceFor(deviceCount)` picks this rank's device when a solve opens
/// (api/ passes deviceForLocalRank(nodeLocalRank(), deviceCount), as for the tree's GPU ranks: ranks of one node
/// share its devices); a rank without a device fails open() with NoDevice. The device state is the tree's GPU rank's
/// (rank_phase.h rankDeviceState): one per process and device, kept between solves.
std::unique_ptr<fmm::RankLocal> makeCudaFmmRankLocal(std::function<int(int deviceCount)> deviceFor);

/// The same on a device state of its own (`options` on `device`), made at the first open and kept by the evaluator:
/// for ranks as threads of one process (tools/thread_ranks.h, parity subject fmm-ranks), where the shared state would
/// be overwritten by another rank between local() and finish().
std::unique_ptr<fmm::RankLocal> makeCudaFmmRankLocalOwnState(int device, const CudaOptions& options = CudaOptions{});

}  // namespace amrgrav
