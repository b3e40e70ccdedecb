/// \file cpu_system.cpp
/// \brief The CPU system solve (cpu_system.h). Sequence: checks; keys, sort, density contrast, build, moments, the
/// Ewald table and the groups as in cpu_backend.cpp; the cells' walk over every group, or over the groups that hold
/// targets (each group's sums depend on the group alone, so those cells get the full solve's bits); the probes
/// sorted on the same keys (tree/system_points.h), grouped like cells, and walked against the cells' tree as a
/// further set of targets (no self pair); scaling and scatter of each kind into its own order. Particles (issue #18,
/// core/system.h): their own tree (tree/particle_tree.h) on the cells' length scale; the cells and the probes walk it
/// after the cells' tree (accumulating), the particles walk both trees (cpu/soft_walk.h), and each particle's own
/// pair (m/eps, the kernel at 0) is taken out at the finish. Direct: every pair with the pair softening.
#include "cpu/cpu_system.h"

#include <chrono>

#include "core/fixed_sum.h"
#include "core/thread_pool.h"
#include "core/validate.h"
#include "cpu/cpu_walk.h"
#include "tree/finish.h"
#include "cpu/soft_walk.h"
#include "ewald/walk_setup.h"
#include "physics/softening_k.h"
#include "tree/particle_tree.h"
#include "tree/source_tree.h"
#include "tree/system_points.h"
#include "tree/tree.h"

namespace amrgrav {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// Sums of n targets in sorted order (unscaled), as the walks write them.
struct Sums {
  std::vector<double> phi, g[3];
  Sums(std::size_t n, bool accel) : phi(n, 0.0) {
    if (accel) for (auto& v : g) v.assign(n, 0.0);
  }
  WalkOutput output(bool accel) {
    return WalkOutput{phi.data(), accel ? g[0].data() : nullptr, accel ? g[1].data() : nullptr,
                      accel ? g[2].data() : nullptr};
  }
};

}  // namespace

