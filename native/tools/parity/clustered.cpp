/// \file clustered.cpp
/// \brief Subject `clustered`: a Plummer sphere of points (issue #18: tiny cells, self term off), whose walk groups
/// are cut at their home nodes (tree/groups_k.h; cuda/kernel_groups.cu on the device, tree/groups.cpp on the
/// host). The same groups on both backends give the same group and interaction counts (parityCase compares them)
/// and values within tol, for the box and vote walks, several group sizes (one and two cells per lane, odd), order
/// 1, and a small sphere.
#include <string>

#include "tools/parity/harness.h"

namespace amrgrav::parity {

void runClustered(Context& cx) {
  CudaBackend& gpu = *cx.gpu;
  const double tol = cx.args.tol;
  // Accelerations against the rms: the points' closest pairs (separations ~1e-4 of the scale radius) pull up to ~1e3
  // times the rms, and the device's float interaction kernel rounds each pair's force to ~6e-8 of itself, so the
  // same lists differ by up to ~4e-5 of the rms there (measured on the H100: 3.8e-5 to 4.4e-5); the potential
  // (~1e-7) and the counts stay as strict as on meshes.
  const double accTol = 2e-4;
  const Cells& p = cx.plummer();
  SolveOptions o = Context::base();  // theta 0.5, order 2, accelerations
  o.G = 1;
  o.selfPotential = SelfPotential::None;
  parityCase(cx, "plummer-box-o2-acc", p, o, gpu, tol, false, true, accTol);
  {
    SolveOptions v = o;
    v.walk = WalkKind::Vote;
    parityCase(cx, "plummer-vote-o2-acc", p, v, gpu, tol, false, true, accTol);
  }
  for (int g : {16, 64, 7}) {
    SolveOptions q = o;
    q.groupSize = g;
    parityCase(cx, "plummer-group" + std::to_string(g), p, q, gpu, tol, false, true, accTol);
  }
  {
    SolveOptions q = o;
    q.order = 1;
    q.accelerations = false;
    q.theta = 0.3;
    q.leafSize = 4;
    parityCase(cx, "plummer-o1-pot-theta0.3-leaf4", p, q, gpu, tol, false, true, accTol);
  }
  parityCase(cx, "plummer-small-box", subset(p, 3000), o, gpu, tol, false, true, accTol);
}

}  // namespace amrgrav::parity
