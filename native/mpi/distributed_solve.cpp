/// \file distributed_solve.cpp
/// \brief The distributed solve's driver and its CPU rank (see distributed_solve.h, rank_engine.h). Sequence per
/// rank: check the input and agree on it and on the global bounds (one allreduce) -> key sort with the global
/// length scale, build, moments, groups -> allgather of rank summaries -> the LETs chosen for the other ranks (a
/// GPU chooses and packs them all on the device, then queues its local walk) -> each LET packed (CPU) or
/// downloaded (GPU) and Isent -> complete the local walk, letting messages progress meanwhile -> walk the received
/// LETs (in rank order, merged into one tree) -> scale, self term, scatter.
#include "mpi/distributed_solve.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <new>
#include <vector>

#include "core/backend.h"
#include "ewald/walk_setup.h"
#include "let/let.h"
#include "tree/tree.h"
#include "core/validate.h"
#include "cpu/cpu_walk.h"
#include "cpu/finish.h"
#include "core/fixed_sum.h"
#include "core/thread_pool.h"
#include "mpi/mpi_world.h"
#include "core/rank_engine.h"
#if defined(AMRGRAV_HAVE_CUDA)
#include "cuda/cuda_backend.h"
#endif

#if defined(AMRGRAV_HAVE_MPI)
#include "mpi/agreement.h"
#include "mpi/let_exchange.h"
#include "mpi/mpi_check.h"
#endif

namespace amrgrav {

#if !(defined(AMRGRAV_HAVE_CUDA) && defined(AMRGRAV_HAVE_MPI))
std::unique_ptr<RankEngine> makeCudaRankEngine() { return nullptr; }
#endif

namespace {

constexpr const char* kNoCudaBuild = "this build of amrgrav has no CUDA backend (nvcc was not found at build time)";

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// Slices of the CPU's local walk; between two slices pending messages are moved along (Open MPI has no progress
/// thread, so large messages only advance inside MPI calls).
constexpr std::size_t kWalkSlices = 16;

/// Bounds of this rank's cells with their extents, or the user's box (empty, lo > hi, without cells or box).
void localBounds(const CellsView& c, const SolveOptions& opt, double lo[3], double hi[3]) {
  if (opt.hasBox) {
    for (int d = 0; d < 3; ++d) { lo[d] = opt.boxLo[d]; hi[d] = opt.boxHi[d]; }
    return;
  }
  for (int d = 0; d < 3; ++d) { lo[d] = INFINITY; hi[d] = -INFINITY; }
  const double* p[3] = {c.x, c.y, c.z};
  for (std::size_t i = 0; i < c.n; ++i)
    for (int d = 0; d < 3; ++d) {
      lo[d] = std::min(lo[d], p[d][i] - 0.5 * c.size[i]);
      hi[d] = std::max(hi[d], p[d][i] + 0.5 * c.size[i]);
    }
}

/// The CPU rank: the tree, walks and finish of the CPU backend (cpu/).
class CpuRankEngine final : public RankEngine {
 public:
  const char* name() const override { return "cpu"; }
  Status open(const CellsView& cells, const SolveOptions& opt, double lo[3], double hi[3]) override {
    AG_TRY(validateCells(cells, opt));
    localBounds(cells, opt, lo, hi);
    return Status::success();
  }

  /// The root cube is this rank's own bounding cube (or the user's box): tight cubes make small, accurate trees,
  /// and a far-away rank's whole tree is accepted by the others at its root.
  Status build(const CellsView& cells, const SolveOptions& opt, double scale, double totalMass,
               SolveStats& st) override {
    threads_ = resolveThreadCount(opt.threads);
    st.threads = threads_;
    auto t = Clock::now();
    std::vector<std::uint64_t> keys;
    RootCube root = chooseRootCube(cells, opt);
    AG_TRY(sortCellsByKey(cells, root, cells_, keys, scale));
    if (opt.fullyPeriodic() && opt.densityContrast) {
      st.meanDensity = applyDensityContrast(cells_, opt, totalMass);
      st.densityContrast = true;
    }
    st.secondsKeys = since(t);
    t = Clock::now();
    AG_TRY(buildOctree(keys, root, opt.leafSize, tree_));
    st.secondsBuild = since(t);
    t = Clock::now();
    computeMoments(cells_, opt, tree_);
    st.secondsMoments = since(t);
    groups_ = makeGroups(cells_, opt.groupSize);
    st.nodes = tree_.nodeCount();
    for (std::size_t i = 0; i < tree_.nodeCount(); ++i) st.leaves += tree_.isLeaf(i) ? 1 : 0;
    st.treeDepth = tree_.depth;
    st.groups = groups_.size();
    // Periodic boxes: the table (every rank the same: same box, same scale) and the nodes' second moments; the
    // essential nodes are chosen by the images a remote group may see (let/let.h essentialNodesForPeriodic).
    periodic_ = opt.anyPeriodic();
    if (periodic_) {
      AG_TRY(prepareEwaldTable(opt, cells_.scale, threads_, ewald_, st));
      ewald_.nodeS = nodeSecondMoments(cells_, tree_);
    }
    const std::size_t n = cells.n;
    phi_.assign(n, 0.0);
    for (auto& v : g_) v.assign(opt.accelerations ? n : 0, 0.0);
    wo_ = WalkOutput{phi_.data(), opt.accelerations ? g_[0].data() : nullptr,
                     opt.accelerations ? g_[1].data() : nullptr, opt.accelerations ? g_[2].data() : nullptr};
    return Status::success();
  }

