/// \file rank_phase.cu
/// \brief A distributed solve's rank steps on the device (rank_phase.h): the cells checked and bounded before the
/// agreement, the tree with the global length scale, the summary, the LETs chosen and packed on the device
/// (kernel_let.cu) before the local walk is queued and downloaded on a second stream while it runs, and the
/// received LETs merged on the device into one forest and walked into sums of their own, then added.
#include <atomic>
#include <cmath>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "core/validate.h"
#include "cuda/device.h"
#include "cuda/device_state.h"
#include "cuda/ewald_phase.h"
#include "cuda/memory_plan.h"
#include "cuda/rank_phase.h"
#include "cuda/subset_phase.h"
#include "cuda/tree_phase.h"
#include "cuda/walk_phase.h"
#include "ewald/walk_setup.h"
#include "let/let.h"

namespace amrgrav {
namespace cuda {

DeviceState& rankDeviceState(int device) {
  static std::unique_ptr<DeviceState> state;
  static int onDevice = -1;
  if (!state || onDevice != device) {
    CudaOptions o = cudaOptionsFromEnvironment();  // the knobs of a one-process solve's backend (makeCudaBackend)
    o.device = device;
    state = std::make_unique<DeviceState>(o);
    onDevice = device;
  }
  return *state;
}

namespace {

/// The local tree as the LET kernels read it.
LetTreeView letTreeView(DeviceState& ds) {
  LetTreeView v;
  v.topo = ds.topoPtr;
  v.mac = ds.nodeMacPtr;
  v.mq = ds.nodeMQPtr;
  v.dip = ds.nodeDipPtr;
  v.cells = ds.sortedCells;
  v.nodes = ds.nodes;
  v.invMassScale = 1.0 / ds.massScale;  // a power of two: exact
  return v;
}


}  // namespace

/// The received LETs as one tree (let/let.h mergeLets' layout: virtual nodes with an infinite MAC radius on top,
/// which every walk opens) in the walk's device layout, masses and quadrupoles times this solve's massScale. The
/// packed LETs go up as they arrived and are merged and converted on the device; only the few virtual nodes are
/// made on the host.
Status uploadForest(DeviceState& ds, const ReceivedLet* lets, std::size_t count, cudaStream_t s) {
  std::vector<SourceTree> views(count);
  std::size_t words = 0;
  for (std::size_t r = 0; r < count; ++r) {
    views[r] = lets[r].view;
    words += lets[r].bytes / sizeof(std::uint64_t);
  }
  LetForestLayout L;
  AG_TRY(letForestLayout(views.data(), count, L));
  fillVirtualNodes(L, views.data(), ds.forestTop);
  const std::size_t top = L.rootsAt, nodes = L.nodes, cells = L.cells;
  ds.forestTopo.resize(top);
  ds.forestMac.resize(top);
  ds.forestMQ.resize(2 * top);
  const double ms = ds.massScale;
  for (std::size_t i = 0; i < top; ++i) {
    const double m = ds.forestTop.mass[i];
    ds.forestTopo[i] = make_uint4(0u, 0u, ds.forestTop.childBegin[i], ds.forestTop.childCount[i]);
    ds.forestMac[i] = D4{0.0, 0.0, 0.0, ds.forestTop.macRadius[i]};  // infinite: every walk opens a virtual node
    ds.forestMQ[2 * i] = make_float4(float(m * ms), 0.f, 0.f, 0.f);
    ds.forestMQ[2 * i + 1] = make_float4(0.f, 0.f, 0.f, 0.f);
  }
  AG_TRY(ds.letTopo.reserve(nodes, "the received LETs"));
  AG_TRY(ds.letMac.reserve(nodes, "the received LETs"));
  AG_TRY(ds.letMQ.reserve(2 * nodes, "the received LETs"));
  const bool dipoles = count > 0 && lets[0].view.dipole != nullptr;  // every rank's LETs are of one kind
  if (dipoles) {
    AG_TRY(ds.letDip.reserve(nodes, "the received LETs"));
    AG_CUDA_TRY(cudaMemsetAsync(ds.letDip.get(), 0, top * sizeof(float4), s));  // the virtual nodes: none
  }
  for (int k = 0; k < 4; ++k)
    AG_TRY(ds.letCells[k].reserve(std::max<std::size_t>(cells, 1), "the received LETs' cells"));
  AG_TRY(ds.letRaw.reserve(std::max<std::size_t>(words, 1), "the received LETs"));
  // the packed LETs through the pinned staging ring (copy threads), the virtual nodes as three small copies
  std::vector<Transfer> t;
  std::size_t at = 0;
  for (std::size_t r = 0; r < count; ++r) {
    t.push_back(Transfer{const_cast<std::uint64_t*>(lets[r].words), ds.letRaw.get() + at, lets[r].bytes});
    at += lets[r].bytes / sizeof(std::uint64_t);
  }
  AG_TRY(copyIn(ds, t.data(), int(t.size()), s));
  AG_CUDA_TRY(cudaMemcpyAsync(ds.letTopo.get(), ds.forestTopo.data(), top * sizeof(uint4), cudaMemcpyHostToDevice, s));
  AG_CUDA_TRY(cudaMemcpyAsync(ds.letMac.get(), ds.forestMac.data(), top * sizeof(D4), cudaMemcpyHostToDevice, s));
  AG_CUDA_TRY(cudaMemcpyAsync(ds.letMQ.get(), ds.forestMQ.data(), 2 * top * sizeof(float4), cudaMemcpyHostToDevice, s));
  double* const cellArrays[4] = {ds.letCells[0].get(), ds.letCells[1].get(), ds.letCells[2].get(),
                                 ds.letCells[3].get()};
  at = 0;
  for (std::size_t r = 0; r < count; ++r) {
    LetIntoForest p;
    p.raw = reinterpret_cast<const unsigned char*>(ds.letRaw.get() + at);
    p.nodes = views[r].nodeCount;
    p.cells = views[r].cellTotal;
    p.rootAt = unsigned(L.rootsAt + r);
    p.nodeBase = unsigned(L.nodeBase[r]);
    p.cellBase = unsigned(L.cellBase[r]);
    p.massScale = ms;
    p.dipole = views[r].dipole != nullptr;
    AG_TRY(launchLetToForest(p, ds.letTopo.get(), ds.letMac.get(), ds.letMQ.get(), dipoles ? ds.letDip.get() : nullptr,
                             cellArrays, s));
    at += lets[r].bytes / sizeof(std::uint64_t);
  }
  return Status::success();
}


Status rankOpen(DeviceState& ds, const CellsView& cells, const SolveOptions& opt, double lo[3], double hi[3]) {
  std::lock_guard<std::mutex> lock(ds.mu);
  return guarded([&]() -> Status {
    AG_TRY(checkOptions(opt, cells.n, false));
    ds.rankPeriodic = opt.anyPeriodic();
    ds.rankTargets = nullptr;  // every cell, unless rankStartLocalWalk gets a subset
    ds.rankTargetCount = 0;
    ds.rankFullHmin = nullptr;
    // the masses are checked on the host (one array, on the copy threads): on the device they go up only after
    // the agreement
    std::atomic<bool> badMass{false};
    parallelFor(cells.n, std::size_t(1) << 18, copyThreads(ds), [&](std::size_t b, std::size_t e, int) {
      bool bad = false;
      const bool signedOk = opt.signedSources();
      for (std::size_t i = b; i < e; ++i)
        bad = bad || !(std::isfinite(cells.mass[i]) && (signedOk || cells.mass[i] >= 0.0));
      if (bad) badMass = true;
    });
    if (badMass) {
      const Status v = validateCells(cells, opt);
      return v.ok() ? Status::error(ErrorCode::Internal, "CUDA backend: mass check and validateCells disagree") : v;
    }
    ds.stats = CudaStats{};
    ds.rankT0 = Clock::now();
    ds.lentCount = 0;
    AG_TRY(ensureDevice(ds));
    ds.stats.device = ds.deviceName;
    if (!ds.copyStream) AG_CUDA_TRY(cudaStreamCreateWithFlags(&ds.copyStream, cudaStreamNonBlocking));
    for (int d = 0; d < 3; ++d) {
      lo[d] = opt.hasBox ? opt.boxLo[d] : INFINITY;
      hi[d] = opt.hasBox ? opt.boxHi[d] : -INFINITY;
    }
    if (cells.n == 0) return Status::success();
    // positions and sizes up and checked now, so that a bad cell is agreed on, not an abort later
    AG_TRY(uploadAndBound(ds, cells, opt, false));
    if (!opt.hasBox)
      for (int d = 0; d < 3; ++d) {
        lo[d] = ds.extentLo[d];
        hi[d] = ds.extentHi[d];
      }
    return Status::success();
  });
}

Status rankBuild(DeviceState& ds, const CellsView& cells, const SolveOptions& opt, double scale, double totalMass,
                 SolveStats& st) {
  std::lock_guard<std::mutex> lock(ds.mu);
  return guarded([&]() -> Status {
    AG_TRY(ensureDevice(ds));
    ds.contrastTotal = totalMass;  // every rank's (the driver's fixed-order sums, reduced)
    AG_TRY(sortAndBuild(ds, cells, opt, false, scale, true));
    st.densityContrast = ds.contrastApplied;
    st.meanDensity = ds.meanDensity;
    AG_TRY(computeMoments(ds, ds.n, ds.nodes, ds.depth, ds.root, opt, ds.massScale));
    if (ds.rankPeriodic) AG_TRY(prepareEwald(ds, opt, ds.scale, st));  // every rank the same table: same box and scale
    AG_CUDA_TRY(cudaEventRecord(ds.events[4], ds.stream));  // the tree is complete: the export may copy it
    st.nodes = ds.nodes;
    st.treeDepth = ds.depth;
    st.threads = 1;
    return Status::success();
  });
}

Status rankSummary(DeviceState& ds, RankSummary& out) {
  std::lock_guard<std::mutex> lock(ds.mu);
  return guarded([&]() -> Status {
    // the box of the sorted, scaled centres (min/max: exact in any order) and the centre of mass (the root's)
    cudaStream_t s = ds.stream;
    const CellChecks none;
    AG_TRY(launchBounds(ds.sortedCells, nullptr, nullptr, ds.n, none,
                        ds.bounds.get(), ds.bounds.get() + kBoundsStride * kBoundsBlocks, s));
    double* hb = static_cast<double*>(ds.small.get());
    AG_CUDA_TRY(cudaMemcpyAsync(hb, ds.bounds.get() + kBoundsStride * kBoundsBlocks, 6 * sizeof(double),
                                cudaMemcpyDeviceToHost, s));
    AG_CUDA_TRY(cudaMemcpyAsync(hb + 8, ds.nodeMacPtr, sizeof(D4), cudaMemcpyDeviceToHost, s));
    unsigned long long* widths =
        reinterpret_cast<unsigned long long*>(ds.bounds.get() + kBoundsStride * kBoundsBlocks + 8);
    AG_TRY(launchGroupHalfWidths(ds.sortedCells, ds.groupBegin.get(), ds.numGroups, widths, s));
    AG_CUDA_TRY(cudaMemcpyAsync(hb + 12, widths, 3 * sizeof(double), cudaMemcpyDeviceToHost, s));
    AG_CUDA_TRY(cudaStreamSynchronize(s));
    out = RankSummary{};
    for (int d = 0; d < 3; ++d) {
      out.centreLo[d] = hb[d];
      out.centreHi[d] = hb[3 + d];
      out.extentLo[d] = ds.extentLo[d] * ds.scale;
      out.extentHi[d] = ds.extentHi[d] * ds.scale;
      out.com[d] = hb[8 + d];
      out.groupHalfWidth[d] = hb[12 + d];  // the bits of a double
    }
    out.mass = ds.massTotal;
    out.cellCount = double(ds.n);
    return Status::success();
  });
}

Status rankChooseLets(DeviceState& ds, const RemoteBox* boxes, std::size_t count, std::size_t* letNodes,
                      std::size_t* letCells) {
  std::lock_guard<std::mutex> lock(ds.mu);
  return guarded([&]() -> Status {
    cudaStream_t s = ds.stream;
    const std::size_t nodes = ds.nodes, stride = alignUp(nodes + 1);
    while (ds.letPacks.size() < count) ds.letPacks.push_back(std::make_unique<DeviceBuffer<std::uint64_t>>());
    ds.letPackBytes.assign(count, 0);
    if (count == 0) return Status::success();
    AG_TRY(ds.letState.reserve(count * stride, "the LET selection"));
    AG_TRY(ds.letCount.reserve(nodes + 1, "the LET selection"));
    AG_TRY(ds.letOffset.reserve(count * (nodes + 1), "the LET selection"));
    std::size_t tempBytes = 0;
    AG_TRY(scanLetCounts(nullptr, tempBytes, ds.letCount.get(), ds.letOffset.get(), unsigned(nodes + 1), s));
    AG_TRY(reserveCubTemp(ds, tempBytes));
    const LetTreeView tree = letTreeView(ds);
    // every box's selection and scan, then one wait for all their totals
    AG_TRY(ds.letTotals.reserve(count * sizeof(unsigned long long), "the LETs' sizes"));
    unsigned long long* totals = static_cast<unsigned long long*>(ds.letTotals.get());
    for (std::size_t k = 0; k < count; ++k) {
      unsigned long long* offset = ds.letOffset.get() + k * (nodes + 1);
      AG_TRY(launchLetSelect(tree, ds.levelStart.data(), ds.depth + 1, boxes[k],
                             ds.rankPeriodic ? &ds.ewaldView : nullptr, ds.letState.get() + k * stride,
                             ds.letCount.get(), s));
      tempBytes = ds.cubTemp.bytes();
      AG_TRY(scanLetCounts(ds.cubTemp.get(), tempBytes, ds.letCount.get(), offset, unsigned(nodes + 1), s));
      AG_CUDA_TRY(cudaMemcpyAsync(totals + k, offset + nodes, sizeof(unsigned long long), cudaMemcpyDeviceToHost, s));
    }
    AG_CUDA_TRY(cudaStreamSynchronize(s));
    for (std::size_t k = 0; k < count; ++k) {
      letNodes[k] = std::size_t(totals[k] >> 32);
      letCells[k] = std::size_t(totals[k] & 0xffffffffu);
      ds.letPackBytes[k] = packedLetBytes(letNodes[k], letCells[k], tree.dip != nullptr);
      DeviceBuffer<std::uint64_t>& pack = *ds.letPacks[k];
      AG_TRY(pack.reserve(ds.letPackBytes[k] / sizeof(std::uint64_t), "a packed LET"));
      AG_TRY(launchLetPack(tree, ds.letState.get() + k * stride, ds.letOffset.get() + k * (nodes + 1), letNodes[k],
                           letCells[k], ds.rankPeriodic || ds.letSecondMoment, pack.get(), s));
    }
    // the downloads (rankDownloadLet, on the second stream) wait for the packing, not for the walk queued next
    AG_CUDA_TRY(cudaEventRecord(ds.events[4], s));
    return Status::success();
  });
}

Status rankStartLocalWalk(DeviceState& ds, const SolveOptions& opt, const std::uint32_t* targets,
                          std::size_t targetCount) {
  std::lock_guard<std::mutex> lock(ds.mu);
  return guarded([&]() -> Status {
    AG_TRY(prepareWalk(ds, ds.n, opt, ds.massScale, ds.sums[0], ds.sums + 1, &ds.rankCfg, &ds.rankBlocks, ds.rankWalk));
    ds.rankTargets = targets;
    ds.rankTargetCount = targets ? targetCount : 0;
    ds.rankFullHmin = nullptr;
    if (targets) {  // only the groups that hold targets (the others' phi keeps its self terms: unread)
      ds.rankFullHmin = const_cast<double*>(ds.rankWalk.groupHmin);
      AG_TRY(subsetGroups(ds, targets, targetCount, ds.n, ds.rankWalk));
      ds.rankCfg.ranges = true;  // every later walk of the cells over ds.rankWalk takes these groups
    }
    WalkConfig first = ds.rankCfg;  // periodic: the image walk, or the per-pair one without the expansion
    first.perCellEwald = ds.rankCfg.periodic && !opt.ewaldExpansion;
    return launchPass(ds, first, ds.rankBlocks, ds.rankWalk);
  });
}

Status rankDownloadLet(DeviceState& ds, std::size_t k, PackedLet& out) {
  std::lock_guard<std::mutex> lock(ds.mu);
  return guarded([&]() -> Status {
    if (k >= ds.letPackBytes.size())
      return Status::error(ErrorCode::Internal, "CUDA backend: LET " + std::to_string(k) + " was not chosen");
    out.words.resize(ds.letPackBytes[k] / sizeof(std::uint64_t));
    AG_CUDA_TRY(cudaStreamWaitEvent(ds.copyStream, ds.events[4], 0));
    Transfer t{out.words.data(), ds.letPacks[k]->get(), ds.letPackBytes[k]};
    return copyOut(ds, &t, 1, ds.copyStream);
  });
}

Status rankPrepareReceived(DeviceState& ds, const ReceivedLet* lets, std::size_t count) {
  std::lock_guard<std::mutex> lock(ds.mu);
  return guarded([&]() -> Status {
    ds.lentCount = 0;
    if (count == 0) return Status::success();
    if (!ds.letsReady) AG_CUDA_TRY(cudaEventCreateWithFlags(&ds.letsReady, cudaEventDisableTiming));
    AG_TRY(uploadForest(ds, lets, count, ds.copyStream));
    AG_CUDA_TRY(cudaEventRecord(ds.letsReady, ds.copyStream));
    ds.lentCount = count;
    return Status::success();
  });
}

Status rankLocalWalkDone(DeviceState& ds, bool* done) {
  std::lock_guard<std::mutex> lock(ds.mu);
  const cudaError_t e = cudaStreamQuery(ds.stream);
  *done = e != cudaErrorNotReady;
  if (e == cudaErrorNotReady) (void)cudaGetLastError();  // "not ready" is not an error
  else AG_CUDA_TRY(e);
  return Status::success();
}

Status rankFinishLocalWalk(DeviceState& ds, const SolveOptions& opt, SolveStats& st) {
  std::lock_guard<std::mutex> lock(ds.mu);
  return guarded([&]() -> Status {
    WalkTally total;
    unsigned need = 0;
    AG_TRY(collectPass(ds, total, &need));
    // periodic: the other passes now (their number depends on the first's counts)
    if (need == 0 && ds.rankCfg.periodic)
      AG_TRY(walkPasses(ds, ds.rankCfg, ds.rankBlocks, opt, ds.rankWalk, total, &need, true));
    if (need > 0) {  // a queue overflowed: the whole walk again with a larger queue (as walkUntilDone)
      AG_TRY(growQueue(ds, need));
      AG_TRY(restoreSizes(ds, ds.n));
      // every cell's self term (a subset's groups are a list over all of them: their smallest sizes stay valid)
      double* hmin = ds.rankFullHmin ? ds.rankFullHmin : const_cast<double*>(ds.rankWalk.groupHmin);
      AG_TRY(launchWalkPrep(ds.sums[0], ds.sortedCells.mass, ds.groupBegin.get(), ds.numGroups,
                            selfCoefficient(opt.selfPotential), hmin, ds.stream));
      AG_TRY(walkUntilDone(ds, ds.rankCfg, ds.rankBlocks, opt, ds.rankWalk, total, ds.rankFullHmin));
    }
    st.approxInteractions = total.approx;
    st.directInteractions = total.direct;
    st.groups = ds.numGroups;  // every group (a subset's walked: SystemStats::targetGroups)
    st.leaves = ds.nodes - ds.splitNodes;
    return Status::success();
  });
}

Status rankWalkReceived(DeviceState& ds, const ReceivedLet* lets, std::size_t count, const SolveOptions& opt,
                        SolveStats& st) {
  std::lock_guard<std::mutex> lock(ds.mu);
  return guarded([&]() -> Status {
    if (count == 0) return Status::success();
    if (ds.lentCount == count) {
      AG_CUDA_TRY(cudaStreamWaitEvent(ds.stream, ds.letsReady, 0));  // uploaded beside the local walk
    } else {
      AG_TRY(uploadForest(ds, lets, count, ds.stream));
    }
    ds.lentCount = 0;
    WalkParams p = ds.rankWalk;
    p.topo = ds.letTopo.get();
    p.nodeMac = ds.letMac.get();
    p.nodeMQ = ds.letMQ.get();
    p.nodeDip = lets[0].view.dipole ? ds.letDip.get() : nullptr;
    p.sources = DeviceCells{ds.letCells[0].get(), ds.letCells[1].get(), ds.letCells[2].get(), ds.letCells[3].get()};
    p.selfPairs = 0;
    // the LETs' sums into arrays of their own (phi = sum / massScale, no self term), then added to the local
    // walk's: a queue overflow simply reruns into them
    const int nsum = opt.accelerations ? 4 : 1;
    const std::size_t n = ds.n;
    AG_TRY(ds.letSums.reserve(nsum * n, "the received LETs' sums"));
    double* sum[4] = {ds.letSums.get(), nullptr, nullptr, nullptr};
    for (int k = 1; k < nsum; ++k) sum[k] = ds.letSums.get() + k * n;
    p.phi = sum[0];
    p.selfTerm = sum[0];
    p.selfPotential = false;
    p.gx = sum[1];
    p.gy = sum[2];
    p.gz = sum[3];
    // periodic: no hoisted corrections (the LETs were pruned for each node's own nearest image, cpu_walk.h
    // WalkPass); the passes write phi before the corrections add to it, so a rerun needs no reset
    p.hoistCorrection = false;
    WalkTally total;
    AG_TRY(walkPassesUntilDone(ds, ds.rankCfg, ds.rankBlocks, opt, p, total));
    for (int k = 0; k < nsum; ++k) AG_TRY(launchAddInto(ds.sums[k], sum[k], n, ds.stream));
    st.approxInteractions += total.approx;
    st.directInteractions += total.direct;
    return Status::success();
  });
}

Status rankFinish(DeviceState& ds, const SolveOptions& opt, SolveResult& out) {
  std::lock_guard<std::mutex> lock(ds.mu);
  return guarded([&]() -> Status {
    const std::size_t count = ds.rankTargets ? ds.rankTargetCount : ds.n;
    const ResultTargets dest = out.targets(count, opt.accelerations);
    if (ds.rankTargets) {
      double* res[4];
      AG_TRY(finishOnDevice(ds, opt, res));
      AG_TRY(downloadSubset(ds, opt, res, count, dest));
    } else {
      AG_TRY(finishAndDownload(ds, opt, dest));
    }
    SolveStats device;
    fillStats(ds, false, ds.rankT0, device);
    out.stats.secondsKeys = device.secondsKeys;
    out.stats.secondsBuild = device.secondsBuild;
    out.stats.secondsMoments = device.secondsMoments;
    out.stats.secondsUpload = device.secondsUpload;
    out.stats.secondsDownload = device.secondsDownload;
    out.stats.deviceBytesPerCell = device.deviceBytesPerCell;
    if (opt.fullyPeriodic() && ds.rankTargets) {  // over the targets (as the CPU rank's finishTargets)
      double vPhi = 0, vol = 0;
      for (std::size_t k = 0; k < count; ++k) {
        const double h = ds.hostSize[ds.rankTargets[k]], v = h * h * h;
        vPhi += v * dest.potential[k];
        vol += v;
      }
      out.stats.meanPotential = vol > 0 ? vPhi / vol : 0.0;
    } else if (opt.fullyPeriodic()) {
      out.stats.meanPotential = meanPotentialOf(ds, dest.potential, ds.hostSize, ds.n);
    }
    return Status::success();
  });
}

}  // namespace cuda
}  // namespace amrgrav
