/// \file fmm_solve.cpp
/// \brief The FMM's phases in order (see fmm_solve.h).
#include "fmm/fmm_solve.h"

#include <chrono>

#include "core/thread_pool.h"
#include "fmm/expansions.h"
#include "fmm/far_images.h"
#include "fmm/fmm_tree.h"
#include "fmm/interaction_lists.h"

namespace amrgrav {
namespace fmm {
namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
}  // namespace

/// L2L from the root down, a level at a time (a node's L is complete once its parent's level is done), and L2P at
/// the leaves; the nodes of a level in parallel, each writing only its children or its own cells.
void passLocalsDown(const SortedCells& c, int threads, FmmTree& t, FmmOutput out) {
  const MultiIndex& mi = MultiIndex::of(t.order);
  for (std::size_t lev = 0; lev + 1 < t.levelBegin.size(); ++lev) {
    const std::size_t b = t.levelBegin[lev], e = t.levelBegin[lev + 1];
    parallelFor(e - b, 8, threads, [&](std::size_t lb, std::size_t le, int) {
      for (std::size_t i = b + lb; i < b + le; ++i) localsOfNode(mi, c, i, t, out);
    });
  }
}

Status solveFmm(const std::vector<std::uint64_t>& keys, const RootCube& root, const SortedCells& cells,
                const SolveOptions& opt, int threads, FmmOutput out, SolveStats& stats) {
  if (cells.order.empty()) return Status::success();
  auto t0 = Clock::now();
  FmmTree tree;
  Status st = buildFmmTree(keys, root, cells, opt, threads, tree);
  if (!st.ok()) return st;
  stats.secondsMoments = since(t0);  // the topology and the upward pass (centres, radii, multipoles)
  stats.nodes = tree.nodeCount();
  stats.leaves = 0;
  for (std::size_t i = 0; i < tree.nodeCount(); ++i) stats.leaves += tree.isLeaf(i) ? 1 : 0;
  stats.treeDepth = tree.topo.depth;
  t0 = Clock::now();
  // periodic axes: the box's sides in scaled lengths, 0 along isolated axes (the near images are walked, the far
  // ones added at the frontier cubes: far_images.h)
  const bool periodic = opt.anyPeriodic();
  double period[3];
  for (int d = 0; d < 3; ++d) period[d] = opt.periodic[d] ? (opt.boxHi[d] - opt.boxLo[d]) * cells.scale : 0.0;
  FmmLists lists;
  buildInteractionLists(tree, opt.fmmTolerance, threads, lists, periodic ? period : nullptr);
  evaluateP2P(lists, tree, cells, threads, out);
  evaluateM2L(lists, threads, tree);
  if (periodic && !(st = addFarImages(cells, period, threads, tree, out)).ok()) return st;
  passLocalsDown(cells, threads, tree, out);
  stats.secondsWalk = since(t0);
  stats.approxInteractions = lists.directedM2L;
  stats.directInteractions = lists.directedP2P;
  return Status::success();
}

}  // namespace fmm
}  // namespace amrgrav
