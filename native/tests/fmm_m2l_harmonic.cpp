/// \file fmm_m2l_harmonic.cpp
/// \brief amrgrav_fmm_m2l_harmonic: the harmonic M2L (fmm/m2l_kernels.h derivativesH, foldMultipoles, m2lOneH,
/// addUnfoldedLocal; the CPU's M2L in fmm/evaluate.cpp) against the full Cartesian one (derivatives, m2lOne) at
/// orders 3..7, with and without the dipole terms: the derivatives with c <= 2 and every L term within 1e-13 of the
/// sum of its products' sizes, for random multipoles (the folding is algebra: it holds for any M) at random
/// separations. Also that the trace identity holds for the full derivatives (D[n + 2 e_z] = -D[n + 2 e_x] -
/// D[n + 2 e_y]: 1/r is harmonic), which is all the folding rests on. And the CUDA backend's harmonic M2L
/// (cuda/kernel_fmm.cu fmmM2LHarmonic, cuda/m2l_device.h m2lHarmonic, its fold and unfold) emulated lane by lane:
/// a target's 75 sources over 32 lanes, each lane's register and shared terms, the lanes' sums in the shuffle tree's
/// order, unfolded; against the CPU's full per-pair M2L summed over the sources. CTest (label cpu).
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "cuda/m2l_device.h"
#pragma GCC diagnostic pop
#include "fmm/simd.h"  // before m2l_kernels.h: its templates name bc and vsqrt
#include "fmm/m2l_kernels.h"
#include "fmm/multi_index.h"
#include "tests/check_report.h"

using namespace amrgrav;
using namespace amrgrav::fmm;
using tests::check;

