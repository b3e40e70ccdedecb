/// \file direct.cpp
/// \brief Subject `direct`: direct summation, CPU vs CUDA (the direct kernel), with and without accelerations and
/// the self term, and on 18 levels of nesting.
#include <string>

#include "tools/parity/harness.h"

namespace amrgrav::parity {

void runDirect(Context& cx) {
  CudaBackend& gpu = *cx.gpu;
  const double tol = cx.args.tol;
  const SolveOptions base = Context::base();
  parityCase(cx, "deep-nest-20-levels-direct", deepNest(3, 20), base, gpu, tol, true);
  const Cells d = subset(cx.amr(), cx.args.directParity);
  SolveOptions o = base;
  parityCase(cx, "direct-acc", d, o, gpu, tol, true);
  o.accelerations = false;
  o.selfPotential = SelfPotential::None;
  parityCase(cx, "direct-pot-noself", d, o, gpu, tol, true);
}

}  // namespace amrgrav::parity
