/// \file far_images.cpp
/// \brief The far periodic images' kernel and M2L between frontier cubes (see far_images.h).
#include "fmm/far_images.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>

#include "core/thread_pool.h"
#include "fmm/multi_index.h"
#include "fmm/simd.h"
#include "fmm/m2l_kernels.h"

namespace amrgrav {
namespace fmm {
namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kSqrtPi = 1.77245385090551602730;

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
  double C[8];
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
    double px[8], py[8], pz[8];
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
  static const RadialToCartesian tables[8] = {RadialToCartesian(0), RadialToCartesian(1), RadialToCartesian(2),
                                              RadialToCartesian(3), RadialToCartesian(4), RadialToCartesian(5),
                                              RadialToCartesian(6), RadialToCartesian(7)};
  return tables[p];
}

// ------------------------------------------------------------------------------------------------------------------
// The process's kernel values: per (periods in s, order), per integer offset.

struct KernelKey {
  std::array<double, 3> period;
  int order;
  std::array<int, 3> offset;
  bool operator<(const KernelKey& o) const {
    if (period != o.period) return period < o.period;
    if (order != o.order) return order < o.order;
    return offset < o.offset;
  }
};
struct KernelCache {
  std::mutex mu;
  std::map<KernelKey, std::shared_ptr<const std::vector<double>>> values;
};
KernelCache& kernelCache() {
  static KernelCache c;
  return c;
}

template <int P>
void m2lFar(const double* D, const double* Mb, double* La) {
  if constexpr (P == 3) m2lOne3<double>(D, Mb, La);
  else if constexpr (P == 4) m2lOne4<double>(D, Mb, La);
  else if constexpr (P == 5) m2lOne5<double>(D, Mb, La);
  else if constexpr (P == 6) m2lOne6<double>(D, Mb, La);
  else m2lOne7<double>(D, Mb, La);
}

/// One frontier cube: a tree node of the frontier level, or cells of shallower leaves binned into its cube.
struct Cube {
  int ix[3];
  std::uint32_t node = ~0u;           ///< the tree's node, or ~0u (then `cells`, M and L are this cube's own)
  std::vector<std::uint32_t> cells;
  std::vector<double> M, L;
};

}  // namespace

