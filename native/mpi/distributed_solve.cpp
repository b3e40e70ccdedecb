/// \file distributed_solve.cpp
/// \brief The distributed solve's driver (see distributed_solve.h, core/rank_engine.h), the same for every rank
/// engine; it includes nothing from cpu/ or cuda/. Sequence per rank: check the input and agree on it and on the
/// global bounds (one allreduce) -> key sort with the global length scale, build, moments, groups -> allgather of
/// rank summaries -> the LETs chosen for the other ranks (a GPU chooses and packs them all on the device, then
/// queues its local walk) -> each LET packed (CPU) or downloaded (GPU) and Isent -> complete the local walk, letting
/// messages progress meanwhile -> walk the received LETs (in rank order, merged into one tree) -> scale, self term,
/// scatter. A system solve's particles (issue #18) stay on their rank: after a census of them (particle_census.h:
/// counts, bounds, the mass range) each rank builds the tree of its own, sends every other rank with targets a
/// particle LET chosen from it for that rank's box (let/let.h essentialParticlesFor: the MAC and the softening rule),
/// in an exchange of its own beside the cells' (sizes first, then payloads, non-blocking), and walks its own
/// particles' tree and the received particle LETs for its cells, probes and own particles; the cell LETs sent to a
/// rank with particles cover their softened pairs. Memory and work then follow the rank's share of the particles.
#include "mpi/distributed_solve.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <new>
#include <vector>

#include "core/fixed_sum.h"
#include "core/rank_engine.h"
#include "core/validate.h"
#include "let/let.h"
#include "mpi/mpi_world.h"
#include "tree/tree.h"

#if defined(AMRGRAV_HAVE_MPI)
#include "mpi/agreement.h"
#include "mpi/let_exchange.h"
#include "mpi/mpi_check.h"
#include "mpi/particle_census.h"
#include "physics/softening_k.h"
#endif

namespace amrgrav {

#if defined(AMRGRAV_HAVE_MPI)
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// After the agreement every rank must reach the end: a failure here aborts the job (mpi_world.h).
void orAbort(const Status& st) {
  if (!st.ok()) abortMpiWorld(std::string(errorCodeName(st.code)) + ": " + st.message);
}

/// The sequence of distributed_solve.h over `engine`. The length scale is the global one (lengthScaleFor of the
/// bounds of all ranks' cells), so scaled positions, moments and MAC radii are the same numbers on every rank: a
/// LET can be walked as it arrives, whichever backend built it.
/// sysOut: a system solve (core/system.h; its probes and targets in `sys`), else a solve of sys.cells into `out`.
Status distributedImpl(RankEngine& engine, const SystemView& sys, const SolveOptions& opt, SolveResult& out,
                       SystemResult* sysOut) {
  const CellsView& cells = sys.cells;
  const auto t0 = Clock::now();
  MPI_Comm comm = amrgravComm();
  const MpiWorld world = mpiWorld();
  const int rank = world.rank, size = world.size;

  Status st = validateOptions(opt);
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  if (st.ok()) st = engine.open(cells, opt, lo, hi);
  // the system's probes, targets and particles are checked here (a bad particle on one rank fails every rank)
  if (st.ok() && sysOut) st = engine.openSystem(sys, opt);
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
  ds.device = engine.device();
  // Particles (issue #18): each rank keeps its own; the census tells every rank who has some, their bounds and
  // whether their masses are in range (particle_census.h). Every rank decides alike whether to go on.
  ParticleCensus census;
  if (sysOut) {
    const Status counted = takeParticleCensus(sys.particles, engine.takesParticles(), opt, census);
    if (counted.code == ErrorCode::Internal) orAbort(counted);  // an MPI failure: not every rank may know it
    if (!counted.ok()) return counted;  // the same decision on every rank
  }
  const bool anyParticles = census.total > 0;
  const bool anyCells = lo[0] <= hi[0];
  double side = 0;  // of the cube chooseRootCube would give one process holding all cells: the same scale
  for (int d = 0; d < 3; ++d) side = std::max(side, hi[d] - lo[d]);
  if (!anyCells && anyParticles)  // the particles' cube, as a single process without cells takes
    for (int d = 0; d < 3; ++d) side = std::max(side, census.hi[d] - census.lo[d]);
  if (!(side > 0)) side = 1;  // no cells anywhere, or a single point mass
  const double scale = lengthScaleFor(side);

  // fully periodic boxes: the density contrast needs every rank's mass (tree/tree.h applyDensityContrast)
  double sums[2] = {fixedOrderSum(cells.mass, cells.n, opt.threads), 0};  // mass, volume of this rank's cells
  if (opt.fullyPeriodic()) {  // for the mean potential, over the cells computed
    for (std::size_t k = 0; k < sys.cellResults(); ++k) {
      const std::size_t i = sys.hasTargets() ? sys.targets[k] : k;
      sums[1] += cells.size[i] * cells.size[i] * cells.size[i];
    }
  }
  const double localVolume = sums[1];
  orAbort(mpiStatus(MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE, MPI_SUM, comm), "MPI_Allreduce", __FILE__,
                    __LINE__));
  // The build can still reject the input (coincident cells show only after the key sort), so the ranks agree once
  // more (one small allreduce) before the first step that would leave another rank waiting.
  {
    Status built = engine.build(cells, opt, scale, sums[0], out.stats);
    if (built.ok() && anyParticles) built = engine.buildParticles(opt, scale);
    double noLo[3] = {INFINITY, INFINITY, INFINITY}, noHi[3] = {-INFINITY, -INFINITY, -INFINITY};
    built = agreeToProceed(built, noLo, noHi, &opt);
    if (!built.ok()) return built;
  }

