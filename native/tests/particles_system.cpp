/// \file particles_system.cpp
/// \brief amrgrav_particles_system: softened particles in the CPU system solve (issue #18, core/system.h), checked
/// against physics:
///   a. particles alone (a Plummer sphere, softenings spread over a factor 5 or one value) at small theta against a
///      float64 softened direct sum written here from the kernels' formulas (long double, its own square roots),
///      both kernels, potential and accelerations; method direct against the same sum; threads 1 = threads 2;
///   b. momentum exchange between a uniform sphere of cells and a particle cluster: sum over cells of m a (from the
///      particles) = - sum over particles of m a (from the cells), within the tree's accuracy and to rounding direct;
///   c. linearity: gas alone + particles alone = both, at the cells, the particles and the probes;
///   d. probes on the particles: the particle's potential minus G m / eps;
///   e. two particles: spline exactly Newtonian from 2.8 eps on, Plummer's -G m / sqrt(r^2 + eps^2), -G m / eps at
///      r = 0, and the spline's force minus its potential's derivative inside;
///   f. bad input: typed errors naming the problem;
///   g. the spline rule's source extent (physics/softening_k.h): on clustered random sets every particle of every
///      node lies within the node's extent of its centre of mass (long double), and by brute force no node the MAC
///      and the spline rule accept for a group holds a source within 2.8 eps_ij of one of the group's particles
///      (with a canary: half the extent must let some through); the rule accepts at least the nodes the former
///      macRadius bound did.
/// Prints one line per check and a summary; exits 1 on any failure. CTest runs it (label cpu).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/system.h"
#include "cpu/cpu_system.h"
#include "physics/mac_k.h"
#include "physics/softening_k.h"
#include "tests/check_report.h"
#include "tools/host_cells.h"
#include "tools/plummer.h"
#include "tree/particle_tree.h"

using namespace amrgrav;
using namespace amrgrav::tests;

namespace {

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", v);
  return b;
}

struct Particles {
  std::vector<double> x, y, z, m, eps;
  ParticlesView view() const {
    ParticlesView v;
    v.x = x.data(); v.y = y.data(); v.z = z.data(); v.mass = m.data(); v.softening = eps.data(); v.n = x.size();
    return v;
  }
};

using Cells = tools::HostCells;

struct Probes {
  std::vector<double> x, y, z;
  PointsView view() const { return PointsView{x.data(), y.data(), z.data(), x.size()}; }
};

/// A Plummer sphere (tools/plummer.h) of n particles, scale length a, centred at c, total mass M, softenings
/// eps0 (1 + spread u), u uniform in [0, 1).
Particles plummerParticles(std::size_t n, std::uint32_t seed, double a, const double c[3], double M, double eps0,
                           double spread, double rMax = 20) {
  const tools::PlummerPoints p = tools::plummerPoints(n, seed, rMax);
  tools::Mulberry32 u(seed + 1000);
  Particles out;
  for (std::size_t i = 0; i < n; ++i) {
    out.x.push_back(c[0] + a * p.x[i]);
    out.y.push_back(c[1] + a * p.y[i]);
    out.z.push_back(c[2] + a * p.z[i]);
    out.m.push_back(M / double(n));
    out.eps.push_back(eps0 * (1 + spread * u.next()));
  }
  return out;
}

/// A uniform sphere of cells: a k^3 grid over [-R, R]^3, the cells whose centre lies within R, density 1.
Cells uniformSphere(int k, double R) {
  Cells c;
  const double h = 2 * R / k;
  for (int a = 0; a < k; ++a)
    for (int b = 0; b < k; ++b)
      for (int d = 0; d < k; ++d) {
        const double x = -R + (a + 0.5) * h, y = -R + (b + 0.5) * h, z = -R + (d + 0.5) * h;
        if (x * x + y * y + z * z > R * R) continue;
        c.x.push_back(x); c.y.push_back(y); c.z.push_back(z); c.m.push_back(h * h * h); c.h.push_back(h);
      }
  return c;
}

// ---- the reference kernels, from their formulas (long double, std::sqrt; no code shared with physics/)

using LD = long double;

