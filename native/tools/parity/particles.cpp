/// \file particles.cpp
/// \brief Subject `particles`: softened particles in system solves (core/system.h, physics/softening_k.h, issue
/// #18), CPU against CUDA. A clustered AMR-like gas with a Plummer cluster of particles inside it (softening lengths
/// spread over a factor of four, or one value) and probes (random, on particles, on cell centres), for both kernels;
/// the particles alone; a subset of target cells; direct summation. Each case: the same interaction counts for every
/// kind of target (the same lists) and the values within the tolerance.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/system.h"
#include "tools/parity/harness.h"

namespace amrgrav::parity {
namespace {

struct Particles {
  std::vector<double> x, y, z, m, eps;
  ParticlesView view(bool perParticle) const {
    ParticlesView v{x.data(), y.data(), z.data(), m.data(), perParticle ? eps.data() : nullptr, eps[0], x.size()};
    return v;
  }
};

/// n particles of a Plummer sphere (scale a, total mass M) centred at c; softening eps0 times 2^[-1, 1) per particle.
Particles cluster(std::size_t n, double a, double M, const double c[3], double eps0, std::uint32_t seed) {
  const Cells s = plummerSphere(n, seed);  // G = M = a = 1
  std::mt19937_64 rng(seed + 7);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Particles p;
  for (std::size_t i = 0; i < s.size(); ++i) {
    p.x.push_back(c[0] + a * s.x[i]);
    p.y.push_back(c[1] + a * s.y[i]);
    p.z.push_back(c[2] + a * s.z[i]);
    p.m.push_back(M * s.m[i]);
    p.eps.push_back(eps0 * std::exp2(u(rng)));
  }
  return p;
}

struct PointSet {
  std::vector<double> x, y, z;
  PointsView view() const { return PointsView{x.data(), y.data(), z.data(), x.size()}; }
};

PointSet probesFor(const Cells& cells, const Particles& parts, std::uint64_t seed) {
  PointSet q;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, kKpc);
  for (int i = 0; i < 1000; ++i) {
    q.x.push_back(u(rng));
    q.y.push_back(u(rng));
    q.z.push_back(u(rng));
  }
  for (std::size_t k = 0; k < 64 && !parts.x.empty(); ++k) {  // on particles
    const std::size_t i = (k * 7919) % parts.x.size();
    q.x.push_back(parts.x[i]);
    q.y.push_back(parts.y[i]);
    q.z.push_back(parts.z[i]);
  }
  for (std::size_t k = 0; k < 64 && cells.size() > 0; ++k) {  // on cell centres
    const std::size_t i = (k * 104729) % cells.size();
    q.x.push_back(cells.x[i]);
    q.y.push_back(cells.y[i]);
    q.z.push_back(cells.z[i]);
  }
  return q;
}

void particlesCase(Context& cx, const std::string& name, const Cells& cells, const Particles& parts, bool perParticle,
                   const SolveOptions& opt, bool direct, const std::vector<std::uint32_t>* targets = nullptr) {
  const PointSet probes = probesFor(cells, parts, cx.args.seed + 3);
  SystemView sys;
  sys.cells = cells.view();
  sys.particles = parts.view(perParticle);
  sys.probes = probes.view();
  if (targets) {
    sys.targets = targets->data();
    sys.targetCount = targets->size();
  }
  SystemResult rc, rg;
  const Status sc = cx.cpu->solveSystem(sys, opt, direct, rc);
  const Status sg = cx.gpu->solveSystem(sys, opt, direct, rg);
  if (!sc.ok() || !sg.ok()) {
    check(cx, name, false, !sc.ok() ? "CPU: " + sc.message : "CUDA: " + sg.message);
    return;
  }
  const double tol = cx.args.tol;
  const bool accel = opt.accelerations;
  const struct {
    const char* kind;
    const PointResults *c, *g;
  } parts3[3] = {{"cells", &rc.cells, &rg.cells}, {"particles", &rc.particles, &rg.particles},
                 {"probes", &rc.probes, &rg.probes}};
  for (const auto& k : parts3) {
    if (k.c->potential.empty() && k.g->potential.empty()) continue;
    const Diff d = compare(asSolve(*k.c), asSolve(*k.g), accel);
    check(cx, name + "-" + k.kind, d.finite && d.pot < tol && (!accel || d.accRms < tol),
          std::to_string(k.c->potential.size()) + " " + k.kind + ": pot " + num(d.pot) + ", acc/rms " +
              num(d.accRms));
  }
  const SystemStats &a = rc.system, &b = rg.system;
  const bool same = a.particleApprox == b.particleApprox && a.particleDirect == b.particleDirect &&
                    a.particleGroups == b.particleGroups && a.probeApprox == b.probeApprox &&
                    a.probeDirect == b.probeDirect && rc.stats.approxInteractions == rg.stats.approxInteractions &&
                    rc.stats.directInteractions == rg.stats.directInteractions;
  check(cx, name + "-same-lists", same,
        "softened approx " + std::to_string(b.particleApprox) + " (CPU " + std::to_string(a.particleApprox) +
            "), direct " + std::to_string(b.particleDirect) + " (CPU " + std::to_string(a.particleDirect) +
            "), particle groups " + std::to_string(b.particleGroups) + " (CPU " + std::to_string(a.particleGroups) +
            "), probes approx " + std::to_string(b.probeApprox) + " (CPU " + std::to_string(a.probeApprox) + ")");
}

}  // namespace

