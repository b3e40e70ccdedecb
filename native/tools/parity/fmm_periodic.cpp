/// \file fmm_periodic.cpp
/// \brief Subject `fmm-periodic`: method 'fmm' on the CUDA backend in periodic boxes (cuda/fmm_periodic_phase.cu: the
/// host's sort, density contrast, tree with dipole terms, lists with image shifts, near tiles with shifts and the far
/// images' pass; the device's evaluation with the shifts and the M2L with dipole terms) against the CPU backend's
/// FMM. The same lists: the same M2L and P2P counts, nodes, leaves and depth; the sums differ by their order only:
/// potentials within 1e-12 of max |phi| (periodic potentials cross zero), accelerations within 1e-11 of their rms
/// (stricter than of their max). Cases: fully periodic uniform grids (--uniform, 32^3 by default) of a sine contrast
/// and of random densities (orders 7 and 4; potentials only: the table steps on the tensor cores), the clustered AMR
/// set in a fully periodic box, a sheet (x, y periodic) on the random grid and a line (z periodic) on the AMR set;
/// the density contrast's mean density and the mean potential as the CPU's; momentum |sum m a| / sum |m a| (m the
/// sources: the contrast in a fully periodic box) <= 1e-6 on the GPU; two GPU solves bitwise equal; the device's
/// sort, lists and tiles options ignored while CudaOptions::fmmDevicePeriodic is off: the same bits with them on or
/// off. The device's periodic path (CudaOptions::fmmDevicePeriodic: the sort with the density contrast and the
/// lists with their image shifts on the device): its lists against buildInteractionLists(..., period) array for
/// array on the host's trees (fully periodic grid and AMR, sheet, line; orders 4 and 7), its solves bitwise the host
/// periodic path's (the same lists and the same sorted, contrasted cells: the same evaluation) and within the
/// tolerances above of the CPU backend, the device walk's time noted. The device's near lists and tiles with their
/// shifts (CudaOptions::fmmDevicePeriodicTiles, cuda/fmm_tiles_phase.h with a period): every array (near lists,
/// regular leaves, tiles, slots, irregular lists, each with its shifts) equal to buildHostNearField's over the host's
/// lists with shifts, on the same trees; its solves bitwise the host tiles' path (and the host periodic path), the
/// same near-field counts, and within the tolerances of the CPU backend. Without a host copy of the sorted cells
/// (CudaOptions::fmmDevicePeriodicFinish, the default: the scale from the device's cells, cuda/fmm_scale_phase.h, the
/// finish on the device): the device tree's scale by bits the host's (and with the switch off, the gathered cells'
/// scale), the solves bitwise the host periodic path's, the mean density equal and the mean potential within 1e-12 of
/// max |phi| of the host finish's, the conventions, momentum and determinism as above; a tree with leaves above the
/// far frontier takes the gathered cells after all (said in the check's detail). The computed near pairs in single
/// precision (CudaOptions::fmmNearSingle, the backend's default; this tool runs double): with image shifts, within
/// 1e-6 of the CPU (near-single cases).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "core/fixed_sum.h"
#include "core/thread_pool.h"
#include "fmm/dual_walk.h"
#include "fmm/fmm_tree.h"
#include "fmm/interaction_lists.h"
#include "fmm/p2p_tiles.h"
#include "fmm/p2p_tiles_emulate.h"
#include "fmm/upward_emulate.h"
#include "tree/tree.h"

#include "cuda/m2l_variants.h"
#include "tools/parity/harness.h"