/// The cubic-spline kernel of radius h = 2.8 eps (Monaghan & Lattanzio 1985): potential factor K (phi = -G m K)
/// and force factor F (a = -G m F d).
void refSpline(LD r, LD eps, LD& K, LD& F) {
  const LD h = 2.8L * eps;
  if (r >= h) {
    K = 1 / r;
    F = 1 / (r * r * r);
    return;
  }
  const LD u = r / h;
  if (u < 0.5L) {
    K = (14.0L / 5 - 16.0L / 3 * u * u + 48.0L / 5 * u * u * u * u - 32.0L / 5 * u * u * u * u * u) / h;
    F = (32.0L / 3 - 192.0L / 5 * u * u + 32 * u * u * u) / (h * h * h);
  } else {
    K = (16.0L / 5 - 1 / (15 * u) - 32.0L / 3 * u * u + 16 * u * u * u - 48.0L / 5 * u * u * u * u +
         32.0L / 15 * u * u * u * u * u) / h;
    F = (64.0L / 3 - 48 * u + 192.0L / 5 * u * u - 32.0L / 3 * u * u * u - 1 / (15 * u * u * u)) / (h * h * h);
  }
}

void refKernel(SofteningKernel k, LD r, LD eps, LD& K, LD& F) {
  if (k == SofteningKernel::Plummer) {
    const LD rho = std::sqrt(r * r + eps * eps);
    K = 1 / rho;
    F = 1 / (rho * rho * rho);
  } else {
    refSpline(r, eps, K, F);
  }
}

struct Field {
  std::vector<double> phi, ax, ay, az;
};

/// The softened direct sum at the particles (no own pair), G = 1.
Field referenceParticles(const Particles& p, SofteningKernel kernel) {
  const std::size_t n = p.x.size();
  Field f;
  f.phi.assign(n, 0); f.ax.assign(n, 0); f.ay.assign(n, 0); f.az.assign(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    LD phi = 0, ax = 0, ay = 0, az = 0;
    for (std::size_t j = 0; j < n; ++j) {
      if (j == i) continue;
      const LD dx = LD(p.x[i]) - p.x[j], dy = LD(p.y[i]) - p.y[j], dz = LD(p.z[i]) - p.z[j];
      LD K, F;
      refKernel(kernel, std::sqrt(dx * dx + dy * dy + dz * dz), std::max(p.eps[i], p.eps[j]), K, F);
      phi -= p.m[j] * K;
      ax -= p.m[j] * F * dx;
      ay -= p.m[j] * F * dy;
      az -= p.m[j] * F * dz;
    }
    f.phi[i] = double(phi); f.ax[i] = double(ax); f.ay[i] = double(ay); f.az[i] = double(az);
  }
  return f;
}

SolveOptions baseOptions(double theta, SofteningKernel kernel) {
  SolveOptions o;
  o.G = 1;
  o.theta = theta;
  o.order = 2;
  o.accelerations = true;
  o.softening = kernel;
  o.threads = 2;
  return o;
}

Status solve(const Cells* c, const Particles* p, const Probes* q, const SolveOptions& opt, bool direct,
             SystemResult& r) {
  SystemView s;
  if (c) s.cells = c->view();
  if (p) s.particles = p->view();
  if (q) s.probes = q->view();
  return cpuSolveSystem(s, opt, direct, r);
}

/// Largest |a - b| / |b| of the potentials and of the acceleration vectors.
void relErrors(const PointResults& r, const Field& ref, double& ePhi, double& eAcc) {
  ePhi = eAcc = 0;
  for (std::size_t i = 0; i < ref.phi.size(); ++i) {
    ePhi = std::max(ePhi, std::fabs(r.potential[i] - ref.phi[i]) / std::fabs(ref.phi[i]));
    const double dx = r.ax[i] - ref.ax[i], dy = r.ay[i] - ref.ay[i], dz = r.az[i] - ref.az[i];
    const double a = std::sqrt(ref.ax[i] * ref.ax[i] + ref.ay[i] * ref.ay[i] + ref.az[i] * ref.az[i]);
    eAcc = std::max(eAcc, std::sqrt(dx * dx + dy * dy + dz * dz) / a);
  }
}

// ---- a. particles alone against the softened direct sum

