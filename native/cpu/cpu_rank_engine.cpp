/// \file cpu_rank_engine.cpp
/// \brief The CPU rank of a distributed solve (cpu_rank_engine.h): the tree, walks and finish of the CPU backend.
/// Particles (issue #18, core/system.h): each rank builds the tree of its own particles only; this rank's cells and
/// probes walk it after their cell trees, and its own particles, as targets in groups of that tree, walk the local
/// cells' tree, their own tree (their own pair taken out at the finish, as cpu/cpu_system.cpp does) and the
/// received cell LETs; then everything walks the other ranks' particles as received particle LETs (chosen here for
/// the other ranks by let/let.h essentialParticlesFor), all with the softened walk (cpu/soft_walk.h).
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
#include "tree/finish.h"
#include "cpu/soft_walk.h"
#include "ewald/walk_setup.h"
#include "let/let.h"
#include "physics/softening_k.h"
#include "tree/particle_tree.h"
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

  /// Probes, targets and particles: checked now, sorted and grouped after the cells' tree (build, buildParticles).
  Status openSystem(const SystemView& system, const SolveOptions& opt) override {
    AG_TRY(validateProbes(system.probes, opt));
    if (system.hasTargets()) AG_TRY(validateTargets(system.targets, system.targetCount, system.cells.n));
    AG_TRY(validateParticles(system.particles, opt));
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
    groups_ = makeGroups(cells_, keys, opt.cellGroupSize());
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

  bool takesParticles() const override { return true; }

  /// This rank's own particles: their tree (sources, and targets in its groups).
  Status buildParticles(const SolveOptions& opt, double scale) override {
    const auto t = Clock::now();
    own_ = ParticleTree{};
    if (system_.particles.n > 0) AG_TRY(buildParticleTree(system_.particles, opt, scale, own_));
    hasParticles_ = true;
    // the Plummer expansion's trace term needs the cells' nodes' second moments, here and in the LETs sent
    if (opt.softening == SofteningKernel::Plummer && !periodic_) cellS_ = nodeSecondMoments(cells_, tree_);
    // without cells of its own, the probes group on the own particles' cube (as a single process without cells)
    if (cells_.x.empty() && system_.probes.n > 0 && !own_.sorted.x.empty())
      sortProbes(system_.probes, own_.root, scale, opt, probes_, probeGroups_);
    const std::size_t n = own_.sorted.x.size();
    ownPhi_.assign(n, 0.0);
    for (auto& v : ownG_) v.assign(opt.accelerations ? n : 0, 0.0);
    owo_ = WalkOutput{ownPhi_.data(), opt.accelerations ? ownG_[0].data() : nullptr,
                      opt.accelerations ? ownG_[1].data() : nullptr, opt.accelerations ? ownG_[2].data() : nullptr};
    secondsParticles_ += since(t);
    return Status::success();
  }

  Status takeParticleLet(const RemoteBox& box, const SolveOptions& opt, PackedLet& out, std::size_t& nodes,
                         std::size_t& particles) override {
    const auto t = Clock::now();
    const SourceTree src = own_.source();
    essentialParticlesFor(src, box, opt.softening, sel_);
    packLet(src, sel_, out);
    nodes = sel_.node.size();
    particles = sel_.cellCount;
    secondsParticles_ += since(t);
    return Status::success();
  }

  /// The other ranks' particles: their LETs as one tree, walked by the cells, the probes and the own particles.
  Status walkReceivedParticles(const std::vector<ReceivedLet>& lets, const SolveOptions& opt) override {
    if (lets.empty()) return Status::success();
    const auto t = Clock::now();
    std::vector<SourceTree> views;
    for (const ReceivedLet& l : lets) views.push_back(l.view);
    AG_TRY(mergeLets(views.data(), views.size(), particleForest_));
    const SourceTree src = particleForest_.view();
    walkCellsAndProbesSoft(src, opt);
    if (!own_.sorted.x.empty())
      walkSoftGroups(src, own_.sorted, own_.eps.data(), own_.groups, own_.groupEpsMin.data(),
                     own_.groupEpsMax.data(), opt, threads_, WalkPass{true, false}, owo_);
    secondsParticles_ += since(t);
    return Status::success();
  }

  /// The box of centres and the group widths cover the probes' and the own particles' groups: the LETs this rank
  /// receives are chosen for every group it walks.
  Status summary(RankSummary& out) override {
    out = summariseCells(cells_);
    groupHalfWidths(groups_, out.groupHalfWidth);
    double pw[3];
    groupHalfWidths(probeGroups_, pw);
    for (int d = 0; d < 3; ++d) out.groupHalfWidth[d] = std::max(out.groupHalfWidth[d], pw[d]);
    if (!own_.sorted.x.empty()) {
      groupHalfWidths(own_.groups, pw);
      for (int d = 0; d < 3; ++d) out.groupHalfWidth[d] = std::max(out.groupHalfWidth[d], pw[d]);
    }
    for (const SortedCells* pts : {&probes_, &own_.sorted}) {
      const std::vector<double>* p[3] = {&pts->x, &pts->y, &pts->z};
      for (int d = 0; d < 3; ++d)
        for (const double v : *p[d]) {
          out.centreLo[d] = std::min(out.centreLo[d], v);
          out.centreHi[d] = std::max(out.centreHi[d], v);
        }
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
    AG_TRY(progress());
    if (hasParticles_) AG_TRY(walkParticles(local, opt, progress));
    return Status::success();
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
      if (!own_.sorted.x.empty()) {  // the own particles: the LETs' cells have softening 0 (pair eps = theirs)
        const auto t = Clock::now();
        walkSoftGroups(forest_.view(), own_.sorted, own_.eps.data(), own_.groups, own_.groupEpsMin.data(),
                       own_.groupEpsMax.data(), opt, threads_, WalkPass{true, false}, owo_);
        secondsParticles_ += since(t);
      }
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
    if (hasParticles_) {
      const auto t = Clock::now();
      // each own particle's own pair: the kernel at 0, m / eps (scaled), exactly as its walk of the global tree added
      for (std::size_t i = 0; i < ownPhi_.size(); ++i) {
        double self = 0;
        softPairPotential(0.0, 0.0, 0.0, own_.sorted.mass[i], own_.eps[i], opt.softening, self);
        ownPhi_[i] -= self;
      }
      finishPoints(own_.sorted, opt, ownPhi_, accel ? ownG_ : nullptr, out.particles);
      secondsParticles_ += since(t);
      out.system.particles = ownPhi_.size();
      out.system.particleGroups = own_.groups.size();
      out.system.particleNodes = own_.tree.nodeCount();
      out.system.particleApprox = softCounts_.approx + owo_.approx;
      out.system.particleDirect = softCounts_.direct + owo_.direct;
      out.system.secondsParticles = secondsParticles_;
    }
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

  /// The local tree as a source (periodic, or particles under the Plummer kernel: with its nodes' second moments;
  /// signed sources: their dipoles).
  SourceTree source() const {
    SourceTree t = sourceTreeOf(tree_, cells_);
    if (periodic_) t.secondMoment = ewald_.nodeS.data();
    else if (!cellS_.empty()) t.secondMoment = cellS_.data();
    return t;
  }

  /// The cells (the walked groups) and the probes against a particles' tree (accumulated into their sums; the
  /// interactions counted apart, in softCounts_).
  void walkCellsAndProbesSoft(const SourceTree& src, const SolveOptions& opt) {
    WalkOutput cw = wo_;  // the cells' sums, with counts of their own
    cw.approx = cw.direct = 0;
    walkSoftGroups(src, cells_, nullptr, walkedGroups(), nullptr, nullptr, opt, threads_, WalkPass{true, false}, cw);
    WalkOutput pw = pwo_;
    pw.approx = pw.direct = 0;
    walkSoftGroups(src, probes_, nullptr, probeGroups_, nullptr, nullptr, opt, threads_, WalkPass{true, false}, pw);
    softCounts_.approx += cw.approx + pw.approx;
    softCounts_.direct += cw.direct + pw.direct;
  }

  /// The softened walks of the local work (issue #18), after the cells' and the probes' walks of the local tree:
  /// the cells and the probes against the own particles' tree (accumulated), the own particles against the local
  /// cells' tree and their own tree.
  Status walkParticles(const SourceTree& local, const SolveOptions& opt, const std::function<Status()>& progress) {
    if (own_.sorted.x.empty()) return Status::success();
    const auto t = Clock::now();
    const SourceTree psrc = own_.source();
    walkCellsAndProbesSoft(psrc, opt);
    AG_TRY(progress());
    {
      const double* eps = own_.eps.data();
      walkSoftGroups(local, own_.sorted, eps, own_.groups, own_.groupEpsMin.data(), own_.groupEpsMax.data(), opt,
                     threads_, WalkPass{true, false}, owo_);
      walkSoftGroups(psrc, own_.sorted, eps, own_.groups, own_.groupEpsMin.data(), own_.groupEpsMax.data(), opt,
                     threads_, WalkPass{true, true}, owo_);
    }
    secondsParticles_ += since(t);
    return progress();
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
  bool hasParticles_ = false;         ///< some rank has particles: the particle LETs are walked
  ParticleTree own_;                  ///< this rank's own particles: sources, and targets in its groups
  LetForest particleForest_;          ///< the received particle LETs, merged
  std::vector<double> cellS_;         ///< the cells' nodes' second moments (Plummer kernel with particles)
  std::vector<double> ownPhi_, ownG_[3];
  WalkOutput owo_{nullptr, nullptr, nullptr, nullptr};
  WalkOutput softCounts_{nullptr, nullptr, nullptr, nullptr};  ///< cells' and probes' walks of the particle tree
  double secondsParticles_ = 0;
};

}  // namespace

std::unique_ptr<RankEngine> makeCpuRankEngine() { return std::make_unique<CpuRankEngine>(); }

}  // namespace amrgrav
