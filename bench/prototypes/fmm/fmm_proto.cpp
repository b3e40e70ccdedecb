// fmm_proto.cpp: a standalone CPU prototype of a Cartesian fast multipole method (study for issue #20).
//
// Method (after Dehnen 2000, 2002): an octree over the cells (point masses at their centres), multipoles of order p
// about each node's centre (centre of mass, or the geometric centre for signed masses), one dual tree walk that
// makes every interaction mutual (a node pair's M2L fills both nodes' local expansions from one set of derivatives
// of 1/r; a leaf pair's P2P adds to both leaves' cells), then local expansions passed down the tree (L2L) and
// evaluated at the cells (L2P). With the truncation |n| + |k| <= p on both sides of every M2L and exact P2M, M2M,
// L2L and L2P, the force of node A on node B is minus that of B on A: momentum is conserved to rounding.
//
// Everything is double precision, single threaded (the mutual walk writes to both sides; see docs/fmm-design.md).
// Checks against direct summation (float64) on a random subset of targets; prints one line of results per run.
// Optionally (-DWITH_AMRGRAV) times and checks the library's Barnes-Hut walk on the same cells through the C API.
//
// Build:  g++ -O3 -march=native -std=c++17 -fopenmp-simd -fno-math-errno -o fmm_proto fmm_proto.cpp
//  or, with the library's tree for comparison (after building the library into build/):
//         g++ -O3 -march=native -std=c++17 -fopenmp-simd -fno-math-errno -DWITH_AMRGRAV -I../../../native/include
//             -o fmm_proto fmm_proto.cpp -L../../../build/Release -lamrgrav -Wl,-rpath,$(realpath ../../../build/Release)
// Run:    ./fmm_proto --mesh uniform --n 64 --p 5 --theta 0.5      (see --help)
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#ifdef WITH_AMRGRAV
#include "amrgrav.h"
#endif
#if defined(PROFILE) || defined(__AVX512F__) || defined(__AVX2__)
#include <x86intrin.h>
#endif

// Arithmetic types of the generated kernels: double, and W doubles in SIMD lanes (one M2L pair per lane).
#if defined(__AVX512F__)
constexpr int W = 8;
typedef double Vd __attribute__((vector_size(64)));
inline Vd vsqrt(Vd v) { return (Vd)_mm512_sqrt_pd((__m512d)v); }
#elif defined(__AVX2__)
constexpr int W = 4;
typedef double Vd __attribute__((vector_size(32)));
inline Vd vsqrt(Vd v) { return (Vd)_mm256_sqrt_pd((__m256d)v); }
#else
constexpr int W = 2;
typedef double Vd __attribute__((vector_size(16)));
inline Vd vsqrt(Vd v) { Vd r; for (int l = 0; l < W; ++l) r[l] = std::sqrt(v[l]); return r; }
#endif
inline double vsqrt(double v) { return std::sqrt(v); }
/// 1/sqrt in lanes: AVX-512's 14-bit estimate and two Newton steps (relative error ~1e-16), else a divide.
inline Vd vrsqrt(Vd r2) {
#if defined(__AVX512F__)
  Vd y = (Vd)_mm512_rsqrt14_pd((__m512d)r2);
  const Vd h = r2 * 0.5;
  y = y * (1.5 - h * y * y);
  y = y * (1.5 - h * y * y);
  return y;
#else
  return 1.0 / vsqrt(r2);
#endif
}
inline double hsum(Vd v) { double s = 0; for (int l = 0; l < W; ++l) s += v[l]; return s; }
template <class T> inline T bc(double c);
template <> inline double bc<double>(double c) { return c; }
template <> inline Vd bc<Vd>(double c) { return Vd{} + c; }
// the generated kernels (native/tools/fmm/gen_kernels.py), shared with the library's FMM (native/fmm/)
namespace amrgrav { namespace fmm { using ::bc; using ::vsqrt; } }
#include "../../../native/fmm/m2l_kernels.h"
using namespace amrgrav::fmm;

namespace {

using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// ---------------------------------------------------------------------------------------------------------------
// Multi-indices n = (a, b, c), |n| = a + b + c <= P, numbered by degree.
struct MultiIndex {
  int P = 0, nt = 0;
  std::vector<std::array<int, 3>> n;  // term -> (a, b, c)
  std::vector<int> deg;
  std::vector<double> fact;           // a! b! c!
  std::vector<int> idx;               // (a, b, c) -> term, (P+1)^3, -1 if |n| > P
  // M2L: L_A[k] += (-1)^|n| M_B[n] D[n+k],  L_B[k] += (-1)^|k| M_A[n] D[n+k]   (R = z_A - z_B)
  std::vector<int> m2lK, m2lN, m2lNK;
  std::vector<double> m2lSn, m2lSk;
  // the same, per k: the n of degree <= P - |k| are the first cnt[P - |k|] terms; D index of n + k for each
  std::vector<int> cntUpTo;           // terms of degree <= d
  std::vector<int> kStart;            // k -> offset into kIdx
  std::vector<int> kIdx;
  std::vector<double> sgn;            // (-1)^|n|
  // M2M: M_parent[n] += M_child[j] s^(n-j)/(n-j)!          L2L: L_child[k] += L_parent[k+j] s^j/j!
  std::vector<int> m2mN, m2mJ, m2mNJ;
  std::vector<int> l2lK, l2lJ, l2lKJ;
  // monomials h^n/n! from h^(n - e_i)/(n - e_i)! * h_i / n_i
  std::vector<int> monoPrev, monoAxis;
  // derivatives of 1/r: the Taylor-coefficient recurrence's parents
  std::vector<std::array<int, 3>> prev1, prev2;
  std::vector<double> recA{0.0}, recB{0.0};
  std::vector<int> plusAxis[3];       // term k -> term k + e_i (or -1)

  int at(int a, int b, int c) const {
    if (a < 0 || b < 0 || c < 0 || a + b + c > P) return -1;
    return idx[(a * (P + 1) + b) * (P + 1) + c];
  }