void particlesAlone() {
  const double c0[3] = {0, 0, 0};
  for (const double spread : {4.0, 0.0}) {
    const Particles p = plummerParticles(3000, 7, 1.0, c0, 1.0, 0.02, spread);
    for (const SofteningKernel k : {SofteningKernel::Spline, SofteningKernel::Plummer}) {
      const std::string name = std::string(k == SofteningKernel::Spline ? "spline" : "plummer") +
                               (spread > 0 ? ", eps 0.02-0.1" : ", eps 0.02");
      const Field ref = referenceParticles(p, k);
      SystemResult tree, direct, one;
      // 1e-6 (the bound) at theta 0.05; the node kernels' share grows with theta (0.1, then 0.5 below)
      for (const double theta : {0.05, 0.1}) {
        SolveOptions o = baseOptions(theta, k);
        Status st = solve(nullptr, &p, nullptr, o, false, tree);
        double ePhi = 1, eAcc = 1;
        if (st.ok()) relErrors(tree.particles, ref, ePhi, eAcc);
        const double bound = theta < 0.07 ? 1e-6 : 5e-6;
        check("a. tree theta " + num(theta) + " vs softened direct sum (" + name + ")",
              st.ok() && ePhi <= bound && eAcc <= bound,
              "max rel. potential error " + num(ePhi) + ", acceleration " + num(eAcc) + " (<= " + num(bound) +
                  "); " + std::to_string(tree.system.particleApprox) + " node and " +
                  std::to_string(tree.system.particleDirect) + " pair interactions " + st.message);
      }
      SolveOptions opt = baseOptions(0.1, k);
      double ePhi, eAcc;
      Status st;
      st = solve(nullptr, &p, nullptr, opt, true, direct);
      relErrors(direct.particles, ref, ePhi, eAcc);
      check("a. method direct vs softened direct sum (" + name + ")", st.ok() && ePhi <= 1e-13 && eAcc <= 1e-12,
            "max rel. potential error " + num(ePhi) + ", acceleration " + num(eAcc));
      check("a. direct counts every pair but the own (" + name + ")",
            direct.system.particleDirect == 3000ull * 2999ull, std::to_string(direct.system.particleDirect));
      opt.threads = 1;
      st = solve(nullptr, &p, nullptr, opt, false, one);
      bool same = st.ok() && one.particles.potential == tree.particles.potential && one.particles.ax == tree.particles.ax &&
                  one.system.particleDirect == tree.system.particleDirect;
      check("a. threads 1 = threads 2, bitwise (" + name + ")", same, "");
      // the default theta: the error the tree's opening angle allows
      opt = baseOptions(0.5, k);
      st = solve(nullptr, &p, nullptr, opt, false, one);
      relErrors(one.particles, ref, ePhi, eAcc);
      check("a. tree theta 0.5 (" + name + ")", st.ok() && ePhi < 1e-3 && eAcc < 2e-2,
            "max rel. potential error " + num(ePhi) + ", acceleration " + num(eAcc));
    }
  }
}

// ---- b. momentum exchange between cells and particles

void momentumExchange() {
  const Cells c = uniformSphere(16, 1.0);
  const double c0[3] = {0.3, 0.1, -0.2};
  const Particles p = plummerParticles(600, 11, 0.15, c0, 2.0, 0.03, 2.0, 6);
  for (const SofteningKernel k : {SofteningKernel::Spline, SofteningKernel::Plummer}) {
    for (const bool direct : {false, true}) {
      const std::string name = std::string(k == SofteningKernel::Spline ? "spline" : "plummer") +
                               (direct ? ", direct" : ", tree theta 0.5");
      const SolveOptions opt = baseOptions(0.5, k);
      SystemResult both, cellsAlone, partsAlone;
      Status st = solve(&c, &p, nullptr, opt, direct, both);
      if (st.ok()) st = solve(&c, nullptr, nullptr, opt, direct, cellsAlone);
      if (st.ok()) st = solve(nullptr, &p, nullptr, opt, direct, partsAlone);
      if (!st.ok()) {
        check("b. momentum exchange runs (" + name + ")", false, st.message);
        continue;
      }
      double Fc[3] = {0, 0, 0}, Fp[3] = {0, 0, 0}, scale = 0;  // on the cells from the particles, and back
      for (std::size_t i = 0; i < c.x.size(); ++i) {
        const double a[3] = {both.cells.ax[i] - cellsAlone.cells.ax[i], both.cells.ay[i] - cellsAlone.cells.ay[i],
                             both.cells.az[i] - cellsAlone.cells.az[i]};
        for (int d = 0; d < 3; ++d) Fc[d] += c.m[i] * a[d];
        scale += c.m[i] * std::sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
      }
      for (std::size_t i = 0; i < p.x.size(); ++i) {
        const double a[3] = {both.particles.ax[i] - partsAlone.particles.ax[i],
                             both.particles.ay[i] - partsAlone.particles.ay[i],
                             both.particles.az[i] - partsAlone.particles.az[i]};
        for (int d = 0; d < 3; ++d) Fp[d] += p.m[i] * a[d];
      }
      double worst = 0;
      for (int d = 0; d < 3; ++d) worst = std::max(worst, std::fabs(Fc[d] + Fp[d]));
      const double rel = worst / scale, bound = direct ? 1e-12 : 2e-3;
      check("b. sum m a (cells from particles) = - sum m a (particles from cells) (" + name + ")", rel <= bound,
            "|F_cp + F_pc| / sum m|a| = " + num(rel) + " (<= " + num(bound) + "); F_cp = (" + num(Fc[0]) + ", " +
                num(Fc[1]) + ", " + num(Fc[2]) + ")");
    }
  }
}

