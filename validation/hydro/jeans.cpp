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
//
// Units: rho0 = 1, 4 pi G rho0 = 1 (G = 1/(4 pi)), box 1 along x (one wavelength) and nx/8 cells across.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <string>
#include <vector>

#include "amrgrav.h"

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Grid {
  int n[3];
  double h;
  std::size_t size() const { return std::size_t(n[0]) * n[1] * n[2]; }
  std::size_t at(int i, int j, int k) const {
    i = (i + n[0]) % n[0]; j = (j + n[1]) % n[1]; k = (k + n[2]) % n[2];  // periodic
    return (std::size_t(k) * n[1] + j) * n[0] + i;
  }
};

/// Conserved state: density and momentum density.
struct State {
  std::vector<double> rho, mx, my, mz;
  explicit State(std::size_t n) : rho(n), mx(n), my(n), mz(n) {}
};

double minmod(double a, double b) { return a * b <= 0 ? 0 : (std::fabs(a) < std::fabs(b) ? a : b); }

/// Isothermal HLL flux along axis d between left and right primitive states (rho, u[3]).
void hll(double cs, int d, double rl, const double* ul, double rr, const double* ur, double* f) {
  const double sl = std::fmin(ul[d], ur[d]) - cs, sr = std::fmax(ul[d], ur[d]) + cs;
  double fl[4], fr[4], qLeft[4] = {rl, rl * ul[0], rl * ul[1], rl * ul[2]}, qRight[4] = {rr, rr * ur[0], rr * ur[1], rr * ur[2]};
  fl[0] = rl * ul[d];
  fr[0] = rr * ur[d];
  for (int c = 0; c < 3; ++c) {
    fl[1 + c] = rl * ul[d] * ul[c] + (c == d ? rl * cs * cs : 0);
    fr[1 + c] = rr * ur[d] * ur[c] + (c == d ? rr * cs * cs : 0);
  }
  for (int q = 0; q < 4; ++q) {
    if (sl >= 0) f[q] = fl[q];
    else if (sr <= 0) f[q] = fr[q];
    else f[q] = (sr * fl[q] - sl * fr[q] + sl * sr * (qRight[q] - qLeft[q])) / (sr - sl);
  }
}

