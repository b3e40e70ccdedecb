/// \file fmm_dual_walk.cpp
/// \brief amrgrav_fmm_dual_walk: the breadth-first dual walk that the CUDA backend runs (fmm/dual_walk_k.h), in its
/// host emulation (fmm/dual_walk.h), against the CPU's depth-first walk (fmm/interaction_lists.h
/// buildInteractionLists): every array of the lists equal (the M2L CSR's starts, sources and shifts, the P2P pairs
/// and shifts) and the same counts, on uniform grids (whole leaves and not), a random AMR-like mesh (random
/// refinement, six levels of cell size) and clustered points (a Plummer sphere), at tolerance 0 and the default
/// 2e-4, orders 3..7 (the error test's power), and a smaller opening angle; with accelerations (the MAC's test 3,
/// physics/fmm_mac_k.h: FmmTree::accelLimit > 0) at the default fmmAccelTolerance on every mesh, and with
/// fmmAccelTolerance 0 the potential's lists exactly; the MAC's test 2b (a leaf's target side) decides pairs on the
/// random AMR mesh. Independently of the CPU's walk, on the
/// smaller trees: the lists cover every pair of leaves exactly once (an M2L between ancestors, one way each, or a
/// P2P, or the leaf with itself), so no interaction is missing or counted twice. Periodic boxes (the walk with image
/// shifts and the signed sources' test, fmm/dual_walk_k.h; the trees with dipole terms, as the CPU backend makes
/// them): fully periodic on the density contrast (uniform 16^3, 24^3 and 32^3, the random AMR mesh), a sheet
/// periodic in x, y and a line periodic in z, orders 4 and 7, against buildInteractionLists(..., period) array for
/// array, shifts included. CTest (label cpu).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "core/types.h"
#include "fmm/dual_walk.h"
#include "fmm/fmm_tree.h"
#include "fmm/interaction_lists.h"
#include "physics/fmm_mac_k.h"
#include "tests/check_report.h"
#include "tests/fmm_test_meshes.h"
#include "tools/host_cells.h"
#include "tools/plummer.h"
#include "tree/tree.h"

using namespace amrgrav;
using namespace amrgrav::fmm;
using namespace amrgrav::tests;