// ---- c. linearity; d. probes on the particles

void linearityAndProbes() {
  const Cells c = uniformSphere(12, 1.0);
  const double c0[3] = {-0.2, 0.25, 0.1};
  const Particles p = plummerParticles(400, 5, 0.2, c0, 1.0, 0.02, 3.0, 5);
  Probes q;
  tools::Mulberry32 u(99);
  for (int i = 0; i < 64; ++i) {
    q.x.push_back(2.4 * u.next() - 1.2); q.y.push_back(2.4 * u.next() - 1.2); q.z.push_back(2.4 * u.next() - 1.2);
  }
  Cells c0m = c;
  std::fill(c0m.m.begin(), c0m.m.end(), 0.0);
  Particles p0m = p;
  std::fill(p0m.m.begin(), p0m.m.end(), 0.0);
  for (const SofteningKernel k : {SofteningKernel::Spline, SofteningKernel::Plummer}) {
    for (const bool direct : {false, true}) {
      const std::string name = std::string(k == SofteningKernel::Spline ? "spline" : "plummer") +
                               (direct ? ", direct" : ", tree");
      const SolveOptions opt = baseOptions(0.5, k);
      SystemResult both, gas, parts;
      Status st = solve(&c, &p, &q, opt, direct, both);
      if (st.ok()) st = solve(&c, &p0m, &q, opt, direct, gas);
      if (st.ok()) st = solve(&c0m, &p, &q, opt, direct, parts);
      if (!st.ok()) {
        check("c. linearity runs (" + name + ")", false, st.message);
        continue;
      }
      double worst = 0;
      auto compare = [&](const PointResults& b, const PointResults& g, const PointResults& s) {
        double scale = 0, diff = 0;
        for (std::size_t i = 0; i < b.potential.size(); ++i) {
          scale = std::max(scale, std::fabs(b.potential[i]));
          diff = std::max(diff, std::fabs(b.potential[i] - (g.potential[i] + s.potential[i])));
          const double* v[3][3] = {{&b.ax[i], &g.ax[i], &s.ax[i]}, {&b.ay[i], &g.ay[i], &s.ay[i]},
                                   {&b.az[i], &g.az[i], &s.az[i]}};
          for (auto& e : v) diff = std::max(diff, std::fabs(*e[0] - (*e[1] + *e[2])) / 10);  // |a| ~ 10 |phi|
        }
        worst = std::max(worst, diff / scale);
      };
      compare(both.cells, gas.cells, parts.cells);
      compare(both.particles, gas.particles, parts.particles);
      compare(both.probes, gas.probes, parts.probes);
      check("c. gas alone + particles alone = both, at cells, particles, probes (" + name + ")", worst <= 1e-13,
            "largest difference / |phi| " + num(worst));
    }
  }
  // a subset of the cells with particles in the solve: bitwise the full solve's values there
  {
    const SolveOptions opt = baseOptions(0.5, SofteningKernel::Spline);
    SystemResult full, sub;
    std::vector<std::uint32_t> targets;
    for (std::uint32_t i = 0; i < c.x.size(); i += 7) targets.push_back(i);
    Status st = solve(&c, &p, &q, opt, false, full);
    SystemView s;
    s.cells = c.view();
    s.particles = p.view();
    s.targets = targets.data();
    s.targetCount = targets.size();
    if (st.ok()) st = cpuSolveSystem(s, opt, false, sub);
    bool same = st.ok() && sub.cells.potential.size() == targets.size();
    for (std::size_t k = 0; same && k < targets.size(); ++k)
      same = sub.cells.potential[k] == full.cells.potential[targets[k]] && sub.cells.ax[k] == full.cells.ax[targets[k]];
    same = same && sub.particles.potential == full.particles.potential;
    check("c. a subset of cells with particles: the full solve's bits", same, st.message);
    check("c. stats of the particles", st.ok() && full.system.particles == p.x.size() &&
                                           full.system.particleGroups > 0 && full.system.particleNodes > 0 &&
                                           full.system.particleApprox > 0 && full.system.particleDirect > 0,
          "groups " + std::to_string(full.system.particleGroups) + ", nodes " +
              std::to_string(full.system.particleNodes) + ", approx " + std::to_string(full.system.particleApprox) +
              ", direct " + std::to_string(full.system.particleDirect));
  }
  // d. probes on the particles (particles alone): the particle's potential minus G m / eps
  // with one softening the probe's pairs (eps_j) are the particle's (max(eps_i, eps_j)); with a spread they differ
  Particles pu = p;
  std::fill(pu.eps.begin(), pu.eps.end(), 0.02);
  Probes on;
  on.x = p.x; on.y = p.y; on.z = p.z;
  for (const SofteningKernel k : {SofteningKernel::Spline, SofteningKernel::Plummer}) {
    for (const bool direct : {true, false}) {
      const std::string name = std::string(k == SofteningKernel::Spline ? "spline" : "plummer") +
                               (direct ? ", direct" : ", tree theta 0.1");
      SystemResult r;
      const Status st = solve(nullptr, &pu, &on, baseOptions(direct ? 0.5 : 0.1, k), direct, r);
      double worst = 0;
      for (std::size_t i = 0; st.ok() && i < pu.x.size(); ++i) {
        const double expect = r.particles.potential[i] - pu.m[i] / pu.eps[i];
        worst = std::max(worst, std::fabs(r.probes.potential[i] - expect) / std::fabs(expect));
      }
      const double bound = direct ? 1e-14 : 1e-6;
      check("d. probe on a particle = its potential - G m / eps (" + name + ")", st.ok() && worst <= bound,
            "max rel. difference " + num(worst) + " (<= " + num(bound) + ")");
    }
  }
}