  explicit MultiIndex(int p) : P(p) {
    idx.assign((P + 1) * (P + 1) * (P + 1), -1);
    for (int d = 0; d <= P; ++d)
      for (int a = d; a >= 0; --a)
        for (int b = d - a; b >= 0; --b) {
          const int c = d - a - b;
          idx[(a * (P + 1) + b) * (P + 1) + c] = int(n.size());
          n.push_back({a, b, c});
          deg.push_back(d);
        }
    nt = int(n.size());
    auto f = [](int k) { double r = 1; for (int i = 2; i <= k; ++i) r *= i; return r; };
    for (auto& m : n) fact.push_back(f(m[0]) * f(m[1]) * f(m[2]));
    for (int k = 0; k < nt; ++k)
      for (int q = 0; q < nt; ++q) {
        if (deg[k] + deg[q] > P) continue;
        m2lK.push_back(k);
        m2lN.push_back(q);
        m2lNK.push_back(at(n[k][0] + n[q][0], n[k][1] + n[q][1], n[k][2] + n[q][2]));
        m2lSn.push_back(deg[q] % 2 ? -1.0 : 1.0);
        m2lSk.push_back(deg[k] % 2 ? -1.0 : 1.0);
      }
    cntUpTo.assign(P + 1, 0);
    for (int t = 0; t < nt; ++t)
      for (int d = deg[t]; d <= P; ++d) cntUpTo[d]++;
    for (int k = 0; k < nt; ++k) {
      kStart.push_back(int(kIdx.size()));
      for (int q = 0; q < cntUpTo[P - deg[k]]; ++q)
        kIdx.push_back(at(n[k][0] + n[q][0], n[k][1] + n[q][1], n[k][2] + n[q][2]));
    }
    kStart.push_back(int(kIdx.size()));
    for (int t = 0; t < nt; ++t) sgn.push_back(deg[t] % 2 ? -1.0 : 1.0);
    for (int t = 0; t < nt; ++t)
      for (int j = 0; j < nt; ++j) {
        const int a = n[t][0] - n[j][0], b = n[t][1] - n[j][1], c = n[t][2] - n[j][2];
        if (a >= 0 && b >= 0 && c >= 0) { m2mN.push_back(t); m2mJ.push_back(j); m2mNJ.push_back(at(a, b, c)); }
        const int kj = at(n[t][0] + n[j][0], n[t][1] + n[j][1], n[t][2] + n[j][2]);
        if (kj >= 0) { l2lK.push_back(t); l2lJ.push_back(j); l2lKJ.push_back(kj); }
      }
    monoPrev.assign(nt, -1);
    monoAxis.assign(nt, -1);
    prev1.assign(nt, {-1, -1, -1});
    prev2.assign(nt, {-1, -1, -1});
    for (int t = 1; t < nt; ++t) {
      for (int i = 0; i < 3; ++i)
        if (n[t][i] > 0) {
          std::array<int, 3> m = n[t];
          m[i] -= 1;
          monoPrev[t] = at(m[0], m[1], m[2]);
          monoAxis[t] = i;
          break;
        }
      for (int i = 0; i < 3; ++i) {
        std::array<int, 3> m = n[t];
        m[i] -= 1;
        prev1[t][i] = at(m[0], m[1], m[2]);
        m[i] -= 1;
        prev2[t][i] = at(m[0], m[1], m[2]);
        if (prev1[t][i] < 0) prev1[t][i] = nt;  // the zero slot
        if (prev2[t][i] < 0) prev2[t][i] = nt;
      }
      recA.push_back(-(2.0 * deg[t] - 1) / deg[t]);
      recB.push_back(-(deg[t] - 1.0) / deg[t]);
    }
    for (int i = 0; i < 3; ++i) {
      plusAxis[i].assign(nt, -1);
      for (int t = 0; t < nt; ++t) {
        std::array<int, 3> m = n[t];
        m[i] += 1;
        plusAxis[i][t] = at(m[0], m[1], m[2]);
      }
    }
  }

  /// monomials in SIMD lanes (W cells at a time)
  void monomialsV(Vd hx, Vd hy, Vd hz, Vd* out) const {
    const Vd h[3] = {hx, hy, hz};
    out[0] = Vd{} + 1.0;
    for (int t = 1; t < nt; ++t) out[t] = out[monoPrev[t]] * h[monoAxis[t]] * (1.0 / double(n[t][monoAxis[t]]));
  }
  /// out[t] = h^n / n! for every term
  void monomials(double hx, double hy, double hz, double* out) const {
    const double h[3] = {hx, hy, hz};
    out[0] = 1;
    for (int t = 1; t < nt; ++t) out[t] = out[monoPrev[t]] * h[monoAxis[t]] / double(n[t][monoAxis[t]]);
  }

  /// D[t] = d^n (1/|R|) for |n| <= P: Taylor coefficients T_n = D_n / n! by the recurrence
  /// |n| r^2 T_n = -(2|n| - 1) sum_i R_i T_(n - e_i) - (|n| - 1) sum_i T_(n - 2 e_i), then times n!.
  /// D needs nt + 1 entries (D[nt] = 0 is the recurrence's zero slot).
  void derivatives(double x, double y, double z, double* D) const {
    const double r2 = x * x + y * y + z * z, rinv2 = 1.0 / r2;
    D[nt] = 0;
    D[0] = std::sqrt(rinv2);
    for (int t = 1; t < nt; ++t) {
      const auto& p1 = prev1[t];
      const auto& p2 = prev2[t];
      const double s1 = x * D[p1[0]] + y * D[p1[1]] + z * D[p1[2]];
      const double s2 = D[p2[0]] + D[p2[1]] + D[p2[2]];
      D[t] = (recA[t] * s1 + recB[t] * s2) * rinv2;
    }
    for (int t = 1; t < nt; ++t) D[t] *= fact[t];
  }
};

// ---------------------------------------------------------------------------------------------------------------
struct Cells {
  std::vector<double> x, y, z, m, h;
  std::size_t size() const { return m.size(); }
  void add(double X, double Y, double Z, double M, double H) {
    x.push_back(X); y.push_back(Y); z.push_back(Z); m.push_back(M); h.push_back(H);
  }
};

struct Node {
  double c[3];         // expansion centre
  double rmax;         // largest distance of one of its cells from c
  double rcrit;        // rmax / theta (or rmax / theta(M) with --thetam)
  double phiLow;       // --eps: a lower bound of sum |m| / r over the node's cells (|M_root| / farthest distance)
  double geo[3], half; // cube
  double mass, absMass;
  std::uint32_t b, e;  // cells [b, e) in sorted order
  std::uint32_t child; // first child
  std::uint8_t nchild;
  bool leaf() const { return nchild == 0; }
};

struct Options {
  std::string mesh = "uniform";
  std::string file;
  int n = 32, p = 4, leaf = 16, ntargets = 1000, seed = 1, levels = 3, accel = 1, lib = 1, reps = 1;
  double theta = 0.5, libTheta = 0.5, floor = 1e-6, pdirect = 0; // pdirect: P2P instead of M2L when nA*nB <= pdirect
  bool geoCentre = false, signedMass = false;
  bool tableKernel = false;
  double eps = 0;             // --eps E: also require the M2L's error bound <= E x both nodes' phiLow
  bool thetaM = false;       // --thetam: Dehnen (2002)'s mass-dependent opening angle, theta = theta_min at the root  // --kernel table: the generic table-driven M2L (any p), immediately in the walk
};

// ---------------------------------------------------------------------------------------------------------------
// Meshes
void uniformGrid(Cells& c, int n, std::mt19937_64& rng, bool signedMass) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const double h = 1.0 / n, v = h * h * h;
  for (int k = 0; k < n; ++k)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) {
        const double rho = signedMass ? u(rng) - 0.5 : u(rng);
        c.add((i + 0.5) * h, (j + 0.5) * h, (k + 0.5) * h, rho * v, h);
      }
}

/// Blocks of 8^3 cells over the unit box: nb^3 root blocks, each refined (into 8 blocks) with probability pr up to
/// `levels` refinements; density random in [0, 1) times 4^level (denser where finer, as in a collapse).
void randomAmr(Cells& c, int nb, int levels, double pr, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  struct B { double lo[3]; double side; int level; };
  std::vector<B> stack;
  const double s0 = 1.0 / nb;
  for (int k = 0; k < nb; ++k)
    for (int j = 0; j < nb; ++j)
      for (int i = 0; i < nb; ++i) stack.push_back({{i * s0, j * s0, k * s0}, s0, 0});
  while (!stack.empty()) {
    B b = stack.back();
    stack.pop_back();
    if (b.level < levels && u(rng) < pr) {
      const double s = 0.5 * b.side;
      for (int o = 0; o < 8; ++o)
        stack.push_back({{b.lo[0] + s * (o & 1), b.lo[1] + s * ((o >> 1) & 1), b.lo[2] + s * ((o >> 2) & 1)}, s, b.level + 1});
      continue;
    }
    const double h = b.side / 8, v = h * h * h, boost = std::pow(4.0, b.level);
    for (int k = 0; k < 8; ++k)
      for (int j = 0; j < 8; ++j)
        for (int i = 0; i < 8; ++i)
          c.add(b.lo[0] + (i + 0.5) * h, b.lo[1] + (j + 0.5) * h, b.lo[2] + (k + 0.5) * h, u(rng) * boost * v, h);
  }
}

