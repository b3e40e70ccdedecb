/// \file sums.cpp
/// \brief The converged Ewald sums behind the table (see sums.h for the conventions). Every term is
/// accumulated as a third-order jet (value, gradient, Hessian, third derivatives) by the chain rule, so the table
/// gets exact derivatives instead of finite differences.
#include "ewald/sums.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>
#include <cmath>
#include <string>

#include "ewald/gauss_legendre.h"
#include "ewald/math_constants.h"

namespace amrgrav {
namespace {

/// erfc(6) ~ 2e-17 and exp(-36) ~ 2e-16: real-space terms stop at alpha r = 6, reciprocal at k = 12 alpha.
constexpr double kRealCut = 6.0;
constexpr double kRecipCut = 12.0;

/// Value and derivatives to third order of a function of (x, y, z), as full symmetric tensors.
struct Jet {
  double v = 0, g[3] = {0, 0, 0}, h[3][3] = {}, t[3][3][3] = {};
};

/// acc += scale * f(|d|^2), given f's derivatives f[0..3] with respect to s = |d|^2. An axis with d = 0 and
/// w = 0 is not part of s (the distance from a line, for one periodic axis).
void addRadial(Jet& acc, double scale, const double f[4], const double d[3], const double* w = nullptr) {
  static const double all[3] = {1, 1, 1};
  if (!w) w = all;
  const double a1 = 2 * f[1] * scale, a2 = 4 * f[2] * scale, a3 = 8 * f[3] * scale;
  acc.v += scale * f[0];
  for (int i = 0; i < 3; ++i) {
    acc.g[i] += a1 * d[i];
    for (int j = 0; j < 3; ++j) {
      acc.h[i][j] += a2 * d[i] * d[j] + (i == j ? a1 * w[i] : 0.0);
      for (int k = 0; k < 3; ++k)
        acc.t[i][j][k] += a3 * d[i] * d[j] * d[k] +
                          a2 * ((i == j ? w[i] * d[k] : 0.0) + (i == k ? w[i] * d[j] : 0.0) + (j == k ? w[j] * d[i] : 0.0));
    }
  }
}

/// The jet of f(|d|^2) on its own (for products).
Jet radialJet(const double f[4], const double d[3], const double* w) {
  Jet j;
  addRadial(j, 1.0, f, d, w);
  return j;
}

/// The jet of cos(k.r) at phase = k.r.
Jet cosineJet(const double k[3], double phase) {
  Jet j;
  const double c = std::cos(phase), s = std::sin(phase);
  j.v = c;
  for (int a = 0; a < 3; ++a) {
    j.g[a] = -s * k[a];
    for (int b = 0; b < 3; ++b) {
      j.h[a][b] = -c * k[a] * k[b];
      for (int e = 0; e < 3; ++e) j.t[a][b][e] = s * k[a] * k[b] * k[e];
    }
  }
  return j;
}

/// acc += scale cos(k.r) (cheaper than building the jet).
void addCosine(Jet& acc, double scale, const double k[3], double phase) {
  const double c = scale * std::cos(phase), s = scale * std::sin(phase);
  acc.v += c;
  for (int a = 0; a < 3; ++a) {
    acc.g[a] -= s * k[a];
    for (int b = 0; b < 3; ++b) {
      acc.h[a][b] -= c * k[a] * k[b];
      for (int e = 0; e < 3; ++e) acc.t[a][b][e] += s * k[a] * k[b] * k[e];
    }
  }
}

/// The jet of a function of the single coordinate r_axis, given its derivatives f[0..3].
Jet axisJet(int axis, const double f[4]) {
  Jet j;
  j.v = f[0];
  j.g[axis] = f[1];
  j.h[axis][axis] = f[2];
  j.t[axis][axis][axis] = f[3];
  return j;
}

/// acc += scale a b (Leibniz rule to third order).
void addProduct(Jet& acc, double scale, const Jet& a, const Jet& b) {
  acc.v += scale * a.v * b.v;
  for (int i = 0; i < 3; ++i) {
    acc.g[i] += scale * (a.v * b.g[i] + a.g[i] * b.v);
    for (int j = 0; j < 3; ++j) {
      acc.h[i][j] += scale * (a.v * b.h[i][j] + a.g[i] * b.g[j] + a.g[j] * b.g[i] + a.h[i][j] * b.v);
      for (int k = 0; k < 3; ++k)
        acc.t[i][j][k] += scale * (a.v * b.t[i][j][k] + a.t[i][j][k] * b.v + a.g[i] * b.h[j][k] + a.g[j] * b.h[i][k] +
                                   a.g[k] * b.h[i][j] + a.h[i][j] * b.g[k] + a.h[i][k] * b.g[j] + a.h[j][k] * b.g[i]);
    }
  }
}


/// d^n/ds^n of erfc(alpha sqrt s)/sqrt s = (2/sqrt pi) int_alpha^inf (-t^2)^n e^{-s t^2} dt, n = 0..3, by the
/// upward recurrence J_n = (alpha^{2n-1} e^{-s alpha^2} + (2n-1) J_{n-1}) / (2s) (all terms positive: stable).
void erfcOverR(double s, double alpha, double f[4]) {
  const double r = std::sqrt(s);
  double J = 0.5 * kSqrtPi / r * std::erfc(alpha * r);
  const double e = std::exp(-s * alpha * alpha);
  double ap = 1.0 / alpha;  // alpha^{2n-1}
  for (int n = 0; n < 4; ++n) {
    if (n > 0) {
      ap *= alpha * alpha;
      J = (ap * e + (2 * n - 1) * J) / (2 * s);
    }
    f[n] = (n % 2 ? -1.0 : 1.0) * 2.0 / kSqrtPi * J;
  }
}

/// d^n/ds^n of -erf(alpha sqrt s)/sqrt s = -(2/sqrt pi) int_0^alpha (-t^2)^n e^{-s t^2} dt: the nearest image's
/// smooth remainder erfc/r - 1/r, finite at s = 0.
void minusErfOverR(double s, double alpha, double f[4]) {
  if (s * alpha * alpha < 4) {
    const GaussLegendre& q = gaussLegendre48();
    double K[4] = {0, 0, 0, 0};
    for (int i = 0; i < q.n; ++i) {
      const double t = alpha * q.x[i], t2 = t * t, w = alpha * q.w[i] * std::exp(-s * t2);
      K[0] += w; K[1] += w * t2; K[2] += w * t2 * t2; K[3] += w * t2 * t2 * t2;
    }
    for (int n = 0; n < 4; ++n) f[n] = -(n % 2 ? -1.0 : 1.0) * 2.0 / kSqrtPi * K[n];
    return;
  }
  // int_0^alpha = int_0^inf - int_alpha^inf, with int_0^inf t^{2n} e^{-s t^2} dt = Gamma(n + 1/2) / (2 s^{n+1/2})
  double g[4];
  erfcOverR(s, alpha, g);
  const double r = std::sqrt(s);
  double full = 1.0 / r;  // (2/sqrt pi) Gamma(1/2) / (2 sqrt s)
  for (int n = 0; n < 4; ++n) {
    if (n > 0) full *= -(n - 0.5) / s;
    f[n] = -(full - g[n]);
  }
}

/// Ein(x) = int_0^x (1 - e^{-u})/u du and its derivatives (entire; Ein(x) = E1(x) + gamma + ln x).
void einDerivs(double x, double f[4]) {
  if (x < 24) {
    const GaussLegendre& q = gaussLegendre48();
    f[0] = f[1] = f[2] = f[3] = 0;
    for (int i = 0; i < q.n; ++i) {
      const double v = q.x[i], e = std::exp(-x * v);
      f[0] += q.w[i] * (-std::expm1(-x * v) / v);
      f[1] += q.w[i] * e;
      f[2] -= q.w[i] * v * e;
      f[3] += q.w[i] * v * v * e;
    }
    return;
  }
  const double e = std::exp(-x);
  const double e1 = e / x * (1 - 1 / x + 2 / (x * x) - 6 / (x * x * x) + 24 / (x * x * x * x));
  f[0] = kEulerGamma + std::log(x) + e1;
  f[1] = -std::expm1(-x) / x;
  f[2] = ((1 + x) * e - 1) / (x * x);
  f[3] = (2 - (x * x + 2 * x + 2) * e) / (x * x * x);
}

/// The geometry in working form: periodic and isolated axes, the splitting parameter alpha.
struct Setup {
  double L[3];
  int per[3], nper = 0, iso[3], niso = 0;
  double alpha;
  /// alpha > 0 overrides the balanced choice (the fully periodic grid build, ewaldCorrectionGrid3).
  explicit Setup(const EwaldGeometry& g, double alphaOverride = 0) {
    double prod = 1;
    for (int d = 0; d < 3; ++d) {
      L[d] = g.L[d];
      if (g.periodic[d]) { per[nper++] = d; prod *= g.L[d]; }
      else iso[niso++] = d;
    }
    // balances real- and reciprocal-space work for a cube (alpha = sqrt(pi)/L)
    alpha = alphaOverride > 0 ? alphaOverride : kSqrtPi / std::pow(prod, 1.0 / nper);
  }
};

/// Real space: sum over the images n of erfc(alpha|r + n|)/|r + n|, with 1/|r| removed from n = 0; images stop
/// at alpha |r + n| = cut.
void addRealSpace(const Setup& S, const double r[3], Jet& acc, double cut = kRealCut) {
  const double rc = cut / S.alpha;
  int lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
  for (int a = 0; a < S.nper; ++a) {
    const int d = S.per[a];
    lo[d] = std::min(0, int(std::ceil((-rc - r[d]) / S.L[d])));  // n = 0 always (it removes 1/|r|)
    hi[d] = std::max(0, int(std::floor((rc - r[d]) / S.L[d])));
  }
  double f[4];
  for (int i = lo[0]; i <= hi[0]; ++i)
    for (int j = lo[1]; j <= hi[1]; ++j)
      for (int k = lo[2]; k <= hi[2]; ++k) {
        const double d[3] = {r[0] + i * S.L[0], r[1] + j * S.L[1], r[2] + k * S.L[2]};
        const double s = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
        if (i == 0 && j == 0 && k == 0) {
          minusErfOverR(s, S.alpha, f);
        } else {
          if (s >= rc * rc) continue;
          erfcOverR(s, S.alpha, f);
        }
        addRadial(acc, 1.0, f, d);
      }
}

/// Fully periodic: (4 pi / V) sum_{k != 0} e^{-k^2/4 alpha^2} / k^2 cos(k.r) - pi / (alpha^2 V).
void addReciprocal3(const Setup& S, const double r[3], Jet& acc) {
  const double V = S.L[0] * S.L[1] * S.L[2], kc = kRecipCut * S.alpha;
  int m[3];
  for (int d = 0; d < 3; ++d) m[d] = int(kc * S.L[d] / (2 * kPi));
  for (int i = 0; i <= m[0]; ++i)
    for (int j = (i == 0 ? 0 : -m[1]); j <= m[1]; ++j)
      for (int l = (i == 0 && j == 0 ? 1 : -m[2]); l <= m[2]; ++l) {  // half space: +-k pairs counted twice
        const double k[3] = {2 * kPi * i / S.L[0], 2 * kPi * j / S.L[1], 2 * kPi * l / S.L[2]};
        const double k2 = k[0] * k[0] + k[1] * k[1] + k[2] * k[2];
        if (k2 > kc * kc) continue;
        const double c = 2 * 4 * kPi / V * std::exp(-k2 / (4 * S.alpha * S.alpha)) / k2;
        addCosine(acc, c, k, k[0] * r[0] + k[1] * r[1] + k[2] * r[2]);
      }
  acc.v -= kPi / (S.alpha * S.alpha * V);
}

/// e^{kz} erfc(k/2a + a z) + e^{-kz} erfc(k/2a - a z) and its z derivatives (z >= 0 or not; the sum is even).
void sheetProfile(double k, double z, double a, double f[4]) {
  const double b = k / (2 * a), c = 2 * a / kSqrtPi;
  const double w = std::exp(-b * b - a * a * z * z);  // e^{kz} e^{-(b + a z)^2} = e^{-kz} e^{-(b - a z)^2}
  const double w1 = -2 * a * a * z * w, w2 = (-2 * a * a + 4 * a * a * a * a * z * z) * w;
  auto branch = [&](double sgn, double out[4]) {  // sgn = +1: e^{kz} erfc(b + a z); -1: e^{-kz} erfc(b - a z)
    const double u = b + sgn * a * z;
    const double v = u > 26 ? 0.0 : std::exp(sgn * k * z) * std::erfc(u);
    out[0] = v;
    out[1] = sgn * k * out[0] - sgn * c * w;
    out[2] = sgn * k * out[1] - sgn * c * w1;
    out[3] = sgn * k * out[2] - sgn * c * w2;
  };
  double p[4], m[4];
  branch(1, p);
  branch(-1, m);
  for (int n = 0; n < 4; ++n) f[n] = p[n] + m[n];
}

/// Two periodic axes (p, q), isolated w: (pi/A) sum_{k != 0} cos(k.rho)/k profile_k(w) - (2 pi/A) h(w),
/// h(w) = w erf(a w) + e^{-a^2 w^2} / (a sqrt pi).
void addReciprocal2(const Setup& S, const double r[3], Jet& acc) {
  const int p = S.per[0], q = S.per[1], w = S.iso[0];
  const double A = S.L[p] * S.L[q], a = S.alpha, z = r[w];
  const double kc = 2 * a * (kRealCut + a * std::fabs(z));  // profile_k < e^{-36} beyond (see sheetProfile)
  const int mp = int(kc * S.L[p] / (2 * kPi)), mq = int(kc * S.L[q] / (2 * kPi));
  for (int i = 0; i <= mp; ++i)
    for (int j = (i == 0 ? 1 : -mq); j <= mq; ++j) {
      double k[3] = {0, 0, 0};
      k[p] = 2 * kPi * i / S.L[p];
      k[q] = 2 * kPi * j / S.L[q];
      const double kk = std::sqrt(k[p] * k[p] + k[q] * k[q]);
      if (kk > kc) continue;
      double f[4];
      sheetProfile(kk, z, a, f);
      if (std::fabs(f[0]) + std::fabs(f[1]) / kk < 1e-300) continue;
      addProduct(acc, 2 * kPi / (A * kk), cosineJet(k, k[p] * r[p] + k[q] * r[q]), axisJet(w, f));
    }
  const double e = std::exp(-a * a * z * z);
  const double h[4] = {z * std::erf(a * z) + e / (a * kSqrtPi), std::erf(a * z), 2 * a / kSqrtPi * e,
                       -4 * a * a * a * z / kSqrtPi * e};
  const Jet hz = axisJet(w, h);
  const double c = -2 * kPi / A;
  acc.v += c * hz.v;
  acc.g[w] += c * hz.g[w];
  acc.h[w][w] += c * hz.h[w][w];
  acc.t[w][w][w] += c * hz.t[w][w][w];
}

/// One periodic axis p of period L, distance rho from the axis: -(1/L)(Ein(a^2 rho^2) - gamma - 2 ln(a L)) +
/// (4/L) sum_{k > 0} cos(k r_p) int_0^a dt/t exp(-t^2 rho^2 - k^2 / 4t^2).
void addReciprocal1(const Setup& S, const double r[3], Jet& acc) {
  const int p = S.per[0];
  const double L = S.L[p], a = S.alpha;
  double d[3] = {r[0], r[1], r[2]}, w[3] = {1, 1, 1};
  d[p] = 0;  // rho^2 = |d|^2 over the isolated axes
  w[p] = 0;
  const double s = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
  double e[4];
  einDerivs(a * a * s, e);
  const double f0[4] = {-(e[0] - kEulerGamma - 2 * std::log(a * L)) / L, -a * a * e[1] / L, -a * a * a * a * e[2] / L,
                        -a * a * a * a * a * a * e[3] / L};
  addRadial(acc, 1.0, f0, d, w);
  const GaussLegendre& q = gaussLegendre48();
  const double kc = kRecipCut * a;
  for (int m = 1; 2 * kPi * m / L <= kc; ++m) {
    const double k = 2 * kPi * m / L;
    double I[4] = {0, 0, 0, 0};
    for (int i = 0; i < q.n; ++i) {
      const double t = a * q.x[i], t2 = t * t;
      const double v = q.w[i] * std::exp(-t2 * s - k * k / (4 * t2));  // (a w_i) / t * ... with t = a x_i
      const double vv = v / q.x[i];
      I[0] += vv; I[1] -= vv * t2; I[2] += vv * t2 * t2; I[3] -= vv * t2 * t2 * t2;
    }
    double kv[3] = {0, 0, 0};
    kv[p] = k;
    addProduct(acc, 4 / L, cosineJet(kv, k * r[p]), radialJet(I, d, w));
  }
}

}  // namespace

Status validateEwaldGeometry(const EwaldGeometry& g) {
  int nper = 0;
  double lo = INFINITY, hi = 0, plo = INFINITY;
  for (int d = 0; d < 3; ++d) {
    if (!(std::isfinite(g.L[d]) && g.L[d] > 0))
      return Status::error(ErrorCode::InvalidOption, "periodic box: side " + std::to_string(d) + " must be finite and positive");
    nper += g.periodic[d] ? 1 : 0;
    lo = std::min(lo, g.L[d]);
    hi = std::max(hi, g.L[d]);
    if (g.periodic[d]) plo = std::min(plo, g.L[d]);
  }
  if (nper == 0) return Status::error(ErrorCode::InvalidOption, "periodic box: no axis is periodic");
  if (hi / lo > kEwaldMaxAspect || hi / plo > kEwaldMaxAspect)
    return Status::error(ErrorCode::InvalidOption,
                         "periodic box: aspect ratio " + std::to_string(hi / std::min(lo, plo)) +
                             " exceeds the supported " + std::to_string(int(kEwaldMaxAspect)) +
                             " (longest side over the shortest periodic side)");
  return Status::success();
}

namespace {
void packJet(const Jet& acc, double out[kEwaldCoefs]) {
  out[0] = acc.v;
  out[1] = acc.g[0]; out[2] = acc.g[1]; out[3] = acc.g[2];
  out[4] = acc.h[0][0]; out[5] = acc.h[0][1]; out[6] = acc.h[0][2];
  out[7] = acc.h[1][1]; out[8] = acc.h[1][2]; out[9] = acc.h[2][2];
  const auto& t = acc.t;
  out[10] = t[0][0][0]; out[11] = t[0][0][1]; out[12] = t[0][0][2]; out[13] = t[0][1][1]; out[14] = t[0][1][2];
  out[15] = t[0][2][2]; out[16] = t[1][1][1]; out[17] = t[1][1][2]; out[18] = t[1][2][2]; out[19] = t[2][2][2];
}
}  // namespace

void ewaldCorrectionExact(const EwaldGeometry& g, const double r[3], double out[kEwaldCoefs]) {
  const Setup S(g);
  Jet acc;
  addRealSpace(S, r, acc);
  if (S.nper == 3) addReciprocal3(S, r, acc);
  else if (S.nper == 2) addReciprocal2(S, r, acc);
  else addReciprocal1(S, r, acc);
  packJet(acc, out);
}

void ewaldCorrectionGrid3(const EwaldGeometry& g, const int n[3], const double h[3], int threads, double* out) {
  // alpha such that real space stops (at alpha r = kGridRealCut) within 3/4 of the shortest side: at most the 8
  // images n in {-1, 0}^3 for r in the table's octant (r_d <= 9/16 L_d), most points 1 to 3 of them
  constexpr double kGridRealCut = 7.0, kGridRecipCut = 14.0;  // erfc(7) ~ 4e-23, exp(-49) ~ 5e-22
  const double Lmin = std::min({g.L[0], g.L[1], g.L[2]});
  const Setup S(g, kGridRealCut / (0.75 * Lmin));
  const double V = S.L[0] * S.L[1] * S.L[2], kc = kGridRecipCut * S.alpha, a2 = S.alpha * S.alpha;
  const int np[3] = {n[0] + 1, n[1] + 1, n[2] + 1};
  int m[3];
  for (int d = 0; d < 3; ++d) m[d] = int(kc * S.L[d] / (2 * kPi));
  const int m0 = m[0] + 1, m1 = m[1] + 1, m2 = m[2] + 1;
  // sum_{k != 0} A(k) cos(k.r) over the whole k space, A even in each component: = sum over a, b, c >= 0 of
  // w_a w_b w_c A cos(kx x) cos(ky y) cos(kz z) (w = 1 for index 0, else 2; the sine terms cancel in pairs)
  std::vector<double> A(std::size_t(m0) * m1 * m2, 0.0);
  for (int a = 0; a < m0; ++a)
    for (int b = 0; b < m1; ++b)
      for (int c = 0; c < m2; ++c) {
        const double kx = 2 * kPi * a / S.L[0], ky = 2 * kPi * b / S.L[1], kz = 2 * kPi * c / S.L[2];
        const double k2 = kx * kx + ky * ky + kz * kz;
        if (k2 == 0 || k2 > kc * kc) continue;
        A[(std::size_t(a) * m1 + b) * m2 + c] = (a ? 2 : 1) * (b ? 2 : 1) * (c ? 2 : 1) * 4 * kPi / V *
                                                 std::exp(-k2 / (4 * a2)) / k2;
      }
  // per axis: B[p][a][i] = d^p/dx^p cos(k_a x) at x = i h (p = 0..3)
  std::vector<double> B[3];
  for (int d = 0; d < 3; ++d) {
    const int ma = m[d] + 1;
    B[d].assign(std::size_t(4) * ma * np[d], 0.0);
    for (int a = 0; a < ma; ++a)
      for (int i = 0; i < np[d]; ++i) {
        const double k = 2 * kPi * a / S.L[d], x = i * h[d], c = std::cos(k * x), s = std::sin(k * x);
        const double v[4] = {c, -k * s, -k * k * c, k * k * k * s};
        for (int p = 0; p < 4; ++p) B[d][(std::size_t(p) * ma + a) * np[d] + i] = v[p];
      }
  }
  // derivative orders (x, y, z) of the 20 coefficients, in the table's order
  static const int ord[kEwaldCoefs][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {2, 0, 0}, {1, 1, 0}, {1, 0, 1},
                                         {0, 2, 0}, {0, 1, 1}, {0, 0, 2}, {3, 0, 0}, {2, 1, 0}, {2, 0, 1}, {1, 2, 0},
                                         {1, 1, 1}, {1, 0, 2}, {0, 3, 0}, {0, 2, 1}, {0, 1, 2}, {0, 0, 3}};
  const double constant = -kPi / (a2 * V);
  // one z plane at a time (threads take planes): the reciprocal sum by three one-axis contractions, then the
  // real-space images point by point
  std::atomic<int> next{0};
  auto work = [&] {
    std::vector<double> T1(std::size_t(4) * m0 * m1), T2(std::size_t(16) * m0 * np[1]);
    for (int l; (l = next.fetch_add(1)) < np[2];) {
      double* plane = out + std::size_t(l) * np[0] * np[1] * kEwaldCoefs;
      for (int s = 0; s < 4; ++s)  // T1[s][a][b] = sum_c A[a][b][c] Bz[s][c][l]
        for (int a = 0; a < m0; ++a)
          for (int b = 0; b < m1; ++b) {
            double t = 0;
            const double* Ar = &A[(std::size_t(a) * m1 + b) * m2];
            for (int c = 0; c < m2; ++c) t += Ar[c] * B[2][(std::size_t(s) * m2 + c) * np[2] + l];
            T1[(std::size_t(s) * m0 + a) * m1 + b] = t;
          }
      for (int q = 0; q < 4; ++q)  // T2[q][s][a][j] = sum_b By[q][b][j] T1[s][a][b], q + s <= 3
        for (int s = 0; q + s < 4; ++s)
          for (int a = 0; a < m0; ++a)
            for (int j = 0; j < np[1]; ++j) {
              double t = 0;
              for (int b = 0; b < m1; ++b)
                t += B[1][(std::size_t(q) * m1 + b) * np[1] + j] * T1[(std::size_t(s) * m0 + a) * m1 + b];
              T2[((std::size_t(q) * 4 + s) * m0 + a) * np[1] + j] = t;
            }
      for (int j = 0; j < np[1]; ++j)
        for (int i = 0; i < np[0]; ++i) {
          double* o = plane + (std::size_t(j) * np[0] + i) * kEwaldCoefs;
          for (int e = 0; e < kEwaldCoefs; ++e) {  // out = sum_a Bx[p][a][i] T2[q][s][a][j]
            const int p = ord[e][0], q = ord[e][1], s = ord[e][2];
            double t = 0;
            for (int a = 0; a < m0; ++a)
              t += B[0][(std::size_t(p) * m0 + a) * np[0] + i] * T2[((std::size_t(q) * 4 + s) * m0 + a) * np[1] + j];
            o[e] = t;
          }
          o[0] += constant;
          Jet acc;
          const double r[3] = {i * h[0], j * h[1], l * h[2]};
          addRealSpace(S, r, acc, kGridRealCut);
          double re[kEwaldCoefs];
          packJet(acc, re);
          for (int e = 0; e < kEwaldCoefs; ++e) o[e] += re[e];
        }
    }
  };
  const int nt = std::max(1, std::min(threads, np[2]));
  std::vector<std::thread> pool;
  for (int t = 1; t < nt; ++t) pool.emplace_back(work);
  work();
  for (auto& th : pool) th.join();
}

}  // namespace amrgrav
