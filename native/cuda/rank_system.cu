/// \file rank_system.cu
/// \brief A GPU rank's probes and particles in a distributed system solve (rank_system.h).
#include "cuda/rank_system.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <vector>

#include "cuda/device.h"
#include "cuda/ewald_phase.h"
#include "cuda/memory_plan.h"
#include "cuda/rank_phase.h"
#include "cuda/tree_phase.h"
#include "cuda/walk_phase.h"
#include "tree/particle_tree.h"

namespace amrgrav {
namespace cuda {
namespace {

/// Room for a walk's sums of m targets before they are added (ds.sys.softSums), as four arrays.
Status scratchSums(DeviceState& ds, std::size_t m, double* out[4]) {
  m = std::max<std::size_t>(m, 1);
  AG_TRY(ds.sys.softSums.reserve(4 * m, "the walks' sums"));
  for (int k = 0; k < 4; ++k) out[k] = ds.sys.softSums.get() + k * m;
  return Status::success();
}

/// The walk configuration of the rank's probes: the cells' (with cells), else made as walkShape makes it.
Status probeConfig(DeviceState& ds, const RankSystem& r, const SolveOptions& opt, WalkConfig& c, int& blocks) {
  c = r.hasCells ? ds.rankCfg : walkConfigFor(opt);
  c.ranges = true;
  c.cellsPerLane = cellsPerLaneFor(opt.pointGroupSize());
  blocks = int(std::max<std::size_t>(1, (r.probes.ng + kWalkWarpsPerBlock - 1) / kWalkWarpsPerBlock));
  return Status::success();
}

}  // namespace

Status rankSystemBuild(DeviceState& ds, RankSystem& r, const SolveOptions& opt, double scale, double totalMass) {
  std::lock_guard<std::mutex> lock(ds.mu);
  return guarded([&]() -> Status {
    r.st = SystemStats{};
    r.particles = false;
    r.own = DeviceParticles{};
    r.probes = DeviceProbes{};
    ds.letSecondMoment = false;
    if (!r.hasCells) {  // no local tree: the global scales, the root of no cells (the CPU rank's), the counters
      ds.scale = scale;
      ds.massScale = powerOfTwoScale(totalMass);
      RootCube root = chooseRootCube(CellsView{}, opt);
      for (int d = 0; d < 3; ++d) root.lo[d] *= scale;
      root.side *= scale;
      ds.root = root;
      AG_TRY(prepareSoftWalk(ds));
      if (opt.anyPeriodic() && r.sys.probes.n > 0) {
        SolveStats unused;
        AG_TRY(prepareEwald(ds, opt, scale, unused));
      }
    }
    if (r.sys.probes.n > 0) AG_TRY(uploadProbes(ds, r.sys, opt, r.probes));
    return Status::success();
  });
}

Status rankSystemParticles(DeviceState& ds, RankSystem& r, const SolveOptions& opt, double scale) {
  std::lock_guard<std::mutex> lock(ds.mu);
  return guarded([&]() -> Status {
    r.particles = true;
    r.scale = scale;
    r.hostTreeBuilt = false;
    if (r.sys.particles.n > 0) AG_TRY(buildParticles(ds, r.sys.particles, opt, scale, false, r.own, 0));
    // the Plummer expansion's trace term: the LETs this rank sends carry their nodes' second moments
    ds.letSecondMoment = opt.softening == SofteningKernel::Plummer;
    return Status::success();
  });
}

Status rankSystemSummary(DeviceState& ds, RankSystem& r, RankSummary& out) {
  std::lock_guard<std::mutex> lock(ds.mu);
  return guarded([&]() -> Status {
    auto grow = [&](const double lo[3], const double hi[3], const double w[3]) {
      for (int d = 0; d < 3; ++d) {
        out.centreLo[d] = std::min(out.centreLo[d], lo[d]);
        out.centreHi[d] = std::max(out.centreHi[d], hi[d]);
        out.groupHalfWidth[d] = std::max(out.groupHalfWidth[d], w[d]);
      }
    };
    const DeviceProbes& P = r.probes;
    if (P.np > 0) {
      double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY}, w[3];
      const std::vector<double>* p[3] = {&P.sorted.x, &P.sorted.y, &P.sorted.z};
      for (int d = 0; d < 3; ++d)
        for (const double v : *p[d]) {
          lo[d] = std::min(lo[d], v);
          hi[d] = std::max(hi[d], v);
        }
      groupHalfWidths(P.groups, w);
      grow(lo, hi, w);
    }
    if (r.own.n > 0) {  // the own particles' sorted centres and their groups' widths, on their state's device block
      DeviceState& pds = *r.own.state;
      cudaStream_t s = pds.stream;
      const CellChecks none;
      AG_TRY(launchBounds(r.own.cells, nullptr, nullptr, unsigned(r.own.n), none,
                          pds.bounds.get(), pds.bounds.get() + kBoundsStride * kBoundsBlocks, s));
      double* hb = static_cast<double*>(pds.small.get());
      AG_CUDA_TRY(cudaMemcpyAsync(hb, pds.bounds.get() + kBoundsStride * kBoundsBlocks, 6 * sizeof(double),
                                  cudaMemcpyDeviceToHost, s));
      unsigned long long* widths =
          reinterpret_cast<unsigned long long*>(pds.bounds.get() + kBoundsStride * kBoundsBlocks + 8);
      AG_TRY(launchGroupHalfWidths(r.own.cells, pds.groupBegin.get(), pds.numGroups, widths, s));
      AG_CUDA_TRY(cudaMemcpyAsync(hb + 8, widths, 3 * sizeof(double), cudaMemcpyDeviceToHost, s));
      AG_CUDA_TRY(cudaStreamSynchronize(s));
      grow(hb, hb + 3, hb + 8);  // the widths: the bits of non-negative doubles
    }
    return Status::success();
  });
}

Status rankSystemLocal(DeviceState& ds, RankSystem& r, const SolveOptions& opt) {
  std::lock_guard<std::mutex> lock(ds.mu);
  return guarded([&]() -> Status {
    const DeviceProbes& P = r.probes;
    const std::size_t np = P.np;
    double* probeSums[4] = {P.at(4), P.at(5), P.at(6), P.at(7)};
    if (np > 0 && r.hasCells) {
      AG_TRY(walkProbes(ds, opt, ds.rankCfg, ds.rankBlocks, ds.rankWalk, P, r.st));
    } else if (np > 0) {  // no local tree: the LETs' and the particles' walks add to zeros
      for (int k = 0; k < (opt.accelerations ? 4 : 1); ++k)
        AG_CUDA_TRY(cudaMemsetAsync(probeSums[k], 0, np * 8, ds.stream));
    }
    if (!r.particles) return Status::success();
    double* tmp[4];
    AG_TRY(scratchSums(ds, std::max({r.hasCells ? std::size_t(ds.n) : 0, np, r.own.n}), tmp));
    if (r.own.n == 0) return Status::success();  // the other ranks' particles: rankSystemReceivedParticles
    const SoftSources parts = particleSources(r.own);
    WalkTally soft;
    // the cells' groups: all, or a subset's (rankStartLocalWalk made ds.rankWalk a ranged walk of them)
    const int points = cellsPerLaneFor(opt.pointGroupSize());
    if (r.hasCells)
      AG_TRY(softWalk(ds, opt, ds.rankWalk, ds.rankCfg.cellsPerLane, ds.rankCfg.ranges, parts, tmp, ds.sums, soft));
    if (np > 0) {
      const WalkParams base = r.hasCells ? ds.rankWalk : WalkParams{};
      AG_TRY(softWalk(ds, opt, probeTargets(ds, opt, base, P), points, true, parts, tmp, probeSums, soft));
    }
    {  // the local cells' tree, then their own tree
      const SoftSources cells = cellSources(ds);
      AG_TRY(walkParticles(ds, opt, r.own, r.hasCells ? &cells : nullptr, parts, soft));
    }
    r.st.particleApprox += soft.approx;
    r.st.particleDirect += soft.direct;
    return Status::success();
  });
}

Status rankSystemReceived(DeviceState& ds, RankSystem& r, const ReceivedLet* lets, std::size_t count,
                          const SolveOptions& opt) {
  std::lock_guard<std::mutex> lock(ds.mu);
  return guarded([&]() -> Status {
    const DeviceProbes& P = r.probes;
    const std::size_t np = P.np;
    if (count == 0 || (np == 0 && r.own.n == 0)) return Status::success();
    if (!r.hasCells) AG_TRY(uploadForest(ds, lets, count, ds.stream));  // with cells: rankWalkReceived's
    const DeviceCells forestCells{ds.letCells[0].get(), ds.letCells[1].get(), ds.letCells[2].get(),
                                  ds.letCells[3].get()};
    double* tmp[4];
    AG_TRY(scratchSums(ds, std::max(np, r.own.n), tmp));
    const bool accel = opt.accelerations;
    if (np > 0) {  // as rankWalkReceived for the cells: no self pairs, no hoisted corrections
      WalkConfig c;
      int blocks = 1;
      AG_TRY(probeConfig(ds, r, opt, c, blocks));
      WalkParams p = probeTargets(ds, opt, r.hasCells ? ds.rankWalk : WalkParams{}, P);
      p.topo = ds.letTopo.get();
      p.nodeMac = ds.letMac.get();
      p.nodeMQ = ds.letMQ.get();
      p.nodeDip = lets[0].view.dipole ? ds.letDip.get() : nullptr;
      p.sources = forestCells;
      p.selfPairs = 0;
      p.hoistCorrection = false;
      p.phi = tmp[0];
      p.selfTerm = tmp[0];
      p.gx = accel ? tmp[1] : nullptr;
      p.gy = accel ? tmp[2] : nullptr;
      p.gz = accel ? tmp[3] : nullptr;
      if (c.periodic) p.ewald = ds.ewaldView;
      WalkTally total;
      AG_TRY(walkPassesUntilDone(ds, c, blocks, opt, p, total));
      r.st.probeApprox += total.approx;
      r.st.probeDirect += total.direct;
      for (int k = 0; k < (accel ? 4 : 1); ++k) AG_TRY(launchAddInto(P.at(4 + k), tmp[k], np, ds.stream));
    }
    if (r.own.n > 0) {  // the LETs' cells have softening 0: the pairs take the particles'
      SoftSources forest;
      forest.topo = ds.letTopo.get();
      forest.mac = ds.letMac.get();
      forest.mq = ds.letMQ.get();
      forest.cells = forestCells;
      WalkTally soft;
      AG_TRY(softWalk(ds, opt, particleTargets(ds, r.own), cellsPerLaneFor(opt.pointGroupSize()), false, forest, tmp,
                      r.own.sums, soft));
      r.st.particleApprox += soft.approx;
      r.st.particleDirect += soft.direct;
    }
    return Status::success();
  });
}

Status rankSystemParticleLet(RankSystem& r, const RemoteBox& box, const SolveOptions& opt, PackedLet& out,
                             std::size_t& nodes, std::size_t& particles) {
  if (!r.hostTreeBuilt) {  // the tree the device built, on the host: the CPU rank's bytes
    AG_TRY(buildParticleTree(r.sys.particles, opt, r.scale, r.hostTree));
    r.hostTreeBuilt = true;
  }
  const SourceTree src = r.hostTree.source();
  essentialParticlesFor(src, box, opt.softening, r.selection);
  packLet(src, r.selection, out);
  nodes = r.selection.node.size();
  particles = r.selection.cellCount;
  return Status::success();
}

Status rankSystemReceivedParticles(DeviceState& ds, RankSystem& r, const ReceivedLet* lets, std::size_t count,
                                   const SolveOptions& opt) {
  std::lock_guard<std::mutex> lock(ds.mu);
  return guarded([&]() -> Status {
    const DeviceProbes& P = r.probes;
    const std::size_t np = P.np;
    if (count == 0 || (!r.hasCells && np == 0 && r.own.n == 0)) return Status::success();
    // merged on the host (let/let.h mergeLets: infinite MAC radii on the virtual nodes, which every walk opens),
    // converted node by node with forestNodeRecord (as letToForestKernel converts a cell LET), and uploaded
    std::vector<SourceTree> views(count);
    for (std::size_t k = 0; k < count; ++k) views[k] = lets[k].view;
    AG_TRY(mergeLets(views.data(), count, r.forest));
    if (!r.forest.hasSoftening)
      return Status::error(ErrorCode::Internal, "the received particle LETs carry no softenings");
    const SourceTree f = r.forest.view();
    const std::size_t nodes = f.nodeCount, cells = f.cellTotal;
    const double ms = ds.massScale;
    r.hostTopo.resize(nodes);
    r.hostMac.resize(nodes);
    r.hostMQ.resize(2 * nodes);
    r.hostEps.resize(nodes);
    for (std::size_t i = 0; i < nodes; ++i) {
      forestNodeRecord(f.cellBegin[i], f.cellCount[i], f.childBegin[i], f.childCount[i], f.com + 3 * i,
                       f.macRadius[i], f.mass[i], f.quad + 6 * i, f.secondMoment[i], ms, r.hostTopo[i], r.hostMac[i],
                       &r.hostMQ[2 * i]);
      r.hostEps[i] = make_double2(f.nodeEpsMin[i], f.nodeEpsMax[i]);
    }
    DeviceParticleForest& d = r.received;
    AG_TRY(d.topo.reserve(std::max<std::size_t>(nodes, 1), "the received particle LETs"));
    AG_TRY(d.mac.reserve(std::max<std::size_t>(nodes, 1), "the received particle LETs"));
    AG_TRY(d.mq.reserve(std::max<std::size_t>(2 * nodes, 1), "the received particle LETs"));
    AG_TRY(d.nodeEps.reserve(std::max<std::size_t>(nodes, 1), "the received particle LETs"));
    AG_TRY(d.nodeExtent.reserve(std::max<std::size_t>(nodes, 1), "the received particle LETs"));
    AG_TRY(d.eps.reserve(std::max<std::size_t>(cells, 1), "the received particle LETs' particles"));
    for (int k = 0; k < 4; ++k)
      AG_TRY(d.cells[k].reserve(std::max<std::size_t>(cells, 1), "the received particle LETs' particles"));
    const double* hostCells[4] = {f.x, f.y, f.z, f.cellMass};
    std::vector<Transfer> t = {
        Transfer{r.hostTopo.data(), d.topo.get(), nodes * sizeof(uint4)},
        Transfer{r.hostMac.data(), d.mac.get(), nodes * sizeof(D4)},
        Transfer{r.hostMQ.data(), d.mq.get(), 2 * nodes * sizeof(float4)},
        Transfer{r.hostEps.data(), d.nodeEps.get(), nodes * sizeof(double2)},
        Transfer{const_cast<double*>(f.nodeExtent), d.nodeExtent.get(), nodes * sizeof(double)},
        Transfer{const_cast<double*>(f.sourceEps), d.eps.get(), cells * sizeof(double)}};
    for (int k = 0; k < 4; ++k) t.push_back(Transfer{const_cast<double*>(hostCells[k]), d.cells[k].get(), cells * 8});
    AG_TRY(copyIn(ds, t.data(), int(t.size()), ds.stream));
    SoftSources forest;
    forest.topo = d.topo.get();
    forest.mac = d.mac.get();
    forest.mq = d.mq.get();
    forest.nodeEps = d.nodeEps.get();
    forest.nodeExtent = d.nodeExtent.get();
    forest.cells = DeviceCells{d.cells[0].get(), d.cells[1].get(), d.cells[2].get(), d.cells[3].get()};
    forest.eps = d.eps.get();
    double* tmp[4];
    AG_TRY(scratchSums(ds, std::max({r.hasCells ? std::size_t(ds.n) : 0, np, r.own.n}), tmp));
    WalkTally soft;
    const int points = cellsPerLaneFor(opt.pointGroupSize());
    if (r.hasCells)
      AG_TRY(softWalk(ds, opt, ds.rankWalk, ds.rankCfg.cellsPerLane, ds.rankCfg.ranges, forest, tmp, ds.sums, soft));
    if (np > 0) {
      const WalkParams base = r.hasCells ? ds.rankWalk : WalkParams{};
      double* probeSums[4] = {P.at(4), P.at(5), P.at(6), P.at(7)};
      AG_TRY(softWalk(ds, opt, probeTargets(ds, opt, base, P), points, true, forest, tmp, probeSums, soft));
    }
    if (r.own.n > 0)
      AG_TRY(softWalk(ds, opt, particleTargets(ds, r.own), points, false, forest, tmp, r.own.sums, soft));
    r.st.particleApprox += soft.approx;
    r.st.particleDirect += soft.direct;
    AG_CUDA_TRY(cudaStreamSynchronize(ds.stream));  // the host's forest may change at the next solve
    return Status::success();
  });
}

Status rankSystemFinish(DeviceState& ds, RankSystem& r, const SolveOptions& opt, SystemResult& out) {
  std::lock_guard<std::mutex> lock(ds.mu);
  return guarded([&]() -> Status {
    const bool accel = opt.accelerations;
    const std::size_t np = r.probes.np;
    const ResultTargets probeDest = out.probes.targets(np, accel);
    if (np > 0) AG_TRY(finishProbes(ds, opt, r.probes, probeDest));
    const ResultTargets particleDest = out.particles.targets(r.own.n, accel);
    if (r.own.n > 0) AG_TRY(finishParticles(ds, opt, r.own, particleDest));
    SystemStats& s = out.system;
    s.targets = r.sys.cellResults();
    s.targetGroups = r.hasCells ? ds.rankWalk.numGroups : 0;  // the cell groups walked (a subset's, or all)
    s.probes = np;
    s.probeGroups = r.probes.ng;
    s.probeApprox = r.st.probeApprox;
    s.probeDirect = r.st.probeDirect;
    s.particles = r.own.n;
    s.particleGroups = r.own.groups;
    s.particleNodes = r.own.nodes;
    s.particleApprox = r.st.particleApprox;
    s.particleDirect = r.st.particleDirect;
    return Status::success();
  });
}

}  // namespace cuda
}  // namespace amrgrav
