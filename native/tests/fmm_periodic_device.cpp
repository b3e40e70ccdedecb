/// \file fmm_periodic_device.cpp
/// \brief amrgrav_fmm_periodic_device: the CUDA backend's periodic FMM (cuda/fmm_periodic_phase.cu) emulated on the
/// host against the CPU's FMM in periodic boxes, in the device's order of work: the near lists, tiles and irregular
/// lists with their image shifts (fmm/p2p_tiles.h) through an emulation of the device's P2P kernels (the shifted
/// source's cells at x + shift, a table step by the shifted offset's table), the far images' pass first into L (as
/// uploaded), then the M2L of the device's generated kernel with the dipole terms (cuda/m2l_device.h m2lFusedDip,
/// compiled here for the host, one lane per 32nd source and the device's shuffle tree, the source's centre moved by
/// its shift first), then the CPU's L2L and L2P (the device's are the isolated path's, checked by the GPU parity),
/// and the far images' L2P at shallow leaves added last. Against evaluateP2P, evaluateM2L, addFarImages and the
/// downward pass of fmm_solve.cpp: the near lists must carry every pair's shift (the opposite one on B's side), the
/// tiles each entry's shift and table, and the potentials agree within 1e-12 of max |phi| and the accelerations
/// within 1e-11 of max |a| (rounding: the device adds the far L before the M2L, sums a pair's B side from B, its
/// lanes by 32). Cases: fully periodic 32^3 uniform (a sine contrast and random densities), a random AMR mesh fully
/// periodic, a sheet (x, y periodic) and a line (z periodic). CTest (label cpu).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "core/types.h"
// the device's generated M2L, compiled for the host (p 3 and 4 keep every L term in registers: Ls unused there)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "cuda/m2l_device.h"
#pragma GCC diagnostic pop
#include "fmm/evaluate.h"
#include "fmm/far_images.h"
#include "fmm/fmm_solve.h"
#include "fmm/fmm_tree.h"
#include "fmm/interaction_lists.h"
#include "fmm/multi_index.h"
#include "fmm/p2p_tables.h"
#include "fmm/p2p_tiles.h"
#include "tests/check_report.h"
#include "tests/fmm_test_meshes.h"
#include "tree/tree.h"

using namespace amrgrav;
using namespace amrgrav::fmm;
using namespace amrgrav::tests;