  auto t = Clock::now();
  RankSummary mine;
  orAbort(engine.summary(mine));
  mine.targetCount = double(sys.cellResults() + sys.probes.n + sys.particles.n);
  // the spline kernel's reach of this rank's particles: the LETs chosen for it cover their softened pairs
  // (let/let.h remoteBoxFor); the lengths scaled as the engine scales them (a power of 2: exact)
  mine.softReach = 0;
  if (opt.softening == SofteningKernel::Spline)
    for (std::size_t i = 0; i < sys.particles.n; ++i)
      mine.softReach = std::max(mine.softReach, kSplineRadius * (sys.particles.softeningOf(i) * scale));
  // the smallest softening of this rank's targets (the particle LETs' Plummer rule): cells and probes have none
  mine.softMin = 0;
  if (sys.cellResults() == 0 && sys.probes.n == 0 && sys.particles.n > 0) {
    mine.softMin = INFINITY;
    for (std::size_t i = 0; i < sys.particles.n; ++i)
      mine.softMin = std::min(mine.softMin, sys.particles.softeningOf(i) * scale);
  }
  mine.particleCount = double(sys.particles.n);
  std::vector<RankSummary> all(size);
  orAbort(mpiStatus(MPI_Allgather(&mine, kRankSummaryDoubles, MPI_DOUBLE, all.data(), kRankSummaryDoubles,
                                  MPI_DOUBLE, comm), "MPI_Allgather", __FILE__, __LINE__));
  ds.secondsAgree = since(t);

  // A LET travels from every rank with cells to every other rank with targets (cells computed, probes or own
  // particles); a particle LET from every rank with particles to every other rank with targets.
  const std::size_t n = cells.n;
  std::vector<bool> expect(size, false), sendTo(size, false), expectP(size, false), sendP(size, false);
  for (int r = 0; r < size; ++r) {
    expect[r] = r != rank && mine.targetCount > 0 && all[r].cellCount > 0;
    sendTo[r] = r != rank && n > 0 && all[r].targetCount > 0;
    expectP[r] = r != rank && mine.targetCount > 0 && all[r].particleCount > 0;
    sendP[r] = r != rank && sys.particles.n > 0 && all[r].targetCount > 0;
  }
  static LetBuffers buffers, particleBuffers;  // kept between solves (under the MPI lock, like the exchange itself)
  LetExchange ex(comm, expect, buffers);
  LetExchange pex(comm, expectP, particleBuffers, LetExchange::kParticleTags);
  orAbort(ex.start());
  orAbort(pex.start());