  Status summary(RankSummary& out) override {
    out = summariseCells(cells_);
    groupHalfWidths(groups_, out.groupHalfWidth);
    return Status::success();
  }

  Status chooseLets(const std::vector<RemoteBox>& boxes) override {
    boxes_ = boxes;
    return Status::success();
  }

  Status startLocalWalk(const SolveOptions&) override { return Status::success(); }  // it needs the threads

  /// Chosen and packed as it is sent, so the first LET leaves before the others are chosen.
  Status takeLet(std::size_t k, PackedLet& out, std::size_t& nodes, std::size_t& cells) override {
    const SourceTree local = source();
    const RemoteBox& b = boxes_.at(k);
    if (periodic_) essentialNodesForPeriodic(local, b.lo, b.hi, b.groupHalfWidth, ewald_.view, sel_);
    else essentialNodesFor(local, b.lo, b.hi, sel_);
    packLet(local, sel_, out);
    nodes = sel_.node.size();
    cells = sel_.cellCount;
    return Status::success();
  }

  Status completeLocalWalk(const SolveOptions& opt, const std::function<Status()>& progress, SolveStats&) override {
    const SourceTree local = source();
    const std::size_t ng = groups_.size();
    for (std::size_t s = 0; s < kWalkSlices && ng > 0; ++s) {
      walkGroups(local, cells_, groups_, ng * s / kWalkSlices, ng * (s + 1) / kWalkSlices, opt, threads_,
                 WalkPass{false, true}, wo_, ewald());
      AG_TRY(progress());
    }
    return Status::success();
  }

  Status walkReceived(const std::vector<ReceivedLet>& lets, const SolveOptions& opt, SolveStats& st) override {
    if (!lets.empty()) {
      std::vector<SourceTree> views;
      for (const ReceivedLet& l : lets) views.push_back(l.view);
      AG_TRY(mergeLets(views.data(), views.size(), forest_));
      walkGroups(forest_.view(), cells_, groups_, 0, groups_.size(), opt, threads_, WalkPass{true, false, false}, wo_,
                 ewald());
    }
    st.approxInteractions = wo_.approx;
    st.directInteractions = wo_.direct;
    return Status::success();
  }

  Status finish(const SolveOptions& opt, SolveResult& out) override {
    finishSolve(cells_, opt, phi_, opt.accelerations ? g_ : nullptr, out);
    return Status::success();
  }

 private:
  const EwaldWalk* ewald() const { return periodic_ ? &ewald_ : nullptr; }

  /// The local tree as a source (periodic: with its nodes' second moments; signed sources: their dipoles).
  SourceTree source() const {
    SourceTree t = sourceTreeOf(tree_, cells_);
    if (periodic_) t.secondMoment = ewald_.nodeS.data();
    return t;
  }

