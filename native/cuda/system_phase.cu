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
#include "cuda/particles_phase.h"
#include "cuda/probes_phase.h"
#include "cuda/subset_phase.h"
#include "cuda/system_phase.h"
#include "cuda/tree_phase.h"
#include "cuda/walk_phase.h"
#include "tree/particle_tree.h"
#include "tree/system_points.h"

namespace amrgrav {
namespace cuda {
namespace {

/// The cells' finish: the caller's order on the device, then all of them down, or the targets' gathered and down.
Status finishCells(DeviceState& ds, const SystemView& sys, const SolveOptions& opt, const ResultTargets& dest) {
  if (!sys.hasTargets()) return finishAndDownload(ds, opt, dest);
  double* res[4];
  AG_TRY(finishOnDevice(ds, opt, res));
  return downloadSubset(ds, opt, res, sys.targetCount, dest);
}

/// A system without cells: the particles' tree alone, on its own length scale; the probes walk it.
Status particlesAlone(DeviceState& ds, const SystemView& sys, const SolveOptions& opt, bool direct,
                      const ResultTargets& probeDest, const ResultTargets& particleDest, Clock::time_point t0,
                      SystemResult& out) {
  const ParticlesView& parts = sys.particles;
  DeviceParticles Q;  // on their own length and mass scales (ds takes them)
  AG_TRY(buildParticles(ds, parts, opt, 0.0, direct, Q));
  AG_TRY(prepareSoftWalk(ds));
  const std::size_t np = sys.probes.n;
  DeviceProbes P;
  if (np > 0) AG_TRY(uploadProbes(ds, sys, opt, P));
  double* probeSums[4] = {P.at(4), P.at(5), P.at(6), P.at(7)};
  if (direct) {
    for (int k = 0; k < (opt.accelerations ? 4 : 1) && np > 0; ++k)
      AG_CUDA_TRY(cudaMemsetAsync(probeSums[k], 0, np * 8, ds.stream));
    AG_TRY(directParticles(ds, opt, Q, 0, probeSums, DeviceCells{P.at(0), P.at(1), P.at(2), P.at(3)}, unsigned(np),
                           probeSums, particleDest, out.system));
  } else {
    if (np > 0) {
      WalkTally soft;
      AG_TRY(softWalk(ds, opt, probeTargets(ds, opt, WalkParams{}, P), cellsPerLaneFor(opt.pointGroupSize()), true,
                      particleSources(Q), probeSums, nullptr, soft));
      out.system.particleApprox += soft.approx;
      out.system.particleDirect += soft.direct;
      out.system.probeGroups = P.ng;
    }
    AG_TRY(solveParticles(ds, opt, Q, nullptr, particleDest, out.system));
  }
  if (np > 0) AG_TRY(finishProbes(ds, opt, P, probeDest));
  out.system.secondsParticles = out.stats.secondsTotal = since(t0);
  return Status::success();
}

Status run(DeviceState& ds, const SystemView& sys, const SolveOptions& opt, bool direct, SystemResult& out) {
  ds.blk.key.valid = false;  // the device block is reused: a block solve's kept tree is gone
  const CellsView& cells = sys.cells;
  AG_TRY(checkOptions(opt, cells.n, direct));
  const auto tv = Clock::now();
  AG_TRY(validateProbes(sys.probes, opt));
  if (sys.particles.n > 0) AG_TRY(validateParticles(sys.particles, opt));
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
  const ResultTargets cellsInto = out.cells.into, probesInto = out.probes.into, particlesInto = out.particles.into;
  out = SystemResult{};
  out.cells.into = cellsInto;
  out.probes.into = probesInto;
  out.particles.into = particlesInto;
  out.stats.threads = 1;
  const bool accel = opt.accelerations;
  const unsigned n = unsigned(cells.n);
  const std::size_t np = sys.probes.n, npart = sys.particles.n;
  const ResultTargets cellDest = out.cells.targets(sys.cellResults(), accel);
  const ResultTargets probeDest = out.probes.targets(np, accel);
  const ResultTargets particleDest = out.particles.targets(npart, accel);
  out.system.targets = sys.cellResults();
  out.system.probes = np;
  out.system.particles = npart;
  if (n == 0 && npart > 0) return particlesAlone(ds, sys, opt, direct, probeDest, particleDest, t0, out);
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
  DeviceParticles Q;        // the particles' tree on the cells' length scale
  const auto tq = Clock::now();
  if (npart > 0) AG_TRY(buildParticles(ds, sys.particles, opt, ds.scale, direct, Q));
  double particleSeconds = since(tq);
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
    if (npart > 0) {  // every pair with a particle, softened; before the finishes (they overwrite the sorted cells)
      const auto t = Clock::now();
      double* probeSums[4] = {P.at(4), P.at(5), P.at(6), P.at(7)};
      AG_TRY(directParticles(ds, opt, Q, n, ds.sums, DeviceCells{P.at(0), P.at(1), P.at(2), P.at(3)}, unsigned(np),
                             probeSums, particleDest, out.system));
      particleSeconds += since(t);
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
      AG_TRY(subsetGroups(ds, sys.targets, sys.targetCount, n, p));
      WalkConfig c = cfg;
      c.ranges = true;  // the groups holding targets
      AG_TRY(walkUntilDone(ds, c, blocks, opt, p, total, fullHmin));
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
    if (npart > 0) {  // the particles' tree acts on the cells and the probes; the particles walk both trees
      const auto t = Clock::now();
      AG_TRY(ds.sys.softSums.reserve(4 * std::max<std::size_t>(n, np), "the softened walks' sums"));
      double* tmp[4];
      for (int k = 0; k < 4; ++k) tmp[k] = ds.sys.softSums.get() + k * std::max<std::size_t>(n, np);
      WalkTally soft;
      const SoftSources parts = particleSources(Q);
      AG_TRY(softWalk(ds, opt, p, cellsPerLaneFor(opt.cellGroupSize()), sys.hasTargets(), parts, tmp, ds.sums, soft));
      if (np > 0) {
        double* probeSums[4] = {P.at(4), P.at(5), P.at(6), P.at(7)};
        AG_TRY(softWalk(ds, opt, probeTargets(ds, opt, p, P), cellsPerLaneFor(opt.pointGroupSize()), true, parts, tmp,
                        probeSums, soft));
      }
      out.system.particleApprox += soft.approx;
      out.system.particleDirect += soft.direct;
      const SoftSources cellTree = cellSources(ds);
      AG_TRY(solveParticles(ds, opt, Q, &cellTree, particleDest, out.system));
      particleSeconds += since(t);
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
  out.system.secondsParticles = particleSeconds;
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
