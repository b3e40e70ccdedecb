/// \file fmm_far_kernel.cpp
/// \brief amrgrav_fmm_far_kernel: the FMM's far-image kernel (fmm/far_kernel.h) checked against the project's
/// independent Ewald sums (ewald/sums.h) and against what Poisson's equation says of it, for boxes periodic along 3,
/// 2 (sheets) and 1 (lines) axes:
///   1. C_far(r) = C(r) + 1/|r| - sum_near 1/|r - n L| (the near images: |n_d| <= 1 along the periodic axes, 0 along
///      the others), with C = psi - 1/r from ewaldCorrectionExact, and its derivatives to third order, at points
///      inside the half period (cubic and rectangular boxes; sheets and lines also far out along the isolated axes,
///      where psi grows as -2 pi |w| / A or -(2/L) ln rho) and at r = 0;
///   2. lap C_far = 4 pi / V with 3 periodic axes (the removed mean density) and 0 with 1 or 2 (nothing removed), and
///      every higher derivative's trace is zero, to order 7;
///   3. odd derivatives vanish at r = 0 (C_far is even), and the kernel at -r is (-1)^n the kernel at r.
/// Prints one line per case; exits 1 on any failure. CTest runs it (label cpu), and so do test/fmm-periodic.test.ts
/// and test/fmm-sheet.test.ts.
#include <cmath>
#include <cstdio>
#include <string>
#include <array>
#include <vector>

#include "ewald/sums.h"
#include "fmm/far_kernel.h"
#include "fmm/multi_index.h"
#include "fmm/simd.h"
#include "fmm/m2l_kernels.h"

using namespace amrgrav;

