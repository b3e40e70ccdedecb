/// \file system_phase.cu
/// \brief The system solve on the device (system_phase.h). Sequence: the host's checks of the probes and targets;
/// the cell solve's phases up to the moments (tree_phase.h); the cells' walk over every group or over the list of
/// the groups holding targets; the probes' walk (sorted and grouped on the host, uploaded: positions, order, group
/// ranges) against the same tree while the sorted cells are still in place; the cells' finish (and, for a subset,
/// the gather of the targets' results) and the probes' finish; the downloads.
#include <cmath>
#include <vector>

#include "core/fixed_sum.h"
#include "core/validate.h"
#include "cuda/device.h"
#include "cuda/device_state.h"
#include "cuda/ewald_phase.h"
#include "cuda/memory_plan.h"
#include "cuda/system_phase.h"
#include "cuda/tree_phase.h"
#include "cuda/walk_phase.h"
#include "tree/system_points.h"

namespace amrgrav {
namespace cuda {
namespace {

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

/// The probes' walk against the local tree: the cells' walk parameters with the probes as targets.
Status walkProbes(DeviceState& ds, const SolveOptions& opt, const WalkConfig& cfg, int blocks,
                  const WalkParams& cellsWalk, const DeviceProbes& P, SystemStats& st) {
  WalkParams p = cellsWalk;
  WalkConfig c = cfg;
  c.ranges = true;  // the probes' octree-leaf groups
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
  WalkTally total;
  for (;;) {  // the passes write phi before the corrections add to it: a rerun needs no reset
    total = WalkTally{};
    unsigned need = 0;
    AG_TRY(walkPasses(ds, c, blocks, opt, p, total, &need, false));
    if (need == 0) break;
    AG_TRY(growQueue(ds, need));
  }
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

/// The groups holding the subset's targets, on the device, as a ranged walk's groups (WalkConfig::ranges;
/// p.groupRange, p.groupHmin, p.numGroups: their ranges and smallest sizes, from prepareWalk's); their count back on
/// the host.
Status targetGroups(DeviceState& ds, const SystemView& sys, unsigned n, WalkParams& p) {
  SystemBuffers& b = ds.sys;
  const unsigned numGroups = ds.numGroups;  // every group of the cells (prepareWalk's p.numGroups)
  const unsigned k = unsigned(sys.targetCount);
  AG_TRY(b.targets.reserve(std::max(1u, k), "the targets"));
  AG_TRY(b.flags.reserve(n, "the targets' flags"));
  AG_TRY(b.groupFlag.reserve(numGroups + 1, "the targets' groups"));
  AG_TRY(b.groupOffset.reserve(numGroups + 1, "the targets' groups"));
  AG_TRY(b.groupList.reserve(std::max(1u, numGroups), "the targets' groups"));
  Transfer t{const_cast<std::uint32_t*>(sys.targets), b.targets.get(), std::size_t(k) * 4};
  AG_TRY(copyIn(ds, &t, 1, ds.stream));
  std::size_t tempBytes = 0;
  AG_TRY(scanExclusive(nullptr, tempBytes, b.groupFlag.get(), b.groupOffset.get(), numGroups + 1, ds.stream));
  AG_TRY(reserveCubTemp(ds, tempBytes));
  tempBytes = ds.cubTemp.bytes();
  AG_TRY(launchTargetGroups(b.targets.get(), k, ds.order, n, ds.groupBegin.get(), numGroups, b.flags.get(),
                            b.groupFlag.get(), b.groupOffset.get(), b.groupList.get(), ds.cubTemp.get(), tempBytes,
                            ds.stream));
  AG_TRY(b.subsetRange.reserve(std::max(1u, numGroups), "the targets' groups"));
  AG_TRY(b.subsetHmin.reserve(std::max(1u, numGroups), "the targets' groups"));
  AG_TRY(launchSubsetGroups(b.groupList.get(), b.groupOffset.get() + numGroups, numGroups, ds.groupBegin.get(),
                            p.groupHmin, b.subsetRange.get(), b.subsetHmin.get(), ds.stream));
  unsigned* hc = static_cast<unsigned*>(ds.small.get());
  AG_CUDA_TRY(
      cudaMemcpyAsync(hc, b.groupOffset.get() + numGroups, sizeof(unsigned), cudaMemcpyDeviceToHost, ds.stream));
  AG_CUDA_TRY(cudaStreamSynchronize(ds.stream));
  p.numGroups = *hc;
  p.groupRange = b.subsetRange.get();
  p.groupHmin = b.subsetHmin.get();
  return Status::success();
}

/// walkUntilDone for a subset's groups: a queue overflow restores the sizes and the self terms of every cell
/// (launchWalkPrep into prepareWalk's smallest sizes, `fullHmin`; the subset's copy of them is unchanged) and reruns.
Status walkSubsetUntilDone(DeviceState& ds, const WalkConfig& cfg, int blocks, const SolveOptions& opt, WalkParams& p,
                           double* fullHmin, WalkTally& total) {
  for (;;) {
    total = WalkTally{};
    unsigned need = 0;
    AG_TRY(walkPasses(ds, cfg, blocks, opt, p, total, &need, false));
    if (need == 0) return Status::success();
    AG_TRY(growQueue(ds, need));
    AG_TRY(restoreSizes(ds, p.n));
    AG_TRY(launchWalkPrep(p.phi, ds.sortedCells.mass, ds.groupBegin.get(), ds.numGroups,
                          selfCoefficient(opt.selfPotential), fullHmin, ds.stream));
  }
}

/// The cells' finish: the caller's order on the device, then all of them down, or the targets' gathered and down.
Status finishCells(DeviceState& ds, const SystemView& sys, const SolveOptions& opt, const ResultTargets& dest) {
  if (!sys.hasTargets()) return finishAndDownload(ds, opt, dest);
  double* res[4];
  AG_TRY(finishOnDevice(ds, opt, res));
  const std::size_t k = sys.targetCount;
  const int nout = opt.accelerations ? 4 : 1;
  AG_TRY(ds.sys.targetOut.reserve(std::max<std::size_t>(1, 4 * k), "the targets' results"));
  double* host[4] = {dest.potential, dest.ax, dest.ay, dest.az};
  Transfer t[4];
  for (int q = 0; q < nout; ++q) {
    double* out = ds.sys.targetOut.get() + q * k;
    // out[j] = res[q][targets[j]] * 1 (exact): the full solve's values at the targets
    AG_TRY(launchGather(res[q], ds.sys.targets.get(), unsigned(k), 1.0, out, ds.stream));
    t[q] = Transfer{host[q], out, k * 8};
  }
  const auto td = Clock::now();
  AG_TRY(copyOut(ds, t, nout, ds.stream));
  AG_CUDA_TRY(cudaStreamSynchronize(ds.stream));
  ds.stats.secondsDownload = since(td);
  return Status::success();
}

Status run(DeviceState& ds, const SystemView& sys, const SolveOptions& opt, bool direct, SystemResult& out) {
  if (sys.particles.n > 0)  // issue #18: the CUDA side of the softened walks comes later
    return Status::error(ErrorCode::InvalidOption, "particles are not supported on the CUDA backend yet (issue #18): "
                                                   "use backend 'cpu'");
  ds.blk.key.valid = false;  // the device block is reused: a block solve's kept tree is gone
  const CellsView& cells = sys.cells;
  AG_TRY(checkOptions(opt, cells.n, direct));
  const auto tv = Clock::now();
  AG_TRY(validateProbes(sys.probes, opt));
  if (sys.hasTargets()) AG_TRY(validateTargets(sys.targets, sys.targetCount, cells.n));
  if (!ds.copt.validateOnDevice) AG_TRY(validateCells(cells, opt));
  ds.stats = CudaStats{};
  ds.stats.secondsValidate = since(tv);
  Status st = ensureDevice(ds);
  if (!st.ok()) {
    if (ds.copt.validateOnDevice) {  // bad cells are reported as such even without a device
      const Status sc = validateCells(cells, opt);
      if (!sc.ok()) return sc;
    }
    return st;
  }
  ds.stats.device = ds.deviceName;
  const auto t0 = Clock::now();
  const ResultTargets cellsInto = out.cells.into, probesInto = out.probes.into;
  out = SystemResult{};
  out.cells.into = cellsInto;
  out.probes.into = probesInto;
  out.stats.threads = 1;
  const bool accel = opt.accelerations;
  const unsigned n = unsigned(cells.n);
  const std::size_t np = sys.probes.n;
  const ResultTargets cellDest = out.cells.targets(sys.cellResults(), accel);
  const ResultTargets probeDest = out.probes.targets(np, accel);
  out.system.targets = sys.cellResults();
  out.system.probes = np;
  if (n == 0) {  // no sources: the probes feel nothing (as the CPU writes it)
    double* d[4] = {probeDest.potential, probeDest.ax, probeDest.ay, probeDest.az};
    for (int k = 0; k < (accel ? 4 : 1); ++k)
      for (std::size_t i = 0; i < np; ++i) d[k][i] = -opt.G * (0.0 * 1.0);
    ds.stats.secondsTotal = out.stats.secondsTotal = since(t0);
    return Status::success();
  }
  if (!direct && opt.signedSources()) ds.contrastTotal = fixedOrderSum(cells.mass, n, copyThreads(ds));
  AG_TRY(prepareCells(ds, cells, opt, direct, 0.0));
  double* const phi = ds.sums[0];
  double* g[3] = {ds.sums[1], ds.sums[2], ds.sums[3]};
  DeviceProbes P;
  if (np > 0) AG_TRY(uploadProbes(ds, sys, opt, P));
  double probeSeconds = 0;  // the probes' walk (or sums) and finish; their sort and upload are in the upload
  if (direct) {
    AG_CUDA_TRY(cudaEventRecord(ds.events[4], ds.stream));
    AG_TRY(launchDirect(ds.sortedCells, n, ds.massScale, accel, phi, g[0], g[1], g[2], ds.stream));
    AG_TRY(launchFoldSelf(phi, ds.sortedCells.mass, ds.sortedSize, n, 1.0 / ds.massScale,
                          selfCoefficient(opt.selfPotential), ds.stream));
    out.stats.directInteractions = std::uint64_t(n) * (n - 1);
    if (np > 0) {
      const auto t = Clock::now();
      AG_TRY(launchDirectAt(DeviceCells{P.at(0), P.at(1), P.at(2), P.at(3)}, unsigned(np), ds.sortedCells, n,
                            ds.massScale, accel, P.at(4), P.at(5), P.at(6), P.at(7), ds.stream));
      AG_TRY(launchFoldSelf(P.at(4), nullptr, nullptr, unsigned(np), 1.0 / ds.massScale, 0.0, ds.stream));
      out.system.probeDirect = std::uint64_t(np) * n;
      probeSeconds += since(t);
    }
  } else {
    AG_TRY(computeMoments(ds, n, ds.nodes, ds.depth, ds.root, opt, ds.massScale));
    if (opt.anyPeriodic()) AG_TRY(prepareEwald(ds, opt, ds.scale, out.stats));
    AG_CUDA_TRY(cudaEventRecord(ds.events[4], ds.stream));
    WalkConfig cfg;
    int blocks = 1;
    WalkParams p;
    AG_TRY(prepareWalk(ds, n, opt, ds.massScale, phi, g, &cfg, &blocks, p));
    WalkTally total;
    if (sys.hasTargets()) {  // only the groups that hold targets (the others' phi keeps its self terms: unread)
      double* const fullHmin = const_cast<double*>(p.groupHmin);
      AG_TRY(targetGroups(ds, sys, n, p));
      WalkConfig c = cfg;
      c.ranges = true;  // the groups holding targets
      AG_TRY(walkSubsetUntilDone(ds, c, blocks, opt, p, fullHmin, total));
    } else {
      AG_TRY(walkUntilDone(ds, cfg, blocks, opt, p, total));
    }
    out.stats.approxInteractions = total.approx;
    out.stats.directInteractions = total.direct;
    out.stats.groups = ds.numGroups;  // every group; system.targetGroups: those walked
    out.stats.nodes = ds.nodes;
    out.stats.leaves = ds.nodes - ds.splitNodes;
    out.stats.treeDepth = ds.depth;
    out.system.targetGroups = p.numGroups;
    if (np > 0) {  // before the finish: it writes the results over the sorted cells
      const auto t = Clock::now();
      AG_TRY(walkProbes(ds, opt, cfg, blocks, p, P, out.system));
      probeSeconds += since(t);
    }
  }
  AG_TRY(finishCells(ds, sys, opt, cellDest));
  fillStats(ds, direct, t0, out.stats);
  out.stats.densityContrast = ds.contrastApplied;
  out.stats.meanDensity = ds.meanDensity;
  if (opt.fullyPeriodic()) {  // over the cells computed
    double vPhi = 0, vol = 0;
    for (std::size_t k = 0; k < sys.cellResults(); ++k) {
      const std::size_t i = sys.hasTargets() ? sys.targets[k] : k;
      const double v = cells.size[i] * cells.size[i] * cells.size[i];
      vPhi += v * cellDest.potential[k];
      vol += v;
    }
    out.stats.meanPotential = vol > 0 ? vPhi / vol : 0.0;
  }
  if (np > 0) {
    const auto t = Clock::now();
    AG_TRY(finishProbes(ds, opt, P, probeDest));
    probeSeconds += since(t);
  }
  out.system.secondsProbes = probeSeconds;
  out.stats.secondsTotal = since(t0);
  return Status::success();
}

}  // namespace

Status solveSystemOnDevice(DeviceState& ds, const SystemView& system, const SolveOptions& opt, bool direct,
                           SystemResult& out) {
  std::lock_guard<std::mutex> lock(ds.mu);
  return guarded([&] { return run(ds, system, opt, direct, out); });
}

}  // namespace cuda
}  // namespace amrgrav