/// Three nested uniform levels: n^3 over the box, the central half refined twice (2x, then its central half 4x).
void nestedGrid(Cells& c, int n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int lev = 0; lev < 3; ++lev) {
    const int nn = n << lev;
    const double h = 1.0 / nn, v = h * h * h;
    const double lo = lev == 0 ? 0.0 : 0.5 - 0.25 / (1 << (lev - 1)), hi = 1.0 - lo;
    const double ilo = 0.5 - 0.25 / (1 << lev), ihi = 1.0 - ilo;  // refined further (not at the last level)
    for (int k = 0; k < nn; ++k)
      for (int j = 0; j < nn; ++j)
        for (int i = 0; i < nn; ++i) {
          const double x = (i + 0.5) * h, y = (j + 0.5) * h, z = (k + 0.5) * h;
          if (x < lo || x > hi || y < lo || y > hi || z < lo || z > hi) continue;
          if (lev < 2 && x > ilo && x < ihi && y > ilo && y < ihi && z > ilo && z < ihi) continue;
          c.add(x, y, z, u(rng) * v, h);
        }
  }
}

/// Uniform n^3 grid, density 1 inside the MacLaurin spheroid (e 0.9, a1 0.25, centred) and `floor` outside.
void maclaurinGrid(Cells& c, int n, double floor) {
  const double a1 = 0.25, a3 = a1 * std::sqrt(1 - 0.81);
  const double h = 1.0 / n, v = h * h * h;
  for (int k = 0; k < n; ++k)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) {
        const double x = (i + 0.5) * h, y = (j + 0.5) * h, z = (k + 0.5) * h;
        const double q = ((x - .5) * (x - .5) + (y - .5) * (y - .5)) / (a1 * a1) + (z - .5) * (z - .5) / (a3 * a3);
        c.add(x, y, z, (q <= 1 ? 1.0 : floor) * v, h);
      }
}

/// Binary file from dump_maclaurin.mjs: uint64 count, then x, y, z, mass, size (count doubles each).
bool readCells(Cells& c, const std::string& file) {
  FILE* f = std::fopen(file.c_str(), "rb");
  if (!f) return false;
  std::uint64_t n = 0;
  if (std::fread(&n, 8, 1, f) != 1) { std::fclose(f); return false; }
  for (auto* v : {&c.x, &c.y, &c.z, &c.m, &c.h}) {
    v->resize(n);
    if (std::fread(v->data(), 8, n, f) != n) { std::fclose(f); return false; }
  }
  std::fclose(f);
  return true;
}

// ---------------------------------------------------------------------------------------------------------------
struct Fmm {
  const MultiIndex& mi;
  const Options& o;
  Cells c;                          // sorted copy
  std::vector<std::uint32_t> order; // sorted -> input
  std::vector<Node> nodes;
  std::vector<double> M, L;         // nt per node
  std::vector<double> phi, gx, gy, gz;  // per sorted cell: sum m/r and grad(sum m/r)
  double theta2inv;
  std::uint64_t nM2L = 0, nP2P = 0;
  std::uint64_t cycM2L = 0, cycP2P = 0;  // -DPROFILE // mutual pairs (P2P: cell pairs, self pairs included once)
  std::vector<double> Dbuf, Sbuf;
  bool useList = false;
  std::vector<std::array<std::uint32_t, 2>> m2lList;  // generated kernels: the walk lists the pairs, then m2lBatch

  /// The listed M2L pairs, W at a time in SIMD lanes (the node data transposed into lanes and back); the rest
  /// one at a time. Each pair adds to both nodes' local expansions.
  template <int P, bool Dip>
  void m2lBatch() {
    constexpr int NT = (P + 1) * (P + 2) * (P + 3) / 6;
    const std::size_t np = m2lList.size();
    std::size_t q = 0;
    for (; q + W <= np; q += W) {
      Vd rx, ry, rz, Ma[NT], Mb[NT], La[NT] = {}, Lb[NT] = {}, D[NT];
      for (int l = 0; l < W; ++l) {
        const std::uint32_t A = m2lList[q + l][0], B = m2lList[q + l][1];
        rx[l] = nodes[A].c[0] - nodes[B].c[0];
        ry[l] = nodes[A].c[1] - nodes[B].c[1];
        rz[l] = nodes[A].c[2] - nodes[B].c[2];
        const double* ma = &M[std::size_t(A) * NT];
        const double* mb = &M[std::size_t(B) * NT];
        for (int t = 0; t < NT; ++t) { Ma[t][l] = ma[t]; Mb[t][l] = mb[t]; }
      }
      derivativesFor<P>(rx, ry, rz, D);
      m2lFor<P, Dip>(D, Ma, Mb, La, Lb);
      for (int l = 0; l < W; ++l) {
        double* la = &L[std::size_t(m2lList[q + l][0]) * NT];
        double* lb = &L[std::size_t(m2lList[q + l][1]) * NT];
        for (int t = 0; t < NT; ++t) { la[t] += La[t][l]; lb[t] += Lb[t][l]; }
      }
    }
    for (; q < np; ++q) {
      const std::uint32_t A = m2lList[q][0], B = m2lList[q][1];
      double D[NT];
      derivativesFor<P>(nodes[A].c[0] - nodes[B].c[0], nodes[A].c[1] - nodes[B].c[1], nodes[A].c[2] - nodes[B].c[2], D);
      m2lFor<P, Dip>(D, &M[std::size_t(A) * NT], &M[std::size_t(B) * NT], &L[std::size_t(A) * NT], &L[std::size_t(B) * NT]);
    }
  }
  template <int P, class T> static void derivativesFor(T x, T y, T z, T* D) {
    if constexpr (P == 3) derivatives3(x, y, z, D);
    else if constexpr (P == 4) derivatives4(x, y, z, D);
    else if constexpr (P == 5) derivatives5(x, y, z, D);
    else if constexpr (P == 6) derivatives6(x, y, z, D);
    else derivatives7(x, y, z, D);
  }
  /// Dip false: multipoles about centres of mass, whose dipoles vanish, skip the dipole terms.
  template <int P, bool Dip, class T> static void m2lFor(const T* D, const T* Ma, const T* Mb, T* La, T* Lb) {
    if constexpr (Dip) {
      if constexpr (P == 3) m2l3(D, Ma, Mb, La, Lb);
      else if constexpr (P == 4) m2l4(D, Ma, Mb, La, Lb);
      else if constexpr (P == 5) m2l5(D, Ma, Mb, La, Lb);
      else if constexpr (P == 6) m2l6(D, Ma, Mb, La, Lb);
      else m2l7(D, Ma, Mb, La, Lb);
    } else {
      if constexpr (P == 3) m2l3nd(D, Ma, Mb, La, Lb);
      else if constexpr (P == 4) m2l4nd(D, Ma, Mb, La, Lb);
      else if constexpr (P == 5) m2l5nd(D, Ma, Mb, La, Lb);
      else if constexpr (P == 6) m2l6nd(D, Ma, Mb, La, Lb);
      else m2l7nd(D, Ma, Mb, La, Lb);
    }
  }

  Fmm(const MultiIndex& m, const Options& opt) : mi(m), o(opt) {}

