/// \file far_kernel.cpp
/// \brief The far periodic images' kernel and its derivatives to order p (see far_kernel.h).
#include "fmm/far_kernel.h"

#include <algorithm>
#include <cmath>

#include "ewald/gauss_legendre.h"
#include "ewald/math_constants.h"
#include "fmm/multi_index.h"

namespace amrgrav {
namespace fmm {
namespace {

constexpr int kMaxOrder = 7;

/// F^(m)(u), m = 0..p, u = r^2 / 2, of erfc(a r) / r (r > 0): (-1)^m B_m with B_0 = erfc(a r)/r and
/// B_m = ((2m - 1) B_(m-1) + (2 a^2)^m e^(-a^2 r^2) / (a sqrt(pi))) / r^2.
void erfcRadial(double a, double r, int p, double* F) {
  const double r2 = r * r, e = std::exp(-a * a * r2) / (a * kSqrtPi);
  double B = std::erfc(a * r) / r, pw = 1;
  F[0] = B;
  for (int m = 1; m <= p; ++m) {
    pw *= 2 * a * a;
    B = ((2 * m - 1) * B + pw * e) / r2;
    F[m] = (m & 1) ? -B : B;
  }
}

/// F^(m)(u) of erf(a r) / r, smooth at r = 0: its power series in w = a^2 r^2 where a r <= 2, else 1/r's derivatives
/// ((-1)^m (2m - 1)!! / r^(2m + 1)) minus erfc's.
void erfRadial(double a, double r, int p, double* F) {
  const double w = a * a * r * r;
  if (w <= 4) {
    double pw = 2 * a / kSqrtPi;
    for (int m = 0; m <= p; ++m) {
      double sum = 0, term = 1;  // term = (-1)^i w^i / i!
      for (int i = 0; i < 80; ++i) {
        sum += term / (2 * i + 2 * m + 1);
        term *= -w / (i + 1);
        if (std::fabs(term) < 1e-19 * std::fabs(sum) && i > 2) break;
      }
      F[m] = ((m & 1) ? -pw : pw) * sum;
      pw *= 2 * a * a;
    }
    return;
  }
  double C[kMaxOrder + 1];
  erfcRadial(a, r, p, C);
  double inv = 1 / r, dfact = 1;
  const double r2inv = 1 / (r * r);
  for (int m = 0; m <= p; ++m) {
    if (m > 0) dfact *= 2 * m - 1;
    const double g = dfact * inv;  // (2m - 1)!! / r^(2m + 1)
    F[m] = ((m & 1) ? -g : g) - C[m];
    inv *= r2inv;
  }
}

/// The Cartesian derivatives of a radial function F(u), u = r^2/2, from its u-derivatives: d^(a,b,c) F =
/// sum_(i,j,k) c(a,i) c(b,j) c(c,k) x^(a-2i) y^(b-2j) z^(c-2k) F^(a+b+c-i-j-k), c(a,i) = a! / (i! (a-2i)! 2^i).
struct RadialToCartesian {
  struct Entry {
    int term, ex, ey, ez, m;
    double coef;
  };
  std::vector<Entry> entries;
  int order;
  explicit RadialToCartesian(int p) : order(p) {
    const MultiIndex mi(p);
    auto c = [](int a, int i) {
      double f = 1;
      for (int q = 2; q <= a; ++q) f *= q;
      for (int q = 2; q <= i; ++q) f /= q;
      for (int q = 2; q <= a - 2 * i; ++q) f /= q;
      return f / std::ldexp(1.0, i);
    };
    for (int t = 0; t < mi.terms; ++t) {
      const auto n = mi.n[t];
      for (int i = 0; 2 * i <= n[0]; ++i)
        for (int j = 0; 2 * j <= n[1]; ++j)
          for (int k = 0; 2 * k <= n[2]; ++k)
            entries.push_back({t, n[0] - 2 * i, n[1] - 2 * j, n[2] - 2 * k, n[0] + n[1] + n[2] - i - j - k,
                               c(n[0], i) * c(n[1], j) * c(n[2], k)});
    }
  }
  /// out[t] += sign * d^t F at r.
  void add(const double r[3], const double* F, double sign, double* out) const {
    double px[kMaxOrder + 1], py[kMaxOrder + 1], pz[kMaxOrder + 1];
    px[0] = py[0] = pz[0] = 1;
    for (int q = 1; q <= order; ++q) {
      px[q] = px[q - 1] * r[0];
      py[q] = py[q - 1] * r[1];
      pz[q] = pz[q - 1] * r[2];
    }
    for (const Entry& e : entries) out[e.term] += sign * e.coef * px[e.ex] * py[e.ey] * pz[e.ez] * F[e.m];
  }
};

const RadialToCartesian& radialToCartesian(int p) {
  static const RadialToCartesian tables[kMaxOrder + 1] = {
      RadialToCartesian(0), RadialToCartesian(1), RadialToCartesian(2), RadialToCartesian(3),
      RadialToCartesian(4), RadialToCartesian(5), RadialToCartesian(6), RadialToCartesian(7)};
  return tables[p];
}

/// d^m cos(phi) / dphi^m: cos, -sin, -cos, sin by m mod 4.
double cosDerivative(int m, double c, double s) {
  switch (m & 3) {
    case 0: return c;
    case 1: return -s;
    case 2: return -c;
    default: return s;
  }
}

/// e^(-x^2)'s derivatives as (-1)^j H_j(x) e^(-x^2), j = 0..p (H the physicists' Hermite polynomials).
void gaussianDerivatives(double x, int p, double* out) {
  const double e = std::exp(-x * x);
  double h0 = 1, h1 = 2 * x;
  for (int j = 0; j <= p; ++j) {
    const double h = j == 0 ? h0 : h1;
    out[j] = ((j & 1) ? -h : h) * e;
    if (j >= 1) {
      const double h2 = 2 * x * h1 - 2 * j * h0;  // H_(j+1)
      h0 = h1;
      h1 = h2;
    }
  }
}


/// Ein(x) = int_0^x (1 - e^-u)/u du and its derivatives to order p: Ein^(m)(x) = int_0^1 (-v)^(m-1) e^(-x v) dv
/// (m >= 1) by quadrature below x = 24, else Ein = gamma + ln x + E1(x) and (-1)^(m-1) gamma(m, x) / x^m.
void einDerivatives(double x, int p, double* f) {
  if (x < 24) {
    const GaussLegendre& q = gaussLegendre48();
    for (int m = 0; m <= p; ++m) f[m] = 0;
    for (int i = 0; i < q.n; ++i) {
      const double v = q.x[i], e = std::exp(-x * v);
      f[0] += q.w[i] * (-std::expm1(-x * v) / v);
      double pw = q.w[i] * e;  // w (-v)^(m-1) e^(-x v)
      for (int m = 1; m <= p; ++m) {
        f[m] += pw;
        pw *= -v;
      }
    }
    return;
  }
  const double e = std::exp(-x);
  f[0] = kEulerGamma + std::log(x) + e / x * (1 - 1 / x + 2 / (x * x) - 6 / (x * x * x) + 24 / (x * x * x * x));
  double fact = 1, xm = x;  // (m - 1)!, x^m
  for (int m = 1; m <= p; ++m) {
    if (m > 1) fact *= m - 1;
    double partial = 0, term = 1;  // sum_(j < m) x^j / j!
    for (int j = 0; j < m; ++j) {
      partial += term;
      term *= x / (j + 1);
    }
    const double g = fact * (1 - e * partial) / xm;
    f[m] = (m & 1) ? g : -g;
    xm *= x;
  }
}

int imageCount(double a, double period) { return int(std::ceil(7.5 / (a * period))) + 1; }

/// Real space over the periodic axes' images: the far ones (|n|_inf >= 2) as erfc(a r)/r, the near ones as
/// -erf(a r)/r (1/r, taken by the walk, minus erfc(a r)/r: smooth at r = 0).
void addRealSpace(const FarKernelSetup& S, const double offset[3], double* out) {
  const RadialToCartesian& rc = radialToCartesian(S.order);
  const double a = S.a;
  int N[3] = {0, 0, 0};
  for (int i = 0; i < S.nper; ++i) N[S.per[i]] = imageCount(a, S.period[S.per[i]]);
  double F[kMaxOrder + 1];
  for (int nz = -N[2]; nz <= N[2]; ++nz)
    for (int ny = -N[1]; ny <= N[1]; ++ny)
      for (int nx = -N[0]; nx <= N[0]; ++nx) {
        const bool near = std::abs(nx) <= 1 && std::abs(ny) <= 1 && std::abs(nz) <= 1;
        const double r[3] = {offset[0] - nx * S.period[0], offset[1] - ny * S.period[1], offset[2] - nz * S.period[2]};
        const double rr = std::sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
        if (near) {
          erfRadial(a, rr, S.order, F);
          rc.add(r, F, -1.0, out);
        } else if (a * rr <= 7.5) {  // those past a r = 7.5 are below 1e-24
          erfcRadial(a, rr, S.order, F);
          rc.add(r, F, 1.0, out);
        }
      }
}

/// 3 periodic axes: the rows of kernelSetup, d^n cos(k.r) = k^n (cos, -sin, -cos, sin)(k.r) by |n| mod 4, and psi's
/// zero mean.
void addReciprocal3(const FarKernelSetup& S, const double offset[3], double* out) {
  const MultiIndex mi(S.order);
  const int nt = mi.terms;
  std::vector<double> cs(nt, 0.0), sn(nt, 0.0);
  const std::size_t nk = S.k.size() / 3;
  for (std::size_t q = 0; q < nk; ++q) {
    const double* k = &S.k[3 * q];
    const double ph = k[0] * offset[0] + k[1] * offset[1] + k[2] * offset[2];
    const double c = std::cos(ph), s = std::sin(ph);
    const double* row = &S.rows[q * nt];
    for (int t = 0; t < nt; ++t) {
      cs[t] += row[t] * c;
      sn[t] += row[t] * s;
    }
  }
  for (int t = 0; t < nt; ++t) {
    const int m = mi.degree[t] & 3;
    out[t] += m == 0 ? cs[t] : m == 1 ? -sn[t] : m == 2 ? -cs[t] : sn[t];
  }
  const double V = S.period[0] * S.period[1] * S.period[2];
  out[0] -= kPi / (S.a * S.a * V);  // psi's zero mean
}

/// The w-derivatives (0..p) of Parry's profile e^(kw) erfc(b + a w) + e^(-kw) erfc(b - a w), b = k / 2a: each
/// branch g_+- by g' = +-k g -+ c G, c = 2a / sqrt(pi), G = e^(-b^2 - a^2 w^2) (= e^(+-kw) e^(-(b +- a w)^2)).
void sheetProfile(double k, double w, double a, int p, double* f) {
  const double b = k / (2 * a), c = 2 * a / kSqrtPi, eb = std::exp(-b * b);
  double G[kMaxOrder + 1];
  gaussianDerivatives(a * w, p, G);
  double an = 1;
  for (int j = 0; j <= p; ++j) {  // d^j/dw^j e^(-a^2 w^2) = a^j (-1)^j H_j(a w) e^(-a^2 w^2)
    G[j] *= eb * an;
    an *= a;
  }
  const double up = b + a * w, um = b - a * w;
  double gp = up > 26 ? 0.0 : std::exp(k * w) * std::erfc(up);
  double gm = um > 26 ? 0.0 : std::exp(-k * w) * std::erfc(um);
  f[0] = gp + gm;
  for (int n = 1; n <= p; ++n) {
    gp = k * gp - c * G[n - 1];
    gm = -k * gm + c * G[n - 1];
    f[n] = gp + gm;
  }
}

/// 2 periodic axes (p, q), isolated w: (2 pi / A) sum over half the k != 0 of cos(k.rho) / k profile_k(w), and
/// -(2 pi / A) h(w), h = w erf(a w) + e^(-a^2 w^2) / (a sqrt pi), h' = erf(a w), h^(j) = (2a / sqrt pi) d^(j-2)
/// e^(-a^2 w^2).
void addReciprocal2(const FarKernelSetup& S, const double offset[3], double* out) {
  const MultiIndex mi(S.order);
  const int p = S.per[0], q = S.per[1], w = S.iso[0], P = S.order;
  const double A = S.period[p] * S.period[q], a = S.a, z = offset[w];
  double f[kMaxOrder + 1], kp[kMaxOrder + 1], kq[kMaxOrder + 1];
  const std::size_t nk = S.k.size() / 3;
  for (std::size_t v = 0; v < nk; ++v) {
    const double* k = &S.k[3 * v];
    const double kk = std::sqrt(k[p] * k[p] + k[q] * k[q]);
    sheetProfile(kk, z, a, P, f);
    const double scale = 2 * kPi / (A * kk);
    const double ph = k[p] * offset[p] + k[q] * offset[q], c = std::cos(ph), s = std::sin(ph);
    kp[0] = kq[0] = 1;
    for (int j = 1; j <= P; ++j) {
      kp[j] = kp[j - 1] * k[p];
      kq[j] = kq[j - 1] * k[q];
    }
    for (int t = 0; t < mi.terms; ++t) {
      const auto n = mi.n[t];
      out[t] += scale * kp[n[p]] * kq[n[q]] * cosDerivative(n[p] + n[q], c, s) * f[n[w]];
    }
  }
  double h[kMaxOrder + 1], G[kMaxOrder + 1];
  gaussianDerivatives(a * z, P, G);
  h[0] = z * std::erf(a * z) + G[0] / (a * kSqrtPi);
  if (P >= 1) h[1] = std::erf(a * z);
  double an = 1;
  for (int j = 2; j <= P; ++j) {
    h[j] = 2 * a / kSqrtPi * an * G[j - 2];
    an *= a;
  }
  for (int t = 0; t < mi.terms; ++t) {
    const auto n = mi.n[t];
    if (n[p] == 0 && n[q] == 0) out[t] -= 2 * kPi / A * h[n[w]];
  }
}

/// 1 periodic axis p (period L), rho^2 = s over the isolated axes: -(1/L) (Ein(a^2 s) - gamma - 2 ln(a L)) + (4/L)
/// sum_(k > 0) cos(k x_p) I_k(s), I_k(s) = int_0^a dt/t e^(-t^2 s - k^2/4t^2) (48-point Gauss-Legendre), each radial
/// part's s-derivatives turned into u = s/2 derivatives (2^m d^m/ds^m) and then Cartesian ones over the isolated
/// axes; the x_p derivatives of the cosines multiply them.
void addReciprocal1(const FarKernelSetup& S, const double offset[3], double* out) {
  const MultiIndex mi(S.order);
  const RadialToCartesian& rc = radialToCartesian(S.order);
  const int p = S.per[0], P = S.order;
  const double L = S.period[p], a = S.a;
  double r[3] = {offset[0], offset[1], offset[2]};
  r[p] = 0;
  const double s = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
  // the isolated-plane part of term t: the term with its p-component removed
  std::vector<int> planeOf(mi.terms);
  for (int t = 0; t < mi.terms; ++t) {
    auto n = mi.n[t];
    n[p] = 0;
    planeOf[t] = mi.at(n[0], n[1], n[2]);
  }
  std::vector<double> radial(mi.terms);
  double F[kMaxOrder + 1], e[kMaxOrder + 1];
  einDerivatives(a * a * s, P, e);
  double scale = 1;  // 2^m a^(2m)
  for (int m = 0; m <= P; ++m) {
    F[m] = -scale * e[m] / L;
    scale *= 2 * a * a;
  }
  F[0] += (kEulerGamma + 2 * std::log(a * L)) / L;
  std::fill(radial.begin(), radial.end(), 0.0);
  rc.add(r, F, 1.0, radial.data());
  for (int t = 0; t < mi.terms; ++t)
    if (mi.n[t][p] == 0) out[t] += radial[t];
  const GaussLegendre& q = gaussLegendre48();
  for (std::size_t v = 0; v < S.k.size() / 3; ++v) {
    const double k = S.k[3 * v + p];
    double I[kMaxOrder + 1];
    for (int m = 0; m <= P; ++m) I[m] = 0;
    for (int i = 0; i < q.n; ++i) {
      const double t = a * q.x[i], t2 = t * t;
      double val = q.w[i] * std::exp(-t2 * s - k * k / (4 * t2)) / q.x[i];  // (a w_i) / t: dt/t
      for (int m = 0; m <= P; ++m) {  // 2^m (-t^2)^m
        I[m] += val;
        val *= -2 * t2;
      }
    }
    for (int m = 0; m <= P; ++m) I[m] *= 4 / L;
    std::fill(radial.begin(), radial.end(), 0.0);
    rc.add(r, I, 1.0, radial.data());
    const double c = std::cos(k * offset[p]), sn = std::sin(k * offset[p]);
    double kn[kMaxOrder + 1];
    kn[0] = 1;
    for (int j = 1; j <= P; ++j) kn[j] = kn[j - 1] * k;
    for (int t = 0; t < mi.terms; ++t) {
      const int np = mi.n[t][p];
      out[t] += kn[np] * cosDerivative(np, c, sn) * radial[planeOf[t]];
    }
  }
}

}  // namespace

FarKernelSetup farKernelSetup(const double period[3], int p) {
  const MultiIndex mi(p);
  FarKernelSetup S;
  S.order = p;
  double pmin = INFINITY;
  for (int d = 0; d < 3; ++d) {
    S.period[d] = period[d] > 0 ? period[d] : 0.0;
    if (S.period[d] > 0) {
      S.per[S.nper++] = d;
      pmin = std::min(pmin, S.period[d]);
    } else {
      S.iso[S.niso++] = d;
    }
  }
  if (S.nper == 0) return S;
  S.a = 3.0 / pmin;  // erfc(a r) negligible past 2.5 pmin
  const double a = S.a;
  // reciprocal space over one half space (k and -k add equal terms): to k^2 / 4a^2 = 46 (3 axes) or 50
  const double kcut2 = 4 * a * a * (S.nper == 3 ? 46.0 : 50.0);
  int K[3] = {0, 0, 0};
  for (int i = 0; i < S.nper; ++i) {
    const int d = S.per[i];
    K[d] = int(std::ceil(std::sqrt(kcut2) * S.period[d] / (2 * kPi)));
  }
  std::vector<double> fact(mi.terms), mono(mi.terms);
  for (int t = 0; t < mi.terms; ++t) {
    double f = 1;
    for (int d = 0; d < 3; ++d)
      for (int q = 2; q <= mi.n[t][d]; ++q) f *= q;
    fact[t] = f;
  }
  const double V = S.period[0] * S.period[1] * S.period[2];
  for (int mz = 0; mz <= K[2]; ++mz)
    for (int my = -K[1]; my <= K[1]; ++my)
      for (int mx = -K[0]; mx <= K[0]; ++mx) {
        // half space: mz > 0, or mz = 0 and my > 0, or mz = my = 0 and mx > 0
        if (!(mz > 0 || (mz == 0 && (my > 0 || (my == 0 && mx > 0))))) continue;
        const int m[3] = {mx, my, mz};
        double k[3] = {0, 0, 0};
        for (int d = 0; d < 3; ++d)
          if (S.period[d] > 0) k[d] = 2 * kPi * m[d] / S.period[d];
        const double k2 = k[0] * k[0] + k[1] * k[1] + k[2] * k[2];
        if (k2 > kcut2) continue;
        for (int d = 0; d < 3; ++d) S.k.push_back(k[d]);
        if (S.nper != 3) continue;
        const double f = 2 * 4 * kPi / V * std::exp(-k2 / (4 * a * a)) / k2;
        mono[0] = 1;
        for (int t = 1; t < mi.terms; ++t) mono[t] = mono[mi.monoPrev[t]] * k[mi.monoAxis[t]] * mi.monoScale[t];
        for (int t = 0; t < mi.terms; ++t) S.rows.push_back(f * mono[t] * fact[t]);
      }
  return S;
}

std::vector<double> farKernelAt(const FarKernelSetup& S, const double offset[3]) {
  std::vector<double> out(termCount(S.order), 0.0);
  if (S.nper == 0) return out;
  addRealSpace(S, offset, out.data());
  if (S.nper == 3) addReciprocal3(S, offset, out.data());
  else if (S.nper == 2) addReciprocal2(S, offset, out.data());
  else addReciprocal1(S, offset, out.data());
  return out;
}

std::vector<double> farKernelDerivatives(const double period[3], int order, const double offset[3]) {
  return farKernelAt(farKernelSetup(period, order), offset);
}

}  // namespace fmm
}  // namespace amrgrav
