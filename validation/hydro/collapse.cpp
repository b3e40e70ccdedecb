// The cold collapse of a uniform sphere with amrgrav as the gravity module (C API, isolated boundaries) inside the
// test bed's isothermal hydro code (validation/hydro/isothermal.h), kick-drift-kick, one gravity solve per step.
// Pressureless theory: every shell falls homologously, r = r0 cos^2(b) at t = t_ff (2/pi)(b + sin b cos b),
// t_ff = sqrt(3 pi / (32 G rho0)), so the interior stays uniform at rho0 / cos^6(b). The run follows the density
// at the centre and the energy K + W (W = 1/2 sum m phi from amrgrav's potential; the sound speed is 1e-2 of the
// free-fall speed, so pressure is negligible) until the central density has grown eightfold (r = r0 / 2,
// t = 0.818 t_ff), and prints one JSON object.
//
//   collapse [--nx 32] [--theta 0.5]
//
// Built with -DAMRGRAV_TESTBED_MPI (mpicxx, with -DOMPI_SKIP_MPICXX=1) and run under mpirun, the hydro stays replicated on every rank while
// gravity is distributed: each rank passes amrgrav its own slab of cells (options.distributed) and the ranks
// share the accelerations (MPI_Allgatherv); the result must match one rank's to the tree's accuracy.
//
// Units: G = 1, rho0 = 1, sphere radius 0.25 centred in the unit box, background 1e-3.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gravity_field.h"
#include "isothermal.h"

namespace {

/// Free-fall time at which a homologously collapsing sphere has shrunk to `ratio` of its radius.
double timeAtRadiusRatio(double ratio, double tff) {
  const double b = std::acos(std::sqrt(ratio));
  return tff * (2 / M_PI) * (b + std::sin(b) * std::cos(b));
}

}  // namespace

