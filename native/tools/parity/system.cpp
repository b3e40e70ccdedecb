/// \file system.cpp
/// \brief Subject `system`: system solves (core/system.h, issue #18). Probes (random, outside the box where it is
/// isolated, and on cell centres) and a subset of target cells, CPU against CUDA: the same interaction counts for
/// the subset's groups and for the probes' groups (the same lists), the values within the tolerance; the GPU's subset
/// bitwise its own full solve at the targets; direct summation at the probes.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/system.h"
#include "tools/parity/harness.h"

namespace amrgrav::parity {
namespace {

struct Probes {
  std::vector<double> x, y, z;
  PointsView view() const { return PointsView{x.data(), y.data(), z.data(), x.size()}; }
};

/// `count` probes uniformly in the box grown by `grow` of its side on every face, then 64 on cell centres.
Probes makeProbes(const Cells& c, const SolveOptions& opt, std::size_t count, double grow, std::uint64_t seed) {
  double lo[3], hi[3];
  for (int d = 0; d < 3; ++d) {
    lo[d] = opt.hasBox ? opt.boxLo[d] : INFINITY;
    hi[d] = opt.hasBox ? opt.boxHi[d] : -INFINITY;
  }
  const std::vector<double>* p[3] = {&c.x, &c.y, &c.z};
  if (!opt.hasBox)
    for (int d = 0; d < 3; ++d)
      for (double v : *p[d]) { lo[d] = std::min(lo[d], v); hi[d] = std::max(hi[d], v); }
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Probes out;
  std::vector<double>* q[3] = {&out.x, &out.y, &out.z};
  for (std::size_t i = 0; i < count; ++i)
    for (int d = 0; d < 3; ++d) {
      const double L = hi[d] - lo[d];
      q[d]->push_back(lo[d] - grow * L + (1 + 2 * grow) * L * u(rng));
    }
  for (std::size_t k = 0; k < 64; ++k) {
    const std::size_t i = (k * 7919) % c.size();
    out.x.push_back(c.x[i]);
    out.y.push_back(c.y[i]);
    out.z.push_back(c.z[i]);
  }
  return out;
}

void systemCase(Context& cx, const std::string& name, const Cells& cells, const SolveOptions& opt, double grow,
                bool periodic) {
  Backend& cpu = *cx.cpu;
  CudaBackend& gpu = *cx.gpu;
  const Probes probes = makeProbes(cells, opt, 2000, grow, cx.args.seed);
  std::vector<std::uint32_t> targets;
  for (std::size_t i = 3; i < cells.size(); i += 7) targets.push_back(std::uint32_t(i));
  std::reverse(targets.begin(), targets.end());  // any order: the results come back in it
  SystemView sys;
  sys.cells = cells.view();
  sys.probes = probes.view();
  sys.targets = targets.data();
  sys.targetCount = targets.size();
  SystemResult rc, rg;
  const Status sc = cpu.solveSystem(sys, opt, false, rc);
  const Status sg = gpu.solveSystem(sys, opt, false, rg);
  if (!sc.ok() || !sg.ok()) {
    check(cx, name, false, !sc.ok() ? "CPU: " + sc.message : "CUDA: " + sg.message);
    return;
  }
  const double tol = cx.args.tol;
  const Diff dp = compare(asSolve(rc.probes), asSolve(rg.probes), opt.accelerations);
  const Diff dt = compare(asSolve(rc.cells), asSolve(rg.cells), opt.accelerations);
  const double ep = periodic ? dp.potOfMax : dp.pot, et = periodic ? dt.potOfMax : dt.pot;
  const bool sameLists = rc.system.probeApprox == rg.system.probeApprox &&
                         rc.system.probeDirect == rg.system.probeDirect &&
                         rc.system.probeGroups == rg.system.probeGroups &&
                         rc.system.targetGroups == rg.system.targetGroups &&
                         rc.stats.approxInteractions == rg.stats.approxInteractions &&
                         rc.stats.directInteractions == rg.stats.directInteractions;
  check(cx, name + "-probes", dp.finite && ep < tol && (!opt.accelerations || dp.accRms < tol),
        std::to_string(probes.x.size()) + " probes in " + std::to_string(rc.system.probeGroups) + " groups: pot " +
            num(ep) + ", acc/rms " + num(dp.accRms) + ", approx " + std::to_string(rg.system.probeApprox) + " (CPU " +
            std::to_string(rc.system.probeApprox) + "), direct " + std::to_string(rg.system.probeDirect) + " (CPU " +
            std::to_string(rc.system.probeDirect) + ")");
  check(cx, name + "-targets", dt.finite && et < tol && (!opt.accelerations || dt.accRms < tol),
        std::to_string(targets.size()) + " targets in " + std::to_string(rg.system.targetGroups) + " groups (CPU " +
            std::to_string(rc.system.targetGroups) + "): pot " + num(et) + ", acc/rms " + num(dt.accRms));
  check(cx, name + "-same-lists", sameLists,
        "cells approx " + std::to_string(rg.stats.approxInteractions) + " (CPU " +
            std::to_string(rc.stats.approxInteractions) + "), direct " + std::to_string(rg.stats.directInteractions) +
            " (CPU " + std::to_string(rc.stats.directInteractions) + ")");
  // the subset is the GPU's own full solve at the targets, bit for bit
  SolveResult full;
  const Status sf = gpu.solve(cells.view(), opt, full);
  bool bitwise = sf.ok();
  for (std::size_t k = 0; bitwise && k < targets.size(); ++k) {
    const std::size_t i = targets[k];
    bitwise = std::memcmp(&rg.cells.potential[k], &full.potential[i], sizeof(double)) == 0;
    if (opt.accelerations)
      bitwise = bitwise && rg.cells.ax[k] == full.ax[i] && rg.cells.ay[k] == full.ay[i] && rg.cells.az[k] == full.az[i];
  }
  check(cx, name + "-targets-bitwise", bitwise, sf.ok() ? "the subset vs the GPU's full solve" : sf.message);
}

}  // namespace

void runSystem(Context& cx) {
  SolveOptions base = Context::base();
  const Cells& amr = cx.amr();
  const Cells d = subset(amr, std::min<std::size_t>(amr.size(), 60000));
  systemCase(cx, "system-isolated", d, base, 0.25, false);
  SolveOptions pot = base;
  pot.accelerations = false;
  systemCase(cx, "system-isolated-potential", d, pot, 0.25, false);
  SolveOptions vote = base;
  vote.walk = WalkKind::Vote;
  systemCase(cx, "system-vote", d, vote, 0.25, false);
  systemCase(cx, "system-periodic", cx.periodicGrid(), periodicBox(base, true, true, true), 0.5, true);
  systemCase(cx, "system-periodic-xy", cx.periodicGrid(), periodicBox(base, true, true, false), 0.0, true);

  // direct summation at the probes (and the subset), CPU against CUDA
  const Cells small = subset(amr, std::min<std::size_t>(amr.size(), cx.args.directParity));
  const Probes probes = makeProbes(small, base, 500, 0.25, cx.args.seed + 1);
  SystemView sys;
  sys.cells = small.view();
  sys.probes = probes.view();
  SystemResult rc, rg;
  const Status sc = cx.cpu->solveSystem(sys, base, true, rc);
  const Status sg = cx.gpu->solveSystem(sys, base, true, rg);
  if (sc.ok() && sg.ok()) {
    const Diff dp = compare(asSolve(rc.probes), asSolve(rg.probes), true);
    check(cx, "system-direct-probes", dp.finite && dp.pot < cx.args.tol && dp.accRms < cx.args.tol,
          std::to_string(probes.x.size()) + " probes over " + std::to_string(small.size()) + " cells: pot " +
              num(dp.pot) + ", acc/rms " + num(dp.accRms));
  } else {
    check(cx, "system-direct-probes", false, !sc.ok() ? "CPU: " + sc.message : "CUDA: " + sg.message);
  }
}

}  // namespace amrgrav::parity