/// More coincident probes than a walk group holds (a leaf of the finest key level): each gets the direct value.
void coincidentProbes() {
  const double c0[3] = {0, 0, 0};
  const Particles p = plummerParticles(500, 21, 0.2, c0, 1.0, 0.01, 1.0, 5);
  Probes q;
  q.x.assign(300, 0.01); q.y.assign(300, -0.02); q.z.assign(300, 0.03);
  SystemResult tree, direct;
  Status st = solve(nullptr, &p, &q, baseOptions(0.1, SofteningKernel::Spline), false, tree);
  if (st.ok()) st = solve(nullptr, &p, &q, baseOptions(0.1, SofteningKernel::Spline), true, direct);
  double worst = st.ok() ? 0 : 1;
  for (std::size_t i = 0; st.ok() && i < q.x.size(); ++i)
    worst = std::max(worst, std::fabs(tree.probes.potential[i] - direct.probes.potential[0]) /
                                std::fabs(direct.probes.potential[0]));
  check("d. 300 coincident probes against the particles", worst <= 1e-6, "max rel. difference " + num(worst) + " " +
                                                                         st.message);
}

// ---- e. two particles

void twoParticles() {
  const double eps = 0.01, m = 3.0;
  for (const SofteningKernel k : {SofteningKernel::Spline, SofteningKernel::Plummer}) {
    const bool spline = k == SofteningKernel::Spline;
    double worst = 0, worstForce = 0;
    for (const double r : {0.0, 0.3 * eps, eps, 1.4 * eps, 2.0 * eps, 2.8 * eps, 2.8 * eps * 1.0000001, 3 * eps,
                           10 * eps, 1.0}) {
      Particles p;
      p.x = {0.5, 0.5 + r}; p.y = {0.5, 0.5}; p.z = {0.5, 0.5}; p.m = {m, m}; p.eps = {eps, eps};
      for (const bool direct : {false, true}) {
        SystemResult res;
        const Status st = solve(nullptr, &p, nullptr, baseOptions(0.5, k), direct, res);
        if (!st.ok()) {
          check("e. two particles run", false, st.message);
          return;
        }
        double expect, expectA;
        if (r == 0) {
          expect = -m / eps;
          expectA = 0;
        } else if (spline && r >= 2.8 * eps) {
          expect = -m / r;  // exactly Newtonian
          expectA = m / (r * r);
        } else if (!spline) {
          expect = -m / std::sqrt(r * r + eps * eps);
          expectA = m * r / std::pow(r * r + eps * eps, 1.5);
        } else {
          LD K, F;
          refSpline(r, eps, K, F);
          expect = double(-m * K);
          expectA = double(m * F * r);
        }
        worst = std::max(worst, std::fabs(res.particles.potential[0] - expect) / std::fabs(expect));
        worst = std::max(worst, std::fabs(res.particles.potential[1] - expect) / std::fabs(expect));
        // particle 0 is pulled towards +x
        const double fe = expectA > 0 ? std::fabs(res.particles.ax[0] - expectA) / expectA : std::fabs(res.particles.ax[0]);
        worstForce = std::max(worstForce, fe);
        worstForce = std::max(worstForce, std::fabs(res.particles.ax[1] + res.particles.ax[0]) / std::max(expectA, 1.0));
      }
    }
    check(std::string("e. two particles, ") + (spline ? "spline: Newtonian from 2.8 eps, " : "plummer: ") +
              "-G m / eps at 0, the kernel between", worst <= 1e-14 && worstForce <= 1e-14,
          "max rel. potential error " + num(worst) + ", force " + num(worstForce));
  }
  // the spline's force is minus its potential's derivative, and both are continuous at u = 1/2 and u = 1
  double worst = 0;
  for (double u = 0.01; u < 1.3; u += 0.01) {
    const LD h = 2.8L * eps, r = u * h, dr = 1e-7L * h;
    LD K1, K2, F, Kc, Fc;
    refSpline(r - dr, eps, K1, F);
    refSpline(r + dr, eps, K2, F);
    refSpline(r, eps, Kc, Fc);
    worst = std::max(worst, double(std::fabs(-(K2 - K1) / (2 * dr) - Fc * r) / (Fc * r)));
  }
  for (const double u : {0.5, 1.0}) {
    LD Ka, Fa, Kb, Fb;
    const LD h = 2.8L * eps;
    refSpline(u * h * (1 - 1e-12L), eps, Ka, Fa);
    refSpline(u * h * (1 + 1e-12L), eps, Kb, Fb);
    worst = std::max(worst, double(std::fabs(Ka - Kb) / Ka + std::fabs(Fa - Fb) / Fa));
  }
  check("e. the reference spline: F = -dK/dr / r, continuous at u = 1/2 and 1", worst <= 1e-6,
        "worst relative mismatch " + num(worst));
}

