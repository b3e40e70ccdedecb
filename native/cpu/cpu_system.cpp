/// \file cpu_system.cpp
/// \brief The CPU system solve (cpu_system.h). Sequence: checks; keys, sort, density contrast, build, moments, the
/// Ewald table and the groups as in cpu_backend.cpp; the cells' walk over every group, or over the groups that hold
/// targets (each group's sums depend on the group alone, so those cells get the full solve's bits); the probes
/// sorted on the same keys (tree/system_points.h), grouped like cells, and walked against the cells' tree as a
/// further set of targets (no self pair); scaling and scatter of each kind into its own order.
#include "cpu/cpu_system.h"

#include <chrono>

#include "core/fixed_sum.h"
#include "core/thread_pool.h"
#include "core/validate.h"
#include "cpu/cpu_walk.h"
#include "cpu/finish.h"
#include "ewald/walk_setup.h"
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
  const ResultTargets cellsInto = out.cells.into, probesInto = out.probes.into;
  out = SystemResult{};
  out.cells.into = cellsInto;
  out.probes.into = probesInto;
  const int threads = resolveThreadCount(opt.threads);
  const bool accel = opt.accelerations;
  out.stats.threads = threads;
  const auto t0 = Clock::now();

  const CellsView& cells = sys.cells;
  RootCube root = chooseRootCube(cells, opt);
  SortedCells sorted;
  std::vector<std::uint64_t> keys;
  AG_TRY(sortCellsByKey(cells, root, sorted, keys));
  out.stats.secondsKeys = since(t0);
  if (!direct && opt.fullyPeriodic() && opt.densityContrast) {
    out.stats.meanDensity = applyDensityContrast(sorted, opt, fixedOrderSum(cells.mass, cells.n, threads));
    out.stats.densityContrast = true;
  }

  const std::size_t n = cells.n;
  Sums cs(n, accel);
  WalkOutput wo = cs.output(accel);
  Octree tree;
  EwaldWalk ewald;
  SourceTree src;
  std::vector<std::uint32_t> sortedOf;
  std::size_t walkedGroups = 0;  // cell groups walked (direct: none)
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
    tb = Clock::now();
    const Groups all = makeGroups(sorted, keys, opt.groupSize);
    // a subset: its groups only (walked exactly as in the full walk)
    if (sys.hasTargets()) sortedOf = sortedPositions(sorted);
    const Groups walked = sys.hasTargets()
                              ? pickGroups(all, groupsHoldingTargets(all, sortedOf, sys.targets, sys.targetCount))
                              : Groups{};
    const Groups& groups = sys.hasTargets() ? walked : all;
    out.stats.groups = all.size();  // every group of the cells; system.targetGroups: those walked
    walkedGroups = groups.size();
    walkGroups(src, sorted, groups, 0, groups.size(), opt, threads, WalkPass{false, true}, wo,
               opt.anyPeriodic() ? &ewald : nullptr);
    out.stats.secondsWalk = since(tb);
  }
  out.stats.approxInteractions = wo.approx;
  out.stats.directInteractions = wo.direct;
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

  // ---- the probes: their own groups against the cells' tree (or every cell, direct)
  const auto tp = Clock::now();
  const std::size_t np = sys.probes.n;
  SortedCells probes;
  Groups pg;
  sortProbes(sys.probes, root, sorted.scale, opt, probes, pg);
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
  finishPoints(probes, opt, ps.phi, accel ? ps.g : nullptr, out.probes);
  out.system.probes = np;
  out.system.probeApprox = pwo.approx;
  out.system.probeDirect = pwo.direct;
  out.system.secondsProbes = since(tp);
  out.stats.secondsTotal = since(t0);
  return Status::success();
}

}  // namespace amrgrav
