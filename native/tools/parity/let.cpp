/// \file let.cpp
/// \brief Subject `let`: locally essential trees on the device. The LETs a GPU rank chooses and packs
/// (cuda/kernel_let.cu) against the host's choice and packing over the same tree copied down, byte for byte, in
/// isolated, fully periodic and x-y periodic boxes; the rank's summary against the host's; a subset of the rank's
/// target cells with a received LET, bitwise the rank's full solve.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/fixed_sum.h"
#include "ewald/walk_setup.h"
#include "let/let.h"
#include "tools/parity/harness.h"
#include "tree/tree.h"

namespace amrgrav::parity {

namespace {

/// The LETs a GPU rank chooses and packs on the device (cuda/kernel_let.cu) against the host's essentialNodesFor
/// (periodic: essentialNodesForPeriodic over the host's own Ewald table view) and packLet over the same tree copied
/// down: the same bytes, for remote boxes beside, across, inside and far from the cells (periodic: inside the box);
/// and the rank's summary against summariseCells over the copied cells.
void letCase(Context& cx, const std::string& name, const Cells& cells, const SolveOptions& options) {
  CudaBackend& gpu = *cx.gpu;
  const SolveOptions& o = options;
  const bool periodic = o.anyPeriodic();
  double lo[3], hi[3];
  Status st = gpu.rankOpen(cells.view(), o, lo, hi);
  double side = 0;
  for (int d = 0; d < 3; ++d) side = std::max(side, hi[d] - lo[d]);
  SolveStats stats;
  const double total = fixedOrderSum(cells.view().mass, cells.view().n, 0);  // as the driver's, one rank
  if (st.ok()) st = gpu.rankBuild(cells.view(), o, lengthScaleFor(side), total, stats);
  RankSummary rs{};
  if (st.ok()) st = gpu.rankSummary(rs);
  std::vector<RemoteBox> boxes;
  if (st.ok()) {
    auto shifted = [&](double fx, double fy, double fz, double shrink) {
      RemoteBox b;
      const double f[3] = {fx, fy, fz};
      for (int d = 0; d < 3; ++d) {
        const double w = rs.centreHi[d] - rs.centreLo[d], c = 0.5 * (rs.centreLo[d] + rs.centreHi[d]) + f[d] * w;
        b.lo[d] = c - 0.5 * shrink * w;
        b.hi[d] = c + 0.5 * shrink * w;
      }
      return b;
    };
    if (periodic) {  // boxes of centres inside the periodic box: a half, a quarter slab, a corner, a sliver; the
      // first two with groups of half-width 1/64 of the box, the others of any size
      boxes = {shifted(0.25, 0, 0, 0.5), shifted(0, 0.375, 0, 0.25), shifted(0.4, 0.4, 0.4, 0.2),
               shifted(0, 0, -0.45, 0.05)};
      for (int k = 0; k < 2; ++k)
        for (int d = 0; d < 3; ++d) boxes[k].groupHalfWidth[d] = (rs.centreHi[d] - rs.centreLo[d]) / 64;
    }
    else
      boxes = {shifted(1.02, 0, 0, 1), shifted(0.5, 0.5, 0, 1), shifted(0.3, -0.2, 0.1, 0.25), shifted(100, 0, 0, 1),
               shifted(0, 0, -0.7, 0.05)};
  }
  EwaldWalk ew;  // the host's table view (periods and reach in the solve's scaled units), as a CPU rank's
  if (st.ok() && periodic) st = prepareEwaldTable(o, lengthScaleFor(side), 4, ew, stats);
  std::vector<std::size_t> nodes(boxes.size()), letCells(boxes.size());
  if (st.ok()) st = gpu.rankChooseLets(boxes.data(), boxes.size(), nodes.data(), letCells.data());
  if (st.ok()) st = gpu.rankStartLocalWalk(o);
  std::vector<PackedLet> device(boxes.size());
  for (std::size_t k = 0; k < boxes.size() && st.ok(); ++k) st = gpu.rankDownloadLet(k, device[k]);
  HostTree host;
  double elo[3], ehi[3];
  if (st.ok()) st = exportDeviceTree(gpu, host, elo, ehi);
  if (st.ok()) st = gpu.rankFinishLocalWalk(o, stats);
  SolveResult r;
  if (st.ok()) st = gpu.rankFinish(o, r);
  if (!st.ok()) {
    check(cx, "let-on-device-" + name, false, st.message);
    return;
  }
  std::string detail;
  bool ok = true;
  const SourceTree tree = host.view();
  for (std::size_t k = 0; k < boxes.size(); ++k) {
    LetSelection sel;
    if (periodic) essentialNodesForPeriodic(tree, boxes[k].lo, boxes[k].hi, boxes[k].groupHalfWidth, ew.view, sel);
    else essentialNodesFor(tree, boxes[k].lo, boxes[k].hi, sel);
    PackedLet ref;
    packLet(tree, sel, ref);
    SourceTree view;
    const bool same = ref.words == device[k].words && nodes[k] == sel.node.size() && letCells[k] == sel.cellCount;
    const bool valid = viewPackedLet(device[k].words.data(), device[k].bytes(), view).ok();
    ok = ok && same && valid;
    detail += (k ? "; " : "") + std::to_string(sel.node.size()) + " nodes " + std::to_string(sel.cellCount) + " cells " +
              (same ? "same bytes" : "DIFFER") + (valid ? "" : " (invalid)");
  }
  const RankSummary hs = summariseCells(host.x.data(), host.y.data(), host.z.data(), host.cellMass.data(), nullptr,
                                        host.x.size());
  bool box = hs.cellCount == rs.cellCount;
  {  // the group half-widths as the CPU's groups give them (tree/groups_k.h over the CPU's own sort of the cells)
    SortedCells sc;
    std::vector<std::uint64_t> keys;
    RootCube root = chooseRootCube(cells.view(), o);
    double w[3] = {-1, -1, -1};
    if (sortCellsByKey(cells.view(), root, sc, keys, lengthScaleFor(side)).ok())
      groupHalfWidths(makeGroups(sc, keys, o.cellGroupSize()), w);
    for (int d = 0; d < 3; ++d) box = box && w[d] == rs.groupHalfWidth[d];
  }
  double comErr = 0;
  for (int d = 0; d < 3; ++d) {
    box = box && hs.centreLo[d] == rs.centreLo[d] && hs.centreHi[d] == rs.centreHi[d];
    comErr = std::max(comErr, std::fabs(hs.com[d] - rs.com[d]) / (rs.centreHi[0] - rs.centreLo[0]));
  }
  // (signed sources: the summary's mass and centre are the device's sums of the masses as given, the host copy's
  // cells hold the contrast; neither is used by the exchange)
  // the total mass is a sum of n rounded terms in another order on each side: up to ~n eps apart (1.9e-12 on the
  // 100k-point Plummer sphere), 1e-12 on smaller inputs
  const double massTol = std::max(1e-12, 2.2e-16 * double(cells.size()));
  const bool summaryOk = box && (o.signedSources() || (comErr < 1e-12 && std::fabs(hs.mass - rs.mass) <= massTol * hs.mass));
  check(cx, "let-on-device-" + name, ok && summaryOk,
        detail + " | summary: centre box, group widths " + (box ? "same" : "DIFFER") + ", com " + num(comErr) + ", mass " +
            num(std::fabs(hs.mass - rs.mass) / hs.mass));
}

/// A GPU rank's subset of target cells (issue #18, rank_phase.h rankStartLocalWalk) with a received LET: the cells
/// split in two at the median x, this rank holding the lower half and receiving the upper half's LET (chosen and
/// packed on the host, as a CPU rank sends it). The rank walks its tree and the LET for every other cell of its
/// lowest quarter in y (backwards) on a fresh backend whose small walk queue forces reruns (the subset's self terms restored over all groups), then
/// in full on the shared backend, then the subset again there: the second subset bitwise the full solve at its
/// cells (potential and accelerations), the first equal to rounding (another ring size: another traversal order),
/// both with fewer interactions.
void rankSubsetCase(Context& cx, const std::string& name, const Cells& cells, const SolveOptions& o) {
  std::vector<double> xs = cells.x;
  std::nth_element(xs.begin(), xs.begin() + xs.size() / 2, xs.end());
  const double cut = xs[xs.size() / 2];
  Cells mine, other;
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (std::size_t i = 0; i < cells.size(); ++i) {
    (cells.x[i] < cut ? mine : other).push(cells.x[i], cells.y[i], cells.z[i], cells.m[i], cells.h[i]);
    const double p[3] = {cells.x[i], cells.y[i], cells.z[i]};
    for (int d = 0; d < 3; ++d) {
      lo[d] = std::min(lo[d], p[d] - 0.5 * cells.h[i]);
      hi[d] = std::max(hi[d], p[d] + 0.5 * cells.h[i]);
    }
  }
  double side = 0;
  for (int d = 0; d < 3; ++d) side = std::max(side, hi[d] - lo[d]);
  const double scale = lengthScaleFor(side);  // the driver's: of every rank's cells
  const double total = fixedOrderSum(mine.m.data(), mine.size(), 0) + fixedOrderSum(other.m.data(), other.size(), 0);
  // a compact subset (a region's cells, as a refinement level's), every other one, backwards: fewer groups walked
  std::vector<double> ys = mine.y;
  std::nth_element(ys.begin(), ys.begin() + ys.size() / 4, ys.end());
  const double yCut = ys[ys.size() / 4];
  std::vector<std::uint32_t> targets;
  for (std::size_t i = 0, seen = 0; i < mine.size(); ++i)
    if (mine.y[i] < yCut && seen++ % 2 == 0) targets.push_back(std::uint32_t(i));
  std::reverse(targets.begin(), targets.end());

  // the other rank's tree on the host, as a CPU rank builds it (its own root cube, the global scale)
  SortedCells sorted;
  std::vector<std::uint64_t> keys;
  RootCube root = chooseRootCube(other.view(), o);
  Octree tree;
  Status st = sortCellsByKey(other.view(), root, sorted, keys, scale);
  if (st.ok()) st = buildOctree(keys, root, o.leafSize, tree);
  if (st.ok()) computeMoments(sorted, o, tree);
  PackedLet packed;
  ReceivedLet let;
  bool letMade = false;

  // one rank solve: the steps of cuda_rank_engine.cu with this one LET received
  auto solve = [&](CudaBackend& g, const std::vector<std::uint32_t>* subset, SolveResult& out,
                   SolveStats& stats) -> Status {
    double l[3], h[3];
    AG_TRY(g.rankOpen(mine.view(), o, l, h));
    AG_TRY(g.rankBuild(mine.view(), o, scale, total, stats));
    RankSummary rs;
    AG_TRY(g.rankSummary(rs));
    if (!letMade) {  // chosen for this rank's box of centres and group widths
      const RemoteBox box = remoteBoxFor(rs);
      LetSelection sel;
      essentialNodesFor(sourceTreeOf(tree, sorted), box.lo, box.hi, sel);
      packLet(sourceTreeOf(tree, sorted), sel, packed);
      let.words = packed.words.data();
      let.bytes = packed.bytes();
      AG_TRY(viewPackedLet(let.words, let.bytes, let.view));
      letMade = true;
    }
    AG_TRY(g.rankStartLocalWalk(o, subset ? subset->data() : nullptr, subset ? subset->size() : 0));
    AG_TRY(g.rankFinishLocalWalk(o, stats));
    AG_TRY(g.rankWalkReceived(&let, 1, o, stats));
    return g.rankFinish(o, out);
  };
  std::unique_ptr<CudaBackend> small = makeCudaBackend(cudaOpts(true, 64, true));
  SolveResult subsetSmall, full, subsetShared;
  SolveStats sSmall, sFull, sShared;
  if (st.ok()) st = solve(*small, &targets, subsetSmall, sSmall);
  const int launches = st.ok() ? deviceStats(*small).walkLaunches : 0;
  if (st.ok()) st = solve(*cx.gpu, nullptr, full, sFull);
  if (st.ok()) st = solve(*cx.gpu, &targets, subsetShared, sShared);
  if (!st.ok()) {
    check(cx, "rank-subset-" + name, false, st.message);
    return;
  }
  auto bitwise = [&](const SolveResult& r) {
    if (r.potential.size() != targets.size() || full.potential.size() != mine.size()) return false;
    if (o.accelerations && (r.ax.size() != targets.size() || r.ay.size() != targets.size() || r.az.size() != targets.size()))
      return false;
    for (std::size_t k = 0; k < targets.size(); ++k) {
      const std::size_t i = targets[k];
      if (std::memcmp(&r.potential[k], &full.potential[i], sizeof(double)) != 0) return false;
      if (o.accelerations && (std::memcmp(&r.ax[k], &full.ax[i], sizeof(double)) != 0 ||
                              std::memcmp(&r.ay[k], &full.ay[i], sizeof(double)) != 0 ||
                              std::memcmp(&r.az[k], &full.az[i], sizeof(double)) != 0))
        return false;
    }
    return true;
  };
  // The small queue's reruns end on another ring size than the shared backend's: the traversal turns LIFO when a
  // ring is more than half full (kernel_walk.cu popBatch), so its single-precision sums run in another order.
  // Against the shared backend's full solve it is then equal within the parity tolerance (a lost or doubled self
  // term or pass would be O(1) off); bitwise equality is asked of the subset on the backend of the full solve.
  double smallDiff = -1;  // the largest difference, of max |phi| or of max |g|
  auto close = [&](const SolveResult& r) {
    if (r.potential.size() != targets.size()) return false;
    double scaleP = 0, scaleG = 0, dp = 0, dg = 0;
    for (std::size_t i = 0; i < full.potential.size(); ++i) {
      scaleP = std::max(scaleP, std::fabs(full.potential[i]));
      if (o.accelerations)
        scaleG = std::max({scaleG, std::fabs(full.ax[i]), std::fabs(full.ay[i]), std::fabs(full.az[i])});
    }
    for (std::size_t k = 0; k < targets.size(); ++k) {
      const std::size_t i = targets[k];
      dp = std::max(dp, std::fabs(r.potential[k] - full.potential[i]));
      if (o.accelerations)
        dg = std::max({dg, std::fabs(r.ax[k] - full.ax[i]), std::fabs(r.ay[k] - full.ay[i]),
                       std::fabs(r.az[k] - full.az[i])});
    }
    smallDiff = std::max(dp / scaleP, scaleG > 0 ? dg / scaleG : 0.0);
    return dp <= cx.args.tol * scaleP && dg <= cx.args.tol * scaleG;
  };
  const bool a = close(subsetSmall), b = bitwise(subsetShared);
  const auto work = [](const SolveStats& s) { return s.approxInteractions + s.directInteractions; };
  const bool fewer = work(sSmall) < work(sFull) && work(sShared) == work(sSmall);
  check(cx, "rank-subset-" + name, a && b && fewer,
        std::to_string(targets.size()) + " of " + std::to_string(mine.size()) + " cells, LET of " +
            std::to_string(let.view.cellTotal) + " cells: the full rank solve within tol " + (a ? "yes" : "NO") +
            " (small queue, " + std::to_string(launches) + " walk launches; " + num(smallDiff) + "), bitwise " +
            (b ? "yes" : "NO") + " (same backend); interactions " + std::to_string(work(sSmall)) + " / " +
            std::to_string(work(sShared)) + " of " + std::to_string(work(sFull)));
}

}  // namespace

void runLet(Context& cx) {
  SolveOptions o;
  o.theta = 0.5;
  const Cells& amr = cx.amr();
  letCase(cx, "uniform", cx.uniform(), o);
  letCase(cx, "amr", amr, o);
  letCase(cx, "periodic-uniform", cx.uniform(), periodicBox(o, true, true, true));
  letCase(cx, "sheet-xy-amr", subset(amr, std::min<std::size_t>(amr.size(), 100000)), periodicBox(o, true, true, false));
  SolveOptions points = o;  // issue #18: groups cut at home nodes, so the group half-widths differ from runs of 32
  points.selfPotential = SelfPotential::None;
  letCase(cx, "plummer", cx.plummer(), points);
  SolveOptions accel = o;
  accel.accelerations = true;
  rankSubsetCase(cx, "uniform-accelerations", cx.uniform(), accel);
  rankSubsetCase(cx, "amr", amr, o);
}

}  // namespace amrgrav::parity