  int threads_ = 1;
  bool periodic_ = false;
  SortedCells cells_;
  Octree tree_;
  Groups groups_;
  EwaldWalk ewald_;
  std::vector<RemoteBox> boxes_;
  LetSelection sel_;
  LetForest forest_;
  std::vector<double> phi_, g_[3];
  WalkOutput wo_{nullptr, nullptr, nullptr, nullptr};
};

}  // namespace

#if defined(AMRGRAV_HAVE_MPI)
namespace {

/// After the agreement every rank must reach the end: a failure here aborts the job (mpi_world.h).
void orAbort(const Status& st) {
  if (!st.ok()) abortMpiWorld(std::string(errorCodeName(st.code)) + ": " + st.message);
}

/// The sequence of distributed_solve.h over `engine`. The length scale is the global one (lengthScaleFor of the
/// bounds of all ranks' cells), so scaled positions, moments and MAC radii are the same numbers on every rank: a
/// LET can be walked as it arrives, whichever backend built it.
Status distributedImpl(RankEngine& engine, const CellsView& cells, const SolveOptions& opt, SolveResult& out) {
  const auto t0 = Clock::now();
  MPI_Comm comm = amrgravComm();
  const MpiWorld world = mpiWorld();
  const int rank = world.rank, size = world.size;

  Status st = validateOptions(opt);
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  if (st.ok()) st = engine.open(cells, opt, lo, hi);
  if (!st.ok())
    for (int d = 0; d < 3; ++d) { lo[d] = INFINITY; hi[d] = -INFINITY; }
  st = agreeToProceed(st, lo, hi, &opt);
  if (!st.ok()) return st;

  // ---- from here on, every rank goes on to the end or the job aborts (the build's checks are agreed on below) ----
  const ResultTargets into = out.into;  // the caller's result arrays, if any
  out = SolveResult{};
  out.into = into;
  DistributedStats& ds = out.stats.distributed;
  ds.ranks = size;
  ds.rank = rank;
  ds.backend = engine.name();
  double side = 0;  // of the cube chooseRootCube would give one process holding all cells: the same scale
  for (int d = 0; d < 3; ++d) side = std::max(side, hi[d] - lo[d]);
  if (!(side > 0)) side = 1;  // no cells anywhere, or a single point mass

  // fully periodic boxes: the density contrast needs every rank's mass (tree/tree.h applyDensityContrast)
  double sums[2] = {fixedOrderSum(cells.mass, cells.n, opt.threads), 0};  // mass, volume of this rank's cells
  if (opt.fullyPeriodic())  // for the mean potential
    for (std::size_t i = 0; i < cells.n; ++i) sums[1] += cells.size[i] * cells.size[i] * cells.size[i];
  const double localVolume = sums[1];
  orAbort(mpiStatus(MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE, MPI_SUM, comm), "MPI_Allreduce", __FILE__,
                    __LINE__));
  // The build can still reject the input (coincident cells show only after the key sort), so the ranks agree once
  // more (one small allreduce) before the first step that would leave another rank waiting.
  {
    Status built = engine.build(cells, opt, lengthScaleFor(side), sums[0], out.stats);
    double noLo[3] = {INFINITY, INFINITY, INFINITY}, noHi[3] = {-INFINITY, -INFINITY, -INFINITY};
    built = agreeToProceed(built, noLo, noHi, &opt);
    if (!built.ok()) return built;
  }

  auto t = Clock::now();
  RankSummary mine;
  orAbort(engine.summary(mine));
  std::vector<RankSummary> all(size);
  orAbort(mpiStatus(MPI_Allgather(&mine, kRankSummaryDoubles, MPI_DOUBLE, all.data(), kRankSummaryDoubles,
                                  MPI_DOUBLE, comm), "MPI_Allgather", __FILE__, __LINE__));
  ds.secondsAgree = since(t);

  // A LET travels between every pair of ranks that both have cells.
  const std::size_t n = cells.n;
  std::vector<bool> expect(size, false);
  for (int r = 0; r < size; ++r) expect[r] = r != rank && n > 0 && all[r].cellCount > 0;
  static LetBuffers buffers;  // kept between solves (under the MPI lock, like the exchange itself)
  LetExchange ex(comm, expect, buffers);
  orAbort(ex.start());

  // the LETs' destinations, staggered so that no rank is everybody's first
  std::vector<int> dests;
  std::vector<RemoteBox> boxes;
  for (int k = 1; k < size; ++k) {
    const int dst = (rank + k) % size;
    if (!expect[dst]) continue;
    dests.push_back(dst);
    RemoteBox b;
    for (int d = 0; d < 3; ++d) {
      b.lo[d] = all[dst].centreLo[d];
      b.hi[d] = all[dst].centreHi[d];
      b.groupHalfWidth[d] = all[dst].groupHalfWidth[d];
    }
    boxes.push_back(b);
  }
  t = Clock::now();
  orAbort(engine.chooseLets(boxes));  // a GPU chooses and packs them all on the device, before its walk
  const double selectSeconds = since(t);
  const auto walkLaunched = Clock::now();
  orAbort(engine.startLocalWalk(opt));
  t = Clock::now();
  for (std::size_t k = 0; k < dests.size(); ++k) {
    PackedLet& let = ex.nextOutgoing();
    std::size_t nodes = 0, letCells = 0;
    orAbort(engine.takeLet(k, let, nodes, letCells));
    ds.letNodesSent += nodes;
    ds.letCellsSent += letCells;
    orAbort(ex.send(dests[k], let));
    orAbort(ex.progress());
  }
  ds.secondsLetSelect = selectSeconds + since(t);

