/// \file probes_phase.h
/// \brief A system solve's probes on the device (core/system.h): sorted and grouped on the host
/// (tree/system_points.h sortProbes, so the groups are the CPU's) and uploaded; walked as targets of a tree; finished
/// into their order. Used by the single-process system solve (system_phase.cu) and a GPU rank (rank_system.cu).
#pragma once
#include <vector>

#include "core/status.h"
#include "core/system.h"
#include "cuda/device_state.h"
#include "cuda/kernels.h"
#include "tree/tree.h"

namespace amrgrav {
namespace cuda {

/// The probes on the device: uploaded sorted (their groups are the host's), walked or summed, finished into
/// pot, ax, ay, az in the probes' order (slots 8..11 of ds.sys.probes, times np).
struct DeviceProbes {
  SortedCells sorted;
  Groups groups;
  std::vector<uint2> range;  ///< the groups as the walk reads them (kept: the upload may read it after copyIn returns)
  std::size_t np = 0, ng = 0;
  double* base = nullptr;
  double* at(int slot) const { return base + std::size_t(slot) * np; }
};

/// Sorts the probes on ds.root and ds.scale (tree/system_points.h sortProbes) and uploads them.
Status uploadProbes(DeviceState& ds, const SystemView& sys, const SolveOptions& opt, DeviceProbes& P);

/// The probes as a walk's targets (on the cells' walk parameters when there are cells: its counters and tree).
WalkParams probeTargets(DeviceState& ds, const SolveOptions& opt, const WalkParams& cellsWalk, const DeviceProbes& P);

/// The probes' walk against the local tree: the cells' walk parameters with the probes as targets.
Status walkProbes(DeviceState& ds, const SolveOptions& opt, const WalkConfig& cfg, int blocks,
                  const WalkParams& cellsWalk, const DeviceProbes& P, SystemStats& st);

/// Scale and scatter the probes' sums into their order, and download.
Status finishProbes(DeviceState& ds, const SolveOptions& opt, const DeviceProbes& P, const ResultTargets& dest);

}  // namespace cuda
}  // namespace amrgrav
