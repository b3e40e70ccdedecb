/// \file paired.cpp
/// \brief Subject `paired`: the walk's paired evaluators (kernel_walk.cu; physics/interact_k.h PlanarTerms: a lane's
/// two cells sharing x and y take each list entry's x-y terms once). A solve with them must give every cell the bits
/// of the same solve without them (CudaOptions::pairedCells false), and must have used them (the paired groups'
/// count): potentials and accelerations, orders 1 and 2, a uniform grid, the AMR-like set, a periodic box on the
/// density contrast (dipole terms, the expansion's walk) and a sheet of masses as given.
#include <string>

#include "tools/parity/harness.h"

namespace amrgrav::parity {

namespace {

void pairedCase(Context& cx, const std::string& name, const Cells& cells, const SolveOptions& opt) {
  CudaBackend& gpu = *cx.gpu;
  const CudaOptions before = gpu.cudaOptions();
  CudaOptions on = before, off = before;
  on.pairedCells = true;
  off.pairedCells = false;
  SolveResult paired, plain;
  setDeviceOptions(gpu, on);
  const Status s1 = gpu.solve(cells.view(), opt, paired);
  const unsigned pairedGroups = deviceStats(gpu).pairedGroups;
  setDeviceOptions(gpu, off);
  const Status s0 = gpu.solve(cells.view(), opt, plain);
  const unsigned plainGroups = deviceStats(gpu).pairedGroups;
  setDeviceOptions(gpu, before);
  if (!s1.ok() || !s0.ok()) {
    check(cx, "paired-" + name, false, !s1.ok() ? s1.message : s0.message);
    return;
  }
  const bool same = bitwiseEqual(paired, plain);
  check(cx, "paired-" + name, same && pairedGroups > 0 && plainGroups == 0,
        std::string(same ? "bitwise the unpaired solve" : "DIFFERS from the unpaired solve") + ", " +
            std::to_string(pairedGroups) + " of " + std::to_string(paired.stats.groups) + " groups paired (off: " +
            std::to_string(plainGroups) + ")");
}

}  // namespace

void runPaired(Context& cx) {
  const SolveOptions base = Context::base();  // order 2, accelerations
  SolveOptions o = base;
  pairedCase(cx, "uniform-o2-acc", cx.uniform(), o);
  o.accelerations = false;
  pairedCase(cx, "uniform-o2-pot", cx.uniform(), o);
  o.order = 1;
  pairedCase(cx, "uniform-o1-pot", cx.uniform(), o);
  o = base;
  pairedCase(cx, "amr-o2-acc", cx.amr(), o);
  o.accelerations = false;
  pairedCase(cx, "amr-o2-pot", cx.amr(), o);
  // periodic boxes pair the groups that take the Ewald expansion (the per-pair kernel does not): groups of 64 do
  // from 64^3 up at the default table (physics/image_k.h ewaldGroupExpands); --quick's 32^3 takes a coarser table
  // (16 points per half period) so that they do
  const int side = cx.args.uniform >= 32 ? 64 : 32;
  const Cells contrast = perturbedGrid(side, kKpc, 1e-24, 1e-6);
  SolveOptions periodic = periodicBox(base, true, true, true);
  if (side < 64) periodic.ewaldResolution = 16;
  o = periodic;
  pairedCase(cx, "periodic-contrast-o2-acc", contrast, o);
  o.accelerations = false;
  pairedCase(cx, "periodic-contrast-o2-pot", contrast, o);
  o = periodicBox(periodic, true, true, false);
  o.densityContrast = false;
  o.accelerations = false;
  pairedCase(cx, "sheet-masses-o2-pot", contrast, o);
}

}  // namespace amrgrav::parity