namespace amrgrav::parity {
namespace {

constexpr double kPotTol = 1e-12;  // of max |phi|: the isolated subject's per-cell 1e-12, for potentials crossing 0
constexpr double kAccTol = 1e-11;  // of the rms acceleration
constexpr double kNearSingleTol = 1e-6;  // both, with the computed near pairs in single precision (subject fmm's)
constexpr double kMomentumTol = 1e-6;


SolveOptions fmmOptions(int order, bool x, bool y, bool z) {
  SolveOptions o;
  o.method = SolveMethod::Fmm;
  o.fmmOrder = order;
  o.accelerations = true;
  return periodicBox(o, x, y, z);
}

std::string sci(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2e", v);
  return b;
}

/// |sum m a| / sum |m a|, m the solve's sources: the density contrast (m - rho h^3) when the solve took it.
double momentumError(const Cells& c, const SolveResult& r) {
  const double rho = r.stats.densityContrast ? r.stats.meanDensity : 0.0;
  double s[3] = {0, 0, 0}, a = 0;
  for (std::size_t i = 0; i < c.size(); ++i) {
    const double m = c.m[i] - rho * c.h[i] * c.h[i] * c.h[i];
    const double f[3] = {m * r.ax[i], m * r.ay[i], m * r.az[i]};
    for (int d = 0; d < 3; ++d) s[d] += f[d];
    a += std::sqrt(f[0] * f[0] + f[1] * f[1] + f[2] * f[2]);
  }
  return a > 0 ? std::sqrt(s[0] * s[0] + s[1] * s[1] + s[2] * s[2]) / a : 0.0;
}

/// The finish's conventions as the CPU's (the contrast's mean density, the mean potential), momentum on both, two GPU
/// solves bitwise equal, and the device's isolated-only options ignored (the same bits with all of them off).
void conventionsAndRepeat(Context& cx, const std::string& name, const Cells& cells, const SolveOptions& o) {
  CudaBackend& gpu = *cx.gpu;
  SolveResult cpu, a, b, off;
  poison(cpu, cells.size(), true);
  poison(a, cells.size(), true);
  poison(b, cells.size(), true);
  poison(off, cells.size(), true);
  const Status sc = cx.cpu->solve(cells.view(), o, cpu);
  const Status sa = gpu.solve(cells.view(), o, a);
  const Status sb = gpu.solve(cells.view(), o, b);
  const CudaOptions before = gpu.cudaOptions();
  CudaOptions co = before;
  co.fmmDevicePeriodic = false;  // the isolated path's options alone flipped: the host's periodic path either way
  co.fmmDeviceSort = !before.fmmDeviceSort;
  co.fmmDeviceLists = !before.fmmDeviceLists;
  co.fmmDeviceTiles = !before.fmmDeviceTiles;
  co.fmmDevicePeriodicTiles = !before.fmmDevicePeriodicTiles;
  setDeviceOptions(gpu, co);
  const Status so = gpu.solve(cells.view(), o, off);
  setDeviceOptions(gpu, before);
  if (!sc.ok() || !sa.ok() || !sb.ok() || !so.ok()) {
    check(cx, name + "-conventions", false,
          "solve failed: " + (!sc.ok() ? sc.message : !sa.ok() ? sa.message : !sb.ok() ? sb.message : so.message));
    return;
  }
  const bool contrast = a.stats.densityContrast == cpu.stats.densityContrast &&
                        a.stats.meanDensity == cpu.stats.meanDensity &&
                        a.stats.densityContrast == o.signedSources();
  const double mp = std::fabs(a.stats.meanPotential - cpu.stats.meanPotential);
  double scale = 0;
  for (std::size_t i = 0; i < cells.size(); ++i) scale = std::max(scale, std::fabs(cpu.potential[i]));
  check(cx, name + "-conventions", contrast && mp <= kPotTol * scale,
        std::string("density contrast ") + (a.stats.densityContrast ? "on" : "off") + " (mean density " +
            sci(a.stats.meanDensity) + ", CPU " + sci(cpu.stats.meanDensity) + "); mean potential differs by " +
            sci(scale > 0 ? mp / scale : mp) + " of max |phi|");
  const double mg = momentumError(cells, a), mc = momentumError(cells, cpu);
  check(cx, name + "-momentum", mg <= kMomentumTol,
        "|sum m a| / sum |m a| = " + sci(mg) + " on the GPU (<= " + sci(kMomentumTol) + "), " + sci(mc) +
            " on the CPU");
  check(cx, name + "-repeat-bitwise", bitwiseEqual(a, b), "two GPU solves of the same cells: the same bits");
  check(cx, name + "-device-options-ignored", bitwiseEqual(a, off),
        before.fmmDevicePeriodic
            ? "the device's periodic path vs the host's (fmmDevicePeriodic, fmmDeviceSort, fmmDeviceLists and "
              "fmmDeviceTiles off or flipped): the same bits"
            : "fmmDeviceSort, fmmDeviceLists, fmmDeviceTiles flipped: the same bits (fmmDevicePeriodic off: the "
              "host's periodic path either way)");
}

/// The device's lists with image shifts (CudaOptions::fmmDevicePeriodic's walk) against the host's, on the host's
/// tree of a periodic box made as the CPU backend makes it (the sort, the contrast of a fully periodic box, the tree
/// with its dipole terms).
Status hostPeriodicTree(const Cells& cells, const SolveOptions& o, int threads, SortedCells& sorted,
                        fmm::FmmTree& tree) {
  RootCube root = chooseRootCube(cells.view(), o);
  std::vector<std::uint64_t> keys;
  AG_TRY(sortCellsByKey(cells.view(), root, sorted, keys, 0, false, threads));
  if (o.fullyPeriodic() && o.densityContrast)
    applyDensityContrast(sorted, o, fixedOrderSum(cells.m.data(), cells.size(), threads));
  return fmm::buildFmmTree(keys, root, sorted, o, threads, tree);
}

/// A case's host tree (hostPeriodicTree) and the box's periods in its scaled lengths; false (a failed check) if the
/// tree could not be built.
bool periodicCaseTree(Context& cx, const std::string& name, const Cells& cells, const SolveOptions& o, int threads,
                      SortedCells& sorted, fmm::FmmTree& tree, double period[3]) {
  const Status st = hostPeriodicTree(cells, o, threads, sorted, tree);
  if (!st.ok()) {
    check(cx, name, false, "host tree failed: " + st.message);
    return false;
  }
  for (int d = 0; d < 3; ++d) period[d] = o.periodic[d] ? (o.boxHi[d] - o.boxLo[d]) * sorted.scale : 0.0;
  return true;
}

void periodicListsCase(Context& cx, const std::string& name, const Cells& cells, const SolveOptions& o) {
  const int threads = resolveThreadCount(0);
  SortedCells sorted;
  fmm::FmmTree tree;
  double period[3];
  if (!periodicCaseTree(cx, name, cells, o, threads, sorted, tree, period)) return;
  fmm::FmmLists host, dev;
  const auto th = Clock::now();
  fmm::buildInteractionLists(tree, o.fmmTolerance, threads, host, period);
  const double hostSeconds = since(th);
  double devSeconds = 0;
  const Status sd = cx.gpu->fmmDeviceLists(tree, o.fmmTolerance, dev, &devSeconds, period);
  if (!sd.ok()) {
    check(cx, name, false, "device lists failed: " + sd.message);
    return;
  }
  std::string diff = fmm::listsDifference(host, dev);
  for (int d = 0; d < 3; ++d)
    if (host.period[d] != dev.period[d]) diff += "period differs; ";
  std::size_t shifted = 0;
  for (const std::uint8_t s : host.p2pShift) shifted += s != fmm::kNoShift ? 1 : 0;
  for (const std::uint8_t s : host.m2lShift) shifted += s != fmm::kNoShift ? 1 : 0;
  if (shifted == 0) diff += "no shifted entries; ";
  check(cx, name, diff.empty(),
        (diff.empty() ? std::string("device lists = host lists, every array with the shifts: ") : diff) +
            std::to_string(tree.nodeCount()) + " nodes, " + std::to_string(host.directedM2L) + " directed M2L, " +
            std::to_string(host.p2pA.size()) + " P2P pairs, " + std::to_string(shifted) + " shifted entries");
  cx.report.note("{\"kind\":\"fmm_periodic_lists_time\",\"case\":\"" + name + "\",\"nodes\":" +
                     std::to_string(tree.nodeCount()) + ",\"host_s\":" + num(hostSeconds) + ",\"device_s\":" +
                     num(devSeconds) + "}",
                 "# " + name + ": host walk " + ms(hostSeconds) + " (all threads), device " + ms(devSeconds));
}

/// The device's near lists and tiles with their shifts (CudaOptions::fmmDevicePeriodicTiles' build, from the device's
/// pairs with their shifts) against buildHostNearField over the host's lists with shifts, on the host's tree: every
/// array equal, the shifts with them.
void periodicTilesCase(Context& cx, const std::string& name, const Cells& cells, const SolveOptions& o) {
  const int threads = resolveThreadCount(0);
  SortedCells sorted;
  fmm::FmmTree tree;
  double period[3];
  if (!periodicCaseTree(cx, name, cells, o, threads, sorted, tree, period)) return;
  fmm::FmmLists lists;
  fmm::buildInteractionLists(tree, o.fmmTolerance, threads, lists, period);
  const auto th = Clock::now();
  const fmm::HostNearField hn = fmm::buildHostNearField(tree, lists, sorted, threads);
  const double hostSeconds = since(th);
  fmm::DeviceTiles dev;
  double devSeconds = 0;
  const Status sd = cx.gpu->fmmDeviceTiles(tree, sorted, o.fmmTolerance, dev, &devSeconds, period);
  if (!sd.ok()) {
    check(cx, name, false, "device tiles failed: " + sd.message);
    return;
  }
  std::string diff = fmm::tilesDifference(hn.near, hn.tiles, hn.irr, dev.near, dev.tiles, dev.irregular);
  if (hn.reg.regular != dev.reg.regular || hn.reg.h != dev.reg.h || hn.reg.origin != dev.reg.origin)
    diff += "regular leaves differ; ";
  std::size_t shifted = 0;
  for (const std::uint8_t s : hn.near.shift) shifted += s != fmm::kNoShift ? 1 : 0;
  if (hn.near.shift.size() != hn.near.source.size() || shifted == 0) diff += "no shifted near entries; ";
  const fmm::P2pTiles& t = hn.tiles;
  check(cx, name, diff.empty(),
        (diff.empty() ? std::string("device tiles with shifts = host tiles, every array: ") : diff) +
            std::to_string(hn.near.leaves.size()) + " leaves, " + std::to_string(shifted) + " shifted near entries, " +
            std::to_string(t.tiles()) + " tiles, " + std::to_string(t.slots.size()) + " tables, " +
            std::to_string(t.tableEntries) + " table / " + std::to_string(t.computedEntries) + " computed entries, " +
            std::to_string(t.irregular.size()) + " irregular leaves");
  cx.report.note("{\"kind\":\"fmm_periodic_tiles_time\",\"case\":\"" + name + "\",\"leaves\":" +
                     std::to_string(hn.near.leaves.size()) + ",\"host_s\":" + num(hostSeconds) + ",\"device_s\":" +
                     num(devSeconds) + "}",
                 "# " + name + ": host near field " + ms(hostSeconds) + " (all threads), device " + ms(devSeconds));
}

/// The device's periodic tree (CudaOptions::fmmDevicePeriodic with fmmDeviceTree: its sort, the contrast, the upward
/// pass with dipole terms, the signed scale, the norms) against buildFmmTree's on the host's sort, by bits; the scale
/// from the device's cells (deviceScale: CudaOptions::fmmDevicePeriodicFinish, cuda/fmm_scale_phase.h, its candidate
/// leaves reported) or the host's from its gathered cells.
void periodicTreeCase(Context& cx, const std::string& name, const Cells& cells, const SolveOptions& o,
                      bool deviceScale) {
  CudaBackend& gpu = *cx.gpu;
  const CudaOptions before = gpu.cudaOptions();
  CudaOptions co = before;
  co.fmmDevicePeriodicFinish = deviceScale;
  SortedCells sorted;
  fmm::FmmTree host, dev;
  const Status st = hostPeriodicTree(cells, o, resolveThreadCount(0), sorted, host);
  double seconds = 0;
  setDeviceOptions(gpu, co);
  const Status sd = st.ok() ? gpu.fmmDeviceTree(cells.view(), o, dev, &seconds) : st;
  const CudaStats cs = deviceStats(gpu);
  setDeviceOptions(gpu, before);
  if (!sd.ok()) {
    check(cx, name, false, "tree failed: " + sd.message);
    return;
  }
  const std::string diff = fmm::fmmTreeDifference(host, dev);
  const std::string scale =
      deviceScale ? "the device's cells' scale (" + std::to_string(cs.fmmScaleCandidates) + " candidate leaves, " +
                        std::to_string(cs.fmmScaleCandidateCells) + " cells down)"
                  : std::string("the host's gathered cells' scale");
  check(cx, name, diff.empty() && host.dipoles && !dev.lowBound.empty() && dev.lowBound[0] == host.lowBound[0],
        (diff.empty() ? std::string("device tree = host tree by bits (cube centres, M, MAC, scale, norms), ") : diff) +
            scale + ": " + std::to_string(host.nodeCount()) + " nodes, device " + ms(seconds));
}

/// CudaOptions::fmmDevicePeriodic (with the device's sort and lists, and the device's tree or the host's, and the
/// device's near tiles with fmmDevicePeriodicTiles or the host's) against the host periodic path on the same backend:
/// bitwise, with the same near-field counts; and against the CPU backend within the subject's tolerances.
void devicePeriodicCase(Context& cx, const std::string& name, const Cells& cells, const SolveOptions& o) {
  CudaBackend& gpu = *cx.gpu;
  const CudaOptions before = gpu.cudaOptions();
  CudaOptions off = before;
  off.fmmDevicePeriodic = false;
  SolveResult host;
  poison(host, cells.size(), o.accelerations);
  setDeviceOptions(gpu, off);
  const Status sh = gpu.solve(cells.view(), o, host);
  const CudaStats ch = deviceStats(gpu);
  struct Variant {
    bool sort, tree, tiles;
    const char* what;
    bool vsCpu;  ///< the CPU comparison too (the others are bitwise a variant that has it)
    bool finish = false;  ///< CudaOptions::fmmDevicePeriodicFinish: no host copy of the sorted cells
  };
  const Variant variants[] = {{true, false, false, "-host-tree", true},
                              {true, true, false, "-device-tree", true},
                              {true, true, true, "-device-tree-tiles", true},
                              {true, false, true, "-host-tree-tiles", false},
                              {false, false, true, "-host-sort-tiles", false},
                              {true, true, true, "-device-finish", true, true}};
  for (const Variant& va : variants) {
    CudaOptions on = before;
    on.fmmDevicePeriodic = on.fmmDeviceLists = true;
    on.fmmDeviceSort = va.sort;
    on.fmmDeviceTree = va.tree;
    on.fmmDevicePeriodicTiles = va.tiles;
    on.fmmDevicePeriodicFinish = va.finish;
    SolveResult dev;
    poison(dev, cells.size(), o.accelerations);
    setDeviceOptions(gpu, on);
    const Status sd = gpu.solve(cells.view(), o, dev);
    const CudaStats cs = deviceStats(gpu);
    const bool sameCounts = ch.fmmTiles == cs.fmmTiles && ch.fmmTileTargets == cs.fmmTileTargets &&
                            ch.fmmTables == cs.fmmTables && ch.fmmTableEntries == cs.fmmTableEntries &&
                            ch.fmmComputedEntries == cs.fmmComputedEntries &&
                            ch.fmmIrregularLeaves == cs.fmmIrregularLeaves;
    const std::string what = va.what;
    check(cx, name + what + "-vs-host-path-bitwise", sh.ok() && sd.ok() && sameCounts && bitwiseEqual(host, dev),
          sh.ok() && sd.ok() ? std::string("the device's ") + (va.sort ? "sort, " : "") + (va.tree ? "tree, " : "") +
                                   "lists with shifts (" + std::to_string(cs.fmmListRounds) +
                                   " rounds, largest frontier " + std::to_string(cs.fmmListMaxFrontier) +
                                   ", lists " + ms(cs.fmmListSeconds) + ", keys " + ms(cs.secondsKeys) + ", tree " +
                                   ms(cs.secondsMoments) + ")" + (va.tiles ? ", near tiles with shifts" : "") +
                                   " (build " + ms(cs.secondsBuild) + " vs " + ms(ch.secondsBuild) + ", " +
                                   std::to_string(cs.fmmTiles) + " tiles, " + std::to_string(cs.fmmTables) +
                                   " tables, " + std::to_string(cs.fmmIrregularLeaves) + " irregular leaves) vs the "
                                   "host's path: " + (sameCounts ? "the same counts" : "counts differ") + ", bits " +
                                   (bitwiseEqual(host, dev) ? "equal" : "differ")
                             : "solve failed: " + (sh.ok() ? sd.message : sh.message));
    if (va.finish && sh.ok() && sd.ok()) {  // the device's finish: the host's conventions, to rounding
      double scale = 0;
      for (const double p : host.potential) scale = std::max(scale, std::fabs(p));
      const double mp = std::fabs(dev.stats.meanPotential - host.stats.meanPotential);
      check(cx, name + what + "-conventions",
            dev.stats.meanDensity == host.stats.meanDensity &&
                dev.stats.densityContrast == host.stats.densityContrast && mp <= kPotTol * scale,
            std::string(cs.fmmPeriodicHostCells ? "the host's cells after all (leaves above the far frontier)"
                                                : "no host copy of the sorted cells") +
                ": " + std::to_string(cs.fmmScaleCandidates) + " candidate leaves (" +
                std::to_string(cs.fmmScaleCandidateCells) + " cells) down for the scale; mean density " +
                (dev.stats.meanDensity == host.stats.meanDensity ? "equal" : "differs") +
                ", the mean potential differs from the host finish's by " + sci(scale > 0 ? mp / scale : mp) +
                " of max |phi| (<= 1e-12: its sum's rounding, in the caller's order and units)");
    }
    if (va.vsCpu) parityCase(cx, name + what, cells, o, gpu, kPotTol, false, true, kAccTol);  // `on` still set
  }
  setDeviceOptions(gpu, before);
}

/// The near field's work of the last GPU solve, in words.
std::string p2pPaths(const CudaStats& cs) {
  return std::to_string(cs.fmmTileTargets) + " regular leaves in " + std::to_string(cs.fmmTiles) + " tiles, " +
         std::to_string(cs.fmmTables) + " tables, " + std::to_string(cs.fmmTableEntries) + " leaf pairs by table, " +
         std::to_string(cs.fmmComputedEntries) + " computed in tiles, " + std::to_string(cs.fmmIrregularLeaves) +
         " irregular leaves";
}

/// The M2L kernels other than the default (CudaOptions::fmmM2L, cuda/m2l_variants.h) with the dipole terms and image
/// shifts: fully periodic random densities at p 7 and p 4 and the AMR set at p 7, against the CPU.
void m2lVariants(Context& cx, const std::string& g, const Cells& random) {
  CudaBackend& gpu = *cx.gpu;
  forOtherM2LKernels(gpu, [&](int, const std::string& tag) {  // the default's cases are above
    parityCase(cx, "fmm-periodic-" + g + "-random-p7" + tag, random, fmmOptions(7, true, true, true), gpu, kPotTol,
               false, true, kAccTol);
    parityCase(cx, "fmm-periodic-" + g + "-random-p4" + tag, random, fmmOptions(4, true, true, true), gpu, kPotTol,
               false, true, kAccTol);
    parityCase(cx, "fmm-periodic-amr-p7" + tag, cx.amr(), fmmOptions(7, true, true, true), gpu, kPotTol, false, true,
               kAccTol);
  });
}

/// The computed near pairs in single precision (CudaOptions::fmmNearSingle, the backend's default; this tool runs
/// double otherwise), where the tiles' computed steps carry image shifts: fully periodic random densities at p 4
/// (their contrast) and the AMR set, and the AMR set in a sheet, against the CPU within the float pairs' bound of max
/// |phi| and of the rms acceleration (subject fmm's).
void nearSingleCases(Context& cx, const std::string& g, const Cells& random) {
  CudaBackend& gpu = *cx.gpu;
  const CudaOptions before = gpu.cudaOptions();
  CudaOptions co = before;
  co.fmmNearSingle = true;
  setDeviceOptions(gpu, co);
  parityCase(cx, "fmm-periodic-" + g + "-random-p4-near-single", random, fmmOptions(4, true, true, true), gpu,
             kNearSingleTol, false, true, kNearSingleTol);
  const CudaStats cs = deviceStats(gpu);
  check(cx, "fmm-periodic-" + g + "-near-single-computed", cs.fmmComputedEntries > 0, p2pPaths(cs));
  parityCase(cx, "fmm-periodic-amr-p7-near-single", cx.amr(), fmmOptions(7, true, true, true), gpu, kNearSingleTol,
             false, true, kNearSingleTol);
  parityCase(cx, "fmm-sheet-xy-amr-p7-near-single", cx.amr(), fmmOptions(7, true, true, false), gpu, kNearSingleTol,
             false, true, kNearSingleTol);
  setDeviceOptions(gpu, before);
}

}  // namespace

void runFmmPeriodic(Context& cx) {
  CudaBackend& gpu = *cx.gpu;
  const int n = cx.args.uniform;
  const std::string g = "grid" + std::to_string(n);
  const Cells sine = perturbedGrid(n, kKpc, 1e-24, 0.5);
  const Cells random = randomDensityGrid(n, cx.args.seed);
  // fully periodic: the contrast of a sine and of random densities, every path of the near field
  parityCase(cx, "fmm-periodic-" + g + "-sine-p7", sine, fmmOptions(7, true, true, true), gpu, kPotTol, false, true,
             kAccTol);
  parityCase(cx, "fmm-periodic-" + g + "-random-p7", random, fmmOptions(7, true, true, true), gpu, kPotTol, false,
             true, kAccTol);
  parityCase(cx, "fmm-periodic-" + g + "-random-p4", random, fmmOptions(4, true, true, true), gpu, kPotTol, false,
             true, kAccTol);
  {  // image pairs at whole leaves by table (at p 7 on 32^3 all of them), the farther ones of p 4 computed with their
     // shift in tiles; grids whose side is not a multiple of 8 have no 4^3 leaves (all irregular, computed, shifted)
    const CudaStats cs = deviceStats(gpu);
    const bool ok = n % 8 != 0 ? cs.fmmIrregularLeaves > 0
                               : cs.fmmTableEntries > 0 && (n < 32 || cs.fmmComputedEntries > 0);
    check(cx, "fmm-periodic-" + g + "-p2p-paths", ok, p2pPaths(cs));
  }
  {  // potentials only: the table steps on the tensor cores, computed steps with shifts beside them
    SolveOptions o = fmmOptions(7, true, true, true);
    o.accelerations = false;
    parityCase(cx, "fmm-periodic-" + g + "-random-pot", random, o, gpu, kPotTol, false, true, kAccTol);
  }
  parityCase(cx, "fmm-periodic-amr-p7", cx.amr(), fmmOptions(7, true, true, true), gpu, kPotTol, false, true, kAccTol);
  {
    const CudaStats cs = deviceStats(gpu);
    check(cx, "fmm-periodic-amr-p2p-irregular", cs.fmmIrregularLeaves > 0, p2pPaths(cs));
  }
  // partly periodic: a sheet and a line (no contrast: the masses as given)
  parityCase(cx, "fmm-sheet-xy-" + g + "-random-p7", random, fmmOptions(7, true, true, false), gpu, kPotTol, false,
             true, kAccTol);
  parityCase(cx, "fmm-line-z-amr-p7", cx.amr(), fmmOptions(7, false, false, true), gpu, kPotTol, false, true,
             kAccTol);
  nearSingleCases(cx, g, random);
  // the finish's conventions, momentum, determinism
  conventionsAndRepeat(cx, "fmm-periodic-" + g + "-sine", sine, fmmOptions(7, true, true, true));
  conventionsAndRepeat(cx, "fmm-periodic-amr", cx.amr(), fmmOptions(7, true, true, true));
  conventionsAndRepeat(cx, "fmm-sheet-xy-" + g, random, fmmOptions(7, true, true, false));
  conventionsAndRepeat(cx, "fmm-line-z-amr", cx.amr(), fmmOptions(7, false, false, true));
  // the other M2L kernels (CudaOptions::fmmM2L)
  m2lVariants(cx, g, random);
  // the device's periodic path (CudaOptions::fmmDevicePeriodic): its tree, its lists with shifts, then its solves
  for (const int p : {4, 7}) {
    const std::string ps = "-p" + std::to_string(p);
    for (const bool ds : {true, false}) {  // the scale from the device's cells (the default), or the host's
      const std::string sc = ds ? "" : "-hostscale";
      periodicTreeCase(cx, "fmm-periodic-tree-" + g + "-random" + ps + sc, random, fmmOptions(p, true, true, true),
                       ds);
      periodicTreeCase(cx, "fmm-periodic-tree-" + g + "-sine" + ps + sc, sine, fmmOptions(p, true, true, true), ds);
      periodicTreeCase(cx, "fmm-periodic-tree-amr" + ps + sc, cx.amr(), fmmOptions(p, true, true, true), ds);
      periodicTreeCase(cx, "fmm-sheet-tree-xy-" + g + "-random" + ps + sc, random, fmmOptions(p, true, true, false),
                       ds);
      periodicTreeCase(cx, "fmm-line-tree-z-amr" + ps + sc, cx.amr(), fmmOptions(p, false, false, true), ds);
    }
  }
  for (const int p : {4, 7}) {
    const std::string ps = "-p" + std::to_string(p);
    periodicListsCase(cx, "fmm-periodic-lists-" + g + "-random" + ps, random, fmmOptions(p, true, true, true));
    periodicListsCase(cx, "fmm-periodic-lists-amr" + ps, cx.amr(), fmmOptions(p, true, true, true));
    periodicListsCase(cx, "fmm-sheet-lists-xy-" + g + "-random" + ps, random, fmmOptions(p, true, true, false));
    periodicListsCase(cx, "fmm-line-lists-z-amr" + ps, cx.amr(), fmmOptions(p, false, false, true));
  }
  for (const int p : {4, 7}) {  // the device's near tiles with their shifts, array for array
    const std::string ps = "-p" + std::to_string(p);
    periodicTilesCase(cx, "fmm-periodic-tiles-" + g + "-random" + ps, random, fmmOptions(p, true, true, true));
    periodicTilesCase(cx, "fmm-periodic-tiles-amr" + ps, cx.amr(), fmmOptions(p, true, true, true));
    periodicTilesCase(cx, "fmm-sheet-tiles-xy-" + g + "-random" + ps, random, fmmOptions(p, true, true, false));
    periodicTilesCase(cx, "fmm-line-tiles-z-amr" + ps, cx.amr(), fmmOptions(p, false, false, true));
  }
  // a box of one 4^3 leaf (paired with its own images alone) and of 8^3 leaves (their own images by table)
  periodicTilesCase(cx, "fmm-periodic-tiles-grid4-p7", randomDensityGrid(4, cx.args.seed),
                    fmmOptions(7, true, true, true));
  periodicTilesCase(cx, "fmm-periodic-tiles-grid8-p7", randomDensityGrid(8, cx.args.seed),
                    fmmOptions(7, true, true, true));
  devicePeriodicCase(cx, "fmm-devperiodic-" + g + "-sine-p7", sine, fmmOptions(7, true, true, true));
  devicePeriodicCase(cx, "fmm-devperiodic-grid4-p7", randomDensityGrid(4, cx.args.seed),
                     fmmOptions(7, true, true, true));
  devicePeriodicCase(cx, "fmm-devperiodic-" + g + "-random-p4", random, fmmOptions(4, true, true, true));
  {
    SolveOptions o = fmmOptions(7, true, true, true);
    o.accelerations = false;
    devicePeriodicCase(cx, "fmm-devperiodic-" + g + "-random-pot", random, o);
  }
  devicePeriodicCase(cx, "fmm-devperiodic-amr-p7", cx.amr(), fmmOptions(7, true, true, true));
  devicePeriodicCase(cx, "fmm-devperiodic-sheet-xy-" + g + "-random-p7", random, fmmOptions(7, true, true, false));
  devicePeriodicCase(cx, "fmm-devperiodic-line-z-amr-p7", cx.amr(), fmmOptions(7, false, false, true));
  devicePeriodicCase(cx, "fmm-devperiodic-grid8-p7", randomDensityGrid(8, cx.args.seed),
                     fmmOptions(7, true, true, true));
  {  // the finish's conventions, momentum and determinism on the device's path
    CudaOptions co = gpu.cudaOptions();
    const CudaOptions before = co;
    co.fmmDevicePeriodic = co.fmmDeviceSort = co.fmmDeviceLists = co.fmmDeviceTree = true;
    co.fmmDevicePeriodicTiles = false;
    setDeviceOptions(gpu, co);
    conventionsAndRepeat(cx, "fmm-devperiodic-" + g + "-sine", sine, fmmOptions(7, true, true, true));
    conventionsAndRepeat(cx, "fmm-devperiodic-line-z-amr", cx.amr(), fmmOptions(7, false, false, true));
    co.fmmDevicePeriodicTiles = true;  // and with the device's near tiles, gathering the host's cells
    co.fmmDevicePeriodicFinish = false;
    setDeviceOptions(gpu, co);
    conventionsAndRepeat(cx, "fmm-devperiodic-tiles-" + g + "-sine", sine, fmmOptions(7, true, true, true));
    conventionsAndRepeat(cx, "fmm-devperiodic-tiles-line-z-amr", cx.amr(), fmmOptions(7, false, false, true));
    co.fmmDevicePeriodicFinish = true;  // and without: the scale from the device's cells, the device's finish
    setDeviceOptions(gpu, co);
    conventionsAndRepeat(cx, "fmm-devperiodic-finish-" + g + "-sine", sine, fmmOptions(7, true, true, true));
    conventionsAndRepeat(cx, "fmm-devperiodic-finish-" + g + "-random", random, fmmOptions(7, true, true, true));
    conventionsAndRepeat(cx, "fmm-devperiodic-finish-amr", cx.amr(), fmmOptions(7, true, true, true));
    conventionsAndRepeat(cx, "fmm-devperiodic-finish-line-z-amr", cx.amr(), fmmOptions(7, false, false, true));
    setDeviceOptions(gpu, before);
  }
}

}  // namespace amrgrav::parity
