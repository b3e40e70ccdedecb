/// \file particles_phase.cu
/// \brief The particles of a system solve on the device (particles_phase.h).
#include <algorithm>
#include <cmath>

#include "cuda/device.h"
#include "cuda/particles_phase.h"
#include "cuda/tree_phase.h"
#include "cuda/walk_phase.h"

namespace amrgrav {
namespace cuda {
namespace {

/// Slots of ds.sys.particles, n doubles each (kGroupHmin: the groups' smallest sizes, 0, after them).
enum ParticleSlot { kX = 0, kY, kZ, kMass, kEps, kPhi, kGx, kGy, kGz, kPot, kAx, kAy, kAz, kGroupHmin };

/// The host tree in the walk's layout: topology, MAC records, multipoles (times massScale, the second moment in the
/// last slot as the cells' moments keep it), softening ranges; the groups' ranges and softening ranges.
void layoutOf(DeviceParticles& P, double massScale) {
  const ParticleTree& t = P.host;
  const Octree& o = t.tree;
  P.nodes = o.nodeCount();
  P.topo.resize(P.nodes);
  P.mac.resize(P.nodes);
  P.mq.resize(2 * P.nodes);
  P.nodeEps.resize(P.nodes);
  for (std::size_t i = 0; i < P.nodes; ++i) {
    P.topo[i] = make_uint4(o.cellBegin[i], o.cellCount[i], o.childBegin[i], o.childCount[i]);
    P.mac[i] = D4{o.com[3 * i], o.com[3 * i + 1], o.com[3 * i + 2], o.macRadius[i]};
    const double* q = &o.quad[6 * i];
    P.mq[2 * i] = make_float4(float(o.mass[i] * massScale), float(q[0] * massScale), float(q[1] * massScale),
                              float(q[2] * massScale));
    P.mq[2 * i + 1] = make_float4(float(q[3] * massScale), float(q[4] * massScale), float(q[5] * massScale),
                                  float(t.secondMoment[i] * massScale));
    P.nodeEps[i] = make_double2(t.epsMin[i], t.epsMax[i]);
  }
  P.groups = t.groups.size();
  P.range.resize(P.groups);
  P.groupEps.resize(P.groups);
  for (std::size_t g = 0; g < P.groups; ++g) {
    P.range[g] = make_uint2(t.groups.begin[g], t.groups.count[g]);
    P.groupEps[g] = make_double2(t.groupEpsMin[g], t.groupEpsMax[g]);
  }
}

/// The particles as a softened walk's targets (the counters of ds; groups as ranges).
WalkParams particleTargets(DeviceState& ds, const DeviceParticles& P) {
  WalkParams p;
  p.cells = P.cells;
  p.n = unsigned(P.n);
  p.numGroups = unsigned(P.groups);
  p.groupRange = ds.sys.particleRange.get();
  p.groupHmin = ds.sys.particles.get() + kGroupHmin * P.n;  // 0: split precision (no sizes)
  p.targetEps = P.eps;
  p.groupEps = ds.sys.particleGroupEps.get();
  p.massScale = ds.massScale;
  p.invMassScale = 1.0 / ds.massScale;
  p.counters = ds.walkCounters.get();
  p.interactions = ds.tally.get();
  return p;
}

/// The particles' own pairs out, then scaled and scattered into their order, and down into `dest`.
Status finishParticles(DeviceState& ds, const SolveOptions& opt, DeviceParticles& P, const ResultTargets& dest) {
  const std::size_t n = P.n;
  const bool accel = opt.accelerations;
  AG_TRY(launchRemoveOwnPair(P.sums[0], P.cells.mass, P.eps, unsigned(n), ds.stream));
  FinishParams fp;
  fp.order = ds.sys.particleOrder.get();
  fp.phi = P.sums[0];
  fp.gx = P.sums[1];
  fp.gy = P.sums[2];
  fp.gz = P.sums[3];
  double* base = ds.sys.particles.get();
  fp.pot = base + kPot * n;
  fp.ax = base + kAx * n;
  fp.ay = base + kAy * n;
  fp.az = base + kAz * n;
  fp.n = unsigned(n);
  fp.invMassScale = 1.0 / ds.massScale;
  fp.scale = ds.scale;
  fp.G = opt.G;
  AG_TRY(launchFinish(fp, accel, ds.stream));
  double* host[4] = {dest.potential, dest.ax, dest.ay, dest.az};
  Transfer t[4];
  const int nout = accel ? 4 : 1;
  for (int k = 0; k < nout; ++k) t[k] = Transfer{host[k], base + (kPot + k) * n, n * 8};
  AG_TRY(copyOut(ds, t, nout, ds.stream));
  AG_CUDA_TRY(cudaStreamSynchronize(ds.stream));
  return Status::success();
}

}  // namespace

SoftSources particleSources(const DeviceState& ds, const DeviceParticles& P) {
  SoftSources s;
  s.topo = ds.sys.particleTopo.get();
  s.mac = ds.sys.particleMac.get();
  s.mq = ds.sys.particleMQ.get();
  s.nodeEps = ds.sys.particleNodeEps.get();
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

Status uploadParticles(DeviceState& ds, const ParticlesView& particles, const SolveOptions& opt, double scale,
                       DeviceParticles& P) {
  AG_TRY(validateParticles(particles, opt));
  AG_TRY(buildParticleTree(particles, opt, scale, P.host));
  P.n = particles.n;
  layoutOf(P, ds.massScale);
  SystemBuffers& b = ds.sys;
  const std::size_t n = P.n, ng = P.groups, nodes = P.nodes;
  AG_TRY(b.particles.reserve(13 * n + ng, "the particles"));
  AG_TRY(b.particleOrder.reserve(std::max<std::size_t>(n, 1), "the particles' order"));
  AG_TRY(b.particleRange.reserve(std::max<std::size_t>(ng, 1), "the particles' groups"));
  AG_TRY(b.particleGroupEps.reserve(std::max<std::size_t>(ng, 1), "the particles' groups"));
  AG_TRY(b.particleNodeEps.reserve(std::max<std::size_t>(nodes, 1), "the particles' tree"));
  AG_TRY(b.particleTopo.reserve(std::max<std::size_t>(nodes, 1), "the particles' tree"));
  AG_TRY(b.particleMac.reserve(std::max<std::size_t>(nodes, 1), "the particles' tree"));
  AG_TRY(b.particleMQ.reserve(std::max<std::size_t>(2 * nodes, 1), "the particles' tree"));
  double* base = b.particles.get();
  auto at = [&](int slot) { return base + std::size_t(slot) * n; };
  const SortedCells& s = P.host.sorted;
  Transfer t[11] = {{const_cast<double*>(s.x.data()), at(kX), n * 8},
                    {const_cast<double*>(s.y.data()), at(kY), n * 8},
                    {const_cast<double*>(s.z.data()), at(kZ), n * 8},
                    {const_cast<double*>(s.mass.data()), at(kMass), n * 8},
                    {P.host.eps.data(), at(kEps), n * 8},
                    {const_cast<std::uint32_t*>(s.order.data()), b.particleOrder.get(), n * 4},
                    {P.range.data(), b.particleRange.get(), ng * sizeof(uint2)},
                    {P.groupEps.data(), b.particleGroupEps.get(), ng * sizeof(double2)},
                    {P.nodeEps.data(), b.particleNodeEps.get(), nodes * sizeof(double2)},
                    {P.topo.data(), b.particleTopo.get(), nodes * sizeof(uint4)},
                    {P.mac.data(), b.particleMac.get(), nodes * sizeof(D4)}};
  AG_TRY(copyIn(ds, t, 11, ds.stream));
  Transfer m{P.mq.data(), b.particleMQ.get(), 2 * nodes * sizeof(float4)};
  AG_TRY(copyIn(ds, &m, 1, ds.stream));
  if (ng > 0) AG_CUDA_TRY(cudaMemsetAsync(at(kGroupHmin), 0, ng * 8, ds.stream));
  P.cells = DeviceCells{at(kX), at(kY), at(kZ), at(kMass)};
  P.eps = at(kEps);
  for (int k = 0; k < 4; ++k) P.sums[k] = at(kPhi + k);
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

Status softWalk(DeviceState& ds, const SolveOptions& opt, const WalkParams& targets, bool ranges,
                const SoftSources& src, double* const* out, double* const* add, WalkTally& total) {
  if (targets.numGroups == 0 || targets.n == 0) return Status::success();
  const bool accel = opt.accelerations;
  WalkParams p = targets;
  p.topo = src.topo;
  p.nodeMac = src.mac;
  p.nodeMQ = src.mq;
  p.nodeDip = nullptr;
  p.nodeEps = src.nodeEps;
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
  WalkConfig c;
  c.order = opt.order;
  c.accelerations = accel;
  c.cellsPerLane = opt.groupSize > 32 ? 2 : 1;
  c.ranges = ranges;
  c.softening = 1 + int(opt.softening);
  int perSm = 1;
  AG_TRY(walkBlocksPerSm(c, &perSm));
  const unsigned long long wanted = (targets.numGroups + kWalkWarpsPerBlock - 1) / kWalkWarpsPerBlock;
  const int blocks = int(std::max<unsigned long long>(1, std::min<unsigned long long>(wanted, 1ull * ds.smCount * perSm)));
  WalkTally pass;
  for (;;) {  // every walked target is written again by a rerun
    pass = WalkTally{};
    unsigned need = 0;
    AG_TRY(walkPasses(ds, c, blocks, opt, p, pass, &need, false));
    if (need == 0) break;
    AG_TRY(growQueue(ds, need));
  }
  total.approx += pass.approx;
  total.direct += pass.direct;
  if (add)
    for (int k = 0; k < (accel ? 4 : 1); ++k) AG_TRY(launchAddInto(add[k], out[k], targets.n, ds.stream));
  return Status::success();
}

Status solveParticles(DeviceState& ds, const SolveOptions& opt, DeviceParticles& P, const SoftSources* cells,
                      const ResultTargets& dest, SystemStats& st) {
  const std::size_t n = P.n;
  if (n == 0) return Status::success();
  const WalkParams targets = particleTargets(ds, P);
  SoftSources own = particleSources(ds, P);
  own.selfPairs = 1;
  WalkTally total;
  if (cells) {
    AG_TRY(softWalk(ds, opt, targets, true, *cells, P.sums, nullptr, total));
    AG_TRY(ds.sys.softSums.reserve(4 * n, "the softened walks' sums"));
    double* tmp[4] = {ds.sys.softSums.get(), ds.sys.softSums.get() + n, ds.sys.softSums.get() + 2 * n,
                      ds.sys.softSums.get() + 3 * n};
    AG_TRY(softWalk(ds, opt, targets, true, own, tmp, P.sums, total));
  } else {
    AG_TRY(softWalk(ds, opt, targets, true, own, P.sums, nullptr, total));
  }
  st.particleApprox += total.approx;
  st.particleDirect += total.direct;
  st.particleGroups = P.groups;
  st.particleNodes = P.nodes;
  return finishParticles(ds, opt, P, dest);
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
