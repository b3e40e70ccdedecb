/// \file memory.cpp
/// \brief Subject `memory`: the device's buffers and queues. A walk queue that must grow (reruns give the CPU's
/// answer), one backend's buffers reused across input sizes (bitwise the same results), pageable copies equal to
/// pinned staging.
#include <string>

#include "tools/parity/harness.h"

namespace amrgrav::parity {

void runMemory(Context& cx) {
  CudaBackend& gpu = *cx.gpu;
  const double tol = cx.args.tol;
  const SolveOptions base = Context::base();
  const Cells& amr = cx.amr();
  // a queue that must grow: reruns of the walk give the same answer
  {
    auto small = makeCudaBackend(cudaOpts(true, 64, true));
    parityCase(cx, "amr-queue-regrow", amr, base, *small, tol);
    const CudaStats cs = deviceStats(*small);
    check(cx, "queue-regrow-happened", cs.walkLaunches > 1,
          "walk launches " + std::to_string(cs.walkLaunches) + ", final capacity " + std::to_string(cs.queueCapacity));
  }
  // determinism, reuse across sizes, pageable copies: bitwise equal to a fresh run
  {
    SolveResult r1, r2, r3, r4;
    const Cells small = subset(amr, amr.size() / 3);
    Status s1 = gpu.solve(amr.view(), base, r1);
    Status s2 = gpu.solve(small.view(), base, r2);
    Status s3 = gpu.solve(amr.view(), base, r3);
    check(cx, "deterministic-and-reuse", s1.ok() && s2.ok() && s3.ok() && bitwiseEqual(r1, r3),
          s1.ok() && s2.ok() && s3.ok() ? (bitwiseEqual(r1, r3) ? "bitwise equal across solves" : "results differ")
                                        : "solve failed");
    auto fresh = makeCudaBackend(cudaOpts(false, 4096, false));  // pageable copies
    Status s4 = fresh->solve(small.view(), base, r4);
    check(cx, "pageable-equals-pinned", s4.ok() && bitwiseEqual(r2, r4),
          s4.ok() ? (bitwiseEqual(r2, r4) ? "bitwise equal" : "results differ") : s4.message);
  }
}

}  // namespace amrgrav::parity
