/// \file probes_phase.cu
/// \brief The probes of a system solve on the device (probes_phase.h).
#include "cuda/probes_phase.h"

#include "cuda/device.h"
#include "cuda/memory_plan.h"
#include "cuda/walk_phase.h"
#include "tree/system_points.h"

namespace amrgrav {
namespace cuda {

Status uploadProbes(DeviceState& ds, const SystemView& sys, const SolveOptions& opt, DeviceProbes& P) {
  sortProbes(sys.probes, ds.root, ds.scale, opt, P.sorted, P.groups);
  P.np = sys.probes.n;
  P.ng = P.groups.size();
  SystemBuffers& b = ds.sys;
  AG_TRY(b.probes.reserve(12 * P.np + P.ng, "the probes"));
  AG_TRY(b.probeOrder.reserve(P.np, "the probes' order"));
  AG_TRY(b.probeRange.reserve(P.ng, "the probes' groups"));
  P.base = b.probes.get();
  P.range.resize(P.ng);
  for (std::size_t g = 0; g < P.ng; ++g) P.range[g] = make_uint2(P.groups.begin[g], P.groups.count[g]);
  Transfer t[5] = {{P.sorted.x.data(), P.at(0), P.np * 8},
                   {P.sorted.y.data(), P.at(1), P.np * 8},
                   {P.sorted.z.data(), P.at(2), P.np * 8},
                   {P.sorted.order.data(), b.probeOrder.get(), P.np * 4},
                   {P.range.data(), b.probeRange.get(), P.ng * sizeof(uint2)}};
  AG_CUDA_TRY(cudaMemsetAsync(P.at(3), 0, P.np * 8, ds.stream));  // the probes' masses (never read as sources)
  AG_CUDA_TRY(cudaMemsetAsync(P.at(4), 0, P.np * 8, ds.stream));  // phi: written by the walk; the direct path too
  AG_CUDA_TRY(cudaMemsetAsync(P.at(12), 0, P.ng * 8, ds.stream));  // group hmin 0: split precision (no sizes)
  return copyIn(ds, t, 5, ds.stream);
}

/// The probes as a walk's targets (on the cells' walk parameters when there are cells: its counters and tree).
WalkParams probeTargets(DeviceState& ds, const SolveOptions& opt, const WalkParams& cellsWalk, const DeviceProbes& P) {
  WalkParams p = cellsWalk;
  p.cells = DeviceCells{P.at(0), P.at(1), P.at(2), P.at(3)};
  p.sources = ds.sortedCells;
  p.n = unsigned(P.np);
  p.numGroups = unsigned(P.ng);
  p.groupRange = ds.sys.probeRange.get();
  p.groupHmin = P.at(12);
  p.phi = P.at(4);
  p.selfTerm = P.at(4);
  p.selfPotential = false;
  p.gx = opt.accelerations ? P.at(5) : nullptr;
  p.gy = opt.accelerations ? P.at(6) : nullptr;
  p.gz = opt.accelerations ? P.at(7) : nullptr;
  p.selfPairs = 0;
  p.hoistCorrection = true;  // the probes walk the whole local tree, as the cells do
  p.massScale = ds.massScale;
  p.invMassScale = 1.0 / ds.massScale;
  p.counters = ds.walkCounters.get();
  p.interactions = ds.tally.get();
  return p;
}

/// The probes' walk against the local tree: the cells' walk parameters with the probes as targets.
Status walkProbes(DeviceState& ds, const SolveOptions& opt, const WalkConfig& cfg, int blocks,
                  const WalkParams& cellsWalk, const DeviceProbes& P, SystemStats& st) {
  WalkConfig c = cfg;
  c.ranges = true;  // the probes' octree-leaf groups
  c.cellsPerLane = cellsPerLaneFor(opt.pointGroupSize());
  WalkParams p = probeTargets(ds, opt, cellsWalk, P);
  WalkTally total;
  AG_TRY(walkPassesUntilDone(ds, c, blocks, opt, p, total));
  st.probeApprox = total.approx;
  st.probeDirect = total.direct;
  st.probeGroups = P.ng;
  return Status::success();
}

/// Scale and scatter the probes' sums into their order, and download.
Status finishProbes(DeviceState& ds, const SolveOptions& opt, const DeviceProbes& P, const ResultTargets& dest) {
  FinishParams fp;
  fp.order = ds.sys.probeOrder.get();
  fp.phi = P.at(4);
  fp.gx = P.at(5);
  fp.gy = P.at(6);
  fp.gz = P.at(7);
  fp.pot = P.at(8);
  fp.ax = P.at(9);
  fp.ay = P.at(10);
  fp.az = P.at(11);
  fp.n = unsigned(P.np);
  fp.invMassScale = 1.0 / ds.massScale;
  fp.scale = ds.scale;
  fp.G = opt.G;
  AG_TRY(launchFinish(fp, opt.accelerations, ds.stream));
  double* host[4] = {dest.potential, dest.ax, dest.ay, dest.az};
  Transfer t[4];
  const int nout = opt.accelerations ? 4 : 1;
  for (int k = 0; k < nout; ++k) t[k] = Transfer{host[k], P.at(8 + k), P.np * 8};
  AG_TRY(copyOut(ds, t, nout, ds.stream));
  AG_CUDA_TRY(cudaStreamSynchronize(ds.stream));
  return Status::success();
}

}  // namespace cuda
}  // namespace amrgrav
