/// \file isolated.cpp
/// \brief Subject `isolated`: tree solves in an open (isolated) domain, CPU vs CUDA, on a uniform grid and a
/// clustered AMR-like set over the options (order, MAC, theta, leaf and group sizes, self potential, a box), other
/// length and mass units, 18 levels of nesting, sparse and tiny inputs. Identical lists, values within tol.
#include <algorithm>
#include <string>

#include "tools/parity/harness.h"

namespace amrgrav::parity {

void runIsolated(Context& cx) {
  CudaBackend& gpu = *cx.gpu;
  const double tol = cx.args.tol;
  const SolveOptions base = Context::base();

  // ---- uniform grid
  {
    const Cells& uni = cx.uniform();
    SolveOptions o = base;
    parityCase(cx, "uniform-o2-acc", uni, o, gpu, tol);
    o.order = 1;
    o.accelerations = false;
    parityCase(cx, "uniform-o1-pot", uni, o, gpu, tol);
    o = base;
    o.mac = MacKind::Bonsai;
    parityCase(cx, "uniform-bonsai-o2-acc", uni, o, gpu, tol);
  }

  // ---- clustered AMR-like set
  const Cells& amr = cx.amr();
  {
    SolveOptions o = base;
    parityCase(cx, "amr-o2-acc", amr, o, gpu, tol);
    o.accelerations = false;
    parityCase(cx, "amr-o2-pot", amr, o, gpu, tol);
    o = base;
    o.order = 1;
    parityCase(cx, "amr-o1-acc", amr, o, gpu, tol);
    o = base;
    o.mac = MacKind::Bonsai;
    parityCase(cx, "amr-bonsai-o2-acc", amr, o, gpu, tol);
    o = base;
    o.theta = 0.3;
    parityCase(cx, "amr-theta0.3", amr, o, gpu, tol);
    o.theta = 1.0;
    parityCase(cx, "amr-theta1.0", amr, o, gpu, tol);
    o = base;
    o.leafSize = 1;
    o.groupSize = 16;
    parityCase(cx, "amr-leaf1-group16", amr, o, gpu, tol);
    o = base;
    o.leafSize = 64;
    o.groupSize = 64;
    parityCase(cx, "amr-leaf64-group64", amr, o, gpu, tol);
    o = base;
    o.groupSize = 7;
    o.selfPotential = SelfPotential::None;
    o.leafSize = 3;
    parityCase(cx, "amr-group7-leaf3-noself", amr, o, gpu, tol);
    o = base;
    o.selfPotential = SelfPotential::Cube;
    parityCase(cx, "amr-cube-self", amr, o, gpu, tol);
    o = base;
    o.groupSize = 40;
    o.mac = MacKind::Bonsai;
    parityCase(cx, "amr-group40-bonsai", amr, o, gpu, tol);
    o = base;
    o.hasBox = true;
    for (int d = 0; d < 3; ++d) { o.boxLo[d] = -0.3 * kKpc; o.boxHi[d] = 1.7 * kKpc; }
    parityCase(cx, "amr-box", amr, o, gpu, tol);
  }
  // unit lengths and tiny masses (massScale far from 1), another seed
  {
    const Cells amrUnit = amrClustered(std::max<std::size_t>(cx.args.amr / 4, 1000), 1.0, 1e-20, cx.args.seed + 1);
    parityCase(cx, "amr-unit-length-tiny-mass", amrUnit, base, gpu, tol);
  }
  // 18 levels of nesting (cells of 2^-20 of the box inside cells of 1/8): float positions relative to the group
  // centre must still resolve the finest cells (the direct kernel on the same cells: subject `direct`)
  {
    const Cells deep = deepNest(3, 20);
    parityCase(cx, "deep-nest-20-levels", deep, base, gpu, tol);
    SolveOptions o = base;
    o.hasBox = true;
    for (int d = 0; d < 3; ++d) { o.boxLo[d] = 0; o.boxHi[d] = 1; }
    parityCase(cx, "deep-nest-20-levels-box", deep, o, gpu, tol);
  }
  // sparse inputs: groups and direct blocks spread over the whole box (split-precision path)
  parityCase(cx, "sparse-3000", subset(amr, 3000), base, gpu, tol);
  // tiny inputs
  for (std::size_t n : {std::size_t(1), std::size_t(2), std::size_t(17), std::size_t(33), std::size_t(100)})
    parityCase(cx, "tiny-" + std::to_string(n), subset(amr, n), base, gpu, tol);
}

}  // namespace amrgrav::parity
