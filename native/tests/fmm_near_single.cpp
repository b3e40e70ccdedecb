/// \file fmm_near_single.cpp
/// \brief amrgrav_fmm_near_single: the near field's computed pairs in single precision (fmm/near_single_k.h, the
/// CUDA backend's fmmP2PComputedSingle) emulated as the kernel runs them (the same staging, batches and sums; the
/// reciprocal square root correctly rounded here, within 2 ulp on the device), against double sums over the same cells.
/// Pairs of regular leaves (4^3 cells) of every size ratio 1/16 .. 16 met in the near field, adjacent and a few
/// leaves apart, in lengths that are not powers of two; positive masses spread over 12 decades and signed ones (a
/// periodic box's contrast): every target cell's potential within 1e-6 of its sum of |m| / r, and its acceleration
/// within 1e-6 of its sum of |m| / r^2. The batch scales: exact powers of two that bring any finite double mass
/// below 4, their product 1; masses times 2^+-600 (far outside float's range) give the same sums times the same power,
/// bit for bit. CTest (label cpu).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "fmm/near_single_k.h"
#include "tests/check_report.h"

using namespace amrgrav;
using namespace amrgrav::fmm;
using tests::check;

namespace {

struct Leaf {
  std::vector<double> x, y, z, m;
};

/// A regular leaf: 4^3 cells of side h from corner (cx, cy, cz), masses from `mass`.
template <class F> Leaf regularLeaf(double cx, double cy, double cz, double h, F mass) {
  Leaf l;
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < 4; ++j)
      for (int i = 0; i < 4; ++i) {
        l.x.push_back(cx + (i + 0.5) * h);
        l.y.push_back(cy + (j + 0.5) * h);
        l.z.push_back(cz + (k + 0.5) * h);
        l.m.push_back(mass());
      }
  return l;
}

struct Sums {
  double phi = 0, g[3] = {0, 0, 0};
};

/// The kernel's sums for one target cell against source leaf S: S's cells in batches of kNearBatch, each staged
/// relative to `origin` with the batch's mass scale, summed in float, added to the double total.
Sums singleSums(const Leaf& S, double xt, double yt, double zt, const double origin[3]) {
  const float xi = float(xt - origin[0]), yi = float(yt - origin[1]), zi = float(zt - origin[2]);
  Sums s;
  const std::size_t n = S.m.size();
  for (std::size_t b = 0; b < n; b += kNearBatch) {
    const std::size_t e = std::min(n, b + kNearBatch);
    int we = 1;
    for (std::size_t j = b; j < e; ++j) we = std::max(we, massExponentOf(S.m[j]));
    std::vector<NearSourceF> staged;
    for (std::size_t j = b; j < e; ++j)
      staged.push_back(nearSource(S.x[j], S.y[j], S.z[j], S.m[j], origin, massScaleDown(we)));
    float q = 0, g[3] = {0, 0, 0};
    nearBatchSums<true>(staged.data(), unsigned(staged.size()), xi, yi, zi, q, g);
    const double up = massScaleUp(we);
    s.phi += double(q) * up;
    for (int d = 0; d < 3; ++d) s.g[d] += double(g[d]) * up;
  }
  return s;
}

/// The worst relative errors over every target cell of T against source S: potential against the sum of |m| / r,
/// acceleration against the sum of |m| / r^2.
struct Errors {
  double pot = 0, acc = 0;
};

Errors pairErrors(const Leaf& T, const Leaf& S, const double origin[3]) {
  Errors e;
  for (std::size_t i = 0; i < T.m.size(); ++i) {
    double phi = 0, g[3] = {0, 0, 0}, absPhi = 0, absG = 0;
    for (std::size_t j = 0; j < S.m.size(); ++j) {
      const double d[3] = {T.x[i] - S.x[j], T.y[i] - S.y[j], T.z[i] - S.z[j]};
      const double r = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
      phi += S.m[j] / r;
      absPhi += std::fabs(S.m[j]) / r;
      absG += std::fabs(S.m[j]) / (r * r);
      for (int k = 0; k < 3; ++k) g[k] += S.m[j] * d[k] / (r * r * r);
    }
    const Sums s = singleSums(S, T.x[i], T.y[i], T.z[i], origin);
    e.pot = std::max(e.pot, std::fabs(s.phi - phi) / absPhi);
    const double dg = std::sqrt((s.g[0] - g[0]) * (s.g[0] - g[0]) + (s.g[1] - g[1]) * (s.g[1] - g[1]) +
                                (s.g[2] - g[2]) * (s.g[2] - g[2]));
    e.acc = std::max(e.acc, dg / absG);
  }
  return e;
}

