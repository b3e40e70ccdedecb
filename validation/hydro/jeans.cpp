// A small self-gravitating hydro code that uses amrgrav through its C API (native/include/amrgrav.h), as a C or
// C++ hydro code would: isothermal gas on a uniform periodic grid, MUSCL-Hancock with minmod slopes and the HLL
// Riemann solver, gravity as a momentum source from amrgrav's accelerations in a kick-drift-kick splitting (half a
// kick with the old field, the hydro step, one gravity solve, half a kick with the new field: second order in
// time with one solve per step).
//
// The problem is the Jeans instability of a uniform medium: a density perturbation delta cos(k x) grows as
// delta cosh(sigma t), sigma = sqrt(4 pi G rho0 - cs^2 k^2), when the wavelength exceeds the Jeans length, and
// oscillates as delta cos(omega t), omega = sqrt(cs^2 k^2 - 4 pi G rho0), when it is shorter. The run measures
// sigma (or omega) from the simulated amplitude and prints one JSON object.
//
//   jeans [--nx 32] [--cs C] [--periods P] [--theta 0.5]
// With -DAMRGRAV_TESTBED_MPI (mpicxx) under mpirun, gravity is distributed over the ranks (gravity_field.h).
//
// Units: rho0 = 1, 4 pi G rho0 = 1 (G = 1/(4 pi)), box 1 along x (one wavelength) and nx/8 cells across.
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

}  // namespace

int main(int argc, char** argv) {
#if defined(AMRGRAV_TESTBED_MPI)
  MPI_Init(&argc, &argv);
#endif
  int nx = 32;
  double cs = 0.5 / (2 * M_PI), periods = 0, theta = 0.5;
  for (int a = 1; a + 1 < argc; a += 2) {
    const std::string k = argv[a];
    if (k == "--nx") nx = std::atoi(argv[a + 1]);
    else if (k == "--cs") cs = std::atof(argv[a + 1]);
    else if (k == "--periods") periods = std::atof(argv[a + 1]);
    else if (k == "--theta") theta = std::atof(argv[a + 1]);
  }
  const double G = 1 / (4 * M_PI), k = 2 * M_PI, delta = 1e-4;
  const double s2 = 1 - cs * cs * k * k;  // 4 pi G rho0 - cs^2 k^2
  const bool unstable = s2 > 0;
  const double rate = std::sqrt(std::fabs(s2));
  // unstable: to cosh = 20 (t = 3.7 / sigma); stable: a quarter period (the first zero of cos) unless asked
  const double tEnd = unstable ? std::acosh(20.0) / rate : (periods > 0 ? periods : 0.25) * 2 * M_PI / rate;

  Grid g{{nx, nx / 8 < 2 ? 2 : nx / 8, nx / 8 < 2 ? 2 : nx / 8}, 1.0 / nx, true};
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
  for (int step = 0; step < steps; ++step) {  // kick-drift-kick
    hydro::kick(s, field.acc, 0.5 * dt);
    hydro::hydroStep(g, cs, dt, s);
    if (!gravity()) return 1;
    hydro::kick(s, field.acc, 0.5 * dt);
  }
  const double total = since(tAll);
  const double amp = modeAmplitude(g, s, k);
  double measured;
  if (unstable) measured = std::acosh(std::fmax(1.0, amp / delta)) / tEnd;  // A = delta cosh(sigma t)
  else measured = std::acos(std::fmax(-1.0, std::fmin(1.0, amp / delta))) / tEnd;  // A = delta cos(omega t)
  double massTotal = 0;
  for (std::size_t c = 0; c < n; ++c) massTotal += s.rho[c];
  if (field.rank() == 0)
    std::printf("{\"ranks\":%d,\"cells\":%zu,\"nx\":%d,\"cs\":%.6g,\"unstable\":%s,\"theory\":%.6g,\"measured\":%.6g,"
                "\"relError\":%.3e,\"amplitudeRatio\":%.6g,\"tEnd\":%.6g,\"steps\":%d,\"gravityFraction\":%.3f,"
                "\"seconds\":%.3f,\"massDrift\":%.3e}\n",
                field.ranks(), n, nx, cs, unstable ? "true" : "false", rate, measured, std::fabs(measured - rate) / rate,
                amp / delta, tEnd, steps, field.seconds / total, total, std::fabs(massTotal / double(n) - 1.0));
#if defined(AMRGRAV_TESTBED_MPI)
  MPI_Finalize();
#endif
  return 0;
}
