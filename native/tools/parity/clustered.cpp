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
  const Cells& p = cx.plummer();
  SolveOptions o = Context::base();  // theta 0.5, order 2, accelerations
  o.G = 1;
  o.selfPotential = SelfPotential::None;
  parityCase(cx, "plummer-box-o2-acc", p, o, gpu, tol);
  {
    SolveOptions v = o;
    v.walk = WalkKind::Vote;
    parityCase(cx, "plummer-vote-o2-acc", p, v, gpu, tol);
  }
  for (int g : {16, 64, 7}) {
    SolveOptions q = o;
    q.groupSize = g;
    parityCase(cx, "plummer-group" + std::to_string(g), p, q, gpu, tol);
  }
  {
    SolveOptions q = o;
    q.order = 1;
    q.accelerations = false;
    q.theta = 0.3;
    q.leafSize = 4;
    parityCase(cx, "plummer-o1-pot-theta0.3-leaf4", p, q, gpu, tol);
  }
  parityCase(cx, "plummer-small-box", subset(p, 3000), o, gpu, tol);
}

}  // namespace amrgrav::parity