namespace {

void latticeOf(int k, int p[3]) {
  p[0] = (k & 1) | ((k >> 3) & 1) << 1;
  p[1] = ((k >> 1) & 1) | ((k >> 4) & 1) << 1;
  p[2] = ((k >> 2) & 1) | ((k >> 5) & 1) << 1;
}

struct Sums {
  std::vector<double> p, g[3];
  explicit Sums(std::size_t n, double v) : p(n, v) {
    for (auto& a : g) a.assign(n, v);
  }
  FmmOutput out() { return FmmOutput{p.data(), g[0].data(), g[1].data(), g[2].data()}; }
};

/// One target cell against a source leaf's cells moved by `sh` (the device's computedPairs / fmmP2P: j ascending,
/// the source's position shifted first); `same`: the leaf itself unshifted (r = 0 left out).
void computed(const Octree& o, const SortedCells& c, std::uint32_t cell, std::uint32_t S, const double sh[3],
              bool same, double& p, double g[3]) {
  p = 0;
  g[0] = g[1] = g[2] = 0;
  for (std::uint32_t j = o.cellBegin[S]; j < o.cellBegin[S] + o.cellCount[S]; ++j) {
    const double dx = c.x[cell] - (c.x[j] + sh[0]), dy = c.y[cell] - (c.y[j] + sh[1]),
                 dz = c.z[cell] - (c.z[j] + sh[2]);
    const double r2 = dx * dx + dy * dy + dz * dz;
    if (same && !(r2 > 0.0)) continue;
    const double rinv = 1.0 / std::sqrt(r2), w = c.mass[j] * (rinv * rinv * rinv);
    p += c.mass[j] * rinv;
    g[0] += w * dx;
    g[1] += w * dy;
    g[2] += w * dz;
  }
}

/// The device's P2P (cuda/kernel_fmm.cu fmmP2PTiles<true> and fmmP2P) with the image shifts, into out (overwritten).
void emulateP2P(const P2pTiles& t, const IrregularLists& irr, const NearLists& near, const P2pTables& tables,
                const Octree& o, const SortedCells& c, Sums& out) {
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
          const std::size_t e = std::size_t(st) * kTileTargets + i;
          const std::uint32_t S = t.stepSource[e];
          if (S == kNoLeaf) continue;
          const std::int32_t tb = t.stepTable[st];
          if (tb >= 0) {  // the shifted offset's table: no shift needed
            const int slot = t.slots[tb];
            const double* K = tables.bySlot(slot)->k;
            int a[3];
            slotOffset(slot, a);
            const double ev[3] = {double(pt[0] - 4 * a[0]), double(pt[1] - 4 * a[1]), double(pt[2] - 4 * a[2])};
            double acc = 0, ag[3] = {0, 0, 0};
            for (int s = 0; s < kTableCells; ++s) {
              int ps[3];
              latticeOf(s, ps);
              const double k = K[s * kTableCells + u], m = c.mass[o.cellBegin[S] + std::uint32_t(s)];
              acc = std::fma(k, m, acc);
              const double w = k * k * k * m;
              for (int d = 0; d < 3; ++d) ag[d] = std::fma(ev[d] - ps[d], w, ag[d]);
            }
            tot += acc * ih;
            for (int d = 0; d < 3; ++d) tg[d] += ag[d] * ih2;
          } else {
            double sh[3] = {0, 0, 0}, p, g[3];
            if (!t.stepShift.empty()) imageShiftVector(near.period, t.stepShift[e], sh);
            computed(o, c, cell, S, sh, false, p, g);
            tot += p;
            for (int d = 0; d < 3; ++d) tg[d] += g[d];
          }
        }
        out.p[cell] = tot;
        for (int d = 0; d < 3; ++d) out.g[d][cell] = tg[d];
      }
    }
  for (std::size_t k = 0; k < irr.leaf.size(); ++k) {
    const std::uint32_t T = irr.leaf[k];
    for (std::uint32_t i = o.cellBegin[T]; i < o.cellBegin[T] + o.cellCount[T]; ++i) {
      double p = 0, g[3] = {0, 0, 0};
      for (std::uint32_t e = irr.start[k]; e < irr.start[k + 1]; ++e) {
        const std::uint32_t S = irr.source[e];
        const bool image = !irr.shift.empty() && irr.shift[e] != kNoShift;
        double sh[3] = {0, 0, 0}, q, h[3];
        if (image) imageShiftVector(near.period, irr.shift[e], sh);
        computed(o, c, i, S, sh, S == T && !image, q, h);
        p += q;  // the device's one running sum: the same values, summed per source leaf here (rounding only)
        for (int d = 0; d < 3; ++d) g[d] += h[d];
      }
      out.p[i] = p;
      for (int d = 0; d < 3; ++d) out.g[d][i] = g[d];
    }
  }
}

template <int P> struct Fused;
#define AG_FUSED(P)                                                                                       \
  template <> struct Fused<P> {                                                                           \
    static constexpr int kRegs = cuda::kM2LRegTerms##P, kShared = cuda::kM2LSharedTerms##P;               \
    static void add(double x, double y, double z, const double* Mb, double* La, volatile double* Ls) {    \
      cuda::m2lFusedDip##P(x, y, z, Mb, La, Ls);                                                          \
    }                                                                                                     \
  };
AG_FUSED(3)
AG_FUSED(4)
AG_FUSED(5)
AG_FUSED(6)
AG_FUSED(7)
#undef AG_FUSED