/// One MUSCL-Hancock step (unsplit): primitive slopes, half-step predictor with the gravity source, HLL fluxes,
/// then the full-step update with the source at the half step (g is fixed over the step).
void hydroStep(const Grid& g, double cs, double dt, const std::vector<double>* acc, State& s) {
  const std::size_t n = g.size();
  std::vector<double> r(n), u[3];
  for (auto& v : u) v.resize(n);
  for (std::size_t c = 0; c < n; ++c) {
    r[c] = s.rho[c];
    u[0][c] = s.mx[c] / r[c]; u[1][c] = s.my[c] / r[c]; u[2][c] = s.mz[c] / r[c];
  }
  // slopes (per axis) and half-step face states
  std::vector<double> faceR[3][2], faceU[3][2][3];
  for (int d = 0; d < 3; ++d)
    for (int side = 0; side < 2; ++side) {
      faceR[d][side].resize(n);
      for (int c = 0; c < 3; ++c) faceU[d][side][c].resize(n);
    }
  for (int k = 0; k < g.n[2]; ++k)
    for (int j = 0; j < g.n[1]; ++j)
      for (int i = 0; i < g.n[0]; ++i) {
        const std::size_t c = g.at(i, j, k);
        double dr[3], du[3][3];
        for (int d = 0; d < 3; ++d) {
          const std::size_t cp = g.at(i + (d == 0), j + (d == 1), k + (d == 2)), cm = g.at(i - (d == 0), j - (d == 1), k - (d == 2));
          dr[d] = minmod(r[cp] - r[c], r[c] - r[cm]);
          for (int q = 0; q < 3; ++q) du[d][q] = minmod(u[q][cp] - u[q][c], u[q][c] - u[q][cm]);
        }
        // primitive time derivative (isothermal Euler): dr/dt = -u.grad r - r div u; du/dt = -u.grad u - cs^2 grad r / r + g
        double rt = 0, ut[3] = {0, 0, 0};
        for (int d = 0; d < 3; ++d) {
          rt -= u[d][c] * dr[d] / g.h + r[c] * du[d][d] / g.h;
          for (int q = 0; q < 3; ++q) ut[q] -= u[d][c] * du[d][q] / g.h;
          ut[d] -= cs * cs * dr[d] / (r[c] * g.h);
        }
        if (acc)
          for (int q = 0; q < 3; ++q) ut[q] += acc[q][c];
        for (int d = 0; d < 3; ++d)
          for (int side = 0; side < 2; ++side) {
            const double sgn = side == 0 ? -0.5 : 0.5;
            faceR[d][side][c] = r[c] + sgn * dr[d] + 0.5 * dt * rt;
            for (int q = 0; q < 3; ++q) faceU[d][side][q][c] = u[q][c] + sgn * du[d][q] + 0.5 * dt * ut[q];
          }
      }
  // fluxes through the +d face of every cell, then the update
  State next = s;
  for (int d = 0; d < 3; ++d)
    for (int k = 0; k < g.n[2]; ++k)
      for (int j = 0; j < g.n[1]; ++j)
        for (int i = 0; i < g.n[0]; ++i) {
          const std::size_t c = g.at(i, j, k), cp = g.at(i + (d == 0), j + (d == 1), k + (d == 2));
          const double ul[3] = {faceU[d][1][0][c], faceU[d][1][1][c], faceU[d][1][2][c]};
          const double ur[3] = {faceU[d][0][0][cp], faceU[d][0][1][cp], faceU[d][0][2][cp]};
          double f[4];
          hll(cs, d, faceR[d][1][c], ul, faceR[d][0][cp], ur, f);
          const double w = dt / g.h;
          next.rho[c] -= w * f[0]; next.rho[cp] += w * f[0];
          next.mx[c] -= w * f[1]; next.mx[cp] += w * f[1];
          next.my[c] -= w * f[2]; next.my[cp] += w * f[2];
          next.mz[c] -= w * f[3]; next.mz[cp] += w * f[3];
        }
  if (acc) {
    // the source at the half step: the mean of the old and new densities times g
    for (std::size_t c = 0; c < n; ++c) {
      const double rh = 0.5 * (s.rho[c] + next.rho[c]);
      next.mx[c] += dt * rh * acc[0][c];
      next.my[c] += dt * rh * acc[1][c];
      next.mz[c] += dt * rh * acc[2][c];
    }
  }
  s = next;
}

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

  Grid g{{nx, nx / 8 < 2 ? 2 : nx / 8, nx / 8 < 2 ? 2 : nx / 8}, 1.0 / nx};
  const std::size_t n = g.size();
  State s(n);
  std::vector<double> x(n), y(n), z(n), mass(n), size(n, g.h), pot(n), acc[3];
  for (auto& v : acc) v.resize(n);
  for (int kk = 0; kk < g.n[2]; ++kk)
    for (int j = 0; j < g.n[1]; ++j)
      for (int i = 0; i < g.n[0]; ++i) {
        const std::size_t c = g.at(i, j, kk);
        x[c] = (i + 0.5) * g.h; y[c] = (j + 0.5) * g.h; z[c] = (kk + 0.5) * g.h;
        s.rho[c] = 1 + delta * std::cos(k * x[c]);
      }

  amrgrav_options o;
  amrgrav_default_options(&o);
  o.G = G;
  o.theta = theta;
  o.accelerations = 1;
  o.backend = AMRGRAV_BACKEND_CPU;
  o.has_box = 1;
  o.box_lo[0] = o.box_lo[1] = o.box_lo[2] = 0;
  o.box_hi[0] = 1; o.box_hi[1] = g.n[1] * g.h; o.box_hi[2] = g.n[2] * g.h;
  o.periodic[0] = o.periodic[1] = o.periodic[2] = 1;
  amrgrav_solver* solver = nullptr;
  if (amrgrav_create(&o, &solver) != AMRGRAV_OK) {
    std::printf("{\"error\":\"%s\"}\n", amrgrav_last_error(nullptr));
    return 1;
  }

  const double dt0 = 0.3 * g.h / cs;  // CFL 0.3 on the sound speed (velocities stay << cs in the linear regime)
  const int steps = int(std::ceil(tEnd / dt0));
  const double dt = tEnd / steps;
  double tGravity = 0;
  const auto tAll = Clock::now();
  auto gravity = [&]() -> bool {
    for (std::size_t c = 0; c < n; ++c) mass[c] = s.rho[c] * g.h * g.h * g.h;
    const auto tg = Clock::now();
    const bool ok = amrgrav_compute_potential(solver, n, x.data(), y.data(), z.data(), mass.data(), size.data(),
                                              pot.data(), acc[0].data(), acc[1].data(), acc[2].data()) == AMRGRAV_OK;
    tGravity += since(tg);
    if (!ok) std::printf("{\"error\":\"%s\"}\n", amrgrav_last_error(solver));
    return ok;
  };
  auto kick = [&](double tau) {
    for (std::size_t c = 0; c < n; ++c) {
      s.mx[c] += tau * s.rho[c] * acc[0][c];
      s.my[c] += tau * s.rho[c] * acc[1][c];
      s.mz[c] += tau * s.rho[c] * acc[2][c];
    }
  };
  if (!gravity()) return 1;
  for (int step = 0; step < steps; ++step) {
    kick(0.5 * dt);
    hydroStep(g, cs, dt, nullptr, s);
    if (!gravity()) return 1;
    kick(0.5 * dt);
  }
  const double total = since(tAll);
  const double amp = modeAmplitude(g, s, k);
  double measured;
  if (unstable) measured = std::acosh(std::fmax(1.0, amp / delta)) / tEnd;  // A = delta cosh(sigma t)
  else measured = std::acos(std::fmax(-1.0, std::fmin(1.0, amp / delta))) / tEnd;  // A = delta cos(omega t)
  amrgrav_destroy(solver);
  double massTotal = 0;
  for (std::size_t c = 0; c < n; ++c) massTotal += s.rho[c];
  std::printf("{\"cells\":%zu,\"nx\":%d,\"cs\":%.6g,\"unstable\":%s,\"theory\":%.6g,\"measured\":%.6g,"
              "\"relError\":%.3e,\"amplitudeRatio\":%.6g,\"tEnd\":%.6g,\"steps\":%d,\"gravityFraction\":%.3f,"
              "\"seconds\":%.3f,\"massDrift\":%.3e}\n",
              n, nx, cs, unstable ? "true" : "false", rate, measured, std::fabs(measured - rate) / rate, amp / delta, tEnd,
              steps, tGravity / total, total, std::fabs(massTotal / double(n) - 1.0));
  return 0;
}
