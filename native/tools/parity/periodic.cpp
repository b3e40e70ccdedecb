/// \file periodic.cpp
/// \brief Subject `periodic` (issue #6): the Ewald walk on both backends in periodic boxes (all three axes, x-y, z
/// only), through the expansion about each group's centre and through per-pair lookups, on a uniform grid and the
/// clustered set, box and vote walks; identical interaction lists, potentials within tol of the largest. And the
/// gap the expansion costs against per-pair lookups on the GPU.
#include <algorithm>
#include <string>

#include "tools/parity/harness.h"

namespace amrgrav::parity {

void runPeriodic(Context& cx) {
  CudaBackend& gpu = *cx.gpu;
  const double tol = cx.args.tol;
  const SolveOptions base = Context::base();
  const Cells& uni = cx.periodicGrid();
  SolveOptions o = periodicBox(base, true, true, true);
  o.groupSize = 8;
  parityCase(cx, "periodic-expand-o2-acc", uni, o, gpu, tol);
  o.accelerations = false;
  parityCase(cx, "periodic-expand-o2-pot", uni, o, gpu, tol);
  o.order = 1;
  parityCase(cx, "periodic-expand-o1-pot", uni, o, gpu, tol);
  // the default groups of 64: on the 64^3 grid they expand (2.3 table spacings), and forced per pair
  o = periodicBox(base, true, true, true);
  parityCase(cx, "periodic-expand-g64-o2-acc", uni, o, gpu, tol);
  o.accelerations = false;
  parityCase(cx, "periodic-expand-g64-o2-pot", uni, o, gpu, tol);
  o.accelerations = true;
  o.ewaldExpansion = false;
  parityCase(cx, "periodic-percell-g64-o2-acc", uni, o, gpu, tol);
  o.groupSize = 8;
  parityCase(cx, "periodic-percell-forced-o2-acc", uni, o, gpu, tol);
  o = periodicBox(base, true, true, false);
  o.groupSize = 8;
  parityCase(cx, "sheet-xy-expand-o2-acc", uni, o, gpu, tol);
  o = periodicBox(base, false, false, true);
  o.groupSize = 64;
  parityCase(cx, "line-z-g64-o2-acc", uni, o, gpu, tol);
  const Cells& amr = cx.amr();
  const Cells c = subset(amr, std::min<std::size_t>(amr.size(), 100000));
  o = periodicBox(base, true, true, true);
  parityCase(cx, "periodic-amr-o2-acc", c, o, gpu, tol);
  o.walk = WalkKind::Vote;
  parityCase(cx, "periodic-amr-vote-o2-acc", c, o, gpu, tol);
  // the expansion against per-pair lookups on the GPU: the gap the expansion costs
  {
    SolveOptions e = periodicBox(base, true, true, true), f = e;
    e.groupSize = f.groupSize = 8;
    f.ewaldExpansion = false;
    SolveResult re, rf;
    const Status se = gpu.solve(uni.view(), e, re), sf = gpu.solve(uni.view(), f, rf);
    const Diff d = se.ok() && sf.ok() ? compare(rf, re, true) : Diff{};
    check(cx, "periodic-expansion-gap", se.ok() && sf.ok() && d.finite && d.potOfMax < 1e-5,
          se.ok() && sf.ok() ? "max |dphi| / max |phi| " + num(d.potOfMax) + ", acc/rms " + num(d.accRms)
                             : (se.ok() ? sf.message : se.message));
  }
}

}  // namespace amrgrav::parity