  void build(const Cells& in) {
    const std::size_t n = in.size();
    double lo[3] = {1e300, 1e300, 1e300}, hi[3] = {-1e300, -1e300, -1e300};
    for (std::size_t i = 0; i < n; ++i) {
      const double p[3] = {in.x[i], in.y[i], in.z[i]};
      for (int d = 0; d < 3; ++d) { lo[d] = std::min(lo[d], p[d]); hi[d] = std::max(hi[d], p[d]); }
    }
    double side = std::max({hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]}) * (1 + 1e-9) + 1e-300;
    std::vector<std::uint64_t> key(n);
    auto spread = [](std::uint64_t v) {
      v &= 0x1fffff;
      v = (v | v << 32) & 0x1f00000000ffffULL;
      v = (v | v << 16) & 0x1f0000ff0000ffULL;
      v = (v | v << 8) & 0x100f00f00f00f00fULL;
      v = (v | v << 4) & 0x10c30c30c30c30c3ULL;
      v = (v | v << 2) & 0x1249249249249249ULL;
      return v;
    };
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t a = std::uint64_t((in.x[i] - lo[0]) / side * 2097152.0);
      const std::uint64_t b = std::uint64_t((in.y[i] - lo[1]) / side * 2097152.0);
      const std::uint64_t cc = std::uint64_t((in.z[i] - lo[2]) / side * 2097152.0);
      key[i] = spread(a) | spread(b) << 1 | spread(cc) << 2;
    }
    order.resize(n);
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) { return key[a] < key[b]; });
    c = Cells();
    for (auto i : order) c.add(in.x[i], in.y[i], in.z[i], in.m[i], in.h[i]);
    std::vector<std::uint64_t> sk(n);
    for (std::size_t i = 0; i < n; ++i) sk[i] = key[order[i]];
    nodes.clear();
    nodes.push_back(Node{});
    Node& r = nodes[0];
    r.b = 0; r.e = std::uint32_t(n); r.half = side / 2; r.nchild = 0;
    for (int d = 0; d < 3; ++d) r.geo[d] = lo[d] + side / 2;
    split(0, 0, sk);
  }

  void split(std::uint32_t ni, int level, const std::vector<std::uint64_t>& sk) {
    const std::uint32_t b = nodes[ni].b, e = nodes[ni].e;
    if (e - b <= std::uint32_t(o.leaf) || level >= 20) return;
    const int shift = 3 * (20 - level);
    std::uint32_t first = std::uint32_t(nodes.size());
    std::uint32_t s = b;
    int count = 0;
    for (int oct = 0; oct < 8; ++oct) {
      std::uint32_t t = s;
      while (t < e && int((sk[t] >> shift) & 7) == oct) ++t;
      if (t > s) {
        Node ch{};
        ch.b = s; ch.e = t; ch.half = nodes[ni].half / 2; ch.nchild = 0;
        for (int d = 0; d < 3; ++d) ch.geo[d] = nodes[ni].geo[d] + ((oct >> d) & 1 ? ch.half : -ch.half);
        nodes.push_back(ch);
        ++count;
      }
      s = t;
    }
    nodes[ni].child = first;
    nodes[ni].nchild = std::uint8_t(count);
    for (int k = 0; k < count; ++k) split(first + k, level + 1, sk);
  }

  // P2M, M2M (reverse order: children follow parents)
  void upward() {
    const int nt = mi.nt;
    M.assign(nodes.size() * nt, 0.0);
    L.assign(nodes.size() * nt, 0.0);
    std::vector<double> mono(nt);
    std::vector<Vd> monoV(nt), accV(nt);
    for (std::size_t ii = nodes.size(); ii-- > 0;) {
      Node& a = nodes[ii];
      double m = 0, am = 0, s[3] = {0, 0, 0};
      for (std::uint32_t j = a.b; j < a.e; ++j) {
        m += c.m[j]; am += std::fabs(c.m[j]);
        s[0] += c.m[j] * c.x[j]; s[1] += c.m[j] * c.y[j]; s[2] += c.m[j] * c.z[j];
      }
      a.mass = m; a.absMass = am;
      const bool com = !o.geoCentre && m > 0;
      for (int d = 0; d < 3; ++d) a.c[d] = com ? s[d] / m : a.geo[d];
      double r2 = 0;
      for (std::uint32_t j = a.b; j < a.e; ++j) {
        const double dx = c.x[j] - a.c[0], dy = c.y[j] - a.c[1], dz = c.z[j] - a.c[2];
        r2 = std::max(r2, dx * dx + dy * dy + dz * dz);
      }
      a.rmax = std::sqrt(r2);
      double* Ma = &M[ii * nt];
      if (a.leaf()) {
        std::uint32_t j = a.b;
        if (a.e - a.b >= std::uint32_t(W)) {  // W cells at a time in SIMD lanes
          for (int t = 0; t < nt; ++t) accV[t] = Vd{};
          for (; j + W <= a.e; j += W) {
            Vd hx, hy, hz, mm;
            for (int l = 0; l < W; ++l) {
              hx[l] = c.x[j + l] - a.c[0]; hy[l] = c.y[j + l] - a.c[1]; hz[l] = c.z[j + l] - a.c[2]; mm[l] = c.m[j + l];
            }
            mi.monomialsV(hx, hy, hz, monoV.data());
            for (int t = 0; t < nt; ++t) accV[t] += mm * monoV[t];
          }
          for (int t = 0; t < nt; ++t) Ma[t] += hsum(accV[t]);
        }
        for (; j < a.e; ++j) {
          mi.monomials(c.x[j] - a.c[0], c.y[j] - a.c[1], c.z[j] - a.c[2], mono.data());
          for (int t = 0; t < nt; ++t) Ma[t] += c.m[j] * mono[t];
        }
      } else {
        for (int k = 0; k < a.nchild; ++k) {
          const std::uint32_t ci = a.child + k;
          const double* Mc = &M[std::size_t(ci) * nt];
          mi.monomials(nodes[ci].c[0] - a.c[0], nodes[ci].c[1] - a.c[1], nodes[ci].c[2] - a.c[2], mono.data());
          for (std::size_t q = 0; q < mi.m2mN.size(); ++q) Ma[mi.m2mN[q]] += Mc[mi.m2mJ[q]] * mono[mi.m2mNJ[q]];
        }
      }
    }
  }

  /// theta(M): theta^(p+2) / (1 - theta)^2 = theta0^(p+2) / (1 - theta0)^2 (M / M_root)^(-1/3) (Dehnen 2002, with p+2
  /// for his 5), so that light nodes open less: their error is a smaller share of any target's potential.
  void criticalRadii() {
    const double mroot = nodes[0].absMass;
    const double e = mi.P + 2, t0 = o.theta, c0 = std::pow(t0, e) / ((1 - t0) * (1 - t0));
    for (Node& a : nodes) {
      double th = o.theta;
      if (o.thetaM && a.absMass > 0) {
        const double target = c0 * std::pow(a.absMass / mroot, -1.0 / 3.0);
        double lo = t0, hi = 0.95;  // f(theta) increases with theta; cap the angle at 0.95
        if (std::pow(hi, e) / ((1 - hi) * (1 - hi)) <= target) th = hi;
        else {
          for (int it = 0; it < 60; ++it) {
            const double mid = 0.5 * (lo + hi);
            (std::pow(mid, e) / ((1 - mid) * (1 - mid)) < target ? lo : hi) = mid;
          }
          th = lo;
        }
      }
      a.rcrit = a.rmax / th;
      // farthest distance from the node's cells to any cell: at most |c - farthest root corner| + rmax
      double d2 = 0;
      for (int k = 0; k < 3; ++k) {
        const double lo = nodes[0].geo[k] - nodes[0].half, hi = nodes[0].geo[k] + nodes[0].half;
        const double d = std::max(a.c[k] - lo, hi - a.c[k]);
        d2 += d * d;
      }
      a.phiLow = mroot / (std::sqrt(d2) + a.rmax);
    }
  }

  void m2l(std::uint32_t A, std::uint32_t B) {
    ++nM2L;
#ifdef PROFILE
    const std::uint64_t t0 = __rdtsc();
    struct Acc { std::uint64_t t0; std::uint64_t& s; ~Acc() { s += __rdtsc() - t0; } } acc{t0, cycM2L};
#endif
    const int nt = mi.nt;
    const Node &a = nodes[A], &b = nodes[B];
    double* D = Dbuf.data();
    mi.derivatives(a.c[0] - b.c[0], a.c[1] - b.c[1], a.c[2] - b.c[2], D);
    const double* Ma = &M[std::size_t(A) * nt];
    const double* Mb = &M[std::size_t(B) * nt];
    double* La = &L[std::size_t(A) * nt];
    double* Lb = &L[std::size_t(B) * nt];
    double* sMb = Sbuf.data();
    for (int t = 0; t < nt; ++t) sMb[t] = mi.sgn[t] * Mb[t];
    const int* kIdx = mi.kIdx.data();
    for (int k = 0; k < nt; ++k) {
      const int q0 = mi.kStart[k], nq = mi.kStart[k + 1] - q0;
      double sa = 0, sb = 0;
#pragma omp simd reduction(+ : sa, sb)
      for (int q = 0; q < nq; ++q) {
        const double d = D[kIdx[q0 + q]];
        sa += sMb[q] * d;
        sb += Ma[q] * d;
      }
      La[k] += sa;
      Lb[k] += mi.sgn[k] * sb;
    }
  }

  void p2p(std::uint32_t A, std::uint32_t B) {
    if (!o.tableKernel && nodes[B].e - nodes[B].b <= std::uint32_t(kMaxV * W)) {
      // the smaller leaf in the lanes' outer loop, the larger in the lanes
      if (nodes[A].e - nodes[A].b > nodes[B].e - nodes[B].b && nodes[A].e - nodes[A].b <= std::uint32_t(kMaxV * W))
        p2pSimd(B, A);
      else p2pSimd(A, B);
      return;
    }
#ifdef PROFILE
    const std::uint64_t t0 = __rdtsc();
    struct Acc { std::uint64_t t0; std::uint64_t& s; ~Acc() { s += __rdtsc() - t0; } } acc{t0, cycP2P};
#endif
    const Node &a = nodes[A], &b = nodes[B];
    nP2P += std::uint64_t(a.e - a.b) * (b.e - b.b);
    const double* __restrict X = c.x.data();
    const double* __restrict Y = c.y.data();
    const double* __restrict Z = c.z.data();
    const double* __restrict Mm = c.m.data();
    double* __restrict Pp = phi.data();
    double* __restrict Gx = gx.data();
    double* __restrict Gy = gy.data();
    double* __restrict Gz = gz.data();
    const std::uint32_t jb = b.b, je = b.e;
    for (std::uint32_t i = a.b; i < a.e; ++i) {
      const double xi = X[i], yi = Y[i], zi = Z[i], mi_ = Mm[i];
      double p = 0, fx = 0, fy = 0, fz = 0;
      if (o.accel) {
#pragma omp simd reduction(+ : p, fx, fy, fz)
        for (std::uint32_t j = jb; j < je; ++j) {
          const double dx = xi - X[j], dy = yi - Y[j], dz = zi - Z[j];
          const double rinv = 1.0 / std::sqrt(dx * dx + dy * dy + dz * dz);
          const double rinv3 = rinv * rinv * rinv;
          p += Mm[j] * rinv;
          Pp[j] += mi_ * rinv;
          fx -= Mm[j] * rinv3 * dx; fy -= Mm[j] * rinv3 * dy; fz -= Mm[j] * rinv3 * dz;
          Gx[j] += mi_ * rinv3 * dx; Gy[j] += mi_ * rinv3 * dy; Gz[j] += mi_ * rinv3 * dz;
        }
      } else {
#pragma omp simd reduction(+ : p)
        for (std::uint32_t j = jb; j < je; ++j) {
          const double dx = xi - X[j], dy = yi - Y[j], dz = zi - Z[j];
          const double rinv = 1.0 / std::sqrt(dx * dx + dy * dy + dz * dz);
          p += Mm[j] * rinv;
          Pp[j] += mi_ * rinv;
        }
      }
      Pp[i] += p; Gx[i] += fx; Gy[i] += fy; Gz[i] += fz;
    }
  }

  /// Leaf-leaf P2P in SIMD lanes: B's cells padded into lanes (far away, massless), A's cells one at a time.
  /// Mutual (both leaves get their sums) when A != B; A == B: every cell against every other of the leaf (the
  /// coincident pair masked), each pair's two terms computed with the same r: antisymmetric to rounding.
  static constexpr int kMaxV = 256 / W;
  void p2pSimd(std::uint32_t A, std::uint32_t B) {
    if (A == B) { if (o.accel) p2pLanes<true, true>(A, B); else p2pLanes<true, false>(A, B); }
    else { if (o.accel) p2pLanes<false, true>(A, B); else p2pLanes<false, false>(A, B); }
  }
  template <bool Same, bool Accel>
  void p2pLanes(std::uint32_t A, std::uint32_t B) {
#ifdef PROFILE
    const std::uint64_t t0 = __rdtsc();
    struct Acc { std::uint64_t t0; std::uint64_t& s; ~Acc() { s += __rdtsc() - t0; } } acc{t0, cycP2P};
#endif
    const Node &a = nodes[A], &b = nodes[B];
    constexpr bool same = Same;
    const std::uint32_t nb = b.e - b.b, nv = (nb + W - 1) / W;
    nP2P += same ? std::uint64_t(nb) * (nb - 1) / 2 : std::uint64_t(a.e - a.b) * nb;
    Vd bx[kMaxV], by[kMaxV], bz[kMaxV], bm[kMaxV], bp[kMaxV], bgx[kMaxV], bgy[kMaxV], bgz[kMaxV];
    for (std::uint32_t v = 0; v < nv; ++v) {
      bp[v] = bgx[v] = bgy[v] = bgz[v] = Vd{};
      for (int l = 0; l < W; ++l) {
        const std::uint32_t j = b.b + v * W + l;
        const bool in = j < b.e;
        bx[v][l] = in ? c.x[j] : 1e30; by[v][l] = in ? c.y[j] : 1e30; bz[v][l] = in ? c.z[j] : 1e30;
        bm[v][l] = in ? c.m[j] : 0.0;
      }
    }
    for (std::uint32_t i = a.b; i < a.e; ++i) {
      const double xi = c.x[i], yi = c.y[i], zi = c.z[i], mi_ = c.m[i];
      Vd p{}, fx{}, fy{}, fz{};
      for (std::uint32_t v = 0; v < nv; ++v) {
        const Vd dx = xi - bx[v], dy = yi - by[v], dz = zi - bz[v];
        const Vd r2 = dx * dx + dy * dy + dz * dz;
        Vd rinv;
        if constexpr (same) rinv = r2 > 0.0 ? vrsqrt(r2 > 0.0 ? r2 : Vd{} + 1.0) : Vd{};
        else rinv = vrsqrt(r2);
        p += bm[v] * rinv;
        if constexpr (Accel) {
          const Vd r3 = rinv * rinv * rinv, t = bm[v] * r3;
          fx -= t * dx; fy -= t * dy; fz -= t * dz;
          if constexpr (!same) { const Vd u = mi_ * r3; bgx[v] += u * dx; bgy[v] += u * dy; bgz[v] += u * dz; }
        }
        if constexpr (!same) bp[v] += mi_ * rinv;
      }
      phi[i] += hsum(p);
      if constexpr (Accel) { gx[i] += hsum(fx); gy[i] += hsum(fy); gz[i] += hsum(fz); }
    }
    if constexpr (same) return;
    for (std::uint32_t v = 0; v < nv; ++v)
      for (int l = 0; l < W; ++l) {
        const std::uint32_t j = b.b + v * W + l;
        if (j >= b.e) break;
        phi[j] += bp[v][l]; gx[j] += bgx[v][l]; gy[j] += bgy[v][l]; gz[j] += bgz[v][l];
      }
  }

  void p2pSelf(std::uint32_t A) {
    const Node& a = nodes[A];
    const std::uint64_t k = a.e - a.b;
    nP2P += k * (k - 1) / 2;
    for (std::uint32_t i = a.b; i < a.e; ++i) {
      double p = 0, fx = 0, fy = 0, fz = 0;
      for (std::uint32_t j = i + 1; j < a.e; ++j) {
        const double dx = c.x[i] - c.x[j], dy = c.y[i] - c.y[j], dz = c.z[i] - c.z[j];
        const double rinv = 1.0 / std::sqrt(dx * dx + dy * dy + dz * dz), rinv3 = rinv * rinv * rinv;
        p += c.m[j] * rinv;
        phi[j] += c.m[i] * rinv;
        if (o.accel) {
          fx -= c.m[j] * rinv3 * dx; fy -= c.m[j] * rinv3 * dy; fz -= c.m[j] * rinv3 * dz;
          gx[j] += c.m[i] * rinv3 * dx; gy[j] += c.m[i] * rinv3 * dy; gz[j] += c.m[i] * rinv3 * dz;
        }
      }
      phi[i] += p; gx[i] += fx; gy[i] += fy; gz[i] += fz;
    }
  }

  // Dehnen (2002)'s MAC: |z_A - z_B| > (r_A + r_B) / theta
  void interact(std::uint32_t A, std::uint32_t B) {
    const Node &a = nodes[A], &b = nodes[B];
    const double dx = a.c[0] - b.c[0], dy = a.c[1] - b.c[1], dz = a.c[2] - b.c[2];
    const double R2 = dx * dx + dy * dy + dz * dz, s = a.rcrit + b.rcrit;
    const double na = a.e - a.b, nb = b.e - b.b;
    bool accept = s * s < R2;
    if (accept && o.eps > 0) {
      // error-controlled MAC (after Dehnen 2014's idea, with a crude bound): the truncation error of the pair is
      // below M (s/R)^(p+1) / (R - s) with s = r_A + r_B; require it below eps x each side's lowest potential
      const double R = std::sqrt(R2), sr = a.rmax + b.rmax, q = std::pow(sr / R, mi.P + 1) / (R - sr);
      accept = b.absMass * q <= o.eps * a.phiLow && a.absMass * q <= o.eps * b.phiLow;
    }
    if (accept) {
      if (na * nb <= o.pdirect) p2p(A, B);
      else if (useList) { m2lList.push_back({A, B}); ++nM2L; }
      else m2l(A, B);
      return;
    }
    if (a.leaf() && b.leaf()) { p2p(A, B); return; }
    const bool splitA = !a.leaf() && (b.leaf() || a.rmax >= b.rmax);
    if (splitA) {
      const std::uint32_t c0 = a.child, n = a.nchild;
      for (std::uint32_t k = 0; k < n; ++k) interact(c0 + k, B);
    } else {
      const std::uint32_t c0 = b.child, n = b.nchild;
      for (std::uint32_t k = 0; k < n; ++k) interact(A, c0 + k);
    }
  }

  void self(std::uint32_t A) {
    const Node& a = nodes[A];
    if (a.leaf()) {
      if (!o.tableKernel && a.e - a.b <= std::uint32_t(kMaxV * W)) p2pSimd(A, A);
      else p2pSelf(A);
      return;
    }
    const std::uint32_t c0 = a.child, n = a.nchild;
    for (std::uint32_t k = 0; k < n; ++k) self(c0 + k);
    for (std::uint32_t k = 0; k < n; ++k)
      for (std::uint32_t l = k + 1; l < n; ++l) interact(c0 + k, c0 + l);
  }

  // L2L (parents first), L2P at the leaves
  void downward() {
    const int nt = mi.nt;
    std::vector<double> mono(nt);
    std::vector<Vd> monoV(nt);
    for (std::size_t ii = 0; ii < nodes.size(); ++ii) {
      const Node& a = nodes[ii];
      const double* La = &L[ii * nt];
      if (!a.leaf()) {
        for (int k = 0; k < a.nchild; ++k) {
          const std::uint32_t ci = a.child + k;
          double* Lc = &L[std::size_t(ci) * nt];
          mi.monomials(nodes[ci].c[0] - a.c[0], nodes[ci].c[1] - a.c[1], nodes[ci].c[2] - a.c[2], mono.data());
          for (std::size_t q = 0; q < mi.l2lK.size(); ++q) Lc[mi.l2lK[q]] += La[mi.l2lKJ[q]] * mono[mi.l2lJ[q]];
        }
        continue;
      }
      // L2P, W cells at a time in SIMD lanes
      std::uint32_t j = a.b;
      for (; j + W <= a.e; j += W) {
        Vd hx, hy, hz;
        for (int l = 0; l < W; ++l) { hx[l] = c.x[j + l] - a.c[0]; hy[l] = c.y[j + l] - a.c[1]; hz[l] = c.z[j + l] - a.c[2]; }
        mi.monomialsV(hx, hy, hz, monoV.data());
        Vd p{}, f0{}, f1{}, f2{};
        for (int t = 0; t < nt; ++t) p += La[t] * monoV[t];
        if (o.accel)
          for (int t = 0; t < nt; ++t) {
            if (mi.deg[t] >= mi.P) break;  // terms are numbered by degree
            f0 += La[mi.plusAxis[0][t]] * monoV[t];
            f1 += La[mi.plusAxis[1][t]] * monoV[t];
            f2 += La[mi.plusAxis[2][t]] * monoV[t];
          }
        for (int l = 0; l < W; ++l) { phi[j + l] += p[l]; gx[j + l] += f0[l]; gy[j + l] += f1[l]; gz[j + l] += f2[l]; }
      }
      for (; j < a.e; ++j) {
        mi.monomials(c.x[j] - a.c[0], c.y[j] - a.c[1], c.z[j] - a.c[2], mono.data());
        double p = 0, f[3] = {0, 0, 0};
        for (int t = 0; t < nt; ++t) {
          p += La[t] * mono[t];
          if (o.accel && mi.deg[t] < mi.P)
            for (int i = 0; i < 3; ++i) f[i] += La[mi.plusAxis[i][t]] * mono[t];
        }
        phi[j] += p; gx[j] += f[0]; gy[j] += f[1]; gz[j] += f[2];
      }
    }
  }

  void solve() {
    const std::size_t n = c.size();
    phi.assign(n, 0.0); gx.assign(n, 0.0); gy.assign(n, 0.0); gz.assign(n, 0.0);
    Dbuf.assign(mi.nt + 1, 0.0);
    Sbuf.assign(mi.nt, 0.0);
    nM2L = nP2P = 0;
    useList = !o.tableKernel && mi.P >= 3 && mi.P <= 7;
    criticalRadii();
    m2lList.clear();
    self(0);
    if (!useList) return;
#ifdef PROFILE
    const std::uint64_t t0 = __rdtsc();
#endif
    // dipoles vanish about centres of mass (nodes of positive mass); otherwise keep them
    bool dip = o.geoCentre;
    for (const Node& nd : nodes) dip = dip || !(nd.mass > 0);
    switch (mi.P * 2 + dip) {
      case 6: m2lBatch<3, false>(); break;
      case 7: m2lBatch<3, true>(); break;
      case 8: m2lBatch<4, false>(); break;
      case 9: m2lBatch<4, true>(); break;
      case 10: m2lBatch<5, false>(); break;
      case 11: m2lBatch<5, true>(); break;
      case 12: m2lBatch<6, false>(); break;
      case 13: m2lBatch<6, true>(); break;
      case 14: m2lBatch<7, false>(); break;
      default: m2lBatch<7, true>(); break;
    }
#ifdef PROFILE
    cycM2L += __rdtsc() - t0;
#endif
  }
};

