/// \file cpu_rank_engine.cpp
/// \brief The CPU rank of a distributed solve (cpu_rank_engine.h): the tree, walks and finish of the CPU backend.
#include "cpu/cpu_rank_engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#include "core/thread_pool.h"
#include "core/validate.h"
#include "cpu/cpu_walk.h"
#include "cpu/finish.h"
#include "ewald/walk_setup.h"
#include "let/let.h"
#include "tree/system_points.h"
#include "tree/tree.h"

namespace amrgrav {
namespace {

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

  /// Probes and targets: checked now, sorted and grouped after the cells' tree (build).
  Status openSystem(const SystemView& system, const SolveOptions& opt) override {
    AG_TRY(validateProbes(system.probes, opt));
    if (system.hasTargets()) AG_TRY(validateTargets(system.targets, system.targetCount, system.cells.n));
    system_ = system;
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
    groups_ = makeGroups(cells_, keys, opt.groupSize);
    // a subset walks the groups that hold its targets only (tree/system_points.h)
    if (system_.hasTargets()) {
      sortedOf_ = sortedPositions(cells_);
      walked_ = pickGroups(groups_, groupsHoldingTargets(groups_, sortedOf_, system_.targets, system_.targetCount));
    }
    // probes: sorted on this rank's keys, in groups of their own
    sortProbes(system_.probes, root, cells_.scale, opt, probes_, probeGroups_);
    const std::size_t np = system_.probes.n;
    probePhi_.assign(np, 0.0);
    for (auto& v : probeG_) v.assign(opt.accelerations ? np : 0, 0.0);
    pwo_ = WalkOutput{probePhi_.data(), opt.accelerations ? probeG_[0].data() : nullptr,
                      opt.accelerations ? probeG_[1].data() : nullptr, opt.accelerations ? probeG_[2].data() : nullptr};
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

  /// The box of centres and the group widths cover the probes' groups: the LETs this rank receives are chosen for
  /// every group it walks.
  Status summary(RankSummary& out) override {
    out = summariseCells(cells_);
    groupHalfWidths(groups_, out.groupHalfWidth);
    double pw[3];
    groupHalfWidths(probeGroups_, pw);
    for (int d = 0; d < 3; ++d) out.groupHalfWidth[d] = std::max(out.groupHalfWidth[d], pw[d]);
    const std::vector<double>* p[3] = {&probes_.x, &probes_.y, &probes_.z};
    for (int d = 0; d < 3; ++d)
      for (const double v : *p[d]) {
        out.centreLo[d] = std::min(out.centreLo[d], v);
        out.centreHi[d] = std::max(out.centreHi[d], v);
      }
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
    const Groups& groups = walkedGroups();
    const std::size_t ng = groups.size();
    for (std::size_t s = 0; s < kWalkSlices && ng > 0; ++s) {
      walkGroups(local, cells_, groups, ng * s / kWalkSlices, ng * (s + 1) / kWalkSlices, opt, threads_,
                 WalkPass{false, true}, wo_, ewald());
      AG_TRY(progress());
    }
    // the probes: targets only, no self pair
    walkGroups(local, probes_, probeGroups_, 0, probeGroups_.size(), opt, threads_, WalkPass{false, false, true}, pwo_,
               ewald());
    return progress();
  }

  Status walkReceived(const std::vector<ReceivedLet>& lets, const SolveOptions& opt, SolveStats& st) override {
    if (!lets.empty()) {
      std::vector<SourceTree> views;
      for (const ReceivedLet& l : lets) views.push_back(l.view);
      AG_TRY(mergeLets(views.data(), views.size(), forest_));
      const Groups& groups = walkedGroups();
      walkGroups(forest_.view(), cells_, groups, 0, groups.size(), opt, threads_, WalkPass{true, false, false}, wo_,
                 ewald());
      walkGroups(forest_.view(), probes_, probeGroups_, 0, probeGroups_.size(), opt, threads_,
                 WalkPass{true, false, false}, pwo_, ewald());
    }
    st.approxInteractions = wo_.approx;
    st.directInteractions = wo_.direct;
    return Status::success();
  }

  Status finish(const SolveOptions& opt, SolveResult& out) override {
    finishSolve(cells_, opt, phi_, opt.accelerations ? g_ : nullptr, out);
    return Status::success();
  }

  Status finishSystem(const SolveOptions& opt, SolveResult& cells, SystemResult& out) override {
    const bool accel = opt.accelerations;
    if (system_.hasTargets()) {
      cells.stats.meanPotential = finishTargets(cells_, opt, phi_, accel ? g_ : nullptr, system_.targets,
                                                system_.targetCount, sortedOf_, out.cells);
    } else {
      cells.into = out.cells.targets(cells_.order.size(), accel);
      finishSolve(cells_, opt, phi_, accel ? g_ : nullptr, cells);
    }
    finishPoints(probes_, opt, probePhi_, accel ? probeG_ : nullptr, out.probes);
    out.system.targets = system_.cellResults();
    out.system.targetGroups = walkedGroups().size();
    out.system.probes = system_.probes.n;
    out.system.probeGroups = probeGroups_.size();
    out.system.probeApprox = pwo_.approx;
    out.system.probeDirect = pwo_.direct;
    return Status::success();
  }

 private:
  /// The cell groups this rank walks: all, or those holding its targets.
  const Groups& walkedGroups() const { return system_.hasTargets() ? walked_ : groups_; }

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
  SystemView system_;                 ///< a system solve's probes and targets (none: a cell solve)
  std::vector<std::uint32_t> sortedOf_;
  Groups walked_;                     ///< the groups holding the targets
  SortedCells probes_;
  Groups probeGroups_;
  std::vector<double> probePhi_, probeG_[3];
  WalkOutput pwo_{nullptr, nullptr, nullptr, nullptr};
};

}  // namespace

std::unique_ptr<RankEngine> makeCpuRankEngine() { return std::make_unique<CpuRankEngine>(); }

}  // namespace amrgrav