// ---- f. bad input

void badInput() {
  const double c0[3] = {0, 0, 0};
  const Particles good = plummerParticles(50, 3, 0.1, c0, 1.0, 0.01, 0.0, 5);
  struct Case {
    std::string name;
    Particles p;
    SolveOptions opt;
    bool nullMass, nullEps;
    double epsValue;
    ErrorCode code;
    std::string needle;
  };
  std::vector<Case> cases;
  auto add = [&](const std::string& n, ErrorCode code, const std::string& needle) {
    cases.push_back(Case{n, good, baseOptions(0.5, SofteningKernel::Spline), false, false, 0, code, needle});
    return &cases.back();
  };
  add("negative mass", ErrorCode::InvalidInput, "particle 7: mass is negative")->p.m[7] = -1;
  add("softening 0", ErrorCode::InvalidInput, "particle 3: softening")->p.eps[3] = 0;
  add("negative softening", ErrorCode::InvalidInput, "particle 4: softening")->p.eps[4] = -0.1;
  add("NaN softening", ErrorCode::InvalidInput, "particle 5: softening")->p.eps[5] = NAN;
  add("NaN position", ErrorCode::InvalidInput, "particle 9: y is not finite")->p.y[9] = NAN;
  add("infinite mass", ErrorCode::InvalidInput, "particle 2: mass is not finite")->p.m[2] = INFINITY;
  {
    Case* k = add("outside the box", ErrorCode::InvalidInput, "particle 1: x is outside the box");
    k->opt.hasBox = true;
    for (int d = 0; d < 3; ++d) { k->opt.boxLo[d] = -10; k->opt.boxHi[d] = 10; }
    k->p.x[1] = 11;
  }
  {
    Case* k = add("periodic", ErrorCode::InvalidOption, "periodic");
    k->opt.hasBox = true;
    for (int d = 0; d < 3; ++d) { k->opt.boxLo[d] = -10; k->opt.boxHi[d] = 10; k->opt.periodic[d] = true; }
  }
  add("no masses", ErrorCode::InvalidInput, "x, y, z and mass are needed")->nullMass = true;
  {
    Case* k = add("one softening of 0", ErrorCode::InvalidInput, "softening length must be finite and positive");
    k->nullEps = true;
    k->epsValue = 0;
  }
  add("bad kernel", ErrorCode::InvalidOption, "softening must be")->opt.softening = SofteningKernel(7);
  for (const Case& k : cases) {
    SystemView s;
    s.particles = k.p.view();
    if (k.nullMass) s.particles.mass = nullptr;
    if (k.nullEps) {
      s.particles.softening = nullptr;
      s.particles.softeningValue = k.epsValue;
    }
    for (const bool direct : {false, true}) {
      if (direct && k.opt.anyPeriodic()) continue;  // direct refuses periodic boxes first
      SystemResult r;
      const Status st = cpuSolveSystem(s, k.opt, direct, r);
      check("f. " + k.name + (direct ? " (direct)" : ""),
            st.code == k.code && st.message.find(k.needle) != std::string::npos,
            std::string(errorCodeName(st.code)) + ": " + st.message);
    }
  }
  // one softening for all (null array) is accepted
  SystemView s;
  s.particles = good.view();
  s.particles.softening = nullptr;
  s.particles.softeningValue = 0.01;
  SystemResult r;
  const Status st = cpuSolveSystem(s, baseOptions(0.5, SofteningKernel::Spline), false, r);
  check("f. one softening value for all", st.ok() && r.particles.potential.size() == 50, st.message);
}

