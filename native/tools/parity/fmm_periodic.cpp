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
/// sort, lists and tiles options (isolated boxes only) ignored here: the same bits with them on or off.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>

#include "cuda/m2l_variants.h"
#include "tools/parity/harness.h"

namespace amrgrav::parity {
namespace {

constexpr double kPotTol = 1e-12;  // of max |phi|: the isolated subject's per-cell 1e-12, for potentials crossing 0
constexpr double kAccTol = 1e-11;  // of the rms acceleration
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
  co.fmmDeviceSort = !before.fmmDeviceSort;
  co.fmmDeviceLists = !before.fmmDeviceLists;
  co.fmmDeviceTiles = !before.fmmDeviceTiles;
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
        "fmmDeviceSort, fmmDeviceLists, fmmDeviceTiles flipped: the same bits (periodic boxes take the host's)");
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
  const CudaOptions before = gpu.cudaOptions();
  for (int var = 0; var < cuda::kFmmM2LVariants; ++var) {
    if (var == before.fmmM2L) continue;  // the cases above
    CudaOptions co = before;
    co.fmmM2L = var;
    setDeviceOptions(gpu, co);
    const std::string tag = std::string("-m2l-") + cuda::fmmM2LVariantName(var);
    parityCase(cx, "fmm-periodic-" + g + "-random-p7" + tag, random, fmmOptions(7, true, true, true), gpu, kPotTol,
               false, true, kAccTol);
    parityCase(cx, "fmm-periodic-" + g + "-random-p4" + tag, random, fmmOptions(4, true, true, true), gpu, kPotTol,
               false, true, kAccTol);
    parityCase(cx, "fmm-periodic-amr-p7" + tag, cx.amr(), fmmOptions(7, true, true, true), gpu, kPotTol, false, true,
               kAccTol);
  }
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
  // the finish's conventions, momentum, determinism
  conventionsAndRepeat(cx, "fmm-periodic-" + g + "-sine", sine, fmmOptions(7, true, true, true));
  conventionsAndRepeat(cx, "fmm-periodic-amr", cx.amr(), fmmOptions(7, true, true, true));
  conventionsAndRepeat(cx, "fmm-sheet-xy-" + g, random, fmmOptions(7, true, true, false));
  conventionsAndRepeat(cx, "fmm-line-z-amr", cx.amr(), fmmOptions(7, false, false, true));
  // the other M2L kernels (CudaOptions::fmmM2L)
  m2lVariants(cx, g, random);
}

}  // namespace amrgrav::parity