Status cpuSolveSystem(const SystemView& sys, const SolveOptions& opt, bool direct, SystemResult& out) {
  AG_TRY(validateOptions(opt));
  if (direct) AG_TRY(validateDirectOptions(opt));
  AG_TRY(validateSystem(sys, opt));
  AG_TRY(validateParticles(sys.particles, opt));
  const ResultTargets cellsInto = out.cells.into, probesInto = out.probes.into, particlesInto = out.particles.into;
  out = SystemResult{};
  out.cells.into = cellsInto;
  out.probes.into = probesInto;
  out.particles.into = particlesInto;
  const int threads = resolveThreadCount(opt.threads);
  const bool accel = opt.accelerations;
  const bool plummer = opt.softening == SofteningKernel::Plummer;
  out.stats.threads = threads;
  const auto t0 = Clock::now();

  const CellsView& cells = sys.cells;
  RootCube root = chooseRootCube(cells, opt);
  SortedCells sorted;
  std::vector<std::uint64_t> keys;
  AG_TRY(sortCellsByKey(cells, root, sorted, keys, 0, false, threads));
  out.stats.secondsKeys = since(t0);
  if (!direct && opt.fullyPeriodic() && opt.densityContrast) {
    out.stats.meanDensity = applyDensityContrast(sorted, opt, fixedOrderSum(cells.mass, cells.n, threads), threads);
    out.stats.densityContrast = true;
  }

  // the particles' tree, on the cells' length scale (their own when there are no cells; the probes then take it)
  const std::size_t npart = sys.particles.n;
  auto tpart = Clock::now();
  double secondsParticles = 0;
  ParticleTree pt;
  SourceTree psrc;
  if (npart > 0) {
    AG_TRY(buildParticleTree(sys.particles, opt, cells.n > 0 ? sorted.scale : 0.0, pt));
    psrc = pt.source();
    out.system.particles = npart;
    out.system.particleGroups = direct ? 0 : pt.groups.size();
    out.system.particleNodes = direct ? 0 : pt.tree.nodeCount();
  }
  secondsParticles += since(tpart);
  WalkOutput softCounts{nullptr, nullptr, nullptr, nullptr};  // the softened passes' interactions

  const std::size_t n = cells.n;
  Sums cs(n, accel);
  WalkOutput wo = cs.output(accel);
  Octree tree;
  EwaldWalk ewald;
  SourceTree src;
  std::vector<double> cellS;  // the cells' nodes' second moments for the Plummer walk of the particles
  std::vector<std::uint32_t> sortedOf;
  std::size_t walkedGroups = 0;  // cell groups walked (direct: none)
  Groups all, walked;
  const Groups* cellGroups = nullptr;
  if (direct) {
    const auto tw = Clock::now();
    directAll(sorted, accel, threads, wo);
    out.stats.secondsWalk = since(tw);
  } else {
    auto tb = Clock::now();
    AG_TRY(buildOctree(keys, root, opt.leafSize, tree));
    out.stats.secondsBuild = since(tb);
    tb = Clock::now();
    computeMoments(sorted, opt, tree);
    out.stats.secondsMoments = since(tb);
    out.stats.nodes = tree.nodeCount();
    for (std::size_t i = 0; i < tree.nodeCount(); ++i) out.stats.leaves += tree.isLeaf(i) ? 1 : 0;
    out.stats.treeDepth = tree.depth;
    if (opt.anyPeriodic()) {
      AG_TRY(prepareEwaldTable(opt, sorted.scale, threads, ewald, out.stats));
      ewald.nodeS = nodeSecondMoments(sorted, tree);
    }
    src = sourceTreeOf(tree, sorted);
    if (opt.anyPeriodic()) src.secondMoment = ewald.nodeS.data();
    if (npart > 0 && plummer && !opt.anyPeriodic()) {  // the Plummer expansion's trace term (physics/softening_k.h)
      cellS = nodeSecondMoments(sorted, tree);
      src.secondMoment = cellS.data();
    }
    tb = Clock::now();
    all = makeGroups(sorted, keys, opt.cellGroupSize());
    // a subset: its groups only (walked exactly as in the full walk)
    if (sys.hasTargets()) sortedOf = sortedPositions(sorted);
    if (sys.hasTargets()) walked = pickGroups(all, groupsHoldingTargets(all, sortedOf, sys.targets, sys.targetCount));
    cellGroups = sys.hasTargets() ? &walked : &all;
    out.stats.groups = all.size();  // every group of the cells; system.targetGroups: those walked
    walkedGroups = cellGroups->size();
    walkGroups(src, sorted, *cellGroups, 0, cellGroups->size(), opt, threads, WalkPass{false, true}, wo,
               opt.anyPeriodic() ? &ewald : nullptr);
    out.stats.secondsWalk = since(tb);
  }
  out.stats.approxInteractions = wo.approx;
  out.stats.directInteractions = wo.direct;

  // ---- the cells' targets against the particles (accumulated before the finish)
  if (npart > 0 && n > 0) {
    tpart = Clock::now();
    WalkOutput sw = cs.output(accel);
    if (direct) {
      directSoft(pt.sorted, pt.eps.data(), sorted, nullptr, opt.softening, accel, false, threads, sw);
    } else {
      walkSoftGroups(psrc, sorted, nullptr, *cellGroups, nullptr, nullptr, opt, threads, WalkPass{true, false}, sw);
    }
    softCounts.approx += sw.approx;
    softCounts.direct += sw.direct;
    secondsParticles += since(tpart);
  }
  out.system.targets = sys.cellResults();
  out.system.targetGroups = walkedGroups;
  if (sys.hasTargets()) {
    if (direct) sortedOf = sortedPositions(sorted);
    out.stats.meanPotential = finishTargets(sorted, opt, cs.phi, accel ? cs.g : nullptr, sys.targets,
                                            sys.targetCount, sortedOf, out.cells);
  } else {
    SolveResult r;  // finishSolve's scatter, into the cells' arrays
    r.into = out.cells.targets(n, accel);
    finishSolve(sorted, opt, cs.phi, accel ? cs.g : nullptr, r);
    out.stats.meanPotential = r.stats.meanPotential;
  }

  // ---- the particles: against the cells' tree, then their own (or every cell and every particle, direct)
  if (npart > 0) {
    tpart = Clock::now();
    Sums qs(npart, accel);
    WalkOutput qo = qs.output(accel);
    if (direct) {
      if (n > 0) directSoft(sorted, nullptr, pt.sorted, pt.eps.data(), opt.softening, accel, false, threads, qo);
      directSoft(pt.sorted, pt.eps.data(), pt.sorted, pt.eps.data(), opt.softening, accel, true, threads, qo);
    } else {
      walkSoftGroups(src, pt.sorted, pt.eps.data(), pt.groups, pt.groupEpsMin.data(), pt.groupEpsMax.data(), opt,
                     threads, WalkPass{true, false}, qo);
      walkSoftGroups(psrc, pt.sorted, pt.eps.data(), pt.groups, pt.groupEpsMin.data(), pt.groupEpsMax.data(), opt,
                     threads, WalkPass{true, true}, qo);
      // each particle's own pair: the kernel at 0, m / eps (scaled), exactly as the walk added it
      for (std::size_t i = 0; i < npart; ++i) {
        double self = 0;
        softPairPotential(0.0, 0.0, 0.0, pt.sorted.mass[i], pt.eps[i], opt.softening, self);
        qs.phi[i] -= self;
      }
    }
    softCounts.approx += qo.approx;
    softCounts.direct += qo.direct;
    finishPoints(pt.sorted, opt, qs.phi, accel ? qs.g : nullptr, out.particles);
    secondsParticles += since(tpart);
  }

  // ---- the probes: their own groups against the cells' tree (or every cell, direct), then the particles'
  const auto tp = Clock::now();
  const std::size_t np = sys.probes.n;
  SortedCells probes;
  Groups pg;
  // without cells the probes sort on the particles' cube and scale (the units of the particles' tree)
  const bool onParticles = n == 0 && npart > 0;
  sortProbes(sys.probes, onParticles ? pt.root : root, onParticles ? pt.sorted.scale : sorted.scale, opt, probes, pg);
  Sums ps(np, accel);
  WalkOutput pwo = ps.output(accel);
  if (np > 0 && n > 0) {
    if (direct) {
      directAt(sorted, probes, accel, threads, pwo);
    } else {
      out.system.probeGroups = pg.size();
      // no pair is a self pair; the probes' own tree is the cells' (hoisted periodic corrections are valid)
      walkGroups(src, probes, pg, 0, pg.size(), opt, threads, WalkPass{false, false, true}, pwo,
                 opt.anyPeriodic() ? &ewald : nullptr);
    }
  }
  if (np > 0 && npart > 0) {
    tpart = Clock::now();
    WalkOutput sw = ps.output(accel);
    if (direct) {
      directSoft(pt.sorted, pt.eps.data(), probes, nullptr, opt.softening, accel, false, threads, sw);
    } else {
      out.system.probeGroups = pg.size();
      walkSoftGroups(psrc, probes, nullptr, pg, nullptr, nullptr, opt, threads, WalkPass{true, false}, sw);
    }
    softCounts.approx += sw.approx;
    softCounts.direct += sw.direct;
    secondsParticles += since(tpart);
  }
  finishPoints(probes, opt, ps.phi, accel ? ps.g : nullptr, out.probes);
  out.system.probes = np;
  out.system.probeApprox = pwo.approx;
  out.system.probeDirect = pwo.direct;
  out.system.secondsProbes = since(tp);
  out.system.particleApprox = softCounts.approx;
  out.system.particleDirect = softCounts.direct;
  out.system.secondsParticles = secondsParticles;
  out.stats.secondsTotal = since(t0);
  return Status::success();
}

}  // namespace amrgrav