// ---------------------------------------------------------------------------------------------------------------
double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, std::size_t(q * (v.size() - 1) + 0.5))];
}

void usage() {
  std::puts(
      "fmm_proto [--mesh uniform|nested|amr|maclaurin|file] [--n N] [--levels L] [--file cells.bin]\n"
      "          [--p P] [--theta T] [--leaf K] [--pdirect NANB] [--thetam] [--eps E] [--geo] [--signed] [--accel 0|1]\n"
      "          [--targets K (random, plus the 8 corner cells)] [--seed S] [--lib 0|1] [--libtheta T] [--reps R] [--kernel table|gen]\n"
      "  uniform: N^3 grid, random masses; nested: three nested levels of N^3 cells each (random masses);\n"
      "  amr: 8^3 blocks, 2^3 root blocks refined at random (p 0.3) up to --levels more levels, density 4^level x\n"
      "  random; maclaurin: N^3 grid, e 0.9 spheroid, floor 1e-6; file: cells from dump_maclaurin.mjs.\n"
      "  --geo: expand about geometric centres; --signed: uniform grid of density contrasts in [-0.5, 0.5).");
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--mesh") o.mesh = next();
    else if (a == "--n") o.n = std::stoi(next());
    else if (a == "--levels") o.levels = std::stoi(next());
    else if (a == "--file") o.file = next();
    else if (a == "--p") o.p = std::stoi(next());
    else if (a == "--theta") o.theta = std::stod(next());
    else if (a == "--leaf") o.leaf = std::stoi(next());
    else if (a == "--pdirect") o.pdirect = std::stod(next());
    else if (a == "--geo") o.geoCentre = true;
    else if (a == "--signed") o.signedMass = true;
    else if (a == "--accel") o.accel = std::stoi(next());
    else if (a == "--targets") o.ntargets = std::stoi(next());
    else if (a == "--seed") o.seed = std::stoi(next());
    else if (a == "--lib") o.lib = std::stoi(next());
    else if (a == "--reps") o.reps = std::stoi(next());
    else if (a == "--libtheta") o.libTheta = std::stod(next());
    else if (a == "--thetam") o.thetaM = true;
    else if (a == "--eps") o.eps = std::stod(next());
    else if (a == "--kernel") o.tableKernel = next() == "table";
    else { usage(); return a == "--help" ? 0 : 1; }
  }
  std::mt19937_64 rng(o.seed);
  Cells cells;
  if (o.mesh == "uniform") uniformGrid(cells, o.n, rng, o.signedMass);
  else if (o.mesh == "nested") nestedGrid(cells, o.n, rng);
  else if (o.mesh == "amr") randomAmr(cells, 2, o.levels, 0.3, rng);
  else if (o.mesh == "maclaurin") maclaurinGrid(cells, o.n, o.floor);
  else if (o.mesh == "file") {
    if (!readCells(cells, o.file)) { std::fprintf(stderr, "cannot read %s\n", o.file.c_str()); return 1; }
  } else { usage(); return 1; }
  const std::size_t n = cells.size();

  MultiIndex mi(o.p);
  Fmm f(mi, o);
  double tBuild = 1e30, tUp = 1e30, tWalk = 1e30, tDown = 1e30;
