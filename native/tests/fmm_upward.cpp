/// \file fmm_upward.cpp
/// \brief amrgrav_fmm_upward: the FMM upward pass that the CUDA backend runs (fmm/upward_k.h, cuda/fmm_tree_phase.h),
/// in its host emulation (fmm/upward_emulate.h), against the CPU's buildFmmTree (fmm/fmm_tree.h): every per-node
/// array equal by bits (centres, radii, critical radii, |mass|, lower bounds, multipoles), on uniform grids (whole
/// leaves and not), a random AMR-like mesh (six levels of cell size) and clustered points (a Plummer sphere), orders
/// 3..7. The lists are decided on these arrays, so equal bits here are the CPU's and the GPU's same lists. Each case
/// is run once more with the emulation's leaf sums in reverse order, which must be seen as a difference (the check
/// can fail). CTest (label cpu).
#include <cstdio>
#include <string>
#include <vector>

#include "core/types.h"
#include "fmm/fmm_tree.h"
#include "fmm/upward_emulate.h"
#include "tests/check_report.h"
#include "tests/fmm_test_meshes.h"
#include "tools/host_cells.h"
#include "tree/tree.h"

using namespace amrgrav;
using namespace amrgrav::fmm;
using namespace amrgrav::tests;

namespace {

/// The topology and shape of `t` without its upward pass's arrays.
FmmTree topologyOf(const FmmTree& t) {
  FmmTree e;
  e.topo = t.topo;
  e.order = t.order;
  e.terms = t.terms;
  e.mStride = t.mStride;
  e.levelBegin = t.levelBegin;
  e.dipoles = t.dipoles;
  return e;
}

int gMutationsSeen = 0, gMutations = 0;

void runMesh(const std::string& name, const Cells& cells, bool points, const std::vector<int>& orders) {
  for (const int p : orders) {
    SolveOptions opt;
    opt.method = SolveMethod::Fmm;
    opt.fmmOrder = p;
    if (points) opt.selfPotential = SelfPotential::None;
    const std::string id = name + "-p" + std::to_string(p);
    HostFmmTree h = hostFmmTree(cells, opt, points, 2);
    if (!h.status.ok()) {
      check(id + "-setup", false, h.status.message);
      continue;
    }
    FmmTree emu = topologyOf(h.tree);
    emulateDeviceUpward(h.sorted, opt.fmmTheta, emu);
    const std::string diff = fmmTreeDifference(h.tree, emu);
    check(id, diff.empty(),
          (diff.empty() ? std::string("every array equal by bits: ") : diff) + std::to_string(h.tree.nodeCount()) +
              " nodes, depth " + std::to_string(h.tree.topo.depth) + ", " + std::to_string(h.tree.M.size()) +
              " multipole doubles");
    FmmTree mutated = topologyOf(h.tree);
    emulateDeviceUpward(h.sorted, opt.fmmTheta, mutated, true);
    ++gMutations;
    if (!fmmTreeDifference(h.tree, mutated).empty()) ++gMutationsSeen;
  }
}

/// Periodic boxes (the CUDA backend's periodic path with its device tree): the cells sorted and, fully periodic, their
/// density contrast taken as the CPU backend takes them, the tree with dipole terms by buildFmmTree against the
/// emulation (cube centres, the signed masses' multipoles, the host's scale in lowBound, the norms by their rule).
void runPeriodic(const std::string& name, const Cells& cells, bool px, bool py, bool pz, int order) {
  const SolveOptions opt = periodicFmmBox(px, py, pz, order);
  const std::string id = name + "-p" + std::to_string(order);
  const HostFmmTree h = hostFmmTree(cells, opt, false, 2);
  const FmmTree& tree = h.tree;
  const SortedCells& sorted = h.sorted;
  if (!h.status.ok() || !tree.dipoles) {
    check(id + "-setup", false, h.status.ok() ? "no dipole terms" : h.status.message);
    return;
  }
  FmmTree emu = topologyOf(tree);
  emulateDeviceUpward(sorted, opt.fmmTheta, emu);
  const std::string diff = fmmTreeDifference(tree, emu);
  check(id, diff.empty() && !tree.norms.empty(),
        (diff.empty() ? std::string("every array equal by bits (norms and the signed scale included): ") : diff) +
            std::to_string(tree.nodeCount()) + " nodes, scale " + std::to_string(tree.lowBound[0]));
}

}  // namespace

int main() {
  const std::vector<int> all{3, 4, 5, 6, 7};
  runMesh("uniform16", uniformGrid(16, 1), false, all);
  runMesh("uniform32", uniformGrid(32, 2), false, {3, 7});
  runMesh("uniform24", uniformGrid(24, 3), false, {4, 7});  // leaves not whole 4^3 blocks
  const Cells amr = randomAmr(4);
  std::printf("# random AMR-like mesh: %zu cells\n", amr.size());
  runMesh("amr", amr, false, all);
  runMesh("plummer", plummer(30000), true, {3, 7});
  for (const int p : {4, 7}) {
    runPeriodic("periodic-uniform32", uniformGrid(32, 21), true, true, true, p);
    runPeriodic("periodic-uniform24", uniformGrid(24, 22), true, true, true, p);
    runPeriodic("periodic-amr", amr, true, true, true, p);
    runPeriodic("sheet-xy-uniform32", uniformGrid(32, 23), true, true, false, p);
    runPeriodic("line-z-amr", amr, false, false, true, p);
  }
  // the comparison sees an order: leaf sums in reverse differ somewhere on (nearly) every case
  check("mutation-seen", gMutationsSeen * 10 >= gMutations * 9,
        "reversed leaf sums differ in " + std::to_string(gMutationsSeen) + " of " + std::to_string(gMutations) +
            " cases");
  std::printf("%d checks, %d failed\n", gChecks, gFailed);
  return gFailed == 0 ? 0 : 1;
}
