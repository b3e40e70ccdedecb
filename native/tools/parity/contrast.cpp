/// \file contrast.cpp
/// \brief Subject `contrast` (issue #21): signed sources in a periodic box. The density contrast of a 1e-6
/// perturbation (per-pair lookups and the expansion), and the masses as given (centres of mass): CPU vs CUDA,
/// identical lists, potentials within tol of the largest.
#include "tools/parity/harness.h"

namespace amrgrav::parity {

void runContrast(Context& cx) {
  CudaBackend& gpu = *cx.gpu;
  const double tol = cx.args.tol;
  const SolveOptions base = Context::base();
  const Cells small = perturbedGrid(cx.args.uniform >= 32 ? 64 : cx.args.uniform, kKpc, 1e-24, 1e-6);
  SolveOptions o = periodicBox(base, true, true, true);
  parityCase(cx, "periodic-contrast-1e-6-o2-acc", small, o, gpu, tol);
  o.groupSize = 8;
  o.accelerations = false;
  parityCase(cx, "periodic-contrast-1e-6-expand-o2-pot", small, o, gpu, tol);
  o = periodicBox(base, true, true, true);
  o.densityContrast = false;
  parityCase(cx, "periodic-masses-o2-acc", cx.periodicGrid(), o, gpu, tol);
}

}  // namespace amrgrav::parity
