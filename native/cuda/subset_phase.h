/// \file subset_phase.h
/// \brief A subset of the cells as targets on the device (core/system.h `targets`): the walk groups that hold one,
/// as a ranged walk's groups, and the targets' results gathered from the finished arrays. A group is walked by one
/// warp whatever else is walked, so the targets' values are the full walk's bit for bit. Used by the single-process
/// system solve (system_phase.cu) and a GPU rank of a distributed solve (rank_phase.cu), whose every walk of its
/// cells (the local tree, the received LETs, the particles' tree) then takes these groups. Internal to native/cuda.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/status.h"
#include "core/types.h"
#include "cuda/device_state.h"
#include "cuda/kernels.h"

namespace amrgrav {
namespace cuda {

/// Uploads the caller's indices targets[count] (checked: core/validate.h validateTargets) and turns the walk `p`
/// over all of ds's groups (prepareWalk's) into one over the groups holding a target (WalkConfig::ranges: p.groupRange,
/// p.groupHmin, p.numGroups, their count waited for on the host). The cells are ds's n sorted cells (ds.order).
Status subsetGroups(DeviceState& ds, const std::uint32_t* targets, std::size_t count, unsigned n, WalkParams& p);

/// After finishOnDevice (res: the results of every cell in the caller's order): the targets' values, in the list's
/// order (subsetGroups' upload), down into `dest` (count of them).
Status downloadSubset(DeviceState& ds, const SolveOptions& opt, double* const res[4], std::size_t count,
                      const ResultTargets& dest);

}  // namespace cuda
}  // namespace amrgrav
