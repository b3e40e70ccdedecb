/// \file fmm.cpp
/// \brief Subject `fmm`: method 'fmm' on the CUDA backend (GPU stage 1, issue #20: the tree, multipoles and lists
/// built on the host by the CPU's code, the evaluation on the device) against the CPU backend's FMM. Both evaluate
/// the same lists in double, so they differ by summation order only: potentials within 1e-12 per cell, accelerations
/// within 1e-11 of their rms, and the same M2L and P2P counts, nodes, leaves and depth (the same lists). Cases: a
/// uniform grid (--uniform, 32^3 by default) of random masses at every order 3..7, and the clustered AMR-like set
/// (--amr); the near field's paths they took (fmm/p2p_tiles.h: the uniform grid all by table, the AMR set by table
/// and computed); potentials only (the table steps on the tensor cores) on both sets, the AMR set's tiles with
/// computed steps; momentum |sum m a| / sum |m a| <= 1e-6 on the GPU (issue #20); two GPU solves bitwise equal (with
/// and without accelerations); the host block entry against the CPU's (periodic boxes: subject fmm-periodic,
/// fmm_periodic.cpp). The tool runs the computed near pairs in double (device.h cudaOpts); the backend's default,
/// single precision (CudaOptions::fmmNearSingle), has its own cases on the AMR set (near-single: within 1e-6 of the
/// CPU, masses beyond float's range, momentum, bitwise twice).
/// The device's root cube and sort (CudaOptions::fmmDeviceSort, the default) against the host's (chooseRootCube,
/// sortCellsByKey) on the random grid and the AMR set: the same root, order, keys and sorted cells, every array of
/// the FmmTree built from each bitwise equal, method 'fmm' with each sort the same bits (with and without
/// accelerations), and bad or coincident cells refused with the host sort's code and message.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "cuda/m2l_variants.h"
#include "fmm/fmm_tree.h"
#include "tools/parity/harness.h"
#include "tree/tree.h"

