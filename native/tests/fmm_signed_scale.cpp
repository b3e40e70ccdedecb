/// \file fmm_signed_scale.cpp
/// \brief amrgrav_fmm_signed_scale: the signed sources' scale that the CUDA backend's periodic FMM finds from its
/// device's sorted cells (cuda/fmm_scale_phase.h, rules fmm/signed_scale_k.h) in its host emulation
/// (fmm/signed_scale.h emulateDeviceSignedScale: the leaves' estimates and margins, the level-2 net masses a warp at
/// a time, the candidate leaves gathered, the host's leafNearOf over them, the coarse field of the nets) against the
/// host's signedSourceScale and buildFmmTree's lowBound: equal by bits (tied candidates, regular leaves with equal
/// masses, standing for each other once compared). And the rule behind it: every leaf's host
/// value (leafNearOf, as leafNearMax takes it) lies within its margin of its estimate (the largest |difference| /
/// margin reported); the warp's net masses are netMassOf's chain by bits. Cases: fully periodic uniform grids of
/// random densities (32^3, and 24^3: leaves not whole 4^3 blocks), a sine (many leaves tie for the maximum), a
/// constant density (the contrast zero: every leaf a candidate), the random AMR-like mesh fully periodic, a sheet
/// (no contrast) and a line. CTest (label cpu).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/types.h"
#include "fmm/fmm_tree.h"
#include "fmm/p2p_tables.h"
#include "fmm/signed_scale.h"
#include "fmm/signed_scale_k.h"
#include "tests/check_report.h"
#include "tests/fmm_test_meshes.h"
#include "tree/tree.h"

using namespace amrgrav;
using namespace amrgrav::fmm;
using namespace amrgrav::tests;

namespace {

/// An n^3 grid on [0, 1)^3 of density 1 + a sin(2 pi x) (a = 0: constant).
Cells sineGrid(int n, double a) {
  const double h = 1.0 / n, pi = 3.14159265358979323846;
  Cells c;
  for (int k = 0; k < n; ++k)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) {
        const double x = (i + 0.5) * h;
        c.push(x, (j + 0.5) * h, (k + 0.5) * h, h * h * h * (1 + a * std::sin(2 * pi * x)), h);
      }
  return c;
}

std::string sci(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3e", v);
  return b;
}

