/// \file fmm_p2p_tiles.cpp
/// \brief amrgrav_fmm_p2p_tiles: the CUDA backend's P2P work (fmm/p2p_tiles.h) checked on the host. The tiles must
/// hold every regular leaf once with its own near list (each of its sources once, in a step with that pair's table
/// or in a computed step), the rest must go to the computed kernel, and the tiles must not depend on the thread
/// count; then a host emulation of the device's two P2P kernels (cuda/kernel_fmm.cu fmmP2PTiles and fmmP2P: the
/// same loops, the same operations in the same order, fused multiply-adds written out, 1/sqrt correctly rounded
/// where the device's rsqrt is within 1 ulp) must give the CPU's near field (fmm/evaluate.cpp evaluateP2P) to
/// rounding (the accelerations' kernel fmmP2PTiles<true> and, built with AMRGRAV_FMM_P2P_DMMA=0, the potentials'; by
/// default the potentials' table steps are products on the tensor cores, fmmP2PTilesMma, whose lanes
/// native/tests/fmm_p2p_mma.cpp emulates, with the same tiles, steps and computed pairs). Cases: uniform grids
/// (every leaf regular, every pair a table) and a grid with a refined patch (two cell sizes, leaves across its
/// boundary irregular, computed pairs in regular leaves' lists). CTest (label cpu).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "core/types.h"
#include "fmm/evaluate.h"
#include "fmm/fmm_tree.h"
#include "fmm/interaction_lists.h"
#include "fmm/p2p_tables.h"
#include "fmm/p2p_tiles.h"
#include "tests/check_report.h"
#include "tests/fmm_test_meshes.h"
#include "tree/tree.h"

using namespace amrgrav;
using namespace amrgrav::fmm;
using namespace amrgrav::tests;

namespace {

/// An n^3 grid on [0, 1)^3 of masses h^3 times a random factor in [0.5, 1.5); with `refine`, the coarse cells of the
/// central (n/4)^3 region are each replaced by their 2^3 children (a refined patch: two cell sizes).
Cells grid(int n, bool refine, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> f(0.5, 1.5);
  const double h = 1.0 / n;
  const int lo = 3 * n / 8 + 2, hi = lo + n / 4;  // not on the leaves' (4 cells) boundaries
  Cells c;
  for (int k = 0; k < n; ++k)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) {
        const bool in = refine && i >= lo && i < hi && j >= lo && j < hi && k >= lo && k < hi;
        if (!in) {
          c.push((i + 0.5) * h, (j + 0.5) * h, (k + 0.5) * h, h * h * h * f(rng), h);
          continue;
        }
        const double q = h / 2;
        for (int d = 0; d < 8; ++d)
          c.push(i * h + ((d & 1) + 0.5) * q, j * h + ((d >> 1 & 1) + 0.5) * q, k * h + ((d >> 2) + 0.5) * q,
                 q * q * q * f(rng), q);
      }
  return c;
}

/// Lattice position of the k-th cell of a 4^3 leaf (Morton order, x in the lowest bit), as p2p_tables.cpp.
void latticeOf(int k, int p[3]) {
  p[0] = (k & 1) | ((k >> 3) & 1) << 1;
  p[1] = ((k >> 1) & 1) | ((k >> 4) & 1) << 1;
  p[2] = ((k >> 2) & 1) | ((k >> 5) & 1) << 1;
}

struct Sums {
  std::vector<double> p, g[3];
  explicit Sums(std::size_t n) : p(n, std::nan("")) {
    for (auto& v : g) v.assign(n, std::nan(""));
  }
};