namespace {

int gChecks = 0, gFailed = 0;

void check(const std::string& name, double err, double tol) {
  ++gChecks;
  const bool ok = err <= tol;
  if (!ok) ++gFailed;
  std::printf("%s %s: %.3e (tolerance %.1e)\n", ok ? "PASS" : "FAIL", name.c_str(), err, tol);
}

constexpr int kP = 7;

/// The shortest period (the scale of each order's natural size L^-(o+1)).
double shortestPeriod(const double L[3]) {
  double m = INFINITY;
  for (int d = 0; d < 3; ++d)
    if (L[d] > 0) m = std::fmin(m, L[d]);
  return m;
}

/// Relative error of the kernel's first 20 derivatives (orders 0..3) against C + 1/r - sum_near 1/|r - nL|, each
/// order's error over that order's largest value. L[d] = 0: axis d isolated.
double againstEwald(const double L[3], const double r[3]) {
  const std::vector<double> far = fmm::farKernelDerivatives(L, kP, r);
  EwaldGeometry g;
  for (int d = 0; d < 3; ++d) {
    g.periodic[d] = L[d] > 0;
    g.L[d] = L[d] > 0 ? L[d] : 1.0;  // an isolated side does not enter the sums
  }
  double ref[kEwaldCoefs];
  ewaldCorrectionExact(g, r, ref);
  const bool atZero = r[0] == 0 && r[1] == 0 && r[2] == 0;
  const int N[3] = {L[0] > 0 ? 1 : 0, L[1] > 0 ? 1 : 0, L[2] > 0 ? 1 : 0};
  double D[fmm::termCount(kP)];
  for (int nz = -N[2]; nz <= N[2]; ++nz)
    for (int ny = -N[1]; ny <= N[1]; ++ny)
      for (int nx = -N[0]; nx <= N[0]; ++nx) {
        const bool self = nx == 0 && ny == 0 && nz == 0;
        if (self && atZero) continue;  // C(0) is psi's regular part: no 1/r to add back
        fmm::derivatives7(r[0] - nx * L[0], r[1] - ny * L[1], r[2] - nz * L[2], D);
        // + 1/r for n = 0 (C = psi - 1/r), - 1/|r - nL| for every near image: the n = 0 terms cancel
        if (!self)
          for (int k = 0; k < kEwaldCoefs; ++k) ref[k] -= D[k];
      }
  double worst = 0;
  const int begin[5] = {0, 1, 4, 10, 20};
  for (int o = 0; o < 4; ++o) {
    double scale = 0, err = 0;
    for (int k = begin[o]; k < begin[o + 1]; ++k) {
      scale = std::fmax(scale, std::fabs(ref[k]));
      err = std::fmax(err, std::fabs(far[k] - ref[k]));
    }
    // orders that vanish by symmetry (odd ones at r = 0): against the order's natural size L^-(o+1)
    scale = std::fmax(scale, std::pow(shortestPeriod(L), -(o + 1)));
    worst = std::fmax(worst, err / scale);
  }
  return worst;
}

/// Largest trace of the kernel's derivatives relative to the order's largest value, order 2 less 4 pi / V (3
/// periodic axes; 0 otherwise: a sheet's or a line's psi neutralises nothing).
double traces(const double L[3], const double r[3]) {
  const fmm::MultiIndex mi(kP);
  const std::vector<double> far = fmm::farKernelDerivatives(L, kP, r);
  const bool full = L[0] > 0 && L[1] > 0 && L[2] > 0;
  const double background = full ? 4 * M_PI / (L[0] * L[1] * L[2]) : 0.0;
  double worst = 0;
  for (int o = 2; o <= kP; ++o) {
    double scale = 0, err = 0;
    for (int t = 0; t < mi.terms; ++t)
      if (mi.degree[t] == o) scale = std::fmax(scale, std::fabs(far[t]));
    for (int t = 0; t < mi.terms; ++t) {
      if (mi.degree[t] != o - 2) continue;
      const auto n = mi.n[t];
      const double tr = far[mi.at(n[0] + 2, n[1], n[2])] + far[mi.at(n[0], n[1] + 2, n[2])] +
                        far[mi.at(n[0], n[1], n[2] + 2)] - (o == 2 ? background : 0.0);
      err = std::fmax(err, std::fabs(tr));
    }
    scale = std::fmax(scale, std::pow(shortestPeriod(L), -(o + 1)));
    worst = std::fmax(worst, err / scale);
  }
  return worst;
}

/// The kernel at -r against (-1)^n the kernel at r, and (at r = 0) the odd derivatives against 0.
double parity(const double L[3], const double r[3]) {
  const fmm::MultiIndex mi(kP);
  const double m[3] = {-r[0], -r[1], -r[2]};
  const std::vector<double> a = fmm::farKernelDerivatives(L, kP, r), b = fmm::farKernelDerivatives(L, kP, m);
  double scale = 0, err = 0;
  for (int t = 0; t < mi.terms; ++t) {
    scale = std::fmax(scale, std::fabs(a[t]));
    err = std::fmax(err, std::fabs(a[t] - ((mi.degree[t] & 1) ? -b[t] : b[t])));
  }
  return err / scale;
}

/// A partly periodic geometry's checks: against the Ewald sums at `pts`, traces and parity at `tr`.
struct Partial {
  const char* name;
  double L[3];
  std::vector<std::array<double, 3>> pts, tr;
};

void checkPartial(const Partial& g) {
  char name[200];
  for (const auto& r : g.pts) {
    std::snprintf(name, sizeof name, "%s, r = (%g, %g, %g): orders 0-3 vs ewaldCorrectionExact", g.name, r[0], r[1],
                  r[2]);
    check(name, againstEwald(g.L, r.data()), 1e-11);
  }
  for (const auto& r : g.tr) {
    std::snprintf(name, sizeof name, "%s, r = (%g, %g, %g): lap = 0, higher traces 0 (orders 2-7)", g.name, r[0], r[1],
                  r[2]);
    check(name, traces(g.L, r.data()), 1e-10);
    std::snprintf(name, sizeof name, "%s, r = (%g, %g, %g): kernel(-r) = (-1)^n kernel(r)", g.name, r[0], r[1], r[2]);
    check(name, parity(g.L, r.data()), 1e-11);
  }
}

}  // namespace

