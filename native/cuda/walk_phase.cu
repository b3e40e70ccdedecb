/// \file walk_phase.cu
/// \brief The walk phase and the results (walk_phase.h): launch shape, passes, queue growth and reruns, finish and
/// download, the phases' times.
#include <algorithm>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "cuda/blocks_phase.h"
#include "cuda/memory_plan.h"
#include "cuda/walk_phase.h"
#include "ewald/walk_setup.h"

namespace amrgrav {
namespace cuda {

unsigned nextPow2(unsigned long long v) {
  unsigned p = 1;
  while (p < v && p < (1u << 31)) p <<= 1;
  return p;
}

int cellsPerLaneFor(int groupSize) { return groupSize > 32 ? 2 : 1; }

WalkConfig walkConfigFor(const SolveOptions& opt) {
  WalkConfig c;
  c.order = opt.order;
  c.accelerations = opt.accelerations;
  c.cellsPerLane = cellsPerLaneFor(opt.cellGroupSize());
  c.vote = opt.walk == WalkKind::Vote;
  c.periodic = opt.anyPeriodic();
  c.dipole = opt.signedSources();
  return c;
}

Status walkShape(DeviceState& ds, unsigned n, const SolveOptions& opt, WalkConfig* cfg, int* blocks) {
  *cfg = walkConfigFor(opt);
  (void)n;
  const unsigned numGroups = ds.numGroups;
  int perSm = 1;
  AG_TRY(walkBlocksPerSm(*cfg, &perSm));
  const unsigned long long wanted = (numGroups + kWalkWarpsPerBlock - 1) / kWalkWarpsPerBlock;
  *blocks = int(std::max<unsigned long long>(1, std::min<unsigned long long>(wanted, 1ull * ds.smCount * perSm)));
  if (ds.queueCap == 0) ds.queueCap = nextPow2(std::max(64u, ds.copt.initialQueueCapacity));
  return Status::success();
}

Status prepareWalk(DeviceState& ds, unsigned n, const SolveOptions& opt, double massScale, double* phi,
                   double* const* g, WalkConfig* cfg, int* blocks, WalkParams& p) {
  AG_TRY(walkShape(ds, n, opt, cfg, blocks));
  const unsigned numGroups = ds.numGroups;
  AG_TRY(ds.walkCounters.reserve(kWalkCounterCount, "walk counters"));

  // each group's smallest size in the spare index half: after the topology and the node keys when they fit
  // there (a block solve's kept tree then finds the node keys again), else right after the topology (the node keys
  // are dead), else in a buffer
  Carve spare = ds.idxSpare;
  const unsigned nodes = ds.levelStart.back();
  if (reinterpret_cast<char*>(ds.topoPtr) == ds.idxSpare.base) (void)spare.take<uint4>(nodes);
  double* groupHmin = nullptr;
  Carve past = spare;
  if (ds.nodeKeysPtr && past.take<std::uint64_t>(nodes) == ds.nodeKeysPtr) groupHmin = past.take<double>(numGroups);
  if (!groupHmin) AG_TRY(carveOrReserve(spare, ds.groupHmin, numGroups, "group sizes", groupHmin));
  {  // the node keys survive unless the group sizes landed on them
    const char* k = reinterpret_cast<const char*>(ds.nodeKeysPtr);
    const char* h = reinterpret_cast<const char*>(groupHmin);
    const bool apart = !k || h + std::size_t(numGroups) * sizeof(double) <= k ||
                       k + std::size_t(nodes) * sizeof(std::uint64_t) <= h;
    ds.nodeKeysLive = ds.nodeKeysLive && apart;
  }
  const double selfCoef = selfCoefficient(opt.selfPotential);
  AG_TRY(launchWalkPrep(phi, ds.sortedCells.mass, ds.groupBegin.get(), numGroups, selfCoef, groupHmin, ds.stream));

  p = WalkParams{};
  p.cells = ds.sortedCells;
  p.sources = ds.sortedCells;  // the local tree's leaves hold the targets themselves
  p.groupHmin = groupHmin;
  p.selfTerm = phi;
  p.nodeMac = ds.nodeMacPtr;
  p.nodeMQ = ds.nodeMQPtr;
  p.nodeDip = ds.nodeDipPtr;
  p.topo = ds.topoPtr;
  p.groupBegin = ds.groupBegin.get();
  p.n = n;
  p.numGroups = numGroups;
  p.massScale = massScale;
  p.counters = ds.walkCounters.get();
  p.interactions = ds.tally.get();
  p.phi = phi;
  p.gx = g[0];
  p.gy = g[1];
  p.gz = g[2];
  p.invMassScale = 1.0 / massScale;
  p.selfPotential = selfCoef != 0.0;
  if (cfg->periodic) p.ewald = ds.ewaldView;
  p.ewaldExpansion = opt.ewaldExpansion;
  p.pairedCells = ds.copt.pairedCells;
  ds.stats.walkLaunches = 0;
  ds.stats.pairedGroups = 0;
  for (double& t : ds.stats.walkPassSeconds) t = 0;
  ds.stats.walkBlocks = *blocks;
  ds.stats.walkWarps = int(unsigned(*blocks) * kWalkWarpsPerBlock);
  return Status::success();
}

Status walk(DeviceState& ds, unsigned n, const SolveOptions& opt, double massScale, double* phi, double* const* g,
            SolveStats& st) {
  WalkConfig cfg;
  int blocks = 1;
  WalkParams p;
  AG_TRY(prepareWalk(ds, n, opt, massScale, phi, g, &cfg, &blocks, p));
  WalkTally total;
  AG_TRY(walkUntilDone(ds, cfg, blocks, opt, p, total));
  st.approxInteractions = total.approx;
  st.directInteractions = total.direct;
  st.groups = p.numGroups;
  return Status::success();
}

Status walkPassesUntilDone(DeviceState& ds, const WalkConfig& cfg, int blocks, const SolveOptions& opt, WalkParams& p,
                           WalkTally& total, const std::function<Status()>& beforeRerun) {
  for (;;) {
    total = WalkTally{};
    unsigned need = 0;
    AG_TRY(walkPasses(ds, cfg, blocks, opt, p, total, &need, false));
    if (need == 0) return Status::success();
    AG_TRY(growQueue(ds, need));
    if (beforeRerun) AG_TRY(beforeRerun());
  }
}

Status walkUntilDone(DeviceState& ds, const WalkConfig& cfg, int blocks, const SolveOptions& opt, WalkParams& p,
                     WalkTally& total, double* fullHmin) {
  return walkPassesUntilDone(ds, cfg, blocks, opt, p, total, [&]() -> Status {
    AG_TRY(restoreSizes(ds, p.n));
    if (fullHmin)  // a subset of groups: every cell's self term, over all of ds's groups
      return launchWalkPrep(p.phi, ds.sortedCells.mass, ds.groupBegin.get(), ds.numGroups,
                            selfCoefficient(opt.selfPotential), fullHmin, ds.stream);
    return launchWalkPrep(p.phi, ds.sortedCells.mass, p.groupBegin, p.numGroups, selfCoefficient(opt.selfPotential),
                          const_cast<double*>(p.groupHmin), ds.stream);
  });
}

Status walkPasses(DeviceState& ds, const WalkConfig& cfg, int blocks, const SolveOptions& opt, WalkParams& p,
                  WalkTally& total, unsigned* need, bool firstDone) {
  WalkConfig c = cfg;
  const bool imagePass = !c.periodic || opt.ewaldExpansion;  // the first pass: the walk (periodic: the images)
  if (imagePass && !firstDone) AG_TRY(walkPass(ds, c, blocks, p, total, need));
  if (*need == 0 && c.periodic && (!opt.ewaldExpansion || total.skipped > 0) && (imagePass || !firstDone)) {
    c.perCellEwald = true;
    AG_TRY(walkPass(ds, c, blocks, p, total, need));
  }
  if (*need == 0 && c.periodic && opt.ewaldExpansion) {  // the expanding groups' corrections, added to phi
    WalkConfig e = cfg;
    e.ewaldCorrection = true;
    const unsigned skipped = total.skipped;
    AG_TRY(walkPass(ds, e, blocks, p, total, need));
    total.skipped = skipped;
  }
  return Status::success();
}

Status growQueue(DeviceState& ds, unsigned need) {
  if (ds.queueCap >= (1u << 24))
    return Status::error(ErrorCode::Internal, "CUDA backend: the walk queue would need more than 2^24 entries "
                                              "per warp (" + std::to_string(need) + ")");
  ds.queueCap = std::max(2 * ds.queueCap, nextPow2(need));
  return Status::success();
}

Status walkPass(DeviceState& ds, const WalkConfig& cfg, int maxBlocks, WalkParams& p, WalkTally& total,
                unsigned* need) {
  AG_TRY(launchPass(ds, cfg, maxBlocks, p));
  return collectPass(ds, total, need);
}

namespace {

/// launchPass's set-up: the launch's block count, its queues (in the block's tail after the node arrays when they
/// fit, else a buffer of their own), the counters and the interaction tally reset.
Status startPass(DeviceState& ds, const WalkConfig& cfg, int maxBlocks, WalkParams& p, int* blocks) {
  cudaStream_t s = ds.stream;
  int perSm = 1;
  AG_TRY(walkBlocksPerSm(cfg, &perSm));
  *blocks = std::max(1, std::min(maxBlocks, ds.smCount * perSm));
  const unsigned warps = unsigned(*blocks) * kWalkWarpsPerBlock;
  const std::size_t queueEntries = std::size_t(warps) * ds.queueCap;
  Carve room = ds.walkRoom;
  AG_TRY(carveOrReserve(room, ds.queue, queueEntries, "the walk queues", p.queue));
  p.queueTag = nullptr;
  if (cfg.periodic && !cfg.perCellEwald && !cfg.ewaldCorrection)
    AG_TRY(carveOrReserve(room, ds.queueTag, queueEntries, "the walk queues' image tags", p.queueTag));
  p.queueCap = ds.queueCap;
  AG_CUDA_TRY(cudaMemsetAsync(ds.walkCounters.get(), 0, kWalkCounterCount * sizeof(unsigned), s));
  AG_CUDA_TRY(cudaMemsetAsync(ds.tally.get(), 0, 2 * sizeof(unsigned long long), s));  // keeps [2]: split nodes
  ds.passStart = Clock::now();
  ds.passIndex = cfg.ewaldCorrection ? 2 : cfg.perCellEwald ? 1 : 0;
  return Status::success();
}

/// The counters and the tally read back after the pass (collectPass reads them).
Status queuePassReadback(DeviceState& ds) {
  cudaStream_t s = ds.stream;
  unsigned* hc = static_cast<unsigned*>(ds.small.get());
  unsigned long long* ht = reinterpret_cast<unsigned long long*>(static_cast<char*>(ds.small.get()) + 64);
  AG_CUDA_TRY(
      cudaMemcpyAsync(hc, ds.walkCounters.get(), kWalkCounterCount * sizeof(unsigned), cudaMemcpyDeviceToHost, s));
  AG_CUDA_TRY(cudaMemcpyAsync(ht, ds.tally.get(), 3 * sizeof(unsigned long long), cudaMemcpyDeviceToHost, s));
  return Status::success();
}

}  // namespace

Status launchPass(DeviceState& ds, const WalkConfig& cfg, int maxBlocks, WalkParams& p) {
  int blocks = 1;
  AG_TRY(startPass(ds, cfg, maxBlocks, p, &blocks));
  AG_TRY(launchWalk(cfg, p, blocks, ds.stream));
  return queuePassReadback(ds);
}

std::vector<unsigned> walkChunkGroups(unsigned numGroups, int chunks) {
  chunks = std::max(1, std::min(chunks, kMaxResultChunks));
  std::vector<unsigned> first(std::size_t(chunks) + 1, numGroups);
  first[0] = 0;
  // launch k takes kChunkRatio times launch k + 1's groups: the later launches walk long enough to hide the earlier
  // ones' downloads (a cell's sums come down ~8x faster than it is walked), and the last launch, whose results come
  // down after the walk, is small; every launch boundary costs a launch's tail (~0.2 ms at 256^3)
  constexpr double kChunkRatio = 4.0;
  std::vector<double> weight(std::size_t(chunks), 1.0);  // launch k: kChunkRatio^(chunks - 1 - k)
  for (int k = chunks - 2; k >= 0; --k) weight[std::size_t(k)] = weight[std::size_t(k) + 1] * kChunkRatio;
  double total = 0, before = 0;
  for (double w : weight) total += w;
  for (int k = 1; k < chunks; ++k) {
    before += weight[std::size_t(k) - 1];
    const unsigned at = unsigned(double(numGroups) * (before / total));
    first[std::size_t(k)] = std::max(first[std::size_t(k) - 1], std::min(at, numGroups));
  }
  first.erase(std::unique(first.begin(), first.end()), first.end());  // no empty launch (few groups)
  if (first.size() < 2) first.push_back(numGroups);                   // none at all: one empty launch
  return first;
}

Status launchChunkedPass(DeviceState& ds, const WalkConfig& cfg, int maxBlocks, WalkParams& p,
                         const std::vector<unsigned>& groupFirst, const cudaEvent_t* done) {
  cudaStream_t s = ds.stream;
  int blocks = 1;
  AG_TRY(startPass(ds, cfg, maxBlocks, p, &blocks));
  const int chunks = int(groupFirst.size()) - 1;
  for (int k = 0; k < chunks; ++k) {
    // the groups [groupFirst[k], groupFirst[k + 1]): the kernel reads group g's cells and smallest size at
    // groupBegin[g] and groupHmin[g], so the launch sees them through pointers moved to its first group; each
    // group's lists and sums are the one warp's that walks it, in whichever launch. The next-group counter starts
    // again; an overflow flag stays set, so the launches after an overflow walk nothing (the whole walk reruns).
    WalkParams q = p;
    q.groupBegin = p.groupBegin + groupFirst[k];
    q.groupHmin = p.groupHmin + groupFirst[k];
    q.numGroups = groupFirst[k + 1] - groupFirst[k];
    if (k > 0) AG_CUDA_TRY(cudaMemsetAsync(ds.walkCounters.get() + kNextGroup, 0, sizeof(unsigned), s));
    if (q.numGroups > 0) AG_TRY(launchWalk(cfg, q, blocks, s));
    AG_CUDA_TRY(cudaEventRecord(done[k], s));
  }
  return queuePassReadback(ds);
}

Status collectPass(DeviceState& ds, WalkTally& total, unsigned* need) {
  const unsigned* hc = static_cast<const unsigned*>(ds.small.get());
  const unsigned long long* ht =
      reinterpret_cast<const unsigned long long*>(static_cast<const char*>(ds.small.get()) + 64);
  AG_CUDA_TRY(cudaStreamSynchronize(ds.stream));
  ds.stats.walkPassSeconds[ds.passIndex] = since(ds.passStart);
  ++ds.stats.walkLaunches;
  ds.stats.queueCapacity = ds.queueCap;
  ds.stats.queuePeak = std::max(ds.stats.queuePeak, hc[kQueuePeak]);
  *need = hc[kOverflowNeed];
  total.approx += ht[0];
  total.direct += ht[1];
  total.skipped = hc[kSkippedGroups];
  ds.stats.pairedGroups += hc[kPairedGroups];
  ds.splitNodes = ht[2];  // counted by the build; leaves = nodes - split nodes
  return Status::success();
}

Status restoreSizes(DeviceState& ds, unsigned n) {
  if (ds.blk.view) return blockSortedSizes(ds);  // a block solve: made again from the blocks' geometry
  DeviceBuffer<double> unsorted;
  AG_TRY(unsorted.reserve(n, "the cell sizes (walk rerun)"));
  Transfer t{const_cast<double*>(ds.hostSize), unsorted.get(), std::size_t(n) * sizeof(double)};
  AG_TRY(copyIn(ds, &t, 1));
  AG_TRY(launchGather(unsorted.get(), ds.order, n, ds.scale, ds.sortedSize, ds.stream));
  AG_CUDA_TRY(cudaStreamSynchronize(ds.stream));
  return Status::success();
}

Status finishAndDownload(DeviceState& ds, const SolveOptions& opt, const ResultTargets& dest) {
  double* res[4];
  AG_TRY(finishOnDevice(ds, opt, res));
  return downloadFinished(ds, opt, res, dest);
}

Status downloadFinished(DeviceState& ds, const SolveOptions& opt, double* const res[4], const ResultTargets& dest) {
  const unsigned n = ds.n;
  const int nout = opt.accelerations ? 4 : 1;

  // ---- download
  const auto td = Clock::now();
  {
    double* host[4] = {dest.potential, dest.ax, dest.ay, dest.az};
    Transfer t[4];
    for (int k = 0; k < nout; ++k) t[k] = Transfer{host[k], res[k], std::size_t(n) * 8};
    AG_TRY(copyOut(ds, t, nout, ds.stream));
  }
  AG_CUDA_TRY(cudaStreamSynchronize(ds.stream));
  ds.stats.secondsDownload = since(td);
  return Status::success();
}

Status finishOnDevice(DeviceState& ds, const SolveOptions& opt, double* res[4]) {
  cudaStream_t s = ds.stream;
  const unsigned n = ds.n;
  const int nout = opt.accelerations ? 4 : 1;
  res[0] = ds.slot[4];
  res[1] = ds.slot[0];
  res[2] = ds.slot[1];
  res[3] = ds.slot[3];
  if (ds.layout.compact) {  // a block solve's: the potential at the tail's start, ax over the masses, ay, az aside
    res[1] = ds.slot[3];
    for (int k = 0; k < 2 && nout > 1; ++k) {
      AG_TRY(ds.finishedAside[k].reserve(n, "the finished accelerations"));
      res[2 + k] = ds.finishedAside[k].get();
    }
  }
  if (ds.copt.poisonDevice)
    for (int k = 0; k < nout; ++k) AG_TRY(launchPoison(res[k], n, s));
  FinishParams fp;
  fp.order = ds.order;
  fp.phi = ds.sums[0];
  fp.gx = ds.sums[1];
  fp.gy = ds.sums[2];
  fp.gz = ds.sums[3];
  fp.pot = res[0];
  fp.ax = res[1];
  fp.ay = res[2];
  fp.az = res[3];
  fp.n = n;
  fp.invMassScale = 1.0 / ds.massScale;
  fp.scale = ds.scale;
  fp.G = opt.G;
  AG_TRY(launchFinish(fp, opt.accelerations, s));
  AG_CUDA_TRY(cudaEventRecord(ds.events[5], s));
  return Status::success();
}

double elapsed(DeviceState& ds, int a, int b) {
  float ms = 0;
  if (cudaEventElapsedTime(&ms, ds.events[a], ds.events[b]) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return double(ms) * 1e-3;
}

void fillStats(DeviceState& ds, bool direct, Clock::time_point t0, SolveStats& st) {
  // a rank's masses may go up during the sort
  ds.stats.secondsUpload = elapsed(ds, 0, 1) + std::max(0.0, elapsed(ds, 2, 6));
  ds.stats.secondsKeys = elapsed(ds, 8, 2) + elapsed(ds, 7, 3);
  ds.stats.secondsBuild = direct ? 0 : elapsed(ds, 6, 7);
  ds.stats.secondsMoments = direct ? 0 : elapsed(ds, 3, 4);
  ds.stats.secondsWalk = elapsed(ds, 4, 5);
  ds.stats.secondsTotal = since(t0);
  ds.stats.deviceBytes = deviceBytes(ds);
  ds.stats.deviceBytesPerCell = double(ds.stats.deviceBytes) / double(ds.n);
  ds.stats.pinnedBytes = ds.staging->pinnedBytes() + ds.small.bytes();
  st.secondsKeys = ds.stats.secondsKeys;
  st.secondsBuild = ds.stats.secondsBuild;
  st.secondsMoments = ds.stats.secondsMoments;
  st.secondsWalk = ds.stats.secondsWalk;
  st.secondsTotal = ds.stats.secondsTotal;
  st.secondsUpload = ds.stats.secondsUpload;
  st.secondsDownload = ds.stats.secondsDownload;
  st.deviceBytesPerCell = ds.stats.deviceBytesPerCell;
}

double meanPotentialOf(DeviceState& ds, const double* phi, const double* size, std::size_t n) {
  const std::size_t chunk = std::size_t(1) << 16, chunks = (n + chunk - 1) / chunk;
  std::vector<double> vp(chunks, 0.0), vv(chunks, 0.0);
  parallelFor(chunks, 1, copyThreads(ds), [&](std::size_t b, std::size_t e, int) {
    for (std::size_t c = b; c < e; ++c) {
      double p = 0, v = 0;  // in registers: the chunks' sums share cache lines between threads
      for (std::size_t i = c * chunk; i < std::min(n, (c + 1) * chunk); ++i) {
        const double w = size[i] * size[i] * size[i];
        p += w * phi[i];
        v += w;
      }
      vp[c] = p;
      vv[c] = v;
    }
  });
  double p = 0, v = 0;
  for (std::size_t c = 0; c < chunks; ++c) {
    p += vp[c];
    v += vv[c];
  }
  return v > 0 ? p / v : 0.0;
}

}  // namespace cuda
}  // namespace amrgrav