/// The device's table tiles (fmmP2PTiles), one (target, cell) at a time: each step's sums over the source's cells
/// (the table's: s ascending, fused; computed: j ascending), then added to the running totals in the tile's order.
void emulateTiles(const P2pTiles& t, const P2pTables& tables, const Octree& o, const SortedCells& c, Sums& out) {
  for (std::size_t tile = 0; tile < t.tiles(); ++tile)
    for (int i = 0; i < kTileTargets; ++i) {
      const std::uint32_t T = t.target[tile * kTileTargets + i];
      if (T == kNoLeaf) continue;
      const double ih = t.invH[tile * kTileTargets + i], ih2 = ih * ih;
      for (int u = 0; u < kTableCells; ++u) {
        int pt[3];
        latticeOf(u, pt);
        const std::uint32_t cell = o.cellBegin[T] + std::uint32_t(u);
        double tot = 0, tg[3] = {0, 0, 0};
        for (std::uint32_t st = t.stepStart[tile]; st < t.stepStart[tile + 1]; ++st) {
          const std::uint32_t S = t.stepSource[std::size_t(st) * kTileTargets + i];
          if (S == kNoLeaf) continue;  // the device adds zeros: the same bits
          const std::uint32_t sb = o.cellBegin[S];
          const std::int32_t tb = t.stepTable[st];
          if (tb >= 0) {
            const int slot = t.slots[tb];
            const double* K = tables.bySlot(slot)->k;
            int a[3];
            slotOffset(slot, a);
            const double e[3] = {double(pt[0] - 4 * a[0]), double(pt[1] - 4 * a[1]), double(pt[2] - 4 * a[2])};
            double acc = 0, ag[3] = {0, 0, 0};
            for (int s = 0; s < kTableCells; ++s) {
              int ps[3];
              latticeOf(s, ps);
              const double k = K[s * kTableCells + u], m = c.mass[sb + std::uint32_t(s)];
              acc = std::fma(k, m, acc);
              const double w = k * k * k * m;
              for (int d = 0; d < 3; ++d) ag[d] = std::fma(e[d] - ps[d], w, ag[d]);
            }
            tot += acc * ih;
            for (int d = 0; d < 3; ++d) tg[d] += ag[d] * ih2;
          } else {
            double acc = 0, ag[3] = {0, 0, 0};
            for (std::uint32_t j = sb; j < sb + o.cellCount[S]; ++j) {
              const double dx = c.x[cell] - c.x[j], dy = c.y[cell] - c.y[j], dz = c.z[cell] - c.z[j];
              const double r2 = dx * dx + dy * dy + dz * dz;  // another leaf: r > 0
              const double rinv = 1.0 / std::sqrt(r2), w = c.mass[j] * (rinv * rinv * rinv);
              acc += c.mass[j] * rinv;
              ag[0] += w * dx;
              ag[1] += w * dy;
              ag[2] += w * dz;
            }
            tot += acc;
            for (int d = 0; d < 3; ++d) tg[d] += ag[d];
          }
        }
        out.p[cell] = tot;
        for (int d = 0; d < 3; ++d) out.g[d][cell] = tg[d];
      }
    }
}

/// The device's computed kernel (fmmP2P) over the irregular leaves: each cell's one running sum over its near
/// leaves' cells in the list's order, its own (r = 0) left out.
void emulateIrregular(const P2pTiles& t, const NearLists& near, const Octree& o, const SortedCells& c, Sums& out) {
  for (const std::uint32_t k : t.irregular) {
    const std::uint32_t T = near.leaves[k];
    for (std::uint32_t i = o.cellBegin[T]; i < o.cellBegin[T] + o.cellCount[T]; ++i) {
      double p = 0, g[3] = {0, 0, 0};
      for (std::uint32_t e = near.start[k]; e < near.start[k + 1]; ++e) {
        const std::uint32_t S = near.source[e];
        for (std::uint32_t j = o.cellBegin[S]; j < o.cellBegin[S] + o.cellCount[S]; ++j) {
          const double dx = c.x[i] - c.x[j], dy = c.y[i] - c.y[j], dz = c.z[i] - c.z[j];
          const double r2 = dx * dx + dy * dy + dz * dz;
          if (S == T && !(r2 > 0.0)) continue;
          const double rinv = 1.0 / std::sqrt(r2), w = c.mass[j] * (rinv * rinv * rinv);
          p += c.mass[j] * rinv;
          g[0] += w * dx;
          g[1] += w * dy;
          g[2] += w * dz;
        }
      }
      out.p[i] = p;
      for (int d = 0; d < 3; ++d) out.g[d][i] = g[d];
    }
  }
}

std::string sci(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2e", v);
  return b;
}

