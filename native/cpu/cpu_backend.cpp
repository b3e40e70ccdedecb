/// \file cpu_backend.cpp
/// \brief The CPU backend: the reference implementation of a solve (keys, sort, build, moments, groups, walk).
#include <chrono>
#include <exception>
#include <new>

#include "core/backend.h"
#include "ewald/walk_setup.h"
#include "tree/tree.h"
#include "core/validate.h"
#include "cpu/cpu_walk.h"
#include "cpu/finish.h"
#include "core/fixed_sum.h"
#include "core/thread_pool.h"

namespace amrgrav {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

class CpuBackend final : public Backend {
 public:
  const char* name() const override { return "cpu"; }

  Status solve(const CellsView& cells, const SolveOptions& opt, SolveResult& out) override {
    return guarded([&] { return solveImpl(cells, opt, out, false); });
  }
  Status direct(const CellsView& cells, const SolveOptions& opt, SolveResult& out) override {
    return guarded([&] { return solveImpl(cells, opt, out, true); });
  }

 private:
  template <class F>
  static Status guarded(F&& f) {
    try {
      return f();
    } catch (const std::bad_alloc&) {
      return Status::error(ErrorCode::OutOfMemory, "host memory exhausted during the CPU solve");
    } catch (const std::exception& e) {
      return Status::error(ErrorCode::Internal, std::string("CPU backend: ") + e.what());
    }
  }

  static Status solveImpl(const CellsView& cells, const SolveOptions& opt, SolveResult& out, bool direct) {
    Status st = validateOptions(opt);
    if (!st.ok()) return st;
    st = validateCells(cells, opt);
    if (!st.ok()) return st;
    if (direct && !(st = validateDirectOptions(opt)).ok()) return st;
    const ResultTargets into = out.into;
    out = SolveResult{};
    out.into = into;
    const int threads = resolveThreadCount(opt.threads);
    out.stats.threads = threads;
    const auto t0 = Clock::now();

    SortedCells sorted;
    std::vector<std::uint64_t> keys;
    RootCube root = chooseRootCube(cells, opt);
    st = sortCellsByKey(cells, root, sorted, keys);
    if (!st.ok()) return st;
    out.stats.secondsKeys = since(t0);
    if (!direct && opt.fullyPeriodic() && opt.densityContrast) {
      out.stats.meanDensity = applyDensityContrast(sorted, opt, fixedOrderSum(cells.mass, cells.n, threads));
      out.stats.densityContrast = true;
    }

    const std::size_t n = cells.n;
    std::vector<double> phi(n, 0.0), g[3];
    if (opt.accelerations) for (auto& v : g) v.assign(n, 0.0);
    WalkOutput wo{phi.data(), opt.accelerations ? g[0].data() : nullptr, opt.accelerations ? g[1].data() : nullptr,
                  opt.accelerations ? g[2].data() : nullptr};

    if (direct) {
      const auto tw = Clock::now();
      directAll(sorted, opt.accelerations, threads, wo);
      out.stats.secondsWalk = since(tw);
    } else {
      auto tb = Clock::now();
      Octree tree;
      st = buildOctree(keys, root, opt.leafSize, tree);
      if (!st.ok()) return st;
      out.stats.secondsBuild = since(tb);
      tb = Clock::now();
      computeMoments(sorted, opt, tree);
      out.stats.secondsMoments = since(tb);
      out.stats.nodes = tree.nodeCount();
      for (std::size_t i = 0; i < tree.nodeCount(); ++i) out.stats.leaves += tree.isLeaf(i) ? 1 : 0;
      out.stats.treeDepth = tree.depth;
      tb = Clock::now();
      EwaldWalk ewald;
      if (opt.anyPeriodic()) {
        st = prepareEwaldTable(opt, sorted.scale, threads, ewald, out.stats);
        if (!st.ok()) return st;
        ewald.nodeS = nodeSecondMoments(sorted, tree);
      }
      tb = Clock::now();
      const Groups groups = makeGroups(sorted, opt.groupSize);
      out.stats.groups = groups.size();
      if (n > 0) walkAllGroups(tree, sorted, groups, opt, threads, wo, opt.anyPeriodic() ? &ewald : nullptr);
      out.stats.secondsWalk = since(tb);
    }
    out.stats.approxInteractions = wo.approx;
    out.stats.directInteractions = wo.direct;
    finishSolve(sorted, opt, phi, opt.accelerations ? g : nullptr, out);
    out.stats.secondsTotal = since(t0);
    return Status::success();
  }
};

}  // namespace

std::unique_ptr<Backend> makeCpuBackend() { return std::make_unique<CpuBackend>(); }

}  // namespace amrgrav
