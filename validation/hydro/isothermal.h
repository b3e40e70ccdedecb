/// \file isothermal.h
/// \brief The hydro test bed's solver (validation/hydro/*.cpp): isothermal gas on a uniform grid, MUSCL-Hancock
/// with limited slopes (minmod by default, or monotonised central) and the HLL Riemann solver, unsplit; periodic
/// or outflow (zero-gradient) boundaries. Gravity enters from outside as kicks (see the programs), so this file
/// knows nothing of amrgrav.
#pragma once
#include <chrono>
#include <cmath>
#include <cstddef>
#include <vector>

namespace hydro {

using Clock = std::chrono::steady_clock;
inline double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Grid {
  int n[3];
  double h;
  bool periodic = true;  ///< else outflow: a neighbour outside the grid is the edge cell itself
  std::size_t size() const { return std::size_t(n[0]) * n[1] * n[2]; }
  std::size_t at(int i, int j, int k) const {
    if (periodic) {
      i = (i + n[0]) % n[0]; j = (j + n[1]) % n[1]; k = (k + n[2]) % n[2];
    } else {
      i = i < 0 ? 0 : (i >= n[0] ? n[0] - 1 : i);
      j = j < 0 ? 0 : (j >= n[1] ? n[1] - 1 : j);
      k = k < 0 ? 0 : (k >= n[2] ? n[2] - 1 : k);
    }
    return (std::size_t(k) * n[1] + j) * n[0] + i;
  }
};

/// Conserved state: density and momentum density.
struct State {
  std::vector<double> rho, mx, my, mz;
  explicit State(std::size_t n) : rho(n), mx(n), my(n), mz(n) {}
};

inline double minmod(double a, double b) { return a * b <= 0 ? 0 : (std::fabs(a) < std::fabs(b) ? a : b); }

/// Slope limiters: minmod (the most diffusive: it flattens every extremum, so a smooth wave of a few tens of cells
/// loses a few percent of its energy per period) or monotonised central (van Leer's MC: the central slope, limited
/// to twice the smaller one-sided slope; an order of magnitude less damping on such waves).
enum class Limiter { Minmod, MC };

inline double limitedSlope(Limiter l, double a, double b) {
  if (l == Limiter::Minmod) return minmod(a, b);
  if (a * b <= 0) return 0;
  const double central = 0.5 * (a + b), bound = 2 * (std::fabs(a) < std::fabs(b) ? a : b);
  return std::fabs(central) < std::fabs(bound) ? central : bound;
}

/// Isothermal HLL flux along axis d between left and right primitive states (rho, u[3]).
inline void hll(double cs, int d, double rl, const double* ul, double rr, const double* ur, double* f) {
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

/// One MUSCL-Hancock step (unsplit, no source terms): primitive slopes, half-step predictor, HLL fluxes, update.
inline void hydroStep(const Grid& g, double cs, double dt, State& s, Limiter limiter = Limiter::Minmod) {
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
          dr[d] = limitedSlope(limiter, r[cp] - r[c], r[c] - r[cm]);
          for (int q = 0; q < 3; ++q) du[d][q] = limitedSlope(limiter, u[q][cp] - u[q][c], u[q][c] - u[q][cm]);
        }
        // primitive time derivative (isothermal Euler): dr/dt = -u.grad r - r div u; du/dt = -u.grad u - cs^2 grad r / r
        double rt = 0, ut[3] = {0, 0, 0};
        for (int d = 0; d < 3; ++d) {
          rt -= u[d][c] * dr[d] / g.h + r[c] * du[d][d] / g.h;
          for (int q = 0; q < 3; ++q) ut[q] -= u[d][c] * du[d][q] / g.h;
          ut[d] -= cs * cs * dr[d] / (r[c] * g.h);
        }
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
  s = next;
}


/// A gravity kick: momentum += tau rho g (the half kicks of kick-drift-kick around each hydro step).
inline void kick(State& s, const std::vector<double>* acc, double tau) {
  for (std::size_t c = 0; c < s.rho.size(); ++c) {
    s.mx[c] += tau * s.rho[c] * acc[0][c];
    s.my[c] += tau * s.rho[c] * acc[1][c];
    s.mz[c] += tau * s.rho[c] * acc[2][c];
  }
}

}  // namespace hydro