void runCase(const std::string& name, const Cells& cells, bool expectAllRegular, bool emulate) {
  SolveOptions opt;
  opt.method = SolveMethod::Fmm;
  opt.fmmOrder = 7;
  opt.accelerations = true;
  const int threads = 2;
  const HostFmmTree h = hostFmmTree(cells, opt, false, threads);
  if (!h.status.ok()) {
    check(name + "-setup", false, h.status.message);
    return;
  }
  const FmmTree& tree = h.tree;
  const SortedCells& sorted = h.sorted;
  FmmLists lists;
  buildInteractionLists(tree, opt.fmmTolerance, threads, lists);
  const Octree& o = tree.topo;
  const std::size_t n = sorted.order.size();

  // the CPU's near field
  Sums cpu(n);
  evaluateP2P(lists, tree, sorted, threads, FmmOutput{cpu.p.data(), cpu.g[0].data(), cpu.g[1].data(), cpu.g[2].data()});

  // the device's work
  const NearLists near = buildNearLists(tree, lists);
  const RegularLeaves reg = findRegularLeaves(tree, sorted, threads);
  P2pTables tables;
  tables.prepare(reg, lists, threads);
  const P2pTiles t = buildP2pTiles(near, reg, tables, threads);
  {
    const P2pTiles t1 = buildP2pTiles(near, reg, tables, 1), t3 = buildP2pTiles(near, reg, tables, 3);
    const auto same = [&](const P2pTiles& a) {
      return a.target == t.target && a.invH == t.invH && a.stepStart == t.stepStart && a.stepTable == t.stepTable &&
             a.stepSource == t.stepSource && a.slots == t.slots && a.irregular == t.irregular;
    };
    check(name + "-threads", same(t1) && same(t3), "the same tiles with 1, 2 and 3 threads");
  }

  // structure: every leaf once, a tile target's steps are its own near list and tables
  std::vector<int> seen(near.leaves.size(), 0);
  std::vector<std::uint32_t> leafIndex(o.nodeCount(), kNoLeaf);
  for (std::size_t k = 0; k < near.leaves.size(); ++k) leafIndex[near.leaves[k]] = std::uint32_t(k);
  bool own = t.target.size() == t.tiles() * kTileTargets && t.stepSource.size() == t.stepTable.size() * kTileTargets;
  std::size_t targets = 0, regular = 0;
  const double none[3] = {0, 0, 0};
  for (std::size_t tile = 0; tile < t.tiles() && own; ++tile)
    for (int i = 0; i < kTileTargets; ++i) {
      const std::uint32_t T = t.target[tile * kTileTargets + i];
      if (T == kNoLeaf) continue;
      ++targets;
      const std::uint32_t k = leafIndex[T];
      ++seen[k];
      own = own && reg.regular[T] && t.invH[tile * kTileTargets + i] == 1.0 / reg.h[T];
      // its steps' sources, with the steps' tables, are its near list's entries, each once
      std::vector<std::pair<std::uint32_t, int>> got, want;
      for (std::uint32_t st2 = t.stepStart[tile]; st2 < t.stepStart[tile + 1]; ++st2) {
        const std::uint32_t S = t.stepSource[std::size_t(st2) * kTileTargets + i];
        if (S != kNoLeaf) got.emplace_back(S, t.stepTable[st2] < 0 ? -1 : t.slots[t.stepTable[st2]]);
      }
      for (std::uint32_t e = near.start[k]; e < near.start[k + 1]; ++e)
        want.emplace_back(near.source[e], tables.findSlot(reg, T, near.source[e], none));
      std::sort(got.begin(), got.end());
      std::sort(want.begin(), want.end());
      own = own && got == want;
    }
  for (const std::uint32_t k : t.irregular) seen[k] += 10;
  for (std::size_t k = 0; k < near.leaves.size(); ++k) {
    regular += reg.regular[near.leaves[k]] ? 1 : 0;
    own = own && seen[k] == (reg.regular[near.leaves[k]] ? 1 : 10);
  }
  check(name + "-tiles", own,
        std::to_string(near.leaves.size()) + " leaves, " + std::to_string(regular) + " regular in " +
            std::to_string(t.tiles()) + " tiles (" + std::to_string(targets) + " targets), " +
            std::to_string(t.slots.size()) + " tables; steps used: " + std::to_string(t.tableEntries) + " of " +
            std::to_string(t.tableSteps * kTileTargets) + " table, " + std::to_string(t.computedEntries) + " of " +
            std::to_string(t.computedSteps * kTileTargets) + " computed; " + std::to_string(t.irregular.size()) +
            " irregular leaves");
  if (expectAllRegular)
    check(name + "-all-tables", regular == near.leaves.size() && t.computedSteps == 0 && t.tableSteps > 0,
          "a uniform grid: every leaf regular, every pair by table");
  else
    check(name + "-mixed", t.tableSteps > 0 && t.computedSteps > 0 && !t.irregular.empty(),
          "two cell sizes: table and computed steps in tiles, and irregular leaves");

  if (!emulate) return;
  // the emulated kernels against the CPU
  Sums dev(n);
  emulateTiles(t, tables, o, sorted, dev);
  emulateIrregular(t, near, o, sorted, dev);
  double pot = 0, acc = 0, rms = 0;
  std::size_t same = 0;
  for (std::size_t i = 0; i < n; ++i) {
    pot = std::max(pot, std::fabs(dev.p[i] - cpu.p[i]) / std::fabs(cpu.p[i]));
    if (!std::isfinite(dev.p[i])) pot = INFINITY;
    same += dev.p[i] == cpu.p[i] ? 1 : 0;
    double e = 0;
    for (int d = 0; d < 3; ++d) {
      e += (dev.g[d][i] - cpu.g[d][i]) * (dev.g[d][i] - cpu.g[d][i]);
      rms += cpu.g[d][i] * cpu.g[d][i];
      if (!std::isfinite(dev.g[d][i])) e = INFINITY;
    }
    acc = std::max(acc, std::sqrt(e));
  }
  acc /= std::sqrt(rms / double(n));
  check(name + "-emulated-vs-cpu", pot <= 1e-14 && acc <= 1e-13,
        "near field, host emulation of the device kernels vs evaluateP2P: pot " + sci(pot) +
            " per cell (<= 1e-14), acc " + sci(acc) + " of the rms (<= 1e-13); potentials bitwise equal in " +
            std::to_string(same) + " of " + std::to_string(n) + " cells");
}

}  // namespace

/// Arguments: [n (32)] [--tiles-only: the tiles' checks and counts, no emulation (for large grids)].
int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 32;
  const bool emulate = !(argc > 2 && std::string(argv[2]) == "--tiles-only");
  runCase("uniform" + std::to_string(n), grid(n, false, 1), true, emulate);
  runCase("uniform" + std::to_string(n / 2), grid(n / 2, false, 2), true, emulate);
  runCase("refined" + std::to_string(n), grid(n, true, 3), false, emulate);
  std::printf("%d checks, %d failed\n", gChecks, gFailed);
  return gFailed == 0 ? 0 : 1;
}
