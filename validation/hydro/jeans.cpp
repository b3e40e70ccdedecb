// A small self-gravitating hydro code that uses amrgrav through its C API (native/include/amrgrav.h), as a C or
// C++ hydro code would: isothermal gas on a uniform periodic grid, MUSCL-Hancock with limited slopes and the HLL
// Riemann solver, gravity as a momentum source from amrgrav's accelerations in a kick-drift-kick splitting (half a
// kick with the old field, the hydro step, one gravity solve, half a kick with the new field: second order in
// time with one solve per step).
//
// The problem is the Jeans instability of a uniform medium: a density perturbation delta cos(k x) grows as
// delta cosh(sigma t), sigma = sqrt(4 pi G rho0 - cs^2 k^2), when the wavelength exceeds the Jeans length, and
// oscillates as delta cos(omega t), omega = sqrt(cs^2 k^2 - 4 pi G rho0), when it is shorter. The run measures
// sigma (or omega) from the simulated amplitude and prints one JSON object.
//
// Measured: unstable, sigma = acosh(a(t)/delta) / t at the end (t: to cosh = 20); stable, omega from the phase of
// the last zero crossing of a(t) (the m-th zero of cos(omega t) is at (m - 1/2) pi / omega; crossings found by
// linear interpolation between steps; a quarter period has one), the damping rate from a(t) at the end (whole
// periods: -ln(a/delta) / t), and the kinetic energy against linear theory. With rho0 = 1, continuity gives
// v = (delta omega / k) sin(k x) sin(omega t) (stable; sinh(sigma t) and sigma when unstable), so
// KE(t) = (1/4) (delta omega / k)^2 sin^2(omega t) V for the box volume V: keRatio is the simulated KE integrated
// over the run (trapezoids over the steps) over the same integral of the linear KE at the same times (the run's
// whole periods when stable; the unstable run's KE grows as sinh^2), kePeakRatio the largest simulated KE over
// the linear peak (1/4) (delta omega / k)^2 V (stable runs of at least half a period), keAcrossRatio the same
// integral of the y and z motion alone (spurious flows: the wave has none) over the linear one.
//
//   jeans [--nx 32] [--ny NX/8] [--cs C] [--periods P] [--theta 0.5] [--amplitude 1e-4] [--contrast 1]
//         [--limiter minmod|mc] [--leaf 16] [--group 32]
// --ny: cells across y and z (the box is 1 x ny/nx x ny/nx; at least 2, aspect at most 16); --leaf, --group: the
// tree's leaf_size and group_size (smaller groups accept more nodes as multipoles instead of opening them).
// --amplitude: delta; --contrast 0 turns off amrgrav_options.density_contrast (the masses as given: the tree's
// error on the uniform background then acts on the gas; bench/RESULTS.md, "Jeans test at A = 1e-6").
// With -DAMRGRAV_TESTBED_MPI (mpicxx) under mpirun, gravity is distributed over the ranks (gravity_field.h).
//
// Units: rho0 = 1, 4 pi G rho0 = 1 (G = 1/(4 pi)), box 1 along x (one wavelength) and ny cells across.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <string>
#include <vector>

#include "gravity_field.h"
#include "isothermal.h"

namespace {

using hydro::Clock;
using hydro::Grid;
using hydro::State;
using hydro::since;

/// Amplitude of the cos(k x) mode of the density contrast.
double modeAmplitude(const Grid& g, const State& s, double k) {
  double a = 0;
  for (int kk = 0; kk < g.n[2]; ++kk)
    for (int j = 0; j < g.n[1]; ++j)
      for (int i = 0; i < g.n[0]; ++i) a += (s.rho[g.at(i, j, kk)] - 1.0) * std::cos(k * (i + 0.5) * g.h);
  return 2 * a / double(g.size());
}

/// Kinetic energy of the gas, sum (1/2) |m|^2 / rho h^3; `across`: only its y and z motion (none in the wave).
double kineticEnergy(const Grid& g, const State& s, bool across = false) {
  double e = 0;
  for (std::size_t c = 0; c < g.size(); ++c)
    e += 0.5 * ((across ? 0 : s.mx[c] * s.mx[c]) + s.my[c] * s.my[c] + s.mz[c] * s.mz[c]) / s.rho[c];
  return e * g.h * g.h * g.h;
}

}  // namespace