// ---- g. the spline rule's source extent

/// Clustered random particles: a few Plummer clumps of very different sizes and softenings, a clump of coincident
/// particles, a few far outliers and some massless particles.
Particles clusteredParticles(std::uint32_t seed) {
  tools::Mulberry32 u(seed);
  Particles out;
  const int clumps = 3 + int(u.next() * 3);
  for (int k = 0; k < clumps; ++k) {
    const double c[3] = {u.next() * 10 - 5, u.next() * 10 - 5, u.next() * 10 - 5};
    const double a = std::pow(10.0, -3 + 3 * u.next());
    const Particles p = plummerParticles(200 + std::size_t(u.next() * 600), seed * 7 + k, a, c, 1.0,
                                         a * std::pow(10.0, -2 + 2 * u.next()), 4 * u.next());
    for (std::size_t i = 0; i < p.x.size(); ++i) {
      out.x.push_back(p.x[i]); out.y.push_back(p.y[i]); out.z.push_back(p.z[i]);
      out.m.push_back(u.next() < 0.05 ? 0.0 : p.m[i]);
      out.eps.push_back(p.eps[i]);
    }
  }
  for (int i = 0; i < 40; ++i) {  // coincident
    out.x.push_back(1.25); out.y.push_back(-0.5); out.z.push_back(3.0); out.m.push_back(1e-3); out.eps.push_back(0.01);
  }
  for (int i = 0; i < 10; ++i) {  // outliers
    out.x.push_back(u.next() * 200 - 100); out.y.push_back(u.next() * 200 - 100); out.z.push_back(u.next() * 200 - 100);
    out.m.push_back(1e-2); out.eps.push_back(0.05);
  }
  return out;
}

/// The particles [first, last) of node i (its leaves' ranges are contiguous in the sorted order).
void nodeRange(const Octree& t, std::uint32_t i, std::uint32_t& first, std::uint32_t& last) {
  std::uint32_t lo = i, hi = i;
  while (!t.isLeaf(lo)) lo = t.childBegin[lo];
  while (!t.isLeaf(hi)) hi = t.childBegin[hi] + t.childCount[hi] - 1;
  first = t.cellBegin[lo];
  last = t.cellBegin[hi] + t.cellCount[hi];
}