void runParticles(Context& cx) {
  const SolveOptions base = Context::base();
  const Cells& amr = cx.amr();
  const Cells gas = subset(amr, std::min<std::size_t>(amr.size(), 40000));
  double gasMass = 0;
  for (double m : gas.m) gasMass += m;
  const double c[3] = {0.45 * kKpc, 0.5 * kKpc, 0.55 * kKpc};
  // 20000 particles (2000 with --quick, for compute-sanitizer)
  const std::size_t nStars = std::min<std::size_t>(20000, cx.args.amr / 3);
  const Particles stars = cluster(nStars, 0.03 * kKpc, 0.5 * gasMass, c, 2e-3 * kKpc, std::uint32_t(cx.args.seed));
  for (int kernel = 0; kernel < 2; ++kernel) {
    SolveOptions o = base;
    o.softening = kernel ? SofteningKernel::Plummer : SofteningKernel::Spline;
    const std::string k = kernel ? "plummer" : "spline";
    particlesCase(cx, "particles-" + k + "-gas-cluster", gas, stars, true, o, false);
    particlesCase(cx, "particles-" + k + "-one-eps", gas, stars, false, o, false);
    particlesCase(cx, "particles-" + k + "-alone", Cells{}, stars, true, o, false);
    SolveOptions pot = o;
    pot.accelerations = false;
    particlesCase(cx, "particles-" + k + "-potential", gas, stars, true, pot, false);
  }
  std::vector<std::uint32_t> targets;
  for (std::size_t i = 5; i < gas.size(); i += 11) targets.push_back(std::uint32_t(i));
  particlesCase(cx, "particles-subset", gas, stars, true, base, false, &targets);
  const Cells few = subset(gas, std::min<std::size_t>(4000, cx.args.directParity));
  const Particles fewStars = cluster(std::min<std::size_t>(2000, cx.args.directParity / 2), 0.03 * kKpc, 0.5 * gasMass, c, 2e-3 * kKpc, std::uint32_t(cx.args.seed));
  particlesCase(cx, "particles-direct", few, fewStars, true, base, true);
  SolveOptions pl = base;
  pl.softening = SofteningKernel::Plummer;
  particlesCase(cx, "particles-direct-plummer", few, fewStars, true, pl, true);
}

}  // namespace amrgrav::parity