namespace {

/// What every offset of one (periods, order) shares: the reciprocal-space rows 2 (4 pi / V) e^(-k^2/4a^2) k^n / k^2
/// over half of the k vectors (k and -k add equal terms), and the splitting parameter.
struct KernelSetup {
  double a = 0;
  std::vector<double> k;     ///< 3 per vector
  std::vector<double> rows;  ///< terms per vector
};

KernelSetup kernelSetup(const double period[3], int p) {
  const MultiIndex mi(p);
  KernelSetup ks;
  const double pmin = std::min(period[0], std::min(period[1], period[2]));
  const double V = period[0] * period[1] * period[2];
  ks.a = 3.0 / pmin;  // erfc(a r) negligible past 2.5 pmin; reciprocal space to k^2 / 4a^2 = 46
  const double a = ks.a, kcut2 = 4 * a * a * 46.0;
  int K[3];
  for (int d = 0; d < 3; ++d) K[d] = int(std::ceil(std::sqrt(kcut2) * period[d] / (2 * kPi)));
  std::vector<double> fact(mi.terms);
  for (int t = 0; t < mi.terms; ++t) {
    double f = 1;
    for (int d = 0; d < 3; ++d)
      for (int q = 2; q <= mi.n[t][d]; ++q) f *= q;
    fact[t] = f;
  }
  std::vector<double> mono(mi.terms);
  for (int mz = 0; mz <= K[2]; ++mz)
    for (int my = -K[1]; my <= K[1]; ++my)
      for (int mx = -K[0]; mx <= K[0]; ++mx) {
        // half space: mz > 0, or mz = 0 and my > 0, or mz = my = 0 and mx > 0
        if (!(mz > 0 || (mz == 0 && (my > 0 || (my == 0 && mx > 0))))) continue;
        const double k[3] = {2 * kPi * mx / period[0], 2 * kPi * my / period[1], 2 * kPi * mz / period[2]};
        const double k2 = k[0] * k[0] + k[1] * k[1] + k[2] * k[2];
        if (k2 > kcut2) continue;
        const double f = 2 * 4 * kPi / V * std::exp(-k2 / (4 * a * a)) / k2;
        mono[0] = 1;
        for (int t = 1; t < mi.terms; ++t) mono[t] = mono[mi.monoPrev[t]] * k[mi.monoAxis[t]] * mi.monoScale[t];
        for (int d = 0; d < 3; ++d) ks.k.push_back(k[d]);
        for (int t = 0; t < mi.terms; ++t) ks.rows.push_back(f * mono[t] * fact[t]);
      }
  return ks;
}

/// C_far = -sum_(near) erf(a r_n)/r_n + sum_(far) erfc(a r_n)/r_n + reciprocal space - pi / (a^2 V).
std::vector<double> kernelAt(const KernelSetup& ks, const double period[3], int p, const double offset[3]) {
  const MultiIndex mi(p);
  std::vector<double> out(mi.terms, 0.0);
  const RadialToCartesian& rc = radialToCartesian(p);
  const double V = period[0] * period[1] * period[2];
  const double a = ks.a;
  double F[8];
  // real space: the images the walk does not take, as erfc(a r)/r (those past a r = 7.5 are below 1e-24)
  int N[3];
  for (int d = 0; d < 3; ++d) N[d] = int(std::ceil(7.5 / (a * period[d]))) + 1;
  for (int nz = -N[2]; nz <= N[2]; ++nz)
    for (int ny = -N[1]; ny <= N[1]; ++ny)
      for (int nx = -N[0]; nx <= N[0]; ++nx) {
        if (std::abs(nx) <= 1 && std::abs(ny) <= 1 && std::abs(nz) <= 1) continue;
        const double r[3] = {offset[0] - nx * period[0], offset[1] - ny * period[1], offset[2] - nz * period[2]};
        const double rr = std::sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
        if (a * rr > 7.5) continue;
        erfcRadial(a, rr, p, F);
        rc.add(r, F, 1.0, out.data());
      }
  // the 27 near images as -erf(a r)/r: 1/r (taken by the walk) minus erfc(a r)/r, smooth at r = 0
  for (int nz = -1; nz <= 1; ++nz)
    for (int ny = -1; ny <= 1; ++ny)
      for (int nx = -1; nx <= 1; ++nx) {
        const double r[3] = {offset[0] - nx * period[0], offset[1] - ny * period[1], offset[2] - nz * period[2]};
        erfRadial(a, std::sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]), p, F);
        rc.add(r, F, -1.0, out.data());
      }
  // reciprocal space: (4 pi / V) sum_(k != 0) e^(-k^2 / 4a^2) / k^2 cos(k.r), differentiated term by term:
  // d^n cos(k.r) = k^n (cos, -sin, -cos, sin)(k.r) by |n| mod 4
  const int nt = mi.terms;
  std::vector<double> cs(nt, 0.0), sn(nt, 0.0);
  const std::size_t nk = ks.k.size() / 3;
  for (std::size_t q = 0; q < nk; ++q) {
    const double* k = &ks.k[3 * q];
    const double ph = k[0] * offset[0] + k[1] * offset[1] + k[2] * offset[2];
    const double c = std::cos(ph), s = std::sin(ph);
    const double* row = &ks.rows[q * nt];
    for (int t = 0; t < nt; ++t) {
      cs[t] += row[t] * c;
      sn[t] += row[t] * s;
    }
  }
  for (int t = 0; t < nt; ++t) {
    const int m = mi.degree[t] & 3;
    out[t] += m == 0 ? cs[t] : m == 1 ? -sn[t] : m == 2 ? -cs[t] : sn[t];
  }
  out[0] -= kPi / (a * a * V);  // psi's zero mean
  return out;
}

}  // namespace

std::vector<double> farKernelDerivatives(const double period[3], int p, const double offset[3]) {
  return kernelAt(kernelSetup(period, p), period, p, offset);
}

int farCubesPerAxis(const double period[3], double rootSide) {
  const double pmin = std::min(period[0], std::min(period[1], period[2]));
  double s = rootSide;
  int level = 0;
  while (s > 0.25 * pmin * (1 + 1e-12)) {
    s *= 0.5;
    ++level;
  }
  return 1 << level;
}