namespace {

double factorialOf(int n) { return n <= 1 ? 1.0 : n * factorialOf(n - 1); }

template <int P> struct Kernels;
#define AG_KERNELS(P)                                                                                      \
  template <> struct Kernels<P> {                                                                          \
    static void d(double x, double y, double z, double* D) { derivatives##P(x, y, z, D); }                 \
    static void dh(double x, double y, double z, double* D) { derivativesH##P(x, y, z, D); }               \
    static void one(bool dip, const double* D, const double* M, double* L) {                               \
      dip ? m2lOne##P(D, M, L) : m2lOne##P##nd(D, M, L);                                                   \
    }                                                                                                      \
    static void oneH(bool dip, const double* D, const double* Mh, double* Lh) {                            \
      dip ? m2lOneH##P(D, Mh, Lh) : m2lOneH##P##nd(D, Mh, Lh);                                             \
    }                                                                                                      \
    static void fold(const double* M, double* Mh) { foldMultipoles##P(M, Mh); }                            \
    static void unfold(const double* Lh, double* L) { addUnfoldedLocal##P(Lh, L); }                        \
    static constexpr int kHarmonic = kHarmonicTerms##P;                                                    \
  };
AG_KERNELS(3)
AG_KERNELS(4)
AG_KERNELS(5)
AG_KERNELS(6)
AG_KERNELS(7)
#undef AG_KERNELS

/// The device's harmonic pieces of order P (cuda/m2l_device.h) on the host.
template <int P> struct Device;
#define AG_DEVICE(P)                                                                                       \
  template <> struct Device<P> {                                                                           \
    static constexpr int kRegs = cuda::kM2LHarmonicRegTerms##P;                                            \
    static void pair(bool dip, double x, double y, double z, const double* Mh, double* La, volatile double* Ls) { \
      dip ? cuda::m2lHarmonicDip##P(x, y, z, Mh, La, Ls) : cuda::m2lHarmonic##P(x, y, z, Mh, La, Ls);      \
    }                                                                                                      \
    static void fold(const double* M, double* Mh) { cuda::foldMultipoles##P(M, Mh); }                      \
    static void unfold(const double* Lh, double* L) { cuda::addUnfoldedLocal##P(Lh, L); }                  \
  };
AG_DEVICE(3)
AG_DEVICE(4)
AG_DEVICE(5)
AG_DEVICE(6)
AG_DEVICE(7)
#undef AG_DEVICE

/// The device kernel's work for one target emulated: sources q on lane q mod 32, each lane's terms (kRegs in
/// "registers", the rest in its shared column at stride 32), the lanes summed as the shuffle tree adds them
/// (offsets 16, 8, 4, 2, 1 into lane 0), unfolded into L; against the CPU's full M2L per pair in source order.
template <int P> void checkDeviceOrder(std::mt19937_64& rng) {
  using K = Kernels<P>;
  using Dv = Device<P>;
  const MultiIndex mi(P);
  const int nt = mi.terms, nh = K::kHarmonic, nr = Dv::kRegs, ns = nh - nr;
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  constexpr int kSources = 75;
  for (int dip = 0; dip < 2; ++dip) {
    std::vector<double> M(kSources * nt), R(3 * kSources), Mh(kSources * nh);
    for (double& m : M) m = u(rng);
    for (int q = 0; q < kSources; ++q) {
      double x = u(rng), y = u(rng), z = u(rng);
      const double s = (1.5 + 4.5 * std::abs(u(rng))) / std::sqrt(x * x + y * y + z * z);
      R[3 * q] = x * s, R[3 * q + 1] = y * s, R[3 * q + 2] = z * s;
      Dv::fold(&M[q * nt], &Mh[q * nh]);
    }
    // the reference: the full kernel per pair, and each term's sum of its products' sizes
    std::vector<double> Lref(nt, 0.0), scale(nt, 0.0), D(nt);
    for (int q = 0; q < kSources; ++q) {
      K::d(R[3 * q], R[3 * q + 1], R[3 * q + 2], D.data());
      K::one(dip, D.data(), &M[q * nt], Lref.data());
      const double r = std::sqrt(R[3 * q] * R[3 * q] + R[3 * q + 1] * R[3 * q + 1] + R[3 * q + 2] * R[3 * q + 2]);
      for (int k = 0; k < nt; ++k)
        for (int j = 0; j < nt; ++j) {
          if (mi.degree[k] + mi.degree[j] > P) continue;
          const int kj = mi.at(mi.n[k][0] + mi.n[j][0], mi.n[k][1] + mi.n[j][1], mi.n[k][2] + mi.n[j][2]);
          scale[k] += std::abs(M[q * nt + j]) * factorialOf(mi.degree[kj]) / std::pow(r, mi.degree[kj] + 1);
        }
    }
    std::vector<double> La(32 * nr, 0.0), Ls(32 * std::max(ns, 1), 0.0), Lh(nh), L(nt, 0.0);
    for (int q = 0; q < kSources; ++q) {
      const int lane = q % 32;
      Dv::pair(dip, R[3 * q], R[3 * q + 1], R[3 * q + 2], &Mh[q * nh], &La[lane * nr], &Ls[lane]);
    }
    for (int k = 0; k < nh; ++k) {
      double v[32];
      for (int lane = 0; lane < 32; ++lane) v[lane] = k < nr ? La[lane * nr + k] : Ls[32 * (k - nr) + lane];
      for (int off = 16; off > 0; off >>= 1)
        for (int lane = 0; lane < off; ++lane) v[lane] += v[lane + off];
      Lh[k] = v[0];
    }
    Dv::unfold(Lh.data(), L.data());
    double worst = 0;
    for (int k = 0; k < nt; ++k) worst = std::max(worst, std::abs(L[k] - Lref[k]) / scale[k]);
    char buf[160];
    std::snprintf(buf, sizeof buf, "%d sources, worst term %.2e of its products' sizes", kSources, worst);
    check(std::string("device harmonic M2L p") + std::to_string(P) + (dip ? " dipoles" : " no dipoles"), worst < 1e-13,
          buf);
  }
}

template <int P> void checkOrder(std::mt19937_64& rng) {
  using K = Kernels<P>;
  const MultiIndex mi(P);
  const int nt = mi.terms;
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  check("harmonic terms p" + std::to_string(P), K::kHarmonic == (P + 1) * (P + 1), std::to_string(K::kHarmonic));
  double worstD = 0, worstTrace = 0, worstL[2] = {0, 0};
  for (int trial = 0; trial < 200; ++trial) {
    // separations from about 1.5 to 6 node sizes in any direction (the MAC's range), multipoles of unit size
    double x = u(rng), y = u(rng), z = u(rng);
    const double s = (1.5 + 4.5 * std::abs(u(rng))) / std::sqrt(x * x + y * y + z * z);
    x *= s, y *= s, z *= s;
    const double R = std::sqrt(x * x + y * y + z * z);
    std::vector<double> D(nt), Dh(nt, 0.0), M(nt), Mh(K::kHarmonic), L(nt), Lh(K::kHarmonic), Lf(nt);
    K::d(x, y, z, D.data());
    K::dh(x, y, z, Dh.data());
    auto size = [&](int j) { return factorialOf(mi.degree[j]) / std::pow(R, mi.degree[j] + 1); };
    for (int j = 0; j < nt; ++j) {
      if (mi.n[j][2] <= 2) worstD = std::max(worstD, std::abs(Dh[j] - D[j]) / size(j));
      if (mi.n[j][2] >= 2) {
        const int a = mi.at(mi.n[j][0] + 2, mi.n[j][1], mi.n[j][2] - 2),
                  b = mi.at(mi.n[j][0], mi.n[j][1] + 2, mi.n[j][2] - 2);
        worstTrace = std::max(worstTrace, std::abs(D[j] + D[a] + D[b]) / size(j));
      }
    }
    for (int dip = 0; dip < 2; ++dip) {
      for (int q = 0; q < nt; ++q) M[q] = u(rng);
      std::fill(L.begin(), L.end(), 0.0);
      std::fill(Lh.begin(), Lh.end(), 0.0);
      std::fill(Lf.begin(), Lf.end(), 0.0);
      K::one(dip, D.data(), M.data(), L.data());
      K::fold(M.data(), Mh.data());
      K::oneH(dip, Dh.data(), Mh.data(), Lh.data());
      K::unfold(Lh.data(), Lf.data());
      for (int k = 0; k < nt; ++k) {
        double scale = 0;  // the sum of L_k's products' sizes
        for (int q = 0; q < nt; ++q) {
          if (mi.degree[k] + mi.degree[q] > P) continue;
          const int j = mi.at(mi.n[k][0] + mi.n[q][0], mi.n[k][1] + mi.n[q][1], mi.n[k][2] + mi.n[q][2]);
          scale += std::abs(M[q]) * size(j);
        }
        worstL[dip] = std::max(worstL[dip], std::abs(Lf[k] - L[k]) / scale);
      }
    }
  }
  char buf[160];
  std::snprintf(buf, sizeof buf, "%.2e of |j|!/R^(|j|+1)", worstTrace);
  check("trace identity p" + std::to_string(P), worstTrace < 1e-13, buf);
  std::snprintf(buf, sizeof buf, "%.2e of |j|!/R^(|j|+1)", worstD);
  check("derivativesH p" + std::to_string(P), worstD < 1e-13, buf);
  for (int dip = 0; dip < 2; ++dip) {
    std::snprintf(buf, sizeof buf, "worst term %.2e of its products' sizes", worstL[dip]);
    check(std::string("harmonic M2L p") + std::to_string(P) + (dip ? " dipoles" : " no dipoles"), worstL[dip] < 1e-13,
          buf);
  }
}

}  // namespace

int main() {
  std::mt19937_64 rng(20261127);
  checkOrder<3>(rng);
  checkOrder<4>(rng);
  checkOrder<5>(rng);
  checkOrder<6>(rng);
  checkOrder<7>(rng);
  checkDeviceOrder<3>(rng);
  checkDeviceOrder<4>(rng);
  checkDeviceOrder<5>(rng);
  checkDeviceOrder<6>(rng);
  checkDeviceOrder<7>(rng);
  std::printf("%d checks, %d failed\n", tests::gChecks, tests::gFailed);
  return tests::gFailed == 0 ? 0 : 1;
}