#ifdef WITH_AMRGRAV
  // the library's tree on the same cells, timed in the same loop (best of reps each: the machine is shared)
  amrgrav_solver* solver = nullptr;
  std::vector<double> lp(n), la[3];
  double tLib = 1e30;
  if (o.lib) {
    amrgrav_options lo;
    amrgrav_default_options(&lo);
    lo.theta = o.libTheta; lo.order = 2; lo.G = 1; lo.backend = AMRGRAV_BACKEND_CPU; lo.self_potential = 0;
    lo.threads = 1; lo.accelerations = o.accel;
    if (amrgrav_create(&lo, &solver) != AMRGRAV_OK) { std::fprintf(stderr, "%s\n", amrgrav_last_error(nullptr)); return 1; }
    for (auto& v : la) v.resize(n);
  }
#endif
  for (int r = 0; r < o.reps; ++r) {
#ifdef WITH_AMRGRAV
    if (solver) {
      auto t0 = Clock::now();
      if (amrgrav_compute_potential(solver, n, cells.x.data(), cells.y.data(), cells.z.data(), cells.m.data(),
                                    cells.h.data(), lp.data(), o.accel ? la[0].data() : nullptr,
                                    o.accel ? la[1].data() : nullptr, o.accel ? la[2].data() : nullptr) != AMRGRAV_OK) {
        std::fprintf(stderr, "library: %s\n", amrgrav_last_error(solver));
        amrgrav_destroy(solver);
        solver = nullptr;
      } else tLib = std::min(tLib, secondsSince(t0));
    }
#endif
    auto t0 = Clock::now();
    f.build(cells);
    const double b = secondsSince(t0);
    t0 = Clock::now();
    f.upward();
    const double u = secondsSince(t0);
    t0 = Clock::now();
    f.solve();
    const double w = secondsSince(t0);
    t0 = Clock::now();
    f.downward();
    const double d = secondsSince(t0);
    if (b + u + w + d < tBuild + tUp + tWalk + tDown) { tBuild = b; tUp = u; tWalk = w; tDown = d; }
  }
  const double tFmm = tBuild + tUp + tWalk + tDown;

  // results in input order
  std::vector<double> phi(n), g[3];
  for (auto& v : g) v.resize(n);
  for (std::size_t s = 0; s < n; ++s) {
    const std::uint32_t i = f.order[s];
    phi[i] = f.phi[s]; g[0][i] = f.gx[s]; g[1][i] = f.gy[s]; g[2][i] = f.gz[s];
  }
  // momentum: sum m g and sum |m g|
  long double P[3] = {0, 0, 0}, Pabs = 0;
  for (std::size_t i = 0; i < n; ++i) {
    for (int d = 0; d < 3; ++d) P[d] += (long double)cells.m[i] * g[d][i];
    Pabs += std::fabs(cells.m[i]) * std::sqrt(g[0][i] * g[0][i] + g[1][i] * g[1][i] + g[2][i] * g[2][i]);
  }
  const double mom = double(std::sqrt(P[0] * P[0] + P[1] * P[1] + P[2] * P[2]) / Pabs);

  // direct summation on a random subset of targets
  std::vector<std::uint32_t> tgt;
  {
    std::mt19937_64 r2(o.seed + 12345);
    std::uniform_int_distribution<std::size_t> pick(0, n - 1);
    const std::size_t k = std::min<std::size_t>(o.ntargets, n);
    if (k == n) { tgt.resize(n); std::iota(tgt.begin(), tgt.end(), 0u); }
    else {
      for (std::size_t q = 0; q < k; ++q) tgt.push_back(std::uint32_t(pick(r2)));
      // plus the cell nearest each corner of the bounding box (the far field's worst case on concentrated masses)
      for (int corner = 0; corner < 8; ++corner) {
        std::uint32_t best = 0;
        double bv = -1e300;
        for (std::size_t i = 0; i < n; ++i) {
          const double v = (corner & 1 ? 1 : -1) * cells.x[i] + (corner & 2 ? 1 : -1) * cells.y[i] +
                           (corner & 4 ? 1 : -1) * cells.z[i];
          if (v > bv) { bv = v; best = std::uint32_t(i); }
        }
        tgt.push_back(best);
      }
    }
  }
  std::vector<double> dphi(tgt.size()), dg[3];
  for (auto& v : dg) v.resize(tgt.size());
  double gmaxd = 0;
  for (std::size_t q = 0; q < tgt.size(); ++q) {
    const std::uint32_t i = tgt[q];
    double p = 0, fx = 0, fy = 0, fz = 0;
    for (std::size_t j = 0; j < n; ++j) {
      if (j == i) continue;
      const double dx = cells.x[i] - cells.x[j], dy = cells.y[i] - cells.y[j], dz = cells.z[i] - cells.z[j];
      const double rinv = 1.0 / std::sqrt(dx * dx + dy * dy + dz * dz), rinv3 = rinv * rinv * rinv;
      p += cells.m[j] * rinv;
      fx -= cells.m[j] * rinv3 * dx; fy -= cells.m[j] * rinv3 * dy; fz -= cells.m[j] * rinv3 * dz;
    }
    dphi[q] = p; dg[0][q] = fx; dg[1][q] = fy; dg[2][q] = fz;
    gmaxd = std::max(gmaxd, std::sqrt(fx * fx + fy * fy + fz * fz));
  }
  double phimax = 0;
  for (double v : dphi) phimax = std::max(phimax, std::fabs(v));
  std::uint32_t worst = 0;
  auto errors = [&](const std::vector<double>& pp, const std::vector<double>* gg, double& pmax, double& pmed,
                    double& gmax, double& gmed, double& gnorm) {
    std::vector<double> ep, eg;
    gnorm = 0;
    for (std::size_t q = 0; q < tgt.size(); ++q) {
      const std::uint32_t i = tgt[q];
      // relative to |phi| at the cell (signed masses: to max |phi|, the potential can cross zero)
      ep.push_back(std::fabs(pp[i] - dphi[q]) / (o.signedMass ? phimax : std::fabs(dphi[q])));
      if (gg) {
        const double ex = gg[0][i] - dg[0][q], ey = gg[1][i] - dg[1][q], ez = gg[2][i] - dg[2][q];
        const double e = std::sqrt(ex * ex + ey * ey + ez * ez);
        const double a = std::sqrt(dg[0][q] * dg[0][q] + dg[1][q] * dg[1][q] + dg[2][q] * dg[2][q]);
        eg.push_back(e / a);
        gnorm = std::max(gnorm, e / gmaxd);
      }
    }
    pmax = percentile(ep, 1.0); pmed = percentile(ep, 0.5);
    worst = tgt[std::max_element(ep.begin(), ep.end()) - ep.begin()];
    gmax = percentile(eg, 1.0); gmed = percentile(eg, 0.5);
  };
  double pmax, pmed, gmax = 0, gmed = 0, gnorm = 0;
  errors(phi, o.accel ? g : nullptr, pmax, pmed, gmax, gmed, gnorm);
  const std::uint32_t worstFmm = worst;
  std::size_t leaves = 0;
  for (auto& nd : f.nodes) leaves += nd.leaf();
  std::printf("FMM mesh=%s cells=%zu p=%d terms=%d m2l_terms=%zu theta=%.3g%s eps=%g leaf=%d pdirect=%g centre=%s accel=%d\n",
              o.mesh.c_str(), n, o.p, mi.nt, mi.m2lK.size(), o.theta, o.thetaM ? "(M)" : "", o.eps, o.leaf, o.pdirect, o.geoCentre ? "geo" : "com",
              o.accel);
  std::printf("  nodes=%zu leaves=%zu  M2L pairs/cell=%.1f  P2P pairs/cell=%.1f  (directed: M2L %.1f, P2P %.1f per cell)\n",
              f.nodes.size(), leaves, double(f.nM2L) / n, double(f.nP2P) / n, 2.0 * f.nM2L / n, 2.0 * f.nP2P / n);
  std::printf("  phi rel err max %.3e median %.3e | acc rel err max %.3e median %.3e, max/|a|max %.3e | |sum m a|/sum|m a| %.2e\n",
              pmax, pmed, gmax, gmed, gnorm, mom);
  std::printf("  worst phi error at cell %u (%.4f, %.4f, %.4f), size %.3g, mass %.3g\n", worstFmm, cells.x[worstFmm],
              cells.y[worstFmm], cells.z[worstFmm], cells.h[worstFmm], cells.m[worstFmm]);
  std::printf("  time %.3f s (build %.3f, up %.3f, walk %.3f, down %.3f) = %.3g cells/s, 1 thread\n", tFmm, tBuild,
              tUp, tWalk, tDown, n / tFmm);
