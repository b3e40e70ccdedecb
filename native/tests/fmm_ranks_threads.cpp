/// \file fmm_ranks_threads.cpp
/// \brief amrgrav_fmm_ranks_threads: the distributed FMM (cpu/fmm_ranks.h) with the CPU's evaluation of each rank's
/// own lists (makeCpuFmmRankLocal, fmm/rank_local.h), ranks as threads (tools/thread_ranks.h), against the CPU
/// backend's one-process FMM of all the cells: the same pairs, so the potential and accelerations agree to the sums'
/// order (1e-12 of their largest), isolated and fully periodic, a uniform grid and a random AMR-like mesh cut in
/// slabs, scattered at random, and with a rank without cells; each rank sends a LET to every other rank with cells.
/// The GPU's evaluation is checked the same way by the parity subject fmm-ranks. An evaluator that makes its own lists
/// (fmm::RankLocal::makesLists, as a GPU rank walks them on its device) gets none from the driver and gives the plain
/// CPU ranks' results bit for bit, with the same interaction counts. CTest (label cpu).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/backend.h"
#include "cpu/fmm_ranks.h"
#include "fmm/interaction_lists.h"
#include "tests/check_report.h"
#include "tests/fmm_test_meshes.h"
#include "tools/thread_ranks.h"

using namespace amrgrav;
using namespace amrgrav::tests;

namespace {

SolveOptions fmmOptions(bool periodic) {
  SolveOptions o;
  o.method = SolveMethod::Fmm;
  o.G = 1;
  o.threads = 1;
  o.accelerations = true;
  o.selfPotential = SelfPotential::None;
  o.hasBox = true;
  for (int d = 0; d < 3; ++d) {
    o.boxLo[d] = 0;
    o.boxHi[d] = 1;
    o.periodic[d] = periodic;
  }
  return o;
}

/// The CPU's evaluation behind an evaluator that makes its own lists (makesLists), as a GPU rank does on its device:
/// the driver must hand it lists holding their period alone; it walks them on the host (the same lists) and counts
/// them into `lists` as the GPU rank does.
class ListMakingRankLocal final : public fmm::RankLocal {
 public:
  const char* name() const override { return "cpu"; }
  Status open(const SolveOptions& o) override { return cpu_->open(o); }
  bool makesLists(const SolveOptions&) const override { return true; }
  Status local(fmm::FmmTree& tree, fmm::FmmLists& lists, const SortedCells& sorted, const SolveOptions& opt,
               int threads, fmm::FmmOutput out, const std::function<Status()>& progress) override {
    if (!lists.m2lSource.empty() || !lists.m2lStart.empty() || lists.directedM2L != 0 || lists.directedP2P != 0)
      return Status::error(ErrorCode::Internal, "the driver built lists for an evaluator that makes its own");
    const double period[3] = {lists.period[0], lists.period[1], lists.period[2]};
    const bool periodic = period[0] > 0 || period[1] > 0 || period[2] > 0;
    fmm::buildInteractionLists(tree, opt.fmmTolerance, threads, lists, periodic ? period : nullptr);
    return cpu_->local(tree, lists, sorted, opt, threads, out, progress);
  }
  Status finish(fmm::FmmTree& tree, const SortedCells& sorted, int threads, fmm::FmmOutput out,
                SolveStats& st) override {
    return cpu_->finish(tree, sorted, threads, out, st);
  }

 private:
  std::unique_ptr<fmm::RankLocal> cpu_ = makeCpuFmmRankLocal();
};

bool sameBits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

/// max |a - b| / max |b| of the potentials, and of the accelerations as vectors.
void diffs(const SolveResult& a, const SolveResult& b, double& pot, double& acc) {
  double d = 0, s = 0, da = 0, sa = 0;
  for (std::size_t i = 0; i < b.potential.size(); ++i) {
    d = std::max(d, std::fabs(a.potential[i] - b.potential[i]));
    s = std::max(s, std::fabs(b.potential[i]));
    da = std::max(da, std::hypot(a.ax[i] - b.ax[i], a.ay[i] - b.ay[i], a.az[i] - b.az[i]));
    sa = std::max(sa, std::hypot(b.ax[i], b.ay[i], b.az[i]));
  }
  pot = std::isfinite(d) ? d / s : INFINITY;
  acc = std::isfinite(da) ? da / sa : INFINITY;
}

/// Cell i's rank: slabs of the cells' order (weights), every cell at random, or slabs with rank 1 empty.
std::vector<int> split(const Cells& c, int ranks, const std::string& how) {
  std::vector<int> owner(c.size());
  std::mt19937_64 rng(17);
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (how == "scattered") owner[i] = int(rng() % std::uint64_t(ranks));
    else if (how == "empty-rank") owner[i] = i < c.size() / 2 ? 0 : 2;  // rank 1 of 3 without cells
    else owner[i] = int(i * std::size_t(ranks) / c.size());
  }
  return owner;
}