namespace {

struct Tree {
  FmmTree tree;
  Status status = Status::success();
};

/// accelTolerance < 0: no accelerations (the potential's lists); else accelerations with that fmmAccelTolerance.
Tree buildTree(const Cells& cells, int order, bool points, double theta = SolveOptions{}.fmmTheta,
               double accelTolerance = -1) {
  SolveOptions opt;
  opt.method = SolveMethod::Fmm;
  opt.fmmOrder = order;
  opt.fmmTheta = theta;
  opt.accelerations = accelTolerance >= 0;
  if (opt.accelerations) opt.fmmAccelTolerance = accelTolerance;
  if (points) opt.selfPotential = SelfPotential::None;
  HostFmmTree h = hostFmmTree(cells, opt, points, 2);
  Tree t;
  t.status = h.status;
  t.tree = std::move(h.tree);
  return t;
}

/// Every pair of leaves (X, Y) covered exactly once: by one M2L from an ancestor-or-self of Y into one of X, by a
/// P2P of X and Y, or X == Y. Returns the number of pairs covered other than once.
std::size_t coverageErrors(const FmmTree& t, const FmmLists& l) {
  const Octree& o = t.topo;
  const std::size_t nodes = o.nodeCount();
  std::vector<std::uint32_t> parent(nodes, UINT32_MAX), leaves;
  for (std::size_t i = 0; i < nodes; ++i) {
    for (std::uint32_t c = 0; c < o.childCount[i]; ++c) parent[o.childBegin[i] + c] = std::uint32_t(i);
    if (o.isLeaf(i)) leaves.push_back(std::uint32_t(i));
  }
  std::vector<std::uint32_t> leafIndex(nodes, UINT32_MAX);
  for (std::size_t k = 0; k < leaves.size(); ++k) leafIndex[leaves[k]] = std::uint32_t(k);
  const std::size_t nl = leaves.size();
  std::vector<std::uint32_t> count(nl * nl, 0);
  // the leaves under each node
  std::vector<std::vector<std::uint32_t>> under(nodes);
  for (std::uint32_t k = 0; k < nl; ++k)
    for (std::uint32_t p = leaves[k]; p != UINT32_MAX; p = parent[p]) under[p].push_back(k);
  for (std::size_t a = 0; a < nodes; ++a)
    for (std::uint32_t q = l.m2lStart[a]; q < l.m2lStart[a + 1]; ++q)
      for (const std::uint32_t x : under[a])
        for (const std::uint32_t y : under[l.m2lSource[q]]) ++count[x * nl + y];
  for (std::size_t q = 0; q < l.p2pA.size(); ++q) {
    const std::uint32_t x = leafIndex[l.p2pA[q]], y = leafIndex[l.p2pB[q]];
    ++count[x * nl + y];
    ++count[y * nl + x];
  }
  for (std::size_t k = 0; k < nl; ++k) ++count[k * nl + k];
  std::size_t bad = 0;
  for (const std::uint32_t c : count) bad += c != 1 ? 1 : 0;
  return bad;
}

void compareCase(const std::string& name, const FmmTree& tree, double tolerance, bool coverage) {
  FmmLists cpu, emu;
  buildInteractionLists(tree, tolerance, 2, cpu);
  DualWalkStats ws;
  emulateDeviceLists(tree, tolerance, emu, &ws);
  std::string diff = listsDifference(cpu, emu);
  // a walk that found nothing would agree with a broken one: both kinds of entry must be there
  if (cpu.m2lSource.empty() || cpu.p2pA.empty()) diff += "no M2L or no P2P entries; ";
  check(name + "-lists", diff.empty(),
        (diff.empty() ? std::string("every array equal: ") : diff) + std::to_string(tree.nodeCount()) + " nodes, " +
            std::to_string(cpu.m2lSource.size()) + " directed M2L, " + std::to_string(cpu.p2pA.size()) +
            " P2P pairs, " + std::to_string(cpu.directedP2P) + " directed cell pairs; " + std::to_string(ws.rounds) +
            " rounds, largest frontier " + std::to_string(ws.maxFrontier) + ", " + std::to_string(ws.pairs) +
            " pairs decided");
  if (coverage) {
    const std::size_t bad = coverageErrors(tree, emu);
    check(name + "-coverage", bad == 0, std::to_string(bad) + " leaf pairs covered other than once");
  }
}

void runMesh(const std::string& name, const Cells& cells, bool points, const std::vector<int>& orders, bool coverage) {
  for (const int p : orders) {
    const Tree t = buildTree(cells, p, points);
    if (!t.status.ok()) {
      check(name + "-p" + std::to_string(p) + "-setup", false, t.status.message);
      continue;
    }
    for (const double tol : {0.0, 2e-4})
      compareCase(name + "-p" + std::to_string(p) + "-tol" + (tol > 0 ? "2e-4" : "0"), t.tree, tol,
                  coverage && p == orders.front());
  }
  // accelerations (test 3) at the default tolerance: the highest order (the default), and 5 where it is walked on
  // meshes large enough to keep M2L at order 5 (on 16^3 every pair then ends in P2P)
  const double accel = SolveOptions{}.fmmAccelTolerance;
  std::vector<int> accelOrders{orders.back()};
  if (std::find(orders.begin(), orders.end(), 5) != orders.end() && cells.size() > 20000) accelOrders.push_back(5);
  for (const int p : accelOrders) {
    const Tree t = buildTree(cells, p, points, SolveOptions{}.fmmTheta, accel);
    if (!t.status.ok()) {
      check(name + "-accel-p" + std::to_string(p) + "-setup", false, t.status.message);
      continue;
    }
    check(name + "-accel-p" + std::to_string(p) + "-limit", t.tree.accelLimit > 0,
          "accelerations set the MAC's acceleration limit");
    for (const double tol : {0.0, 2e-4})
      compareCase(name + "-accel-p" + std::to_string(p) + "-tol" + (tol > 0 ? "2e-4" : "0"), t.tree, tol, coverage);
  }
}

/// The rule's reach: with fmmAccelTolerance 0, accelerations leave the potential's lists array for array (and the
/// limit 0); at the default it is a different, longer near field (the rule is applied, on both walks alike).
void potentialListsKept(const std::string& name, const Cells& cells) {
  const Tree plain = buildTree(cells, 7, false), off = buildTree(cells, 7, false, SolveOptions{}.fmmTheta, 0.0),
             on = buildTree(cells, 7, false, SolveOptions{}.fmmTheta, SolveOptions{}.fmmAccelTolerance);
  if (!plain.status.ok() || !off.status.ok() || !on.status.ok()) {
    check(name + "-rule-setup", false, "tree build failed");
    return;
  }
  const double tol = SolveOptions{}.fmmTolerance;
  FmmLists a, b, c, d;
  buildInteractionLists(plain.tree, tol, 2, a);
  buildInteractionLists(off.tree, tol, 2, b);
  emulateDeviceLists(off.tree, tol, c);
  const std::string diff = listsDifference(a, b) + listsDifference(a, c);
  check(name + "-accel-off-lists", plain.tree.accelLimit == 0 && off.tree.accelLimit == 0 && diff.empty(),
        diff.empty() ? "accelerations with fmmAccelTolerance 0: the potential's lists, CPU and device walks" : diff);
  buildInteractionLists(on.tree, tol, 2, d);
  check(name + "-accel-on-lists", d.directedP2P > a.directedP2P,
        "with the rule: " + std::to_string(d.directedP2P) + " directed cell pairs against the potential's " +
            std::to_string(a.directedP2P));
}

/// A periodic box's tree as the CPU backend makes it (cpu_backend.cpp: the unit box, the sort, the density contrast
/// of a fully periodic box, buildFmmTree with dipole terms), its lists by both walks with the near images' shifts.
void periodicCase(const std::string& name, const Cells& cells, bool px, bool py, bool pz, int order) {
  const SolveOptions opt = periodicFmmBox(px, py, pz, order);
  const int threads = 2;
  const HostFmmTree h = hostFmmTree(cells, opt, false, threads);
  const FmmTree& tree = h.tree;
  if (!h.status.ok() || !tree.dipoles) {
    check(name + "-setup", false, h.status.ok() ? "the periodic tree has no dipole terms" : h.status.message);
    return;
  }
  double period[3];
  scaledPeriod(opt, h.sorted, period);
  for (const double tol : {opt.fmmTolerance, 0.0}) {
    FmmLists cpu, emu;
    buildInteractionLists(tree, tol, threads, cpu, period);
    DualWalkStats ws;
    emulateDeviceLists(tree, tol, emu, &ws, period);
    std::string diff = listsDifference(cpu, emu);
    for (int d = 0; d < 3; ++d)
      if (cpu.period[d] != emu.period[d]) diff += "period; ";
    // both kinds of entry, and shifted ones of each (the near images walked)
    std::size_t shiftedM2L = 0, shiftedP2P = 0;
    for (const std::uint8_t sh : cpu.m2lShift) shiftedM2L += sh != kNoShift ? 1 : 0;
    for (const std::uint8_t sh : cpu.p2pShift) shiftedP2P += sh != kNoShift ? 1 : 0;
    if (cpu.m2lSource.empty() || cpu.p2pA.empty()) diff += "no M2L or no P2P entries; ";
    if (shiftedP2P == 0 || (tol > 0 && shiftedM2L == 0)) diff += "no shifted entries; ";
    check(name + "-p" + std::to_string(order) + "-tol" + (tol > 0 ? "default" : "0") + "-lists", diff.empty(),
          (diff.empty() ? std::string("every array equal: ") : diff) + std::to_string(tree.nodeCount()) +
              " nodes, " + std::to_string(cpu.m2lSource.size()) + " directed M2L (" + std::to_string(shiftedM2L) +
              " shifted), " + std::to_string(cpu.p2pA.size()) + " P2P pairs (" + std::to_string(shiftedP2P) +
              " shifted), " + std::to_string(cpu.directedP2P) + " directed cell pairs; " +
              std::to_string(ws.rounds) + " rounds, largest frontier " + std::to_string(ws.maxFrontier));
  }
}

/// The MAC's test 2b (a leaf's target side, physics/fmm_mac_k.h) decides pairs on this tree, so the walks above
/// compared it: some leaf pairs of the P2P list would pass tests 1-3 alone (the rule with neither node a leaf).
void targetSideBites(const std::string& name, const Cells& cells) {
  const Tree t = buildTree(cells, SolveOptions{}.fmmOrder, false);
  if (!t.status.ok()) {
    check(name + "-test2b-setup", false, t.status.message);
    return;
  }
  const FmmTree& f = t.tree;
  const double tol = SolveOptions{}.fmmTolerance;
  FmmLists l;
  buildInteractionLists(f, tol, 2, l);
  std::size_t bites = 0;
  for (std::size_t k = 0; k < l.p2pA.size(); ++k) {
    const std::uint32_t a = l.p2pA[k], b = l.p2pB[k];
    bites += fmmPairAccepts(&f.centre[3 * a], f.radius[a], f.critical[a], f.absMass[a], f.lowBound[a], &f.centre[3 * b],
                            f.radius[b], f.critical[b], f.absMass[b], f.lowBound[b], f.order, tol, f.accelLimit, false,
                            false);
  }
  check(name + "-test2b-decides", bites > 0,
        std::to_string(bites) + " of " + std::to_string(l.p2pA.size()) + " P2P pairs are test 2b's");
}

}  // namespace