/// The device's M2L (cuda/kernel_fmm.cu fmmM2L<P, true>): lane l of a warp takes sources l, l + 32, ... of target A
/// (the source's centre moved by its shift, then target minus source), its L terms in registers and a shared column;
/// then each term's 32 lane sums by the shuffle tree (offsets 16, 8, 4, 2, 1), added to L.
template <int P> void emulateM2L(const FmmLists& lists, FmmTree& t) {
  using K = Fused<P>;
  constexpr int NT = termCount(P);
  for (std::size_t A = 0; A < t.nodeCount(); ++A) {
    const std::uint32_t s0 = lists.m2lStart[A], s1 = lists.m2lStart[A + 1];
    if (s0 == s1) continue;
    std::vector<double> lane(32 * NT, 0.0);
    for (int l = 0; l < 32; ++l) {
      double La[K::kRegs > 0 ? K::kRegs : 1] = {};
      std::vector<double> Ls(32 * (K::kShared > 0 ? K::kShared : 1), 0.0);
      for (std::uint32_t q = s0 + std::uint32_t(l); q < s1; q += 32) {
        const std::size_t B = lists.m2lSource[q];
        double sh[3];
        lists.shiftVector(lists.m2lShift[q], sh);
        K::add(t.centre[3 * A] - (t.centre[3 * B] + sh[0]), t.centre[3 * A + 1] - (t.centre[3 * B + 1] + sh[1]),
               t.centre[3 * A + 2] - (t.centre[3 * B + 2] + sh[2]), &t.M[B * std::size_t(t.mStride)], La, Ls.data());
      }
      for (int k = 0; k < K::kRegs; ++k) lane[l * NT + k] = La[k];
      for (int k = 0; k < K::kShared; ++k) lane[l * NT + K::kRegs + k] = Ls[32 * k];
    }
    for (int k = 0; k < NT; ++k) {
      double s[32];
      for (int l = 0; l < 32; ++l) s[l] = lane[l * NT + k];
      for (int off = 16; off > 0; off >>= 1)
        for (int l = 0; l < off; ++l) s[l] += s[l + off];
      t.L[A * NT + k] += s[0];
    }
  }
}

void emulateM2L(const FmmLists& lists, FmmTree& t) {
  switch (t.order) {
    case 3: emulateM2L<3>(lists, t); break;
    case 4: emulateM2L<4>(lists, t); break;
    case 5: emulateM2L<5>(lists, t); break;
    case 6: emulateM2L<6>(lists, t); break;
    default: emulateM2L<7>(lists, t); break;
  }
}

std::string sci(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2e", v);
  return b;
}

/// max |a - b| / max |b| over the cells (the potential, or the acceleration's magnitude).
void errors(const Sums& dev, const Sums& cpu, double& pot, double& acc) {
  double dp = 0, mp = 0, da = 0, ma = 0;
  for (std::size_t i = 0; i < cpu.p.size(); ++i) {
    dp = std::max(dp, std::fabs(dev.p[i] - cpu.p[i]));
    mp = std::max(mp, std::fabs(cpu.p[i]));
    double e = 0, m = 0;
    for (int d = 0; d < 3; ++d) {
      e += (dev.g[d][i] - cpu.g[d][i]) * (dev.g[d][i] - cpu.g[d][i]);
      m += cpu.g[d][i] * cpu.g[d][i];
    }
    if (!std::isfinite(dev.p[i] + dev.g[0][i] + dev.g[1][i] + dev.g[2][i])) e = INFINITY;
    da = std::max(da, std::sqrt(e));
    ma = std::max(ma, std::sqrt(m));
  }
  pot = dp / mp;
  acc = da / ma;
}