#ifdef PROFILE
  std::printf("  cycles: M2L %.3g (%.0f per M2L), P2P %.3g (%.1f per pair)\n", double(f.cycM2L),
              double(f.cycM2L) / double(f.nM2L), double(f.cycP2P), double(f.cycP2P) / double(f.nP2P));
#endif
#ifdef WITH_AMRGRAV
  if (solver) {
    const double best = tLib;
    amrgrav_stats st{};
    amrgrav_solver* s = solver;
    amrgrav_get_stats(s, &st);
    amrgrav_destroy(s);
    for (auto& v : lp) v = -v;  // library: phi = -G sum m/r, acceleration = G grad(sum m/r)
    double lpm, lpmed, lgm = 0, lgmed = 0, lgn = 0;
    errors(lp, o.accel ? la : nullptr, lpm, lpmed, lgm, lgmed, lgn);
    long double Q[3] = {0, 0, 0}, Qa = 0;
    if (o.accel)
      for (std::size_t i = 0; i < n; ++i) {
        for (int d = 0; d < 3; ++d) Q[d] += (long double)cells.m[i] * la[d][i];
        Qa += cells.m[i] * std::sqrt(la[0][i] * la[0][i] + la[1][i] * la[1][i] + la[2][i] * la[2][i]);
      }
    std::printf("  TREE (library, theta %.3g, order 2, 1 thread): %.3f s = %.3g cells/s, %.0f interactions/cell, phi rel "
                "err max %.3e median %.3e | acc max %.3e median %.3e | momentum %.2e | FMM speed-up %.2fx\n",
                o.libTheta, best, n / best, st.interactions_per_cell, lpm, lpmed, lgm, lgmed,
                o.accel ? double(std::sqrt(Q[0] * Q[0] + Q[1] * Q[1] + Q[2] * Q[2]) / Qa) : 0.0, best / tFmm);
  }
#endif
  return 0;
}
