/// \file cpu_backend.cpp
/// \brief The CPU backend: the reference implementation of a solve (keys, sort, build, moments, groups, walk).
#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <new>

#include "core/backend.h"
#include "ewald/walk_setup.h"
#include "tree/tree.h"
#include "core/validate.h"
#include "cpu/cpu_system.h"
#include "cpu/cpu_walk.h"
#include "tree/finish.h"
#include "fmm/fmm_solve.h"
#include "core/fixed_sum.h"
#include "core/thread_pool.h"

namespace amrgrav {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// What a tree solve keeps for the next call on an unchanged mesh (a block solve's reuse): the sorted cells
/// (order, scaled positions and sizes; the masses are gathered again), the root cube, the tree's topology (its
/// moments are recomputed) and the groups.
struct KeptTree {
  SortedCells sorted;
  RootCube root;
  Octree tree;
  Groups groups;
};

class CpuBackend final : public Backend {
 public:
  const char* name() const override { return "cpu"; }

  Status solve(const CellsView& cells, const SolveOptions& opt, SolveResult& out) override {
    return guarded([&] { return solveImpl(cells, opt, out, false, nullptr, false); });
  }
  Status direct(const CellsView& cells, const SolveOptions& opt, SolveResult& out) override {
    return guarded([&] { return solveImpl(cells, opt, out, true, nullptr, false); });
  }

  Status solveSystem(const SystemView& system, const SolveOptions& opt, bool direct, SystemResult& out) override {
    return guarded([&] { return cpuSolveSystem(system, opt, direct, out); });
  }

  /// The cells generated from the blocks, then the tree solve; when the mesh is unchanged since the last block
  /// solve on this backend (BlockTreeKey), the kept keys' order, tree topology and groups serve again and only the
  /// masses, moments, walk and results are computed.
  Status solveBlocks(const BlocksView& v, const BlockOutputs& out, const SolveOptions& opt,
                     SolveResult& result) override {
    std::lock_guard<std::mutex> lock(keptMu_);
    return guarded([&]() -> Status {
      // the FMM builds its own tree every call: it neither reuses nor leaves a tree for the next call
      const bool tree = opt.method == SolveMethod::Tree;
      const bool reuse = tree && !v.deviceData && key_.matches(v, opt);
      key_.valid = false;  // until this solve succeeds
      if (!kept_) kept_ = std::make_unique<KeptTree>();
      Status st = solveBlocksViaCells(v, out, opt, result, [&](const CellsView& c, SolveResult& r) {
        return solveImpl(c, opt, r, false, kept_.get(), reuse);
      });
      if (st.ok() && v.cells() > 0 && tree) key_.assign(v, opt);
      if (st.ok()) result.stats.treeReused = reuse && v.cells() > 0;
      return st;
    });
  }

 private:
  std::mutex keptMu_;
  std::unique_ptr<KeptTree> kept_;
  BlockTreeKey key_;

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

  /// keep: where the sorted cells, tree and groups live (null: this call's own); reuse: they hold those of the same
  /// cells in the same order already (only the masses differ).
  static Status solveImpl(const CellsView& cells, const SolveOptions& opt, SolveResult& out, bool direct,
                          KeptTree* keep, bool reuse) {
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

    KeptTree local;
    KeptTree& K = keep ? *keep : local;
    SortedCells& sorted = K.sorted;
    std::vector<std::uint64_t> keys;
    if (reuse) {
      // the same cells in the same order: only the masses are new
      if (sorted.order.size() != cells.n) return Status::error(ErrorCode::Internal, "CPU backend: kept tree of another size");
      parallelFor(cells.n, std::size_t(1) << 15, threads, [&](std::size_t b, std::size_t e, int) {
        for (std::size_t i = b; i < e; ++i) sorted.mass[i] = cells.mass[sorted.order[i]];
      });
    } else {
      K.root = chooseRootCube(cells, opt);
      st = sortCellsByKey(cells, K.root, sorted, keys, 0, false, threads);
      if (!st.ok()) return st;
    }
    const RootCube root = K.root;
    out.stats.secondsKeys = since(t0);
    if (!direct && opt.fullyPeriodic() && opt.densityContrast) {
      out.stats.meanDensity = applyDensityContrast(sorted, opt, fixedOrderSum(cells.mass, cells.n, threads), threads);
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
    } else if (opt.method == SolveMethod::Fmm) {
      if (reuse) return Status::error(ErrorCode::Internal, "CPU backend: the FMM cannot reuse a kept tree");
      st = fmm::solveFmm(keys, root, sorted, opt, threads, fmm::FmmOutput{wo.phi, wo.gx, wo.gy, wo.gz}, out.stats);
      if (!st.ok()) return st;
      wo.approx = out.stats.approxInteractions;
      wo.direct = out.stats.directInteractions;
    } else {
      auto tb = Clock::now();
      Octree& tree = K.tree;
      if (!reuse) {
        st = buildOctree(keys, root, opt.leafSize, tree);
        if (!st.ok()) return st;
      }
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
      if (!reuse) K.groups = makeGroups(sorted, keys, opt.cellGroupSize());
      const Groups& groups = K.groups;
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