int main(int argc, char** argv) {
#if defined(AMRGRAV_TESTBED_MPI)
  MPI_Init(&argc, &argv);
#endif
  int nx = 32;
  int contrast = 1, ny = 0, leaf = 0, group = 0;
  hydro::Limiter limiter = hydro::Limiter::Minmod;
  double cs = 0.5 / (2 * M_PI), periods = 0, theta = 0.5, delta = 1e-4;
  for (int a = 1; a + 1 < argc; a += 2) {
    const std::string k = argv[a];
    if (k == "--nx") nx = std::atoi(argv[a + 1]);
    else if (k == "--cs") cs = std::atof(argv[a + 1]);
    else if (k == "--periods") periods = std::atof(argv[a + 1]);
    else if (k == "--theta") theta = std::atof(argv[a + 1]);
    else if (k == "--amplitude") delta = std::atof(argv[a + 1]);
    else if (k == "--contrast") contrast = std::atoi(argv[a + 1]);
    else if (k == "--ny") ny = std::atoi(argv[a + 1]);
    else if (k == "--leaf") leaf = std::atoi(argv[a + 1]);
    else if (k == "--group") group = std::atoi(argv[a + 1]);
    else if (k == "--limiter")
      limiter = std::string(argv[a + 1]) == "mc" ? hydro::Limiter::MC : hydro::Limiter::Minmod;
  }
  const double G = 1 / (4 * M_PI), k = 2 * M_PI;
  const double s2 = 1 - cs * cs * k * k;  // 4 pi G rho0 - cs^2 k^2
  const bool unstable = s2 > 0;
  const double rate = std::sqrt(std::fabs(s2));
  // unstable: to cosh = 20 (t = 3.7 / sigma); stable: a quarter period (the first zero of cos) unless asked
  const double tEnd = unstable ? std::acosh(20.0) / rate : (periods > 0 ? periods : 0.25) * 2 * M_PI / rate;

  if (ny <= 0) ny = nx / 8 < 2 ? 2 : nx / 8;
  Grid g{{nx, ny, ny}, 1.0 / nx, true};
  const std::size_t n = g.size();
  State s(n);
  for (int kk = 0; kk < g.n[2]; ++kk)
    for (int j = 0; j < g.n[1]; ++j)
      for (int i = 0; i < g.n[0]; ++i) s.rho[g.at(i, j, kk)] = 1 + delta * std::cos(k * (i + 0.5) * g.h);

  amrgrav_options o;
  amrgrav_default_options(&o);
  o.G = G;
  o.theta = theta;
  o.backend = AMRGRAV_BACKEND_CPU;
  o.has_box = 1;
  o.box_lo[0] = o.box_lo[1] = o.box_lo[2] = 0;
  o.box_hi[0] = 1; o.box_hi[1] = g.n[1] * g.h; o.box_hi[2] = g.n[2] * g.h;
  o.periodic[0] = o.periodic[1] = o.periodic[2] = 1;
  o.density_contrast = contrast;
  if (leaf > 0) o.leaf_size = leaf;
  if (group > 0) o.group_size = group;
  hydro::GravityField field(g, o);
  if (!field.ok()) {
    std::printf("{\"error\":\"%s\"}\n", field.error().c_str());
    return 1;
  }

  const double dt0 = 0.3 * g.h / cs;  // CFL 0.3 on the sound speed (velocities stay << cs in the linear regime)
  const int steps = int(std::ceil(tEnd / dt0));
  const double dt = tEnd / steps;
  const auto tAll = Clock::now();
  auto gravity = [&]() {
    if (!field.compute(s)) std::printf("{\"error\":\"%s\"}\n", field.error().c_str());
    return field.error().empty();
  };
  if (!gravity()) return 1;
  std::vector<double> series(1, modeAmplitude(g, s, k)), ke(1, kineticEnergy(g, s)), keAcross(1, 0.0);
  for (int step = 0; step < steps; ++step) {  // kick-drift-kick
    hydro::kick(s, field.acc, 0.5 * dt);
    hydro::hydroStep(g, cs, dt, s, limiter);
    if (!gravity()) return 1;
    hydro::kick(s, field.acc, 0.5 * dt);
    series.push_back(modeAmplitude(g, s, k));
    ke.push_back(kineticEnergy(g, s));
    keAcross.push_back(kineticEnergy(g, s, true));
  }
  const double total = since(tAll);
  const double amp = series.back();
  double measured = 0, damping = NAN;
  int crossings = 0;
  if (unstable) {
    measured = std::acosh(std::fmax(1.0, amp / delta)) / tEnd;  // A = delta cosh(sigma t)
  } else {
    double lastZero = 0;
    for (int i = 1; i <= steps; ++i)
      if ((series[i - 1] > 0) != (series[i] > 0)) {
        ++crossings;
        lastZero = dt * (i - 1 + series[i - 1] / (series[i - 1] - series[i]));
      }
    // the m-th zero of cos(omega t); without one (a run shorter than a quarter period) the phase at the end
    measured = crossings > 0 ? (crossings - 0.5) * M_PI / lastZero
                             : std::acos(std::fmax(-1.0, std::fmin(1.0, amp / delta))) / tEnd;
    damping = amp / delta > 0 ? -std::log(amp / delta) / tEnd : NAN;  // meaningful after whole periods
  }
  // kinetic energy against linear theory at the same times (trapezoids), and the peak of a stable wave
  const double volume = 1.0 * (g.n[1] * g.h) * (g.n[2] * g.h), vAmp = delta * rate / k;
  double keSim = 0, keLin = 0, keMax = 0, keSide = 0;
  for (int i = 0; i <= steps; ++i) {
    const double t = i * dt, w = (i == 0 || i == steps) ? 0.5 : 1.0;
    const double sn = unstable ? std::sinh(rate * t) : std::sin(rate * t);
    keSim += w * ke[i];
    keSide += w * keAcross[i];
    keLin += w * 0.25 * vAmp * vAmp * sn * sn * volume;
    keMax = std::fmax(keMax, ke[i]);
  }
  const double kePeakRatio = !unstable && rate * tEnd >= M_PI ? keMax / (0.25 * vAmp * vAmp * volume) : NAN;
  double massTotal = 0;
  for (std::size_t c = 0; c < n; ++c) massTotal += s.rho[c];
  auto num = [](double v) {  // JSON has no NaN
    char b[32];
    std::snprintf(b, sizeof b, "%.6g", v);
    return std::isfinite(v) ? std::string(b) : std::string("null");
  };
  if (field.rank() == 0)
    std::printf("{\"ranks\":%d,\"cells\":%zu,\"nx\":%d,\"ny\":%d,\"limiter\":\"%s\",\"cs\":%.6g,\"amplitude\":%.3g,"
                "\"densityContrast\":%s,\"unstable\":%s,\"theory\":%.6g,\"measured\":%.6g,\"relError\":%.3e,"
                "\"zeroCrossings\":%d,\"amplitudeRatio\":%.6g,\"dampingRate\":%s,\"keRatio\":%.6g,"
                "\"keAcrossRatio\":%.3e,\"kePeakRatio\":%s,\"keLinearMean\":%.6g,\"tEnd\":%.6g,\"steps\":%d,\"gravityFraction\":%.3f,"
                "\"seconds\":%.3f,\"massDrift\":%.3e}\n",
                field.ranks(), n, nx, ny, limiter == hydro::Limiter::MC ? "mc" : "minmod", cs, delta,
                contrast ? "true" : "false", unstable ? "true" : "false", rate, measured,
                std::fabs(measured - rate) / rate, crossings, amp / delta, num(damping).c_str(), keSim / keLin,
                keSide / keLin, num(kePeakRatio).c_str(), keLin / steps, tEnd, steps, field.seconds / total, total,
                std::fabs(massTotal / double(n) - 1.0));
#if defined(AMRGRAV_TESTBED_MPI)
  MPI_Finalize();
#endif
  return 0;
}