Status addFarImages(const SortedCells& cells, const double period[3], int threads, FmmTree& t, FmmOutput out,
                    const FarCubeSum& sum) {
  const Octree& o = t.topo;
  if (o.nodeCount() == 0) {  // a rank without cells still takes part in the sum
    if (!sum) return Status::success();
    const std::size_t per = std::size_t(farCubesPerAxis(period, o.root.side));
    std::vector<double> dense(per * per * per * std::size_t(termCount(t.order)), 0.0);
    return sum(dense);
  }
  const MultiIndex mi(t.order);
  const int nt = t.terms;
  // the frontier level: cubes of side s <= L_min / 4
  const double pmin = std::min(period[0], std::min(period[1], period[2]));
  double s = o.root.side;
  int level = 0;
  while (s > 0.25 * pmin * (1 + 1e-12)) {
    s *= 0.5;
    ++level;
  }
  const int per = 1 << level;
  // the cubes: frontier nodes, then the cells of shallower leaves binned (ascending cube index within each leaf)
  std::vector<Cube> cubes;
  const double* lo = o.root.lo;
  auto cubeOf = [&](double x, int d) {
    const int k = int(std::floor((x - lo[d]) / s));
    return std::min(per - 1, std::max(0, k));
  };
  for (std::size_t i = 0; i < o.nodeCount(); ++i) {
    if (o.level[i] == level) {
      Cube c;
      for (int d = 0; d < 3; ++d) c.ix[d] = cubeOf(o.centre[3 * i + d], d);
      c.node = std::uint32_t(i);
      cubes.push_back(std::move(c));
    } else if (o.level[i] < level && o.isLeaf(i)) {
      std::map<std::array<int, 3>, std::vector<std::uint32_t>> bins;
      const double* xs[3] = {cells.x.data(), cells.y.data(), cells.z.data()};
      for (std::uint32_t j = o.cellBegin[i]; j < o.cellBegin[i] + o.cellCount[i]; ++j)
        bins[{cubeOf(xs[2][j], 2), cubeOf(xs[1][j], 1), cubeOf(xs[0][j], 0)}].push_back(j);
      for (auto& b : bins) {
        Cube c;
        c.ix[0] = b.first[2];
        c.ix[1] = b.first[1];
        c.ix[2] = b.first[0];
        c.cells = std::move(b.second);
        cubes.push_back(std::move(c));
      }
    }
    if (cubes.size() > std::size_t(kMaxFarCubes))
      return Status::error(ErrorCode::InvalidOption,
                           "method 'fmm' in a periodic box: the box's aspect ratio needs more than " +
                               std::to_string(kMaxFarCubes) + " cubes of a quarter of its shortest side for the far "
                               "images; use method 'tree' for such boxes");
  }
  // P2M of the binned cubes about their centres
  std::vector<double> mono(nt);
  auto monomials = [&](double hx, double hy, double hz) {
    const double h[3] = {hx, hy, hz};
    mono[0] = 1;
    for (int q = 1; q < nt; ++q) mono[q] = mono[mi.monoPrev[q]] * h[mi.monoAxis[q]] * mi.monoScale[q];
  };
  auto centreOf = [&](const Cube& c, int d) { return lo[d] + (c.ix[d] + 0.5) * s; };
  for (Cube& c : cubes) {
    c.L.assign(nt, 0.0);
    if (c.node != ~0u) continue;
    c.M.assign(nt, 0.0);
    for (std::uint32_t j : c.cells) {
      monomials(cells.x[j] - centreOf(c, 0), cells.y[j] - centreOf(c, 1), cells.z[j] - centreOf(c, 2));
      for (int q = 0; q < nt; ++q) c.M[q] += cells.mass[j] * mono[q];
    }
  }
  // a distributed solve: every rank's cubes summed, and all of them sources (cube order)
  std::vector<Cube> global;
  if (sum) {
    std::vector<double> dense(std::size_t(per) * per * per * nt, 0.0);
    for (const Cube& c : cubes) {
      const double* M = c.node != ~0u ? &t.M[std::size_t(c.node) * t.mStride] : c.M.data();
      double* D = &dense[((std::size_t(c.ix[2]) * per + c.ix[1]) * per + c.ix[0]) * nt];
      for (int q = 0; q < nt; ++q) D[q] += M[q];
    }
    AG_TRY(sum(dense));
    for (int k = 0; k < per * per * per; ++k) {
      const double* D = &dense[std::size_t(k) * nt];
      if (std::all_of(D, D + nt, [](double v) { return v == 0.0; })) continue;  // no cells of any rank
      Cube c;
      c.ix[0] = k % per;
      c.ix[1] = k / per % per;
      c.ix[2] = k / (per * per);
      c.M.assign(D, D + nt);
      global.push_back(std::move(c));
    }
  }
  const std::vector<Cube>& sources = sum ? global : cubes;
  // the kernel at every offset between two cubes, from the process's cache (made now where missing)
  const int w = 2 * per - 1;
  std::vector<std::uint8_t> need(std::size_t(w) * w * w, 0);
  auto slot = [&](const Cube& A, const Cube& B) {
    return ((A.ix[2] - B.ix[2] + per - 1) * w + (A.ix[1] - B.ix[1] + per - 1)) * w + (A.ix[0] - B.ix[0] + per - 1);
  };
  for (const Cube& A : cubes)
    for (const Cube& B : sources) need[slot(A, B)] = 1;
  const std::array<double, 3> pu = {period[0] / s, period[1] / s, period[2] / s};
  std::vector<std::shared_ptr<const std::vector<double>>> kernel(need.size());
  {
    KernelCache& kc = kernelCache();
    std::lock_guard<std::mutex> lock(kc.mu);
    std::vector<int> missing;
    for (int q = 0; q < int(need.size()); ++q) {
      if (!need[q]) continue;
      const KernelKey key{pu, t.order, {q % w - (per - 1), q / w % w - (per - 1), q / (w * w) - (per - 1)}};
      auto it = kc.values.find(key);
      if (it != kc.values.end()) kernel[q] = it->second;
      else missing.push_back(q);
    }
    // each missing offset or its opposite (slots q and need.size() - 1 - q): the opposite's derivatives are
    // (-1)^n the same (C_far is even)
    std::vector<int> made;
    for (int q : missing)
      if (!kernel[need.size() - 1 - q]) made.push_back(std::min(q, int(need.size()) - 1 - q));
    std::sort(made.begin(), made.end());
    made.erase(std::unique(made.begin(), made.end()), made.end());
    if (!made.empty()) {
      const KernelSetup ks = kernelSetup(pu.data(), t.order);
      std::vector<std::shared_ptr<const std::vector<double>>> values(made.size());
      parallelFor(made.size(), 1, threads, [&](std::size_t b, std::size_t e, int) {
        for (std::size_t k = b; k < e; ++k) {
          const int q = made[k];
          const double off[3] = {double(q % w - (per - 1)), double(q / w % w - (per - 1)),
                                 double(q / (w * w) - (per - 1))};
          values[k] = std::make_shared<const std::vector<double>>(kernelAt(ks, pu.data(), t.order, off));
        }
      });
      for (std::size_t k = 0; k < made.size(); ++k) {
        const int q = made[k], opp = int(need.size()) - 1 - q;
        kernel[q] = values[k];
        if (opp != q) {
          std::vector<double> flipped(*values[k]);
          for (int j = 0; j < nt; ++j)
            if (mi.degree[j] & 1) flipped[j] = -flipped[j];
          kernel[opp] = std::make_shared<const std::vector<double>>(std::move(flipped));
        }
      }
    }
    for (int q : missing)  // opposites found in the cache
      if (!kernel[q]) {
        std::vector<double> flipped(*kernel[need.size() - 1 - q]);
        for (int j = 0; j < nt; ++j)
          if (mi.degree[j] & 1) flipped[j] = -flipped[j];
        kernel[q] = std::make_shared<const std::vector<double>>(std::move(flipped));
      }
    for (int q : missing)
      if (kernel[q]) kc.values[KernelKey{pu, t.order, {q % w - (per - 1), q / w % w - (per - 1), q / (w * w) - (per - 1)}}] = kernel[q];
  }
  // into the solve's lengths: a derivative of order n scales as s^-(n+1)
  std::vector<double> scaleOf(nt);
  for (int q = 0; q < nt; ++q) scaleOf[q] = std::pow(s, -(mi.degree[q] + 1));
  std::vector<double> D(need.size() * nt, 0.0);
  for (std::size_t q = 0; q < need.size(); ++q)
    if (kernel[q])
      for (int k = 0; k < nt; ++k) D[q * nt + k] = (*kernel[q])[k] * scaleOf[k];
  // M2L: each target cube from every cube (itself included), sources in cube order
  using Fn = void (*)(const double*, const double*, double*);
  static constexpr Fn fns[5] = {m2lFar<3>, m2lFar<4>, m2lFar<5>, m2lFar<6>, m2lFar<7>};
  const Fn m2l = fns[t.order - 3];
  parallelFor(cubes.size(), 4, threads, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t a = b; a < e; ++a)
      for (const Cube& B : sources)
        m2l(&D[std::size_t(slot(cubes[a], B)) * nt], B.node != ~0u ? &t.M[std::size_t(B.node) * t.mStride] : B.M.data(),
            cubes[a].L.data());
  });
  // tree cubes: into their nodes' L (passed down with the rest); binned cubes: L2P at their cells
  const int ng = termCount(t.order - 1);
  for (const Cube& c : cubes) {
    if (c.node != ~0u) {
      double* L = &t.L[std::size_t(c.node) * nt];
      for (int q = 0; q < nt; ++q) L[q] += c.L[q];
      continue;
    }
    for (std::uint32_t j : c.cells) {
      monomials(cells.x[j] - centreOf(c, 0), cells.y[j] - centreOf(c, 1), cells.z[j] - centreOf(c, 2));
      double p = 0;
      for (int q = 0; q < nt; ++q) p += c.L[q] * mono[q];
      out.phi[j] += p;
      if (!out.gx) continue;
      double f[3] = {0, 0, 0};
      for (int q = 0; q < ng; ++q)
        for (int d = 0; d < 3; ++d) f[d] += c.L[mi.plusAxis[d][q]] * mono[q];
      out.gx[j] -= f[0];
      out.gy[j] -= f[1];
      out.gz[j] -= f[2];
    }
  }
  return Status::success();
}

}  // namespace fmm
}  // namespace amrgrav
