/// \file fmm_ranks.cpp
/// \brief One rank of a distributed FMM solve (see fmm_ranks.h).
#include "cpu/fmm_ranks.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#include "core/fixed_sum.h"
#include "core/thread_pool.h"
#include "core/validate.h"
#include "tree/finish.h"
#include "fmm/far_images.h"
#include "fmm/fmm_let.h"
#include "fmm/fmm_solve.h"
#include "fmm/interaction_lists.h"
#include "fmm/shared_top.h"
#include "physics/moments_k.h"
#include "tree/tree.h"

namespace amrgrav {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// The bounds chooseRootCube takes (the box, or the cells with their extents; lo > hi without cells) and the
/// smallest cell: reduced over the ranks, the root cube one process would choose for all the cells.
void rootBounds(const CellsView& c, const SolveOptions& opt, double lo[3], double hi[3], double& minSize) {
  minSize = INFINITY;
  for (std::size_t i = 0; i < c.n; ++i) minSize = std::min(minSize, c.size[i]);
  if (opt.hasBox) {
    for (int d = 0; d < 3; ++d) { lo[d] = opt.boxLo[d]; hi[d] = opt.boxHi[d]; }
    return;
  }
  for (int d = 0; d < 3; ++d) { lo[d] = INFINITY; hi[d] = -INFINITY; }
  const double* p[3] = {c.x, c.y, c.z};
  for (std::size_t i = 0; i < c.n; ++i) {
    const double h = cellHalfSize(c.size[i]);
    for (int d = 0; d < 3; ++d) growByCell(lo[d], hi[d], p[d][i], h);
  }
}

/// A periodic box's far images need at most kMaxFarCubes frontier cubes inside the box (far_images.h): checked
/// before the ranks agree, the same on every rank.
Status checkFarCubes(const SolveOptions& opt) {
  if (!opt.fullyPeriodic()) return Status::success();
  double period[3], side = 0;
  for (int d = 0; d < 3; ++d) {
    period[d] = opt.boxHi[d] - opt.boxLo[d];
    side = std::max(side, period[d]);
  }
  const int per = fmm::farCubesPerAxis(period, side);
  const double s = side / per;
  double cubes = 1;
  for (int d = 0; d < 3; ++d) cubes *= std::ceil(period[d] / s * (1 - 1e-12));
  if (cubes > fmm::kMaxFarCubes)
    return Status::error(ErrorCode::InvalidOption,
                         "method 'fmm' in a periodic box: the box's aspect ratio needs more than " +
                             std::to_string(fmm::kMaxFarCubes) + " cubes of a quarter of its shortest side for the "
                             "far images; use method 'tree' for such boxes");
  return Status::success();
}

/// The one-process FMM's steps (fmm/fmm_solve.cpp): P2P and M2L while the LETs move, the downward pass last.
class CpuRankLocal final : public fmm::RankLocal {
 public:
  const char* name() const override { return "cpu"; }
  Status open(const SolveOptions&) override { return Status::success(); }
  Status local(fmm::FmmTree& tree, fmm::FmmLists& lists, const SortedCells& sorted, const SolveOptions&,
               int threads, fmm::FmmOutput out, const std::function<Status()>& progress) override {
    fmm::evaluateP2P(lists, tree, sorted, threads, out);
    AG_TRY(progress());
    fmm::evaluateM2L(lists, threads, tree);
    return progress();
  }
  Status finish(fmm::FmmTree& tree, const SortedCells& sorted, int threads, fmm::FmmOutput out,
                SolveStats&) override {
    fmm::passLocalsDown(sorted, threads, tree, out);
    return Status::success();
  }
};

}  // namespace

std::unique_ptr<fmm::RankLocal> makeCpuFmmRankLocal() { return std::make_unique<CpuRankLocal>(); }