int main() {
  const std::vector<int> all{3, 4, 5, 6, 7};
  runMesh("uniform16", uniformGrid(16, 1), false, all, true);
  runMesh("uniform32", uniformGrid(32, 2), false, all, false);
  runMesh("uniform24", uniformGrid(24, 3), false, {3, 7}, true);  // leaves not whole 4^3 blocks
  const Cells amr = randomAmr(4);
  std::printf("# random AMR-like mesh: %zu cells\n", amr.size());
  runMesh("amr", amr, false, all, true);
  runMesh("plummer", plummer(30000), true, all, false);
  runMesh("plummer-small", plummer(4000), true, {4}, true);
  potentialListsKept("uniform32", uniformGrid(32, 2));
  potentialListsKept("amr", amr);
  targetSideBites("amr", amr);
  {  // a smaller opening angle: deeper walks, more P2P
    const Tree t = buildTree(uniformGrid(32, 5), 5, false, 0.4);
    if (t.status.ok())
      compareCase("uniform32-theta0.4-p5-tol2e-4", t.tree, 2e-4, false);
    else
      check("uniform32-theta0.4-setup", false, t.status.message);
  }
  // periodic boxes: fully (the contrast), sheets and lines, uniform grids (whole 4^3 leaves and not) and AMR
  for (const int p : {4, 7}) {
    periodicCase("periodic-uniform16", uniformGrid(16, 11), true, true, true, p);
    periodicCase("periodic-uniform32", uniformGrid(32, 12), true, true, true, p);
    periodicCase("periodic-amr", amr, true, true, true, p);
    periodicCase("sheet-xy-uniform32", uniformGrid(32, 13), true, true, false, p);
    periodicCase("sheet-xy-amr", amr, true, true, false, p);
    periodicCase("line-z-uniform32", uniformGrid(32, 14), false, false, true, p);
    periodicCase("line-z-amr", amr, false, false, true, p);
  }
  periodicCase("periodic-uniform24", uniformGrid(24, 15), true, true, true, 7);
  std::printf("%d checks, %d failed\n", gChecks, gFailed);
  return gFailed == 0 ? 0 : 1;
}
