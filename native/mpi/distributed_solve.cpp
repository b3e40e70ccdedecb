/// \file distributed_solve.cpp
/// \brief The distributed CPU solve (see distributed_solve.h). Sequence per rank: check the input and agree on
/// it and on the global bounds (one allreduce) -> key sort with the global length scale, build, moments, groups ->
/// allgather of rank summaries -> for each other rank, select and pack its LET and Isend it -> walk the local
/// tree in slices, letting messages progress between slices -> walk each received LET (in rank order, so the
/// sum has a fixed order) -> scale, self term, scatter.
#include "mpi/distributed_solve.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <new>
#include <vector>

#include "core/backend.h"
#include "core/ewald_walk.h"
#include "core/let.h"
#include "core/tree.h"
#include "core/validate.h"
#include "cpu/cpu_walk.h"
#include "cpu/finish.h"
#include "cpu/thread_pool.h"
#include "mpi/mpi_world.h"

#if defined(AMRGRAV_HAVE_MPI)
#include "mpi/agreement.h"
#include "mpi/let_exchange.h"
#include "mpi/mpi_check.h"
#endif

namespace amrgrav {

#if defined(AMRGRAV_HAVE_MPI)
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// Slices of the local walk; between two slices pending messages are moved along (Open MPI has no progress
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

/// After the agreement every rank must reach the end: a failure here aborts the job (mpi_world.h).
void orAbort(const Status& st) {
  if (!st.ok()) abortMpiWorld(std::string(errorCodeName(st.code)) + ": " + st.message);
}

struct LocalTree {
  SortedCells cells;
  Octree tree;
  Groups groups;
};

/// Keys, build, moments and groups, timed into `stats`. The root cube is this rank's own bounding cube (or the
/// user's box): tight cubes make small, accurate trees, and a far-away rank's whole tree is accepted by the others
/// at its root. The length scale is the global one (lengthScaleFor of the bounds of all ranks' cells), so scaled
/// positions, moments and MAC radii are the same numbers on every rank: a LET can be walked as it arrives.
void buildLocalTree(const CellsView& cells, const SolveOptions& opt, double scale, LocalTree& L, SolveStats& stats) {
  auto t = Clock::now();
  std::vector<std::uint64_t> keys;
  RootCube root = chooseRootCube(cells, opt);
  orAbort(sortCellsByKey(cells, root, L.cells, keys, scale));
  stats.secondsKeys = since(t);
  t = Clock::now();
  orAbort(buildOctree(keys, root, opt.leafSize, L.tree));
  stats.secondsBuild = since(t);
  t = Clock::now();
  computeMoments(L.cells, opt, L.tree);
  stats.secondsMoments = since(t);
  L.groups = makeGroups(L.cells, opt.groupSize);
  stats.nodes = L.tree.nodeCount();
  for (std::size_t i = 0; i < L.tree.nodeCount(); ++i) stats.leaves += L.tree.isLeaf(i) ? 1 : 0;
  stats.treeDepth = L.tree.depth;
  stats.groups = L.groups.size();
}

Status distributedImpl(const CellsView& cells, const SolveOptions& opt, SolveResult& out) {
  const auto t0 = Clock::now();
  MPI_Comm comm = amrgravComm();
  const MpiWorld world = mpiWorld();
  const int rank = world.rank, size = world.size;

  Status st = validateOptions(opt);
  if (st.ok()) st = validateCells(cells, opt);
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  if (st.ok()) localBounds(cells, opt, lo, hi);
  st = agreeToProceed(st, lo, hi);
  if (!st.ok()) return st;

  // ---- from here on, every rank goes on to the end or the job aborts ----
  const ResultTargets into = out.into;  // the caller's result arrays, if any
  out = SolveResult{};
  out.into = into;
  DistributedStats& ds = out.stats.distributed;
  ds.ranks = size;
  ds.rank = rank;
  const int threads = resolveThreadCount(opt.threads);
  out.stats.threads = threads;
  double side = 0;  // of the cube chooseRootCube would give one process holding all cells: the same scale
  for (int d = 0; d < 3; ++d) side = std::max(side, hi[d] - lo[d]);
  if (!(side > 0)) side = 1;  // no cells anywhere, or a single point mass

  LocalTree L;
  buildLocalTree(cells, opt, lengthScaleFor(side), L, out.stats);
  // Periodic boxes: the table (every rank the same: same box, same scale) and the nodes' second moments; the
  // essential nodes are chosen by the images a remote group may see (core/let.h essentialNodesForPeriodic).
  const bool periodic = opt.anyPeriodic();
  EwaldWalk ewald;
  if (periodic) {
    orAbort(prepareEwaldTable(opt, L.cells.scale, threads, ewald, out.stats));
    ewald.nodeS = nodeSecondMoments(L.cells, L.tree);
  }
  const EwaldWalk* ew = periodic ? &ewald : nullptr;

  auto t = Clock::now();
  std::vector<RankSummary> all(size);
  RankSummary mine = summariseCells(L.cells);
  orAbort(mpiStatus(MPI_Allgather(&mine, kRankSummaryDoubles, MPI_DOUBLE, all.data(), kRankSummaryDoubles,
                                  MPI_DOUBLE, comm), "MPI_Allgather", __FILE__, __LINE__));
  ds.secondsAgree = since(t);

  // A LET travels between every pair of ranks that both have cells.
  const std::size_t n = cells.n;
  std::vector<bool> expect(size, false);
  for (int r = 0; r < size; ++r) expect[r] = r != rank && n > 0 && all[r].cellCount > 0;
  LetExchange ex(comm, expect);
  orAbort(ex.start());

  t = Clock::now();
  SourceTree local = sourceTreeOf(L.tree, L.cells);
  if (periodic) local.secondMoment = ewald.nodeS.data();
  LetSelection sel;
  for (int k = 1; k < size && n > 0; ++k) {
    const int dst = (rank + k) % size;  // staggered, so no rank is everybody's first destination
    if (!expect[dst]) continue;
    if (periodic) essentialNodesForPeriodic(local, all[dst].centreLo, all[dst].centreHi, ewald.view, sel);
    else essentialNodesFor(local, all[dst].centreLo, all[dst].centreHi, sel);
    PackedLet let;
    packLet(local, sel, let);
    ds.letNodesSent += sel.node.size();
    ds.letCellsSent += sel.cellCount;
    orAbort(ex.send(dst, std::move(let)));
    orAbort(ex.progress());
  }
  ds.secondsLetSelect = since(t);

  std::vector<double> phi(n, 0.0), g[3];
  if (opt.accelerations) for (auto& v : g) v.assign(n, 0.0);
  WalkOutput wo{phi.data(), opt.accelerations ? g[0].data() : nullptr, opt.accelerations ? g[1].data() : nullptr,
                opt.accelerations ? g[2].data() : nullptr};

  const double walkStart = ex.now();
  const std::size_t ng = L.groups.size();
  for (std::size_t s = 0; s < kWalkSlices && ng > 0; ++s) {
    walkGroups(local, L.cells, L.groups, ng * s / kWalkSlices, ng * (s + 1) / kWalkSlices, opt, threads,
               WalkPass{false, true}, wo, ew);
    orAbort(ex.progress());
  }
  const double walkEnd = ex.now();
  ds.secondsLocalWalk = walkEnd - walkStart;

  double waited = 0, remoteWalk = 0;
  for (int r = 0; r < size; ++r) {
    if (!expect[r]) continue;
    const double w0 = ex.now();
    SourceTree let;
    orAbort(ex.receive(r, let));
    const double w1 = ex.now();
    waited += w1 - w0;
    walkGroups(let, L.cells, L.groups, 0, ng, opt, threads, WalkPass{true, false, false}, wo, ew);
    remoteWalk += ex.now() - w1;
  }
  const double w0 = ex.now();
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
  out.stats.approxInteractions = wo.approx;
  out.stats.directInteractions = wo.direct;
  finishSolve(L.cells, opt, phi, opt.accelerations ? g : nullptr, out);
  out.stats.secondsTotal = since(t0);
  return Status::success();
}

}  // namespace
#endif

Status solveDistributedCpu(const CellsView& cells, const SolveOptions& opt, SolveResult& out) {
#if defined(AMRGRAV_HAVE_MPI)
  if (mpiWorld().size > 1) {
    std::lock_guard<std::mutex> lock(mpiLock());
    try {
      return distributedImpl(cells, opt, out);
    } catch (const std::bad_alloc&) {
      abortMpiWorld("host memory exhausted during the distributed solve");
    } catch (const std::exception& e) {
      abortMpiWorld(std::string("distributed solve: ") + e.what());
    }
  }
#endif
  return makeCpuBackend()->solve(cells, opt, out);
}

Status failDistributedSolve(const Status& why) {
#if defined(AMRGRAV_HAVE_MPI)
  if (mpiWorld().size > 1) {
    std::lock_guard<std::mutex> lock(mpiLock());
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    return agreeToProceed(why, lo, hi);
  }
#endif
  return why;
}

}  // namespace amrgrav