Status solveFmmRanks(RankComm& comm, fmm::RankLocal& local, const CellsView& cells, const SolveOptions& opt,
                     SolveResult& out) {
  const auto t0 = Clock::now();
  const int rank = comm.rank(), size = comm.size();
  Status st = validateOptions(opt);
  if (st.ok()) st = validateCells(cells, opt);
  if (st.ok()) st = checkFarCubes(opt);
  if (st.ok()) st = local.open(opt);  // a GPU rank without a device: every rank fails alike
  double lo[3], hi[3], minSize = INFINITY;
  if (st.ok()) rootBounds(cells, opt, lo, hi, minSize);
  if (!st.ok())
    for (int d = 0; d < 3; ++d) { lo[d] = INFINITY; hi[d] = -INFINITY; }
  AG_TRY(comm.agree(st, lo, hi, opt));

  const ResultTargets into = out.into;
  out = SolveResult{};
  out.into = into;
  SolveStats& stats = out.stats;
  DistributedStats& ds = stats.distributed;
  ds.ranks = size;
  ds.rank = rank;
  ds.backend = local.name();
  ds.device = local.device();
  const int threads = resolveThreadCount(opt.threads);
  stats.threads = threads;
  const bool periodic = opt.fullyPeriodic();
  // the global length scale (of the bounds of every rank's cells, or the box), total mass, volume, smallest cell
  double side = 0;
  for (int d = 0; d < 3; ++d) side = std::max(side, hi[d] - lo[d]);
  if (!(side > 0)) side = 1;
  const double scale = lengthScaleFor(side);
  double sums[2] = {fixedOrderSum(cells.mass, cells.n, threads), 0};
  if (periodic)
    for (std::size_t i = 0; i < cells.n; ++i) sums[1] += cells.size[i] * cells.size[i] * cells.size[i];
  const double localVolume = sums[1];
  AG_TRY(comm.sum(sums, 2));
  AG_TRY(comm.min(&minSize, 1));

  // keys on the root cube one process would choose for all the cells (every rank's tree is then part of the
  // one-process octree, whose nodes decomposition along its cuts keeps whole); coincident cells show here
  auto t = Clock::now();
  RootCube root = rootCubeFor(lo, hi, minSize, opt);
  SortedCells sorted;
  std::vector<std::uint64_t> keys;
  st = sortCellsByKey(cells, root, sorted, keys, scale, false, threads);
  if (st.ok() && periodic && opt.densityContrast) {
    stats.meanDensity = applyDensityContrast(sorted, opt, sums[0]);
    stats.densityContrast = true;
  }
  {
    double noLo[3] = {INFINITY, INFINITY, INFINITY}, noHi[3] = {-INFINITY, -INFINITY, -INFINITY};
    AG_TRY(comm.agree(st, noLo, noHi, opt));
  }
  stats.secondsKeys = since(t);

  // the tree, with the MAC's scales of all the cells: isolated, the lower bounds measured to the root cube one
  // process would take, with every rank's |mass|; periodic, the scale of |phi| from every rank's leaves and cubes
  t = Clock::now();

  // the shared top: the one-process tree's nodes with cells on several ranks, split by their counts over every rank,
  // their sums, radii and multipoles completed over the ranks (so every rank's nodes are the one-process nodes)
  const fmm::GatherWords gather = [&](const std::vector<std::uint64_t>& mine, std::vector<std::uint64_t>& all,
                                      std::vector<std::size_t>& counts) { return comm.allgatherWords(mine, all, counts); };
  // (their errors, too many cells or words, are the same on every rank: agreed on, so returned, not ending the job)
  fmm::SharedTop top;
  fmm::SharedNodes shared;
  shared.top = &top;
  shared.sum = [&](double* v, std::size_t k) { return comm.sum(v, k); };
  shared.max = [&](double* v, std::size_t k) { return comm.max(v, k); };
  st = fmm::findSharedTop(keys, fmm::kFmmLeafSize, gather, top);
  if (st.ok() && periodic)
    st = fmm::sharedLeafNearMax(keys, sorted, top, fmm::kFmmLeafSize, gather, shared.sharedLeafNearMax);
  if (!st.ok()) {
    double noLo[3] = {INFINITY, INFINITY, INFINITY}, noHi[3] = {-INFINITY, -INFINITY, -INFINITY};
    AG_TRY(comm.agree(st, noLo, noHi, opt));
  }
  fmm::FmmTree tree;
  AG_TRY(fmm::buildFmmTree(keys, root, sorted, opt, threads, tree, [&](fmm::MacScaleParts& p) -> Status {
    std::vector<double> v{p.absMass};
    v.insert(v.end(), p.net.begin(), p.net.end());
    v.insert(v.end(), p.count.begin(), p.count.end());
    AG_TRY(comm.sum(v.data(), v.size()));
    AG_TRY(comm.max(&p.nearMax, 1));
    p.absMass = v[0];
    std::copy(v.begin() + 1, v.begin() + 1 + p.net.size(), p.net.begin());
    std::copy(v.begin() + 1 + p.net.size(), v.end(), p.count.begin());
    p.cube = root;  // scaled by the key sort
    return Status::success();
  }, &shared));
  std::vector<std::uint64_t> codes;
  fmm::nodeCodes(tree, keys, codes);
  const fmm::LetNodes letNodes{&codes, &shared.index, &top, rank};
  stats.secondsMoments = since(t);
  stats.nodes = tree.nodeCount();
  for (std::size_t i = 0; i < tree.nodeCount(); ++i) stats.leaves += tree.isLeaf(i) ? 1 : 0;
  stats.treeDepth = tree.topo.depth;

  // every rank's reach: a LET goes from every rank with cells to every other rank with cells
  t = Clock::now();
  const fmm::FmmReachSet mine = fmm::reachOf(tree);
  std::vector<fmm::FmmReachSet> all(size);
  AG_TRY(comm.allgather(reinterpret_cast<const double*>(&mine), fmm::kFmmReachDoubles,
                        reinterpret_cast<double*>(all.data())));
  ds.secondsAgree = since(t);
  double period[3];
  for (int d = 0; d < 3; ++d) period[d] = (opt.boxHi[d] - opt.boxLo[d]) * sorted.scale;
  const double* per = periodic ? period : nullptr;

  const std::size_t n = cells.n;
  std::vector<double> phi(n, 0.0), g[3];
  if (opt.accelerations)
    for (auto& v : g) v.assign(n, 0.0);
  const fmm::FmmOutput fo{phi.data(), opt.accelerations ? g[0].data() : nullptr,
                          opt.accelerations ? g[1].data() : nullptr, opt.accelerations ? g[2].data() : nullptr};
  LetRound round;
  round.expect.assign(size, false);
  for (int k = 1; k < size; ++k) {  // staggered, so that no rank is everybody's first
    const int r = (rank + k) % size;
    if (n == 0 || all[r].leaves.nodes == 0) continue;
    round.dests.push_back(r);
    round.expect[r] = true;
  }
  fmm::FmmLetSelection sel;
  double selectSeconds = 0;
  round.pack = [&](std::size_t k, PackedLet& let, std::size_t& nodes, std::size_t& letCells) -> Status {
    const auto ts = Clock::now();
    fmm::selectFmmLet(tree, letNodes, all[round.dests[k]], round.dests[k], opt.fmmTolerance, per, sel);
    fmm::packFmmLet(tree, codes, sorted, sel, let);
    nodes = sel.node.size();
    letCells = sel.cellCount;
    selectSeconds += since(ts);
    return Status::success();
  };
  fmm::FmmLists lists;
  double localSeconds = 0, remoteSeconds = 0;
  round.localWork = [&](const std::function<Status()>& progress) -> Status {
    const auto tl = Clock::now();
    if (n > 0) {
      if (local.makesLists(opt)) {  // the evaluator walks them (its counts into lists)
        for (int d = 0; d < 3; ++d) lists.period[d] = per ? per[d] : 0.0;
      } else {
        fmm::buildInteractionLists(tree, opt.fmmTolerance, threads, lists, per);
        AG_TRY(progress());
      }
      AG_TRY(local.local(tree, lists, sorted, opt, threads, fo, progress));
    }
    localSeconds = since(tl);
    return Status::success();
  };
  std::uint64_t remoteM2L = 0, remoteP2P = 0;
  round.received = [&](int, const std::uint64_t* words, std::size_t bytes) -> Status {
    const auto tr = Clock::now();
    fmm::FmmLetView view;
    AG_TRY(fmm::viewFmmLet(words, bytes, tree, view));
    fmm::ExternalSources src;
    AG_TRY(fmm::fmmLetLists(tree, codes, view, opt.fmmTolerance, per, threads, src));
    fmm::evaluateP2PFrom(src, tree, sorted, threads, fo);
    fmm::evaluateM2LFrom(src, threads, tree);
    remoteM2L += src.m2lSource.size();
    for (std::size_t A = 0; A < tree.nodeCount(); ++A)
      for (std::uint32_t q = src.p2pStart[A]; q < src.p2pStart[A + 1]; ++q)
        remoteP2P += std::uint64_t(tree.topo.cellCount[A]) * view.cellCount[src.p2pSource[q]];
    remoteSeconds += since(tr);
    return Status::success();
  };
  AG_TRY(comm.exchange(round, ds));
  ds.secondsLetSelect = selectSeconds;
  ds.secondsLocalWalk = localSeconds;
  ds.secondsRemoteWalk = remoteSeconds;

  // the far images from every rank's frontier cubes, then the downward pass
  t = Clock::now();
  if (periodic)
    AG_TRY(fmm::addFarImages(sorted, period, threads, tree, fo, [&](std::vector<double>& dense) {
      return comm.sum(dense.data(), dense.size());
    }, [&](std::uint32_t node) {
      const std::int32_t k = shared.index[node];
      return k < 0 || top.owner(std::size_t(k)) == rank;
    }));
  if (n > 0) AG_TRY(local.finish(tree, sorted, threads, fo, stats));
  stats.secondsWalk = localSeconds + remoteSeconds + since(t);
  stats.approxInteractions = lists.directedM2L + remoteM2L;
  stats.directInteractions = lists.directedP2P + remoteP2P;
  finishSolve(sorted, opt, phi, opt.accelerations ? g : nullptr, out);
  // the volume-weighted mean potential over every rank's cells
  double vPhi = out.stats.meanPotential * localVolume;
  AG_TRY(comm.sum(&vPhi, 1));
  out.stats.meanPotential = sums[1] > 0 ? vPhi / sums[1] : 0.0;
  out.stats.secondsTotal = since(t0);
  return Status::success();
}

}  // namespace amrgrav
