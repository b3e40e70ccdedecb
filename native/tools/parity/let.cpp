/// \file let.cpp
/// \brief Subject `let`: locally essential trees on the device. The LETs a GPU rank chooses and packs
/// (cuda/kernel_let.cu) against the host's choice and packing over the same tree copied down, byte for byte, in
/// isolated, fully periodic and x-y periodic boxes; the rank's summary against the host's.
#include <algorithm>
#include <cmath>
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
      groupHalfWidths(makeGroups(sc, keys, o.groupSize), w);
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
}

}  // namespace amrgrav::parity