std::string sci(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2e", v);
  return b;
}

}  // namespace

int main() {
  // the scales: exact powers of two, |m| scaled into [1, 4), their product 1
  {
    bool ok = true;
    const double masses[] = {0.0, 5e-324, 2.2e-308, 1e-300, 1e-30, 1.0, 3.0, 1e40, 1e300, 1.7e308, -2.5e33};
    for (const double m : masses) {
      const int e = massExponentOf(m);
      const double down = massScaleDown(e), up = massScaleUp(e), scaled = std::fabs(m) * down;
      ok = ok && std::isfinite(down) && std::isfinite(up) && down * up == 1.0 && scaled < 4.0 &&
           (m == 0 || e == 1 || scaled >= 1.0) &&
           (m == 0 || std::fabs(double(float(m * down)) * up / m - 1) < 1e-7);
    }
    check("near-single-scales", ok,
          "massScaleDown * massScaleUp == 1, |m| * down in [1, 4) (subnormals below) and float's rounding alone for "
          "11 masses, 0 .. 1.7e308");
  }

  std::mt19937_64 rng(2026);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const double h = 0.0123456789;  // not a power of two: the staged positions round
  const double ratios[] = {1.0 / 16, 1.0 / 8, 1.0 / 4, 1.0 / 2, 1, 2, 4, 8, 16};
  for (const bool signedMasses : {false, true}) {
    double worstPot = 0, worstAcc = 0;
    int pairs = 0;
    for (const double r : ratios) {
      const double hs = h * r;  // the source leaf's cell size
      const Leaf T = regularLeaf(0, 0, 0, h, [&] {
        return signedMasses ? unit(rng) - 0.5 : std::pow(10.0, 12 * unit(rng) - 6);
      });
      // T's centre, the kernel's origin (its expansion centre is within the leaf: any point near it will do)
      const double origin[3] = {2 * h, 2 * h, 2 * h};
      // source leaves touching T and a few leaves away, on T's side of the coarser lattice
      const double side = 4 * std::max(h, hs);
      for (int a = -2; a <= 2; ++a)
        for (int b = -1; b <= 1; ++b)
          for (int c : {-1, 1}) {
            const double cx = r >= 1 ? a * side : a * 4 * hs, cy = r >= 1 ? b * side : 4 * h + b * 4 * hs,
                         cz = c < 0 ? -4 * hs : 4 * h;  // below T or above it, touching
            const Leaf S = regularLeaf(cx, cy, cz, hs, [&] {
              return signedMasses ? unit(rng) - 0.5 : std::pow(10.0, 12 * unit(rng) - 6);
            });
            const Errors e = pairErrors(T, S, origin);
            worstPot = std::max(worstPot, e.pot);
            worstAcc = std::max(worstAcc, e.acc);
            ++pairs;
          }
    }
    const std::string what = signedMasses ? "signed masses" : "masses over 12 decades";
    check(std::string("near-single-pairs-") + (signedMasses ? "signed" : "positive"), worstPot <= 1e-6 && worstAcc <= 1e-6,
          std::to_string(pairs) + " leaf pairs, ratios 1/16 .. 16, " + what + ": potential within " + sci(worstPot) +
              " of sum |m| / r, acceleration within " + sci(worstAcc) + " of sum |m| / r^2 (bound 1e-6)");
  }

  // masses far outside float's range: the same float sums, the scale undone exactly
  {
    const Leaf S0 = regularLeaf(4 * h, 0, 0, 2 * h, [&] { return std::pow(10.0, 12 * unit(rng) - 6); });
    const double origin[3] = {2 * h, 2 * h, 2 * h};
    bool same = true;
    for (const int p : {600, -600}) {
      Leaf S = S0;
      for (double& m : S.m) m = std::ldexp(m, p);
      for (int i = 0; i < 64; ++i) {
        const double xt = (i % 4 + 0.5) * h, yt = (i / 4 % 4 + 0.5) * h, zt = (i / 16 + 0.5) * h;
        const Sums a = singleSums(S0, xt, yt, zt, origin), b = singleSums(S, xt, yt, zt, origin);
        same = same && std::ldexp(a.phi, p) == b.phi && std::ldexp(a.g[0], p) == b.g[0] &&
               std::ldexp(a.g[1], p) == b.g[1] && std::ldexp(a.g[2], p) == b.g[2];
      }
    }
    check("near-single-mass-range", same,
          "masses times 2^600 and 2^-600: every cell's sums those of the masses as given times the same power, bitwise");
  }

  std::printf("%d checks, %d failed\n", tests::gChecks, tests::gFailed);
  return tests::gFailed == 0 ? 0 : 1;
}
