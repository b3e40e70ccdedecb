/// \file system_phase.h
/// \brief The CUDA backend's system solve (core/system.h): the cell solve's phases (cuda_backend.cu), the walk
/// claiming only the groups that hold targets when a subset is given (kernel_system.cu makes the list), and the
/// probes, sorted and grouped on the host by the CPU's own code (tree/system_points.h: the same groups), walked
/// against the cells' tree by the same kernel with the probes as targets and no self pair. Internal to native/cuda.
#pragma once
#include "core/status.h"
#include "core/system.h"
#include "core/types.h"

namespace amrgrav {
namespace cuda {

struct DeviceState;

/// Backend::solveSystem on `ds` (takes its lock; host exceptions as a Status).
Status solveSystemOnDevice(DeviceState& ds, const SystemView& system, const SolveOptions& opt, bool direct,
                           SystemResult& out);

}  // namespace cuda
}  // namespace amrgrav