void runCase(const std::string& name, const Cells& cells, bool px, bool py, bool pz, int order) {
  SolveOptions opt = periodicFmmBox(px, py, pz, order);
  opt.accelerations = true;
  const int threads = 2;
  // the CPU backend's steps (cpu_backend.cpp): sort, the density contrast of a fully periodic box, the tree
  const HostFmmTree h = hostFmmTree(cells, opt, false, threads);
  const FmmTree& tree = h.tree;
  const SortedCells& sorted = h.sorted;
  if (!h.status.ok()) {
    check(name + "-setup", false, h.status.message);
    return;
  }
  double period[3];
  scaledPeriod(opt, sorted, period);
  FmmLists lists;
  buildInteractionLists(tree, opt.fmmTolerance, threads, lists, period);
  const Octree& o = tree.topo;
  const std::size_t n = sorted.order.size();
  std::size_t shiftedP2P = 0, shiftedM2L = 0;
  for (const std::uint8_t s : lists.p2pShift) shiftedP2P += s != kNoShift;
  for (const std::uint8_t s : lists.m2lShift) shiftedM2L += s != kNoShift;

  // the CPU (fmm_solve.cpp's order)
  Sums cpu(n, 0.0);
  FmmTree tc = tree;
  evaluateP2P(lists, tc, sorted, threads, cpu.out());
  evaluateM2L(lists, threads, tc);
  Status st = addFarImages(sorted, period, threads, tc, cpu.out());
  if (!st.ok()) {
    check(name + "-far", false, st.message);
    return;
  }
  passLocalsDown(sorted, threads, tc, cpu.out());

  // the device's work, as cuda/fmm_periodic_phase.cu makes it
  const HostNearField hn = buildHostNearField(tree, lists, sorted, threads);
  const NearLists& near = hn.near;
  const RegularLeaves& reg = hn.reg;
  const P2pTables& tables = hn.tables;
  const P2pTiles& tiles = hn.tiles;
  const IrregularLists& irr = hn.irr;
  {  // every pair's shift in the near lists (A: B + s, B: A - s), every tile entry's shift and table
    bool ok = near.shift.size() == near.source.size() && tiles.stepShift.size() == tiles.stepSource.size() &&
              irr.shift.size() == irr.source.size();
    std::vector<std::uint32_t> leafIndex(o.nodeCount(), kNoLeaf);
    for (std::size_t k = 0; k < near.leaves.size(); ++k) leafIndex[near.leaves[k]] = std::uint32_t(k);
    std::vector<std::vector<std::pair<std::uint32_t, int>>> want(near.leaves.size());
    for (std::size_t k = 0; k < near.leaves.size(); ++k) want[k].emplace_back(near.leaves[k], kNoShift);
    for (std::size_t q = 0; q < lists.p2pA.size(); ++q) {
      want[leafIndex[lists.p2pA[q]]].emplace_back(lists.p2pB[q], lists.p2pShift[q]);
      want[leafIndex[lists.p2pB[q]]].emplace_back(lists.p2pA[q], 26 - lists.p2pShift[q]);
    }
    for (std::size_t k = 0; k < near.leaves.size() && ok; ++k) {
      std::vector<std::pair<std::uint32_t, int>> got;
      for (std::uint32_t e = near.start[k]; e < near.start[k + 1]; ++e) got.emplace_back(near.source[e], near.shift[e]);
      ok = got == want[k];
    }
    // the tiles: each regular target's steps are its near entries with their shifts, a step's table the shifted
    // offset's (p2p_tables.h findSlot)
    for (std::size_t tile = 0; tile < tiles.tiles() && ok; ++tile)
      for (int i = 0; i < kTileTargets && ok; ++i) {
        const std::uint32_t T = tiles.target[tile * kTileTargets + i];
        if (T == kNoLeaf) continue;
        const std::uint32_t k = leafIndex[T];
        std::vector<std::pair<std::pair<std::uint32_t, int>, int>> got, exp;
        for (std::uint32_t s = tiles.stepStart[tile]; s < tiles.stepStart[tile + 1]; ++s) {
          const std::size_t e = std::size_t(s) * kTileTargets + i;
          if (tiles.stepSource[e] == kNoLeaf) continue;
          got.push_back({{tiles.stepSource[e], tiles.stepShift[e]},
                         tiles.stepTable[s] < 0 ? -1 : tiles.slots[tiles.stepTable[s]]});
        }
        for (std::uint32_t e = near.start[k]; e < near.start[k + 1]; ++e) {
          double v[3];
          lists.shiftVector(near.shift[e], v);
          exp.push_back({{near.source[e], near.shift[e]}, tables.findSlot(reg, T, near.source[e], v)});
        }
        std::sort(got.begin(), got.end());
        std::sort(exp.begin(), exp.end());
        ok = got == exp;
      }
    check(name + "-shifts", ok && shiftedP2P > 0 && shiftedM2L > 0,
          std::to_string(lists.p2pA.size()) + " P2P pairs (" + std::to_string(shiftedP2P) + " with an image), " +
              std::to_string(lists.m2lSource.size()) + " M2L (" + std::to_string(shiftedM2L) + " images); tiles: " +
              std::to_string(tiles.tableEntries) + " pairs by table, " + std::to_string(tiles.computedEntries) +
              " computed, " + std::to_string(irr.leaf.size()) + " irregular leaves");
  }
  Sums far(n, 0.0), dev(n, std::nan(""));
  FmmTree td = tree;
  st = addFarImages(sorted, period, threads, td, far.out());  // into the L that is uploaded, before the M2L
  emulateP2P(tiles, irr, near, tables, o, sorted, dev);
  emulateM2L(lists, td);
  passLocalsDown(sorted, threads, td, dev.out());
  for (std::size_t i = 0; i < n; ++i) {
    dev.p[i] += far.p[i];
    for (int d = 0; d < 3; ++d) dev.g[d][i] += far.g[d][i];
  }
  double pot = 0, acc = 0;
  errors(dev, cpu, pot, acc);
  check(name + "-emulated-vs-cpu", st.ok() && pot <= 1e-12 && acc <= 1e-11,
        std::to_string(n) + " cells, p " + std::to_string(order) + ": the device's periodic evaluation emulated vs "
        "the CPU's FMM: pot " + sci(pot) + " of max |phi| (<= 1e-12), acc " + sci(acc) + " of max |a| (<= 1e-11)");
}