  // the LETs' destinations, staggered so that no rank is everybody's first
  std::vector<int> dests;
  std::vector<RemoteBox> boxes;
  for (int k = 1; k < size; ++k) {
    const int dst = (rank + k) % size;
    if (!sendTo[dst]) continue;
    dests.push_back(dst);
    boxes.push_back(remoteBoxFor(all[dst]));
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
  // the particle LETs, chosen on the host from the own particles' tree and sent as each is packed
  for (int k = 1; k < size; ++k) {
    const int dst = (rank + k) % size;
    if (!sendP[dst]) continue;
    PackedLet& let = pex.nextOutgoing();
    std::size_t nodes = 0, sent = 0;
    orAbort(engine.takeParticleLet(remoteBoxFor(all[dst]), opt, let, nodes, sent));
    ds.particleLetNodesSent += nodes;
    ds.particleLetParticlesSent += sent;
    orAbort(pex.send(dst, let));
    orAbort(pex.progress());
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
    AG_TRY(pex.progress());
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
  double remoteWalk = ex.now() - w0;
  // the particle LETs, in rank order, merged into one tree and walked by every target of this rank
  w0 = ex.now();
  std::vector<ReceivedLet> plets;
  for (int r = 0; r < size; ++r) {
    if (!expectP[r]) continue;
    plets.emplace_back();
    orAbort(pex.receive(r, plets.back()));
  }
  waited += ex.now() - w0;
  w0 = ex.now();
  if (anyParticles) orAbort(engine.walkReceivedParticles(plets, opt));
  remoteWalk += ex.now() - w0;
  w0 = ex.now();
  orAbort(ex.finish());
  orAbort(pex.finish());
  waited += ex.now() - w0;

  exchangeStatsInto(ex.stats(), walkStart, walkEnd, ds);
  const LetExchangeStats& ps = pex.stats();
  ds.particleBytesSent = ps.bytesSent;
  ds.particleBytesReceived = ps.bytesReceived;
  ds.particleLetsSent = ps.letsSent;
  ds.particleLetsReceived = ps.letsReceived;
  ds.secondsExchangeWait = waited;
  ds.secondsRemoteWalk = remoteWalk;
  out.stats.secondsWalk = ds.secondsLocalWalk + remoteWalk;
  orAbort(sysOut ? engine.finishSystem(opt, out, *sysOut) : engine.finish(opt, out));
  // the volume-weighted mean potential over every rank's cells
  double vPhi = out.stats.meanPotential * localVolume;
  orAbort(mpiStatus(MPI_Allreduce(MPI_IN_PLACE, &vPhi, 1, MPI_DOUBLE, MPI_SUM, comm), "MPI_Allreduce", __FILE__,
                    __LINE__));
  out.stats.meanPotential = sums[1] > 0 ? vPhi / sums[1] : 0.0;
  out.stats.secondsTotal = since(t0);
  if (sysOut) sysOut->stats = out.stats;
  return Status::success();
}

/// distributedImpl under amrgrav's MPI lock; anything thrown after the agreement ends the job.
Status distributedGuarded(RankEngine& engine, const SystemView& sys, const SolveOptions& opt, SolveResult& out,
                          SystemResult* sysOut) {
  std::lock_guard<std::mutex> lock(mpiLock());
  try {
    return distributedImpl(engine, sys, opt, out, sysOut);
  } catch (const std::bad_alloc&) {
    abortMpiWorld("host memory exhausted during the distributed solve");
  } catch (const std::exception& e) {
    abortMpiWorld(std::string("distributed solve: ") + e.what());
  }
}

}  // namespace
#endif

Status solveDistributed(const RankEngineFactory& makeEngine, const CellsView& cells, const SolveOptions& opt,
                        SolveResult& out) {
#if defined(AMRGRAV_HAVE_MPI)
  if (mpiWorld().size > 1) {
    std::unique_ptr<RankEngine> engine;
    const Status made = makeEngine(engine);
    if (!made.ok()) return failDistributedSolve(made);  // takes part in the agreement with the error: no rank waits
    if (!engine) return failDistributedSolve(Status::error(ErrorCode::Internal, "distributed solve: no rank engine"));
    SystemView sys;
    sys.cells = cells;
    return distributedGuarded(*engine, sys, opt, out, nullptr);
  }
#endif
  (void)makeEngine;
  (void)cells;
  (void)opt;
  (void)out;
  return Status::error(ErrorCode::Internal, "solveDistributed needs an MPI world of more than one rank (api/ solves "
                                            "a world of one rank on its backends)");
}

Status solveDistributedSystem(const RankEngineFactory& makeEngine, const SystemView& system, const SolveOptions& opt,
                              SystemResult& out) {
#if defined(AMRGRAV_HAVE_MPI)
  if (mpiWorld().size > 1) {
    std::unique_ptr<RankEngine> engine;
    const Status made = makeEngine(engine);
    if (!made.ok()) return failDistributedSolve(made);
    if (!engine) return failDistributedSolve(Status::error(ErrorCode::Internal, "distributed solve: no rank engine"));
    SolveResult cells;
    const ResultTargets cellsInto = out.cells.into, probesInto = out.probes.into, particlesInto = out.particles.into;
    out = SystemResult{};
    out.cells.into = cellsInto;
    out.probes.into = probesInto;
    out.particles.into = particlesInto;
    return distributedGuarded(*engine, system, opt, cells, &out);
  }
#endif
  (void)makeEngine;
  (void)system;
  (void)opt;
  (void)out;
  return Status::error(ErrorCode::Internal, "solveDistributedSystem needs an MPI world of more than one rank");
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