  // on the exchange's clock; a walk that started before the exchange existed starts at a negative time
  const double walkStart = engine.walksAlongside() ? ex.now() - since(walkLaunched) : ex.now();
  // every LET in rank order (so the sum has a fixed order); when all are in before the local walk is done, the
  // engine gets them at once (a GPU uploads and merges them beside its walk)
  std::vector<ReceivedLet> lets;
  bool received = false;
  auto receiveAll = [&]() -> Status {
    for (int r = 0; r < size; ++r) {
      if (!expect[r]) continue;
      lets.emplace_back();
      AG_TRY(ex.receive(r, lets.back()));
    }
    received = true;
    return Status::success();
  };
  orAbort(engine.completeLocalWalk(opt, [&]() -> Status {
    AG_TRY(ex.progress());
    if (received || !ex.allArrived()) return Status::success();
    AG_TRY(receiveAll());
    return engine.prepareReceived(lets);
  }, out.stats));
  const double walkEnd = ex.now();
  ds.secondsLocalWalk = walkEnd - walkStart;

  // then one walk over all of them
  double w0 = ex.now();
  if (!received) orAbort(receiveAll());
  double waited = ex.now() - w0;
  w0 = ex.now();
  orAbort(engine.walkReceived(lets, opt, out.stats));
  const double remoteWalk = ex.now() - w0;
  w0 = ex.now();
  orAbort(ex.finish());
  waited += ex.now() - w0;

  const LetExchangeStats& xs = ex.stats();
  ds.bytesSent = xs.bytesSent;
  ds.bytesReceived = xs.bytesReceived;
  ds.letsSent = xs.letsSent;
  ds.letsReceived = xs.letsReceived;
  ds.secondsExchangeWait = waited;
  ds.secondsRemoteWalk = remoteWalk;
  if (xs.firstSend >= 0 || xs.letsReceived > 0) {
    const double begin = xs.firstSend >= 0 ? std::min(xs.firstSend, walkStart) : walkStart;
    const double end = std::max(xs.lastArrival, begin);
    ds.secondsExchange = end - begin;
    ds.secondsOverlap = std::max(0.0, std::min(end, walkEnd) - std::max(begin, walkStart));
  }
  out.stats.secondsWalk = ds.secondsLocalWalk + remoteWalk;
  orAbort(engine.finish(opt, out));
  // the volume-weighted mean potential over every rank's cells
  double vPhi = out.stats.meanPotential * localVolume;
  orAbort(mpiStatus(MPI_Allreduce(MPI_IN_PLACE, &vPhi, 1, MPI_DOUBLE, MPI_SUM, comm), "MPI_Allreduce", __FILE__,
                    __LINE__));
  out.stats.meanPotential = sums[1] > 0 ? vPhi / sums[1] : 0.0;
  out.stats.secondsTotal = since(t0);
  return Status::success();
}

/// distributedImpl under amrgrav's MPI lock; anything thrown after the agreement ends the job.
Status distributedGuarded(RankEngine& engine, const CellsView& cells, const SolveOptions& opt, SolveResult& out) {
  std::lock_guard<std::mutex> lock(mpiLock());
  try {
    return distributedImpl(engine, cells, opt, out);
  } catch (const std::bad_alloc&) {
    abortMpiWorld("host memory exhausted during the distributed solve");
  } catch (const std::exception& e) {
    abortMpiWorld(std::string("distributed solve: ") + e.what());
  }
}

}  // namespace
#endif

Status solveDistributedCpu(const CellsView& cells, const SolveOptions& opt, SolveResult& out) {
#if defined(AMRGRAV_HAVE_MPI)
  if (mpiWorld().size > 1) {
    CpuRankEngine engine;
    return distributedGuarded(engine, cells, opt, out);
  }
#endif
  return makeCpuBackend()->solve(cells, opt, out);
}

Status solveDistributedCuda(const CellsView& cells, const SolveOptions& opt, SolveResult& out) {
#if defined(AMRGRAV_HAVE_MPI)
  if (mpiWorld().size > 1) {
    std::unique_ptr<RankEngine> engine = makeCudaRankEngine();
    if (!engine)  // takes part in the agreement with the error, so that no rank waits
      return failDistributedSolve(Status::error(ErrorCode::NoDevice, kNoCudaBuild));
    return distributedGuarded(*engine, cells, opt, out);
  }
#endif
#if defined(AMRGRAV_HAVE_CUDA)
  return makeCudaBackend()->solve(cells, opt, out);
#else
  (void)cells;
  (void)opt;
  (void)out;
  return Status::error(ErrorCode::NoDevice, kNoCudaBuild);
#endif
}

Status failDistributedSolve(const Status& why) {
#if defined(AMRGRAV_HAVE_MPI)
  if (mpiWorld().size > 1) {
    std::lock_guard<std::mutex> lock(mpiLock());
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    return agreeToProceed(why, lo, hi, nullptr);
  }
#endif
  return why;
}

}  // namespace amrgrav