int main() {
  const double cube[3] = {1, 1, 1}, box[3] = {1, 0.75, 1.5}, big[3] = {4, 4, 4};
  const double pts[][3] = {{0, 0, 0}, {0.3, -0.1, 0.45}, {-0.5, 0.5, 0.5}, {0.25, 0.25, 0}, {0.05, -0.02, 0.01}};
  for (const double* r : pts) {
    char name[160];
    std::snprintf(name, sizeof name, "cube, r = (%g, %g, %g): orders 0-3 vs ewaldCorrectionExact", r[0], r[1], r[2]);
    check(name, againstEwald(cube, r), 1e-11);
    const double rb[3] = {r[0], r[1] * 0.75, r[2]};
    std::snprintf(name, sizeof name, "box 1 x 0.75 x 1.5, r = (%g, %g, %g): orders 0-3 vs ewaldCorrectionExact", rb[0],
                  rb[1], rb[2]);
    check(name, againstEwald(box, rb), 1e-11);
    const double r4[3] = {4 * r[0], 4 * r[1], 4 * r[2]};
    std::snprintf(name, sizeof name, "cube of side 4, r = (%g, %g, %g): orders 0-3 vs ewaldCorrectionExact", r4[0],
                  r4[1], r4[2]);
    check(name, againstEwald(big, r4), 1e-11);
  }
  const double far[][3] = {{0, 0, 0}, {0.75, -0.5, 0.25}, {-0.75, 0.75, 0.75}, {0.1, 0.2, -0.3}};
  for (const double* r : far) {
    char name[160];
    std::snprintf(name, sizeof name, "cube, r = (%g, %g, %g): lap = 4 pi / V, higher traces 0 (orders 2-7)", r[0], r[1],
                  r[2]);
    check(name, traces(cube, r), 1e-10);
    std::snprintf(name, sizeof name, "box, r = (%g, %g, %g): lap = 4 pi / V, higher traces 0 (orders 2-7)", r[0], r[1],
                  r[2]);
    check(name, traces(box, r), 1e-10);
    std::snprintf(name, sizeof name, "box, r = (%g, %g, %g): kernel(-r) = (-1)^n kernel(r)", r[0], r[1], r[2]);
    check(name, parity(box, r), 1e-11);
  }
  // sheets (2 periodic axes) and lines (1): points in the half period, on the periodic plane or axis, and far out
  // along the isolated axes (psi's linear and logarithmic growth)
  const Partial partial[] = {
      {"sheet x, y (1 x 0.75)", {1, 0.75, 0},
       {{0, 0, 0}, {0.3, -0.1, 0.45}, {-0.5, 0.375, 0.5}, {0.25, 0.2, 0}, {0.05, -0.02, 0.01}, {0.1, 0.3, -3},
        {0.45, -0.2, 7.5}},
       {{0, 0, 0}, {0.75, -0.5, 0.25}, {-0.75, 0.75, 1.5}, {0.1, 0.2, -6}}},
      {"sheet y, z of side 4", {0, 4, 4},
       {{0, 0, 0}, {1.2, -0.4, 1.8}, {-8, 2, -2}, {0.2, 0.1, -0.08}},
       {{3, -3, 3}, {-12, 1, 2}}},
      {"line z (1)", {0, 0, 1},
       {{0, 0, 0}, {0.3, -0.1, 0.45}, {0, 0, 0.3}, {-0.5, 0.5, 0.5}, {0.05, -0.02, 0.01}, {2, -1.5, 0.25},
        {6, 5, -0.4}},
       {{0, 0, 0}, {0.75, -0.5, 0.25}, {0, 0, 0.75}, {-3, 4, -0.6}}},
      {"line x (0.5)", {0.5, 0, 0},
       {{0.2, 0.3, -0.1}, {-0.25, 1, 2}, {0.1, 0, 0}},
       {{0.4, -0.3, 0.2}, {-0.3, 2, -1}}},
  };
  for (const Partial& g : partial) checkPartial(g);
  std::printf("%d checks, %d failed\n", gChecks, gFailed);
  return gFailed ? 1 : 0;
}