/// A uniform n^3 grid on [0, 1)^3 with density 1 + 0.5 sin(2 pi x) sin(2 pi y) sin(2 pi z) (a contrast whose
/// potential is analytic; here only its CPU-vs-device parity).
Cells sineGrid(int n) {
  const double h = 1.0 / n, tau = 2 * M_PI;
  Cells c;
  for (int k = 0; k < n; ++k)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) {
        const double x = (i + 0.5) * h, y = (j + 0.5) * h, z = (k + 0.5) * h;
        c.push(x, y, z, h * h * h * (1 + 0.5 * std::sin(tau * x) * std::sin(tau * y) * std::sin(tau * z)), h);
      }
  return c;
}

}  // namespace

/// Arguments: [n (32)]: the uniform grids' side.
int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 32;
  const std::string g = std::to_string(n);
  runCase("periodic-sine" + g, sineGrid(n), true, true, true, 7);
  runCase("periodic-random" + g, uniformGrid(n, 1), true, true, true, 7);
  runCase("periodic-random" + g + "-p4", uniformGrid(n, 2), true, true, true, 4);
  runCase("periodic-amr", randomAmr(3), true, true, true, 7);
  runCase("sheet-xy-random" + g, uniformGrid(n, 4), true, true, false, 7);
  runCase("line-z-amr", randomAmr(5), false, false, true, 7);
  std::printf("%d checks, %d failed\n", gChecks, gFailed);
  return gFailed == 0 ? 0 : 1;
}
