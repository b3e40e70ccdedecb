/// \file particles_phase.cu
/// \brief The particles of a system solve on the device (particles_phase.h).
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "cuda/device.h"
#include "cuda/particles_phase.h"
#include "cuda/tree_phase.h"
#include "cuda/walk_phase.h"

namespace amrgrav {
namespace cuda {
namespace {

/// Slots of ds.sys.particles, n doubles each (kGroupHmin: the walk groups' smallest sizes, 0, after them).
enum ParticleSlot { kEpsIn = 0, kEps, kPot, kAx, kAy, kAz, kGroupHmin };

}  // namespace

WalkParams particleTargets(DeviceState& ds, const DeviceParticles& P) {
  const DeviceState& pds = *P.state;
  WalkParams p;
  p.cells = P.cells;
  p.n = unsigned(P.n);
  p.numGroups = pds.numGroups;
  p.groupBegin = pds.groupBegin.get();
  p.groupHmin = pds.sys.particles.get() + kGroupHmin * P.n;  // 0: split precision (no sizes)
  p.targetEps = P.eps;
  p.groupEps = pds.sys.particleGroupEps.get();
  p.massScale = ds.massScale;
  p.invMassScale = 1.0 / ds.massScale;
  p.counters = ds.walkCounters.get();
  p.interactions = ds.tally.get();
  return p;
}

Status finishParticles(DeviceState& ds, const SolveOptions& opt, DeviceParticles& P, const ResultTargets& dest) {
  const std::size_t n = P.n;
  const bool accel = opt.accelerations;
  AG_TRY(launchRemoveOwnPair(P.sums[0], P.cells.mass, P.eps, unsigned(n), ds.stream));
  double* base = P.state->sys.particles.get();
  FinishParams fp;
  fp.order = P.state->order;
  fp.phi = P.sums[0];
  fp.gx = P.sums[1];
  fp.gy = P.sums[2];
  fp.gz = P.sums[3];
  fp.pot = base + kPot * n;
  fp.ax = base + kAx * n;
  fp.ay = base + kAy * n;
  fp.az = base + kAz * n;
  fp.n = unsigned(n);
  fp.invMassScale = 1.0 / ds.massScale;
  fp.scale = ds.scale;
  fp.G = opt.G;
  AG_TRY(launchFinish(fp, accel, ds.stream));
  AG_CUDA_TRY(cudaEventRecord(ds.events[kEventParticleWalkEnd], ds.stream));
  double* host[4] = {dest.potential, dest.ax, dest.ay, dest.az};
  Transfer t[4];
  const int nout = accel ? 4 : 1;
  for (int k = 0; k < nout; ++k) t[k] = Transfer{host[k], base + (kPot + k) * n, n * 8};
  AG_TRY(copyOut(ds, t, nout, ds.stream));
  AG_CUDA_TRY(cudaStreamSynchronize(ds.stream));
  return Status::success();
}

SoftSources particleSources(const DeviceParticles& P) {
  const DeviceState& pds = *P.state;
  SoftSources s;
  s.topo = pds.topoPtr;
  s.mac = pds.nodeMacPtr;
  s.mq = pds.nodeMQPtr;
  s.nodeEps = P.nodeEps;
  s.nodeExtent = P.nodeExtent;
  s.cells = P.cells;
  s.eps = P.eps;
  return s;
}

SoftSources cellSources(const DeviceState& ds) {
  SoftSources s;
  s.topo = ds.topoPtr;
  s.mac = ds.nodeMacPtr;
  s.mq = ds.nodeMQPtr;
  s.cells = ds.sortedCells;
  return s;
}

Status buildParticles(DeviceState& ds, const ParticlesView& parts, const SolveOptions& opt, double scale, bool direct,
                      DeviceParticles& P, int which) {
  std::unique_ptr<DeviceState>& owned = ds.particleState[which];
  if (!owned) {
    owned = std::make_unique<DeviceState>(ds.copt);
    owned->pointSources = true;
  }
  DeviceState& pds = *owned;
  AG_TRY(ensureDevice(pds));
  const std::size_t n = parts.n;
  CellsView asCells;  // sizes 0, made on the device (pointSources)
  asCells.x = parts.x;
  asCells.y = parts.y;
  asCells.z = parts.z;
  asCells.mass = parts.mass;
  asCells.n = n;
  AG_TRY(prepareCells(pds, asCells, opt, direct, scale));
  if (scale > 0) pds.massScale = ds.massScale;  // the cells' mass scale: one float scaling in every walk
  else ds.massScale = pds.massScale;            // no cells: the particles' own
  // the softening as given (one value: filled) goes up first, so that the tree's device work after it is timed
  // apart from uploads (events 5 to 4); then sorted and scaled like the positions
  SystemBuffers& b = pds.sys;  // the particles' own buffers, beside their tree
  const std::size_t ng = direct ? 0 : pds.numGroups;
  AG_TRY(b.particles.reserve(6 * n + ng + 1, "the particles"));
  double* base = b.particles.get();
  std::vector<double> filled;
  const double* epsIn = parts.softening;
  if (!epsIn) {
    filled.assign(n, parts.softeningValue);
    epsIn = filled.data();
  }
  Transfer t{const_cast<double*>(epsIn), base + kEpsIn * n, n * 8};
  AG_TRY(copyIn(pds, &t, 1, pds.stream));
  AG_CUDA_TRY(cudaEventRecord(pds.events[5], pds.stream));
  if (!direct) AG_TRY(computeMoments(pds, unsigned(n), pds.nodes, pds.depth, pds.root, opt, pds.massScale));
  AG_TRY(launchGather(base + kEpsIn * n, pds.order, unsigned(n), pds.scale, base + kEps * n, pds.stream));
  P.state = &pds;
  P.n = n;
  P.cells = pds.sortedCells;
  P.eps = base + kEps * n;
  for (int k = 0; k < 4; ++k) P.sums[k] = pds.sums[k];
  if (!direct) {
    AG_TRY(b.particleNodeEps.reserve(std::max<std::size_t>(pds.nodes, 1), "the particles' tree"));
    AG_TRY(b.particleNodeExtent.reserve(std::max<std::size_t>(pds.nodes, 1), "the particles' tree"));
    AG_TRY(b.particleGroupEps.reserve(std::max<std::size_t>(ng, 1), "the particles' groups"));
    AG_TRY(launchSofteningRanges(pds.topoPtr, pds.nodeMacPtr, pds.sortedCells, pds.levelStart.data(),
                                 int(pds.levelStart.size()) - 1, pds.groupBegin.get(), unsigned(ng), P.eps,
                                 b.particleNodeEps.get(), b.particleNodeExtent.get(), b.particleGroupEps.get(),
                                 pds.stream));
    if (ng > 0) AG_CUDA_TRY(cudaMemsetAsync(base + kGroupHmin * n, 0, ng * 8, pds.stream));
    P.nodes = pds.nodes;
    P.groups = ng;
    P.nodeEps = b.particleNodeEps.get();
    P.nodeExtent = b.particleNodeExtent.get();
  }
  AG_CUDA_TRY(cudaEventRecord(pds.events[4], pds.stream));
  AG_CUDA_TRY(cudaStreamSynchronize(pds.stream));  // the cells' stream walks what this one built
  // keys and sort, build, then moments, softening ranges and extents (walk_phase.cu fillStats' intervals)
  if (which == 0) {
    const double parts[4] = {elapsed(pds, 8, 2), elapsed(pds, 6, 7), elapsed(pds, 7, 3), elapsed(pds, 5, 4)};
    ds.stats.secondsParticleTree = direct ? 0.0 : parts[0] + parts[1] + parts[2] + parts[3];
    for (int k = 0; k < 4; ++k) ds.stats.particleTreeParts[k] = direct ? 0.0 : parts[k];
    ds.stats.particleTreeDepth = direct ? 0 : pds.depth;
  }
  if (scale <= 0) {
    ds.scale = pds.scale;
    ds.root = pds.root;
  }
  return Status::success();
}

Status prepareSoftWalk(DeviceState& ds) {
  AG_TRY(ds.walkCounters.reserve(kWalkCounterCount, "walk counters"));
  AG_TRY(ds.tally.reserve(4, "counters"));
  AG_CUDA_TRY(cudaMemsetAsync(ds.tally.get(), 0, 4 * sizeof(unsigned long long), ds.stream));
  ds.walkRoom = Carve{};  // no cell block this solve: the queues in a buffer of their own
  if (ds.queueCap == 0) ds.queueCap = nextPow2(std::max(64u, ds.copt.initialQueueCapacity));
  return Status::success();
}

Status softWalk(DeviceState& ds, const SolveOptions& opt, const WalkParams& targets, int cellsPerLane, bool ranges,
                const SoftSources& src, double* const* out, double* const* add, WalkTally& total) {
  if (targets.numGroups == 0 || targets.n == 0) return Status::success();
  const bool accel = opt.accelerations;
  WalkParams p = targets;
  p.topo = src.topo;
  p.nodeMac = src.mac;
  p.nodeMQ = src.mq;
  p.nodeDip = nullptr;
  p.nodeEps = src.nodeEps;
  p.nodeExtent = src.nodeExtent;
  p.sources = src.cells;
  p.sourceEps = src.eps;
  p.selfPairs = src.selfPairs;
  p.phi = out[0];
  p.selfTerm = out[0];
  p.selfPotential = false;
  p.gx = accel ? out[1] : nullptr;
  p.gy = accel ? out[2] : nullptr;
  p.gz = accel ? out[3] : nullptr;
  p.ewald = EwaldDeviceView{};
  WalkConfig c = walkConfigFor(opt);  // isolated (particles), box MAC: the Soft kernels take neither vote nor images
  c.vote = c.periodic = c.dipole = false;
  c.cellsPerLane = cellsPerLane;
  c.ranges = ranges;
  c.softening = 1 + int(opt.softening);
  int perSm = 1;
  AG_TRY(walkBlocksPerSm(c, &perSm));
  const unsigned long long wanted = (targets.numGroups + kWalkWarpsPerBlock - 1) / kWalkWarpsPerBlock;
  const int blocks = int(std::max<unsigned long long>(1, std::min<unsigned long long>(wanted, 1ull * ds.smCount * perSm)));
  WalkTally pass;
  AG_TRY(walkPassesUntilDone(ds, c, blocks, opt, p, pass));
  total.approx += pass.approx;
  total.direct += pass.direct;
  if (add)
    for (int k = 0; k < (accel ? 4 : 1); ++k) AG_TRY(launchAddInto(add[k], out[k], targets.n, ds.stream));
  return Status::success();
}

Status walkParticles(DeviceState& ds, const SolveOptions& opt, DeviceParticles& P, const SoftSources* cells,
                     SoftSources tree, WalkTally& total) {
  const std::size_t n = P.n;
  const WalkParams targets = particleTargets(ds, P);
  const int points = cellsPerLaneFor(opt.pointGroupSize());
  tree.selfPairs = 1;  // each particle meets itself there (its pair: finishParticles)
  if (!cells) return softWalk(ds, opt, targets, points, false, tree, P.sums, nullptr, total);
  AG_TRY(softWalk(ds, opt, targets, points, false, *cells, P.sums, nullptr, total));
  AG_TRY(ds.sys.softSums.reserve(4 * n, "the softened walks' sums"));
  double* tmp[4] = {ds.sys.softSums.get(), ds.sys.softSums.get() + n, ds.sys.softSums.get() + 2 * n,
                    ds.sys.softSums.get() + 3 * n};
  return softWalk(ds, opt, targets, points, false, tree, tmp, P.sums, total);
}

Status solveParticles(DeviceState& ds, const SolveOptions& opt, DeviceParticles& P, const SoftSources* cells,
                      const ResultTargets& dest, SystemStats& st) {
  if (P.n == 0) return Status::success();
  WalkTally total;
  AG_CUDA_TRY(cudaEventRecord(ds.events[kEventParticleWalkStart], ds.stream));
  AG_TRY(walkParticles(ds, opt, P, cells, particleSources(P), total));
  st.particleApprox += total.approx;
  st.particleDirect += total.direct;
  st.particleGroups = P.groups;
  st.particleNodes = P.nodes;
  AG_TRY(finishParticles(ds, opt, P, dest));  // records the walks' end, then synchronises
  ds.stats.secondsParticleWalk = elapsed(ds, kEventParticleWalkStart, kEventParticleWalkEnd);
  return Status::success();
}

Status directParticles(DeviceState& ds, const SolveOptions& opt, DeviceParticles& P, unsigned n, double* const* cellSums,
                       const DeviceCells& probes, unsigned np, double* const* probeSums, const ResultTargets& dest,
                       SystemStats& st) {
  const unsigned m = unsigned(P.n);
  const bool accel = opt.accelerations;
  const SofteningKernel k = opt.softening;
  const double ms = ds.massScale;
  if (m == 0) return Status::success();
  AG_TRY(launchDirectSoft(ds.sortedCells, nullptr, n, P.cells, P.eps, m, k, ms, accel, cellSums[0], cellSums[1],
                          cellSums[2], cellSums[3], ds.stream));
  AG_TRY(launchDirectSoft(probes, nullptr, np, P.cells, P.eps, m, k, ms, accel, probeSums[0], probeSums[1],
                          probeSums[2], probeSums[3], ds.stream));
  for (int q = 0; q < (accel ? 4 : 1); ++q) AG_CUDA_TRY(cudaMemsetAsync(P.sums[q], 0, std::size_t(m) * 8, ds.stream));
  AG_TRY(launchDirectSoft(P.cells, P.eps, m, ds.sortedCells, nullptr, n, k, ms, accel, P.sums[0], P.sums[1], P.sums[2],
                          P.sums[3], ds.stream));
  AG_TRY(launchDirectSoft(P.cells, P.eps, m, P.cells, P.eps, m, k, ms, accel, P.sums[0], P.sums[1], P.sums[2],
                          P.sums[3], ds.stream));
  st.particleDirect += std::uint64_t(m) * n * 2 + std::uint64_t(np) * m + std::uint64_t(m) * (m - 1);
  return finishParticles(ds, opt, P, dest);
}

}  // namespace cuda
}  // namespace amrgrav