int main(int argc, char** argv) {
#if defined(AMRGRAV_TESTBED_MPI)
  MPI_Init(&argc, &argv);
#endif
  int nx = 32;
  double theta = 0.5;
  for (int a = 1; a + 1 < argc; a += 2) {
    const std::string k = argv[a];
    if (k == "--nx") nx = std::atoi(argv[a + 1]);
    else if (k == "--theta") theta = std::atof(argv[a + 1]);
  }
  const double G = 1, rho0 = 1, R = 0.25, bg = 1e-3;
  const double tff = std::sqrt(3 * M_PI / (32 * G * rho0));
  const double vff = std::sqrt(2 * G * (4.0 / 3.0) * M_PI * R * R * R * rho0 / R);
  const double cs = 1e-2 * vff;
  hydro::Grid g{{nx, nx, nx}, 1.0 / nx, false};
  const std::size_t n = g.size();
  hydro::State s(n);
  const int sub = 4;  // sub-samples per axis for the volume fraction of cells cut by the surface
  for (int k = 0; k < nx; ++k)
    for (int j = 0; j < nx; ++j)
      for (int i = 0; i < nx; ++i) {
        int in = 0;
        for (int a = 0; a < sub; ++a)
          for (int b = 0; b < sub; ++b)
            for (int d = 0; d < sub; ++d) {
              const double px = (i + (a + 0.5) / sub) * g.h - 0.5, py = (j + (b + 0.5) / sub) * g.h - 0.5,
                           pz = (k + (d + 0.5) / sub) * g.h - 0.5;
              in += px * px + py * py + pz * pz <= R * R;
            }
        s.rho[g.at(i, j, k)] = bg + rho0 * in / double(sub * sub * sub);
      }

  amrgrav_options o;
  amrgrav_default_options(&o);
  o.G = G;
  o.theta = theta;
  o.has_box = 1;
  o.box_lo[0] = o.box_lo[1] = o.box_lo[2] = 0;
  o.box_hi[0] = o.box_hi[1] = o.box_hi[2] = 1;
  hydro::GravityField field(g, o);
  if (!field.ok()) {
    std::printf("{\"error\":\"%s\"}\n", field.error().c_str());
    return 1;
  }
  auto gravity = [&]() {
    if (!field.compute(s)) std::printf("{\"error\":\"%s\"}\n", field.error().c_str());
    return field.error().empty();
  };
  const std::vector<double>& pot = field.pot;
  const std::vector<double>* acc = field.acc;
  auto energy = [&](double& K, double& W) {
    K = W = 0;
    const double v = g.h * g.h * g.h;
    for (std::size_t c = 0; c < n; ++c) {
      K += 0.5 * v * (s.mx[c] * s.mx[c] + s.my[c] * s.my[c] + s.mz[c] * s.mz[c]) / s.rho[c];
      W += 0.5 * v * s.rho[c] * pot[c];
    }
  };
  /// mean density of the cells within 2 cell sides of the centre
  auto centralDensity = [&]() {
    double sum = 0;
    int cnt = 0;
    for (int k = 0; k < nx; ++k)
      for (int j = 0; j < nx; ++j)
        for (int i = 0; i < nx; ++i) {
          const double dx = (i + 0.5) * g.h - 0.5, dy = (j + 0.5) * g.h - 0.5, dz = (k + 0.5) * g.h - 0.5;
          if (dx * dx + dy * dy + dz * dz <= 4 * g.h * g.h) { sum += s.rho[g.at(i, j, k)]; ++cnt; }
        }
    return sum / cnt;
  };

  const auto tAll = hydro::Clock::now();
  if (!gravity()) return 1;
  double K0, W0;
  energy(K0, W0);
  const double target = 8 * rho0;  // r = r0 / 2
  const double tTheory = timeAtRadiusRatio(0.5, tff);
  double t = 0, tPrev = 0, rhoPrev = centralDensity(), maxEnergyDrift = 0, tCross = -1;
  int steps = 0;
  const double density0 = rhoPrev;
  while (t < 1.2 * tTheory && steps < 10000) {
    double vmax = 0;
    for (std::size_t c = 0; c < n; ++c)
      vmax = std::fmax(vmax, std::sqrt(s.mx[c] * s.mx[c] + s.my[c] * s.my[c] + s.mz[c] * s.mz[c]) / s.rho[c]);
    const double dt = std::fmin(0.3 * g.h / (vmax + cs), 0.02 * tff);
    hydro::kick(s, acc, 0.5 * dt);
    hydro::hydroStep(g, cs, dt, s);
    if (!gravity()) return 1;
    hydro::kick(s, acc, 0.5 * dt);
    t += dt;
    ++steps;
    double K, W;
    energy(K, W);
    const double rhoC = centralDensity();
    if (tCross < 0) maxEnergyDrift = std::fmax(maxEnergyDrift, std::fabs((K + W) - (K0 + W0)) / std::fabs(W0));
    if (tCross < 0 && rhoC >= target) tCross = tPrev + (t - tPrev) * (target - rhoPrev) / (rhoC - rhoPrev);
    tPrev = t;
    rhoPrev = rhoC;
    if (tCross >= 0) break;
  }
  const double total = hydro::since(tAll);
  if (field.rank() == 0)
    std::printf("{\"ranks\":%d,\"cells\":%zu,\"nx\":%d,\"tff\":%.6g,\"tTheory\":%.6g,\"tMeasured\":%.6g,\"relError\":%.3e,"
              "\"centralDensity0\":%.6g,\"maxEnergyDrift\":%.3e,\"W0\":%.6g,\"steps\":%d,\"gravityFraction\":%.3f,"
              "\"seconds\":%.3f}\n",
              field.ranks(), n, nx, tff, tTheory, tCross, tCross > 0 ? std::fabs(tCross - tTheory) / tTheory : 1.0,
              density0, maxEnergyDrift, W0, steps, field.seconds / total, total);
#if defined(AMRGRAV_TESTBED_MPI)
  MPI_Finalize();
#endif
  return tCross > 0 ? 0 : 1;
}