void runCase(const std::string& name, const Cells& cells, bool px, bool py, bool pz) {
  const SolveOptions opt = periodicFmmBox(px, py, pz, 4);
  const int threads = 2;
  const HostFmmTree h = hostFmmTree(cells, opt, false, threads);
  if (!h.status.ok() || !h.tree.dipoles) {
    check(name + "-setup", false, h.status.ok() ? "no dipole terms" : h.status.message);
    return;
  }
  const FmmTree& tree = h.tree;
  const SortedCells& sorted = h.sorted;
  std::vector<double> per, net;
  ScaleCandidates cand;
  const double emu = emulateDeviceSignedScale(sorted, tree, threads, &per, &net, &cand);
  const double host = signedSourceScale(sorted, threads, tree);
  std::size_t leaves = 0;
  for (std::size_t i = 0; i < tree.nodeCount(); ++i) leaves += tree.isLeaf(i) ? 1 : 0;
  // a tree with leaves above level 2 takes the host's path on the GPU (its cells gathered: fmm_periodic_phase.cu),
  // whose scale is the host's function itself; the device's rule (level-2 sums) is then no cube's whole mass
  bool shallow = false;
  for (std::size_t i = 0; i < tree.nodeCount(); ++i) shallow = shallow || (tree.isLeaf(i) && tree.topo.level[i] < 2);
  check(name + "-host-scale", host == tree.lowBound[0],
        "signedSourceScale " + sci(host) + ", buildFmmTree's lowBound " + sci(tree.lowBound[0]));
  if (shallow) {
    std::printf("note %s: leaves above level 2, the GPU takes the host's path (emulated %s, host %s)\n", name.c_str(),
                sci(emu).c_str(), sci(host).c_str());
  } else {
    check(name + "-scale-bitwise", emu == host && host == tree.lowBound[0],
          "emulated " + sci(emu) + ", signedSourceScale " + sci(host) + ", buildFmmTree's lowBound " +
              sci(tree.lowBound[0]) + (emu == host && host == tree.lowBound[0] ? ": equal by bits" : ": differ") +
              "; " + std::to_string(cand.leaves.size()) + " candidate leaves of " + std::to_string(leaves) + " down (" +
              std::to_string(cand.total) + " cells of " + std::to_string(sorted.mass.size()) + "), " +
              std::to_string(cand.member.size()) + " more tied with one of them");
  }
  // every leaf's host value within its margin of its estimate; the host's maximum among the candidates
  const RegularLeaves reg = findRegularLeaves(tree, sorted, threads);
  P2pTables tables;
  tables.prepare(reg, FmmLists{}, threads);
  const double none[3] = {0, 0, 0};
  const std::size_t nodes = tree.nodeCount();
  double worst = 0, best = -1;
  std::size_t bestLeaf = 0, outside = 0;
  for (std::size_t i = 0; i < nodes; ++i) {
    if (!tree.isLeaf(i)) continue;
    const std::uint32_t cb = tree.topo.cellBegin[i];
    const double v = leafNearOf(&sorted.x[cb], &sorted.y[cb], &sorted.z[cb], &sorted.mass[cb],
                                tree.topo.cellCount[i], tables.find(reg, std::uint32_t(i), std::uint32_t(i), none),
                                reg.h[i]);
    const double d = std::fabs(v - per[i]), e = per[nodes + i];
    if (d > e) ++outside;
    if (e > 0) worst = std::max(worst, d / e);
    if (v > best) {
      best = v;
      bestLeaf = i;
    }
  }
  const bool inCand = std::find(cand.leaves.begin(), cand.leaves.end(), std::uint32_t(bestLeaf)) != cand.leaves.end() ||
                      std::find(cand.member.begin(), cand.member.end(), std::uint32_t(bestLeaf)) != cand.member.end();
  check(name + "-margins", outside == 0 && (best <= 0 || inCand),
        std::to_string(outside) + " leaves outside their margin; largest |host - estimate| / margin " + sci(worst) +
            "; the host's largest leaf " + (inCand ? "among" : "NOT among") + " the candidates");
  // the warp's chain of net masses: netMassOf's bits
  const int lev = signedScaleLevel(tree);
  bool same = lev >= 0 || net.empty();
  for (std::size_t k = 0; k < net.size() && lev >= 0; ++k) {
    const std::size_t i = tree.levelBegin[lev] + k;
    const double m = netMassOf(sorted.mass.data(), tree.topo.cellBegin[i], tree.topo.cellCount[i]);
    same = same && m == net[k];
  }
  check(name + "-net-masses", same, std::to_string(net.size()) + " level-" + std::to_string(lev) +
                                        " nodes' net masses, the warp's chain against netMassOf: " +
                                        (same ? "equal by bits" : "differ"));
}

}  // namespace

int main() {
  runCase("periodic-uniform32", uniformGrid(32, 31), true, true, true);
  runCase("periodic-uniform24", uniformGrid(24, 32), true, true, true);
  runCase("periodic-sine32", sineGrid(32, 0.5), true, true, true);
  runCase("periodic-constant16", sineGrid(16, 0.0), true, true, true);
  const Cells amr = randomAmr(4);
  runCase("periodic-amr", amr, true, true, true);
  runCase("sheet-xy-uniform32", uniformGrid(32, 33), true, true, false);
  runCase("line-z-amr", amr, false, false, true);
  std::printf("%d checks, %d failed\n", gChecks, gFailed);
  return gFailed == 0 ? 0 : 1;
}
