/// \file solve.h
/// \brief The CUDA solve's orchestration over a DeviceState (cuda_backend.cu): what the backend's solve() and
/// direct() run, and what the tools' adapter (testing.cu) runs on its own state. Internal to native/cuda.
#pragma once
#include "core/status.h"
#include "core/types.h"

namespace amrgrav {
namespace cuda {

struct DeviceState;

/// validateOptions on the host, then on the device: upload, root-cube bounds (which also checks every cell as
/// validateCells does; on a failure validateCells itself runs on the host and its Status is returned), Morton keys,
/// stable sort, octree topology level by level, the gather in place into sorted scaled cells, moments bottom-up,
/// the group walk (direct: the O(N^2) kernel), scaling and scatter, download. Takes the state's lock; host
/// exceptions come back as a Status.
Status solveOnDevice(DeviceState& ds, const CellsView& cells, const SolveOptions& opt, SolveResult& out, bool direct);

}  // namespace cuda
}  // namespace amrgrav