void sourceExtent() {
  using LD = long double;
  long nodes = 0, bad = 0, pairsChecked = 0, inside = 0, canaryInside = 0, acceptedNew = 0, acceptedOld = 0;
  double worstRatio = 0;  // largest |x - com| / b (<= 1)
  for (std::uint32_t seed = 1; seed <= 6; ++seed) {
    const Particles p = clusteredParticles(seed);
    SolveOptions o = baseOptions(seed % 2 ? 0.42 : 0.7, SofteningKernel::Spline);
    o.leafSize = seed % 3 == 0 ? 1 : 8;
    o.groupSize = 32;
    ParticleTree pt;
    Status st = validateParticles(p.view(), o);
    if (st.ok()) st = buildParticleTree(p.view(), o, 0.0, pt);
    if (!st.ok()) {
      check("g. particle tree of clustered set " + std::to_string(seed), false, st.message);
      continue;
    }
    const Octree& t = pt.tree;
    const SortedCells& c = pt.sorted;
    // every particle of every node within its extent of its com
    for (std::uint32_t i = 0; i < t.nodeCount(); ++i) {
      std::uint32_t first, last;
      nodeRange(t, i, first, last);
      const double* com = &t.com[3 * i];
      ++nodes;
      for (std::uint32_t j = first; j < last; ++j) {
        const LD dx = LD(c.x[j]) - com[0], dy = LD(c.y[j]) - com[1], dz = LD(c.z[j]) - com[2];
        const LD r = std::sqrt(dx * dx + dy * dy + dz * dz);
        if (r > LD(pt.extent[i])) ++bad;
        if (pt.extent[i] > 0) worstRatio = std::max(worstRatio, double(r / LD(pt.extent[i])));
      }
    }
    // brute force: the groups' walks with the MAC and the spline rule (cpu/soft_lists.cpp's tests), every accepted
    // node's sources against every target of the group; the canary takes half the extent
    for (std::size_t g = 0; g < pt.groups.size(); ++g) {
      const double* lo = &pt.groups.lo[3 * g];
      const double* hi = &pt.groups.hi[3 * g];
      for (const double shrink : {1.0, 0.5}) {
        std::vector<std::uint32_t> stack{0};
        while (!stack.empty()) {
          const std::uint32_t i = stack.back();
          stack.pop_back();
          if (nodeIsEmpty(t.macRadius[i])) continue;
          const double* com = &t.com[3 * i];
          const double d2 = distanceSquaredToBox(com[0], com[1], com[2], lo, hi);
          const bool mac = macAccepts(com[0], com[1], com[2], t.macRadius[i], lo, hi);
          const bool acc = mac && softeningAccepts(SofteningKernel::Spline, d2, shrink * pt.extent[i],
                                                   pt.groupEpsMin[g], pt.groupEpsMax[g], pt.epsMin[i], pt.epsMax[i]);
          if (shrink == 1.0 && mac) {
            acceptedNew += acc;
            acceptedOld += softeningAccepts(SofteningKernel::Spline, d2, t.macRadius[i], pt.groupEpsMin[g],
                                            pt.groupEpsMax[g], pt.epsMin[i], pt.epsMax[i]);
          }
          if (acc) {
            std::uint32_t first, last;
            nodeRange(t, i, first, last);
            for (std::uint32_t k = pt.groups.begin[g]; k < pt.groups.begin[g] + pt.groups.count[g]; ++k)
              for (std::uint32_t j = first; j < last; ++j) {
                if (c.mass[j] == 0) continue;  // not a source
                const LD dx = LD(c.x[k]) - c.x[j], dy = LD(c.y[k]) - c.y[j], dz = LD(c.z[k]) - c.z[j];
                const LD h = LD(kSplineRadius) * std::max(pt.eps[k], pt.eps[j]);
                const bool in = dx * dx + dy * dy + dz * dz < h * h;
                if (shrink == 1.0) {
                  ++pairsChecked;
                  inside += in;
                } else {
                  canaryInside += in;
                }
              }
            continue;
          }
          if (!t.isLeaf(i))
            for (std::uint32_t k = 0; k < t.childCount[i]; ++k) stack.push_back(t.childBegin[i] + k);
        }
      }
    }
  }
  check("g. every particle within its nodes' extents", bad == 0 && nodes > 0,
        std::to_string(nodes) + " nodes, " + std::to_string(bad) + " particles beyond; largest |x - com| / b " +
            num(worstRatio));
  check("g. no accepted node holds a source within 2.8 eps_ij of a target", inside == 0 && pairsChecked > 0,
        std::to_string(pairsChecked) + " pairs of accepted nodes checked, " + std::to_string(inside) + " inside");
  check("g. canary: half the extent lets sources inside 2.8 eps_ij through", canaryInside > 0,
        std::to_string(canaryInside) + " pairs inside");
  check("g. the extent accepts at least the nodes macRadius did", acceptedNew >= acceptedOld && acceptedOld > 0,
        std::to_string(acceptedNew) + " accepted with the extent, " + std::to_string(acceptedOld) +
            " with macRadius (MAC-accepted nodes)");
}

}  // namespace

int main() {
  particlesAlone();
  momentumExchange();
  linearityAndProbes();
  coincidentProbes();
  twoParticles();
  badInput();
  sourceExtent();
  std::printf("%d checks, %d failed\n", gChecks, gFailed);
  return gFailed ? 1 : 0;
}