namespace amrgrav::parity {
namespace {

// A host emulation of the device kernels (their loops in the same order, 1/sqrt correctly rounded) agreed with the
// CPU to 4e-15 .. 3e-14 (pot and acc/rms) on uniform grids and two-level AMR meshes at orders 4 and 7, once the CPU's
// own 1/sqrt was accurate (fmm/simd.h vrsqrt, four Newton steps): these leave two orders of magnitude for FMA.
constexpr double kPotTol = 1e-12;  // per cell
constexpr double kAccTol = 1e-11;  // of the rms acceleration (cells where a ~ 0 make a per-cell ratio meaningless)
constexpr double kMomentumTol = 1e-6;
// The computed near pairs in single precision (fmm/near_single_k.h): a pair within a few float roundings (~3e-7), the
// near field a part of phi; native/tests/fmm_near_single.cpp bounds a batch's sums at 1e-6 of sum |m| / r.
constexpr double kNearSinglePotTol = 1e-6;  // per cell
constexpr double kNearSingleAccTol = 1e-6;  // of the rms acceleration


SolveOptions fmmOptions(int order) {
  SolveOptions o;
  o.method = SolveMethod::Fmm;
  o.fmmOrder = order;
  o.accelerations = true;
  return o;
}

/// |sum m a| / sum |m a| of a result (the momentum the forces do not conserve, relative).
double momentumError(const Cells& c, const SolveResult& r) {
  double s[3] = {0, 0, 0}, a = 0;
  for (std::size_t i = 0; i < c.size(); ++i) {
    const double f[3] = {c.m[i] * r.ax[i], c.m[i] * r.ay[i], c.m[i] * r.az[i]};
    for (int d = 0; d < 3; ++d) s[d] += f[d];
    a += std::sqrt(f[0] * f[0] + f[1] * f[1] + f[2] * f[2]);
  }
  return a > 0 ? std::sqrt(s[0] * s[0] + s[1] * s[1] + s[2] * s[2]) / a : 0.0;
}

std::string sci(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2e", v);
  return b;
}

/// The near field's work of the last GPU solve, in words.
std::string p2pPaths(const CudaStats& cs) {
  return std::to_string(cs.fmmTileTargets) + " regular leaves in " + std::to_string(cs.fmmTiles) + " tiles, " +
         std::to_string(cs.fmmTables) + " tables, " + std::to_string(cs.fmmTableEntries) + " leaf pairs by table, " +
         std::to_string(cs.fmmComputedEntries) + " computed in tiles, " + std::to_string(cs.fmmIrregularLeaves) +
         " irregular leaves";
}

/// Momentum on both backends and two GPU solves bitwise equal.
void momentumAndRepeat(Context& cx, const std::string& name, const Cells& cells, const SolveOptions& o) {
  SolveResult cpu, a, b;
  poison(cpu, cells.size(), true);
  poison(a, cells.size(), true);
  poison(b, cells.size(), true);
  const Status sc = cx.cpu->solve(cells.view(), o, cpu);
  const Status sa = cx.gpu->solve(cells.view(), o, a);
  const Status sb = cx.gpu->solve(cells.view(), o, b);
  if (!sc.ok() || !sa.ok() || !sb.ok()) {
    check(cx, name + "-momentum", false,
          "solve failed: " + (!sc.ok() ? sc.message : !sa.ok() ? sa.message : sb.message));
    return;
  }
  const double mg = momentumError(cells, a), mc = momentumError(cells, cpu);
  check(cx, name + "-momentum", mg <= kMomentumTol,
        "|sum m a| / sum |m a| = " + sci(mg) + " on the GPU (<= " + sci(kMomentumTol) + "), " + sci(mc) +
            " on the CPU");
  check(cx, name + "-repeat-bitwise", bitwiseEqual(a, b), "two GPU solves of the same cells: the same bits");
}

/// Two GPU solves of the same cells and options: the same bits.
void repeatBitwise(Context& cx, const std::string& name, const Cells& cells, const SolveOptions& o) {
  SolveResult a, b;
  poison(a, cells.size(), o.accelerations);
  poison(b, cells.size(), o.accelerations);
  const Status sa = cx.gpu->solve(cells.view(), o, a);
  const Status sb = cx.gpu->solve(cells.view(), o, b);
  check(cx, name + "-repeat-bitwise", sa.ok() && sb.ok() && bitwiseEqual(a, b),
        sa.ok() && sb.ok() ? "two GPU solves of the same cells: the same bits"
                           : "solve failed: " + (sa.ok() ? sb.message : sa.message));
}

template <class T>
bool sameBits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

bool sameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

bool sameRoot(const RootCube& a, const RootCube& b) {
  return sameBits(a.side, b.side) && sameBits(a.lo[0], b.lo[0]) && sameBits(a.lo[1], b.lo[1]) &&
         sameBits(a.lo[2], b.lo[2]);
}

/// The names of the sorted cells' arrays that differ ("" when all are bitwise equal).
std::string sortedDifference(const SortedCells& a, const SortedCells& b) {
  std::string d;
  if (!sameBits(a.order, b.order)) d += " order";
  if (!sameBits(a.x, b.x)) d += " x";
  if (!sameBits(a.y, b.y)) d += " y";
  if (!sameBits(a.z, b.z)) d += " z";
  if (!sameBits(a.mass, b.mass)) d += " mass";
  if (!sameBits(a.size, b.size)) d += " size";
  if (!sameBits(a.scale, b.scale)) d += " scale";
  return d;
}

/// The names of the FmmTree's members that differ ("" when every array and number is bitwise equal).
std::string treeDifference(const fmm::FmmTree& a, const fmm::FmmTree& b) {
  std::string d;
  const Octree &p = a.topo, &q = b.topo;
  if (!sameRoot(p.root, q.root)) d += " topo.root";
  if (p.depth != q.depth) d += " topo.depth";
  if (!sameBits(p.cellBegin, q.cellBegin)) d += " topo.cellBegin";
  if (!sameBits(p.cellCount, q.cellCount)) d += " topo.cellCount";
  if (!sameBits(p.childBegin, q.childBegin)) d += " topo.childBegin";
  if (!sameBits(p.childCount, q.childCount)) d += " topo.childCount";
  if (!sameBits(p.level, q.level)) d += " topo.level";
  if (!sameBits(p.centre, q.centre)) d += " topo.centre";
  if (!sameBits(p.mass, q.mass) || !sameBits(p.com, q.com) || !sameBits(p.quad, q.quad) ||
      !sameBits(p.dipole, q.dipole) || !sameBits(p.extentLo, q.extentLo) || !sameBits(p.extentHi, q.extentHi) ||
      !sameBits(p.macRadius, q.macRadius))
    d += " topo.moments";
  if (a.order != b.order || a.terms != b.terms || a.mStride != b.mStride || a.dipoles != b.dipoles) d += " shape";
  if (!sameBits(a.levelBegin, b.levelBegin)) d += " levelBegin";
  if (!sameBits(a.centre, b.centre)) d += " centre";
  if (!sameBits(a.radius, b.radius)) d += " radius";
  if (!sameBits(a.critical, b.critical)) d += " critical";
  if (!sameBits(a.absMass, b.absMass)) d += " absMass";
  if (!sameBits(a.lowBound, b.lowBound)) d += " lowBound";
  if (!sameBits(a.norms, b.norms)) d += " norms";
  if (!sameBits(a.M, b.M)) d += " M";
  if (!sameBits(a.L, b.L)) d += " L";
  return d;
}

/// A solve of `cells` with the device's sort on or off (the other options as before); restores them.
Status solveWithSort(CudaBackend& gpu, const Cells& cells, const SolveOptions& o, bool deviceSort, SolveResult& r) {
  const CudaOptions before = gpu.cudaOptions();
  CudaOptions co = before;
  co.fmmDeviceSort = deviceSort;
  setDeviceOptions(gpu, co);
  poison(r, cells.size(), o.accelerations);
  const Status st = gpu.solve(cells.view(), o, r);
  setDeviceOptions(gpu, before);
  return st;
}

/// The device's sort against the host's on one set (see the file's comment): what the host's tree gets, the tree,
/// and the solves.
void deviceSortCase(Context& cx, const std::string& name, const Cells& cells) {
  CudaBackend& gpu = *cx.gpu;
  const SolveOptions o = fmmOptions(7);
  const int threads = resolveThreadCount(0);
  RootCube hostRoot = chooseRootCube(cells.view(), o), devRoot;
  SortedCells hostSorted, devSorted;
  std::vector<std::uint64_t> hostKeys, devKeys;
  const auto th = Clock::now();
  const Status sh = sortCellsByKey(cells.view(), hostRoot, hostSorted, hostKeys, 0, false, threads);
  const double hostSeconds = since(th);
  double devSeconds = 0;
  const Status sd = gpu.fmmDeviceSort(cells.view(), o, devRoot, devSorted, devKeys, &devSeconds);
  if (!sh.ok() || !sd.ok()) {
    check(cx, name + "-device-sort", false, "sort failed: " + (sh.ok() ? sd.message : sh.message));
    return;
  }
  const std::string sorted = sortedDifference(hostSorted, devSorted);
  const bool sameKeys = sameBits(hostKeys, devKeys), root = sameRoot(hostRoot, devRoot);
  check(cx, name + "-device-sort", sorted.empty() && sameKeys && root,
        sorted.empty() && sameKeys && root
            ? "the device's root cube, order, keys and sorted cells = the host's, bit for bit (" +
                  std::to_string(cells.size()) + " cells; host " + std::to_string(hostSeconds * 1e3).substr(0, 7) +
                  " ms on " + std::to_string(threads) + " threads, device " +
                  std::to_string(devSeconds * 1e3).substr(0, 7) + " ms with the upload and the host's gather)"
            : "differ:" + sorted + (sameKeys ? "" : " keys") + (root ? "" : " root"));

  fmm::FmmTree hostTree, devTree;
  const Status th2 = fmm::buildFmmTree(hostKeys, hostRoot, hostSorted, o, threads, hostTree);
  const Status td = fmm::buildFmmTree(devKeys, devRoot, devSorted, o, threads, devTree);
  const std::string tree = th2.ok() && td.ok() ? treeDifference(hostTree, devTree) : "";
  check(cx, name + "-device-sort-tree", th2.ok() && td.ok() && tree.empty(),
        !th2.ok() || !td.ok() ? "tree failed: " + (th2.ok() ? td.message : th2.message)
        : tree.empty()        ? "the FmmTree over the device's sort = the host's, every array (" +
                             std::to_string(hostTree.nodeCount()) + " nodes, depth " +
                             std::to_string(hostTree.topo.depth) + ")"
                              : "arrays differ:" + tree);

  for (const bool accel : {true, false}) {
    SolveOptions so = o;
    so.accelerations = accel;
    SolveResult rh, rd;
    const Status a = solveWithSort(gpu, cells, so, false, rh);
    const Status b = solveWithSort(gpu, cells, so, true, rd);
    const bool counts = rh.stats.nodes == rd.stats.nodes && rh.stats.leaves == rd.stats.leaves &&
                        rh.stats.approxInteractions == rd.stats.approxInteractions &&
                        rh.stats.directInteractions == rd.stats.directInteractions;
    check(cx, name + (accel ? "-device-sort-solve" : "-device-sort-solve-pot"),
          a.ok() && b.ok() && bitwiseEqual(rh, rd) && counts,
          a.ok() && b.ok() ? std::string("method 'fmm' with the device's sort vs the host's: ") +
                                 (bitwiseEqual(rh, rd) ? "the same bits" : "results differ") +
                                 (counts ? ", the same counts" : ", counts differ")
                           : "solve failed: " + (a.ok() ? b.message : a.message));
  }
}

/// Bad and coincident cells with the device's sort: the host sort's code and message (the solve's errors as the
/// CPU backend's).
void deviceSortErrors(Context& cx, const Cells& grid) {
  const SolveOptions o = fmmOptions(7);
  auto same = [&](const std::string& name, const Cells& cells) {
    SolveResult rh, rd;
    const Status a = solveWithSort(*cx.gpu, cells, o, false, rh);
    const Status b = solveWithSort(*cx.gpu, cells, o, true, rd);
    check(cx, name, !a.ok() && a.code == b.code && a.message == b.message,
          "host sort: " + std::string(errorCodeName(a.code)) + ": " + a.message + "; device sort: " +
              errorCodeName(b.code) + ": " + b.message);
  };
  Cells c = grid;
  c.x[7] = c.x[3];
  c.y[7] = c.y[3];
  c.z[7] = c.z[3];
  same("fmm-device-sort-coincident", c);
  c = grid;
  c.m[11] = std::nan("");
  same("fmm-device-sort-bad-mass", c);
  c = grid;
  c.h[5] = -1;
  same("fmm-device-sort-bad-size", c);
}

/// The M2L kernels other than the default (CudaOptions::fmmM2L, cuda/m2l_variants.h) against the CPU at every order
/// on the grid and at p 7 on the AMR set, and against the default kernel at p 7 (the same products and sums in the
/// same order: within 1e-13; the staged ones the same bits unless ptxas contracted differently, the direct ones not).
void m2lVariants(Context& cx, const std::string& g, const Cells& grid) {
  CudaBackend& gpu = *cx.gpu;
  const CudaOptions before = gpu.cudaOptions();
  forOtherM2LKernels(gpu, [&](int, const std::string& tag) {  // the default's cases are above
    for (int p = 3; p <= 7; ++p)
      parityCase(cx, "fmm-" + g + "-p" + std::to_string(p) + tag, grid, fmmOptions(p), gpu, kPotTol, false, true,
                 kAccTol);
    parityCase(cx, "fmm-amr-p7" + tag, cx.amr(), fmmOptions(7), gpu, kPotTol, false, true, kAccTol);
    SolveResult a, b;
    poison(a, grid.size(), true);
    poison(b, grid.size(), true);
    const Status sa = gpu.solve(grid.view(), fmmOptions(7), a);
    setDeviceOptions(gpu, before);
    const Status sb = gpu.solve(grid.view(), fmmOptions(7), b);
    if (!sa.ok() || !sb.ok()) {
      check(cx, "fmm-" + g + "-p7" + tag + "-vs-default", false, "solve failed: " + (sa.ok() ? sb.message : sa.message));
      return;
    }
    const Diff d = compare(b, a, true);
    const bool same = bitwiseEqual(a, b);
    check(cx, "fmm-" + g + "-p7" + tag + "-vs-default", d.finite && d.pot <= 1e-13 && d.accRms <= 1e-13,
          same ? std::string("the same bits as the default kernel's (") + cuda::fmmM2LVariantName(before.fmmM2L) + ")"
               : "potentials within " + sci(d.pot) + ", accelerations " + sci(d.accRms) +
                     " of the rms from the default kernel's (not bitwise: the direct variants round the derivatives"
                     " otherwise)");
  });
}

/// The accelerations' table steps on FMAs (CudaOptions::fmmAccelTablesMma off: fmmP2PTiles<true>, the measurement
/// knob's kernel) against the CPU, as the default tensor-core kernel's cases above.
void accelTableFmaKernel(Context& cx, const std::string& g, const Cells& grid) {
  CudaBackend& gpu = *cx.gpu;
  const CudaOptions before = gpu.cudaOptions();
  CudaOptions co = before;
  co.fmmAccelTablesMma = false;
  setDeviceOptions(gpu, co);
  parityCase(cx, "fmm-" + g + "-p7-accel-fma", grid, fmmOptions(7), gpu, kPotTol, false, true, kAccTol);
  parityCase(cx, "fmm-amr-p7-accel-fma", cx.amr(), fmmOptions(7), gpu, kPotTol, false, true, kAccTol);
  setDeviceOptions(gpu, before);
}

/// The near field's computed pairs in single precision (CudaOptions::fmmNearSingle: the backend's default; this tool
/// runs double otherwise) on the AMR set, whose tiles hold computed steps: against the CPU within the float pairs'
/// bound (kNearSinglePotTol per cell, kNearSingleAccTol of the rms; the double kernel: 1e-12), with potentials only
/// and with accelerations, with every mass times 2^200 and 2^-200 (beyond float's range: the batches' scales), momentum
/// and two solves bitwise.
void nearSingleCases(Context& cx) {
  CudaBackend& gpu = *cx.gpu;
  const CudaOptions before = gpu.cudaOptions();
  CudaOptions co = before;
  co.fmmNearSingle = true;
  setDeviceOptions(gpu, co);
  parityCase(cx, "fmm-amr-p7-near-single", cx.amr(), fmmOptions(7), gpu, kNearSinglePotTol, false, true,
             kNearSingleAccTol);
  {
    const CudaStats cs = deviceStats(gpu);
    check(cx, "fmm-amr-near-single-computed", cs.fmmComputedEntries > 0, p2pPaths(cs));
  }
  SolveOptions pot = fmmOptions(7);
  pot.accelerations = false;
  parityCase(cx, "fmm-amr-p7-pot-near-single", cx.amr(), pot, gpu, kNearSinglePotTol, false, true, kNearSingleAccTol);
  for (const int e : {200, -200}) {  // the results scale with the masses: the same bounds
    Cells scaled = cx.amr();
    for (double& m : scaled.m) m = std::ldexp(m, e);
    parityCase(cx, "fmm-amr-p7-near-single-mass-2^" + std::to_string(e), scaled, fmmOptions(7), gpu,
               kNearSinglePotTol, false, true, kNearSingleAccTol);
  }
  momentumAndRepeat(cx, "fmm-amr-near-single", cx.amr(), fmmOptions(7));
  setDeviceOptions(gpu, before);
}

}  // namespace

void runFmm(Context& cx) {
  CudaBackend& gpu = *cx.gpu;
  const int n = cx.args.uniform;
  const Cells grid = randomDensityGrid(n, cx.args.seed);
  const std::string g = "grid" + std::to_string(n) + "-random";
  // every order's M2L kernel; the default (7) also on the AMR-like set
  for (int p = 3; p <= 7; ++p)
    parityCase(cx, "fmm-" + g + "-p" + std::to_string(p), grid, fmmOptions(p), gpu, kPotTol, false, true, kAccTol);
  {  // the near field's paths that the parity above covered (fmm/p2p_tiles.h): a uniform grid of whole leaves (4^3
     // cells) is all tables
    const CudaStats cs = deviceStats(gpu);
    const bool all = cs.fmmIrregularLeaves == 0 && cs.fmmComputedEntries == 0;
    check(cx, "fmm-" + g + "-p2p-tables", cs.fmmTableEntries > 0 && (all || n % 4 != 0), p2pPaths(cs));
  }
  {
    SolveOptions o = fmmOptions(7);
    o.accelerations = false;
    o.fmmTheta = 0.5;
    o.fmmTolerance = 0;
    parityCase(cx, "fmm-" + g + "-pot-theta0.5-tol0", grid, o, gpu, kPotTol, false, true, kAccTol);
  }
  parityCase(cx, "fmm-amr-p7", cx.amr(), fmmOptions(7), gpu, kPotTol, false, true, kAccTol);
  {  // an AMR mesh mixes them: tables, computed pairs in tiles, irregular leaves
    const CudaStats cs = deviceStats(gpu);
    check(cx, "fmm-amr-p2p-mixed", cs.fmmTableEntries > 0 && (cs.fmmComputedEntries > 0 || cs.fmmIrregularLeaves > 0),
          p2pPaths(cs));
  }
  {  // potentials only: the table steps on the tensor cores (cuda/kernel_fmm.cu fmmP2PTilesMma), here with computed
     // steps in tiles and irregular leaves too
    SolveOptions o = fmmOptions(7);
    o.accelerations = false;
    parityCase(cx, "fmm-amr-p7-pot", cx.amr(), o, gpu, kPotTol, false, true, kAccTol);
    const CudaStats cs = deviceStats(gpu);
    check(cx, "fmm-amr-pot-p2p-mixed",
          cs.fmmTableEntries > 0 && cs.fmmComputedEntries > 0 && cs.fmmIrregularLeaves > 0, p2pPaths(cs));
    repeatBitwise(cx, "fmm-" + g + "-pot", grid, o);
    repeatBitwise(cx, "fmm-amr-pot", cx.amr(), o);
  }
  momentumAndRepeat(cx, "fmm-" + g, grid, fmmOptions(7));
  momentumAndRepeat(cx, "fmm-amr", cx.amr(), fmmOptions(7));
  // the other M2L kernels (CudaOptions::fmmM2L)
  m2lVariants(cx, g, grid);
  accelTableFmaKernel(cx, g, grid);
  nearSingleCases(cx);

  // the device's sort (the default) against the host's
  deviceSortCase(cx, "fmm-" + g, grid);
  deviceSortCase(cx, "fmm-amr", cx.amr());
  deviceSortErrors(cx, grid);

  // the host block entry (the blocks' cells made on the host, then the cell solve) on both backends
  {
    const int nb = 2, bs = 8;  // 2^3 blocks of 8^3 cells on [0, 1)^3
    const std::size_t blocks = std::size_t(nb) * nb * nb, nc = blocks * bs * bs * bs;
    std::vector<double> lo(3 * blocks), dx(3 * blocks), rho(nc);
    std::mt19937_64 rng(cx.args.seed);
    std::uniform_real_distribution<double> f(0.5, 1.5);
    for (double& r : rho) r = f(rng);
    const double h = 1.0 / (nb * bs);
    for (std::size_t b = 0; b < blocks; ++b) {
      lo[3 * b] = double(b % nb) * bs * h;
      lo[3 * b + 1] = double(b / nb % nb) * bs * h;
      lo[3 * b + 2] = double(b / (nb * nb)) * bs * h;
      for (int d = 0; d < 3; ++d) dx[3 * b + d] = h;
    }
    BlocksView v;
    v.nBlocks = blocks;
    v.nxb = v.nyb = v.nzb = bs;
    v.lo = lo.data();
    v.dx = dx.data();
    v.density = rho.data();
    std::vector<double> res[2][4];
    for (auto& side : res)
      for (auto& a : side) a.assign(nc, std::nan(""));
    SolveOptions o = fmmOptions(7);
    o.G = 1;
    SolveResult rc, rg;
    const Status sc = cx.cpu->solveBlocks(v, BlockOutputs{res[0][0].data(), res[0][1].data(), res[0][2].data(),
                                                          res[0][3].data()}, o, rc);
    const Status sg = gpu.solveBlocks(v, BlockOutputs{res[1][0].data(), res[1][1].data(), res[1][2].data(),
                                                      res[1][3].data()}, o, rg);
    double pot = 0, acc = 0, rms = 0;
    for (std::size_t i = 0; i < nc; ++i) {
      pot = std::max(pot, std::fabs(res[1][0][i] - res[0][0][i]) / std::fabs(res[0][0][i]));
      double e = 0;
      for (int d = 1; d < 4; ++d) {
        e += (res[1][d][i] - res[0][d][i]) * (res[1][d][i] - res[0][d][i]);
        rms += res[0][d][i] * res[0][d][i];
      }
      acc = std::max(acc, std::sqrt(e));
      if (!std::isfinite(res[1][0][i] + res[1][1][i] + res[1][2][i] + res[1][3][i])) pot = INFINITY;
    }
    acc /= std::sqrt(rms / double(nc));
    check(cx, "fmm-host-blocks", sc.ok() && sg.ok() && pot <= kPotTol && acc <= kAccTol,
          sc.ok() && sg.ok() ? "the host block entry, CUDA vs CPU: pot " + sci(pot) + ", acc/rms " + sci(acc)
                             : "solve failed: " + (sc.ok() ? sg.message : sc.message));
  }

}

}  // namespace amrgrav::parity