void runCase(const std::string& name, const Cells& cells, bool periodic, int ranks, const std::string& how) {
  const SolveOptions opt = fmmOptions(periodic);
  SolveResult one;
  const Status s1 = makeCpuBackend()->solve(cells.view(), opt, one);
  const std::vector<int> owner = split(cells, ranks, how);
  SolveResult got;
  std::vector<SolveStats> stats;
  const Status sn = tools::solveOnThreadRanks(cells, owner, ranks, opt, [](int) { return makeCpuFmmRankLocal(); },
                                              got, stats);
  const std::string label = name + (periodic ? "-periodic-" : "-isolated-") + how + "-" + std::to_string(ranks);
  if (!s1.ok() || !sn.ok()) {
    check(label, false, "solve failed: " + (s1.ok() ? sn.message : s1.message));
    return;
  }
  double pot = 0, acc = 0;
  diffs(got, one, pot, acc);
  // a LET from every rank with cells to every other rank with cells; the backend's name on every rank
  std::vector<std::size_t> cellsOf(static_cast<std::size_t>(ranks), 0);
  for (int r : owner) ++cellsOf[std::size_t(r)];
  bool lets = true;
  for (int r = 0; r < ranks; ++r) {
    std::size_t others = 0;
    for (int q = 0; q < ranks; ++q) others += q != r && cellsOf[std::size_t(q)] > 0 ? 1 : 0;
    const DistributedStats& d = stats[std::size_t(r)].distributed;
    const std::size_t want = cellsOf[std::size_t(r)] > 0 ? others : 0;
    lets = lets && d.letsSent == want && d.letsReceived == want && std::string(d.backend) == "cpu";
  }
  char detail[160];
  std::snprintf(detail, sizeof detail, "%zu cells: potential %.2e, accelerations %.2e of the largest vs one process; "
                "LETs %s", cells.size(), pot, acc, lets ? "to and from every rank with cells" : "MISSING");
  check(label, pot < 1e-12 && acc < 1e-12 && lets, detail);

  // the same ranks with an evaluator that makes its own lists: the plain ranks' bits and counts
  SolveResult made;
  std::vector<SolveStats> madeStats;
  const Status sm = tools::solveOnThreadRanks(
      cells, owner, ranks, opt, [](int) { return std::make_unique<ListMakingRankLocal>(); }, made, madeStats);
  bool same = sm.ok() && sameBits(made.potential, got.potential) && sameBits(made.ax, got.ax) &&
              sameBits(made.ay, got.ay) && sameBits(made.az, got.az);
  for (int r = 0; r < ranks && same; ++r)
    same = madeStats[std::size_t(r)].approxInteractions == stats[std::size_t(r)].approxInteractions &&
           madeStats[std::size_t(r)].directInteractions == stats[std::size_t(r)].directInteractions;
  check(label + "-makes-lists", same,
        sm.ok() ? (same ? "the plain ranks' results bit for bit, the same interaction counts"
                        : "DIFFERS from the plain ranks (results or counts)")
                : "solve failed: " + sm.message);
}

}  // namespace

int main() {
  const Cells grid = uniformGrid(16, 5);
  const Cells amr = randomAmr(9);
  // lopsided: the mesh's cells in x < 0.3 and every 40th beyond, so that sparse octants end in leaves above level 2
  // and the coarse field of the root's 4^3 cubes sets the periodic scale (the rule one process and N ranks share)
  Cells lopsided;
  for (std::size_t i = 0; i < amr.size(); ++i)
    if (amr.x[i] < 0.3 || i % 40 == 0) lopsided.push(amr.x[i], amr.y[i], amr.z[i], amr.m[i], amr.h[i]);
  runCase("lopsided", lopsided, true, 3, "scattered");
  for (bool periodic : {false, true}) {
    runCase("grid16", grid, periodic, 2, "slabs");
    runCase("grid16", grid, periodic, 3, "scattered");
    runCase("amr", amr, periodic, 3, "slabs");
    runCase("amr", amr, periodic, 2, "scattered");
    runCase("amr", amr, periodic, 3, "empty-rank");
  }
  std::printf("%d checks, %d failed\n", gChecks, gFailed);
  return gFailed == 0 ? 0 : 1;
}
