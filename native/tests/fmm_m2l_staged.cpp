/// \file fmm_m2l_staged.cpp
/// \brief amrgrav_fmm_m2l_staged: the CUDA backend's staged M2L (cuda/kernel_fmm.cu fmmM2LStaged, CudaOptions::fmmM2L
/// 1 and 2; fmm/m2l_stage_k.h) emulated on the host lane by lane in its order of work: a target's sources in batches
/// of 32, each batch's multipoles copied as the warp copies them (source i's term q = lane + 32 r to
/// m2lStageAt(q, i)), lane i's M2L through cuda/m2l_device.h's generated kernel reading its column at stride
/// kM2LStageStride with the variant's register terms (m2lStagedRegTerms; the others in the lane's shared column), then
/// the device's shuffle tree per term; the direct variants (fmmM2L 3 and 4) through m2lDirect, the recurrence on D
/// itself. Against the CPU's per-pair arithmetic (fmm/m2l_kernels.h derivatives and
/// m2lOne, summed over the sources): every term within 1e-13 of the sum of its products' sizes (|M_q| |j|! / R^(|j|+1),
/// j = q + k), orders 3..7,
/// without and with the dipole terms, for 1, 32, 33 and 75 sources (partial batches). Also the layout's promise:
/// the copy's writes and the lanes' reads hit distinct banks within each half warp. CTest (label cpu).
#include <algorithm>
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
#include "fmm/m2l_stage_k.h"
#include "tests/check_report.h"

using namespace amrgrav;
using tests::check;

namespace {

constexpr int termsOf(int p) { return (p + 1) * (p + 2) * (p + 3) / 6; }

int degreeOf(int q) {
  int d = 0;
  while (termsOf(d) <= q) ++d;
  return d;
}

template <int P, int MS, int NR, bool Dip, bool Direct>
void fused(double x, double y, double z, const double* Mb, double* La, volatile double* Ls) {
  if constexpr (Direct && Dip) {
    if constexpr (P == 3) cuda::m2lDirectDip3<MS, NR>(x, y, z, Mb, La, Ls);
    else if constexpr (P == 4) cuda::m2lDirectDip4<MS, NR>(x, y, z, Mb, La, Ls);
    else if constexpr (P == 5) cuda::m2lDirectDip5<MS, NR>(x, y, z, Mb, La, Ls);
    else if constexpr (P == 6) cuda::m2lDirectDip6<MS, NR>(x, y, z, Mb, La, Ls);
    else cuda::m2lDirectDip7<MS, NR>(x, y, z, Mb, La, Ls);
  } else if constexpr (Direct) {
    if constexpr (P == 3) cuda::m2lDirect3<MS, NR>(x, y, z, Mb, La, Ls);
    else if constexpr (P == 4) cuda::m2lDirect4<MS, NR>(x, y, z, Mb, La, Ls);
    else if constexpr (P == 5) cuda::m2lDirect5<MS, NR>(x, y, z, Mb, La, Ls);
    else if constexpr (P == 6) cuda::m2lDirect6<MS, NR>(x, y, z, Mb, La, Ls);
    else cuda::m2lDirect7<MS, NR>(x, y, z, Mb, La, Ls);
  } else if constexpr (Dip) {
    if constexpr (P == 3) cuda::m2lFusedDip3<MS, NR>(x, y, z, Mb, La, Ls);
    else if constexpr (P == 4) cuda::m2lFusedDip4<MS, NR>(x, y, z, Mb, La, Ls);
    else if constexpr (P == 5) cuda::m2lFusedDip5<MS, NR>(x, y, z, Mb, La, Ls);
    else if constexpr (P == 6) cuda::m2lFusedDip6<MS, NR>(x, y, z, Mb, La, Ls);
    else cuda::m2lFusedDip7<MS, NR>(x, y, z, Mb, La, Ls);
  } else {
    if constexpr (P == 3) cuda::m2lFused3<MS, NR>(x, y, z, Mb, La, Ls);
    else if constexpr (P == 4) cuda::m2lFused4<MS, NR>(x, y, z, Mb, La, Ls);
    else if constexpr (P == 5) cuda::m2lFused5<MS, NR>(x, y, z, Mb, La, Ls);
    else if constexpr (P == 6) cuda::m2lFused6<MS, NR>(x, y, z, Mb, La, Ls);
    else cuda::m2lFused7<MS, NR>(x, y, z, Mb, La, Ls);
  }
}

template <int P, bool Dip> void cpuPair(double x, double y, double z, const double* Mb, double* L) {
  double D[termsOf(P)];
  if constexpr (P == 3) fmm::derivatives3(x, y, z, D);
  else if constexpr (P == 4) fmm::derivatives4(x, y, z, D);
  else if constexpr (P == 5) fmm::derivatives5(x, y, z, D);
  else if constexpr (P == 6) fmm::derivatives6(x, y, z, D);
  else fmm::derivatives7(x, y, z, D);
  if (!Dip) {
    if constexpr (P == 3) fmm::m2lOne3nd(D, Mb, L);
    else if constexpr (P == 4) fmm::m2lOne4nd(D, Mb, L);
    else if constexpr (P == 5) fmm::m2lOne5nd(D, Mb, L);
    else if constexpr (P == 6) fmm::m2lOne6nd(D, Mb, L);
    else fmm::m2lOne7nd(D, Mb, L);
  } else {
    if constexpr (P == 3) fmm::m2lOne3(D, Mb, L);
    else if constexpr (P == 4) fmm::m2lOne4(D, Mb, L);
    else if constexpr (P == 5) fmm::m2lOne5(D, Mb, L);
    else if constexpr (P == 6) fmm::m2lOne6(D, Mb, L);
    else fmm::m2lOne7(D, Mb, L);
  }
}

/// The staged kernel's L for one target with `sources` (centres 3 each, multipoles at stride `stride`), emulated.
template <int P, bool Dip, bool LowRegs, bool Direct>
std::vector<double> emulateStaged(const double a[3], const std::vector<double>& centres, const std::vector<double>& M,
                                  int stride) {
  constexpr int NT = termsOf(P), NR = fmm::m2lStagedRegTerms(P, LowRegs), NS = NT - NR;
  constexpr int MS = fmm::kM2LStageStride;
  const unsigned n = unsigned(centres.size() / 3);
  std::vector<double> Ms(fmm::m2lStageDoubles(NT), std::nan(""));
  std::vector<double> Ls(32 * std::max(NS, 1), 0.0), La(32 * std::max(NR, 1), 0.0);
  for (unsigned b0 = 0; b0 < n; b0 += 32u) {
    const unsigned nb = std::min(32u, n - b0);
    std::fill(Ms.begin(), Ms.end(), std::nan(""));  // a term not copied would show
    for (unsigned i = 0; i < nb; ++i)
      for (unsigned lane = 0; lane < 32; ++lane)
        for (unsigned r = 0; r * 32 < unsigned(NT); ++r)
          if (lane + 32 * r < unsigned(NT))
            Ms[fmm::m2lStageAt(lane, i) + 32 * r * MS] = M[std::size_t(b0 + i) * stride + lane + 32 * r];
    for (unsigned lane = 0; lane < nb; ++lane) {
      const double* c = &centres[3 * (b0 + lane)];
      fused<P, MS, NR, Dip, Direct>(a[0] - c[0], a[1] - c[1], a[2] - c[2], Ms.data() + lane, La.data() + NR * lane,
                            Ls.data() + lane);
    }
  }
  std::vector<double> L(NT);
  for (int k = 0; k < NT; ++k) {
    double s[32];
    for (int l = 0; l < 32; ++l) s[l] = k < NR ? La[NR * l + k] : Ls[32 * (k - NR) + l];
    for (int off = 16; off > 0; off >>= 1)  // __shfl_down_sync: lane l gets lane l + off's value (its own past 31)
      for (int l = 0; l < 32; ++l) s[l] += l + off < 32 ? s[l + off] : s[l];
    L[k] = s[0];
  }
  return L;
}

template <int P, bool Dip, bool LowRegs, bool Direct> void caseOf(unsigned sources, std::mt19937_64& rng) {
  constexpr int NT = termsOf(P), stride = (NT + 7) / 8 * 8;
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  const double a[3] = {0.1 * u(rng), 0.1 * u(rng), 0.1 * u(rng)};
  std::vector<double> centres(3 * sources), M(std::size_t(sources) * stride, 0.0);
  for (unsigned s = 0; s < sources; ++s) {
    double r[3], len = 0;
    do {
      for (double& x : r) x = 4.0 * u(rng);
      len = std::sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
    } while (len < 2.6 || len > 4.0);
    for (int d = 0; d < 3; ++d) centres[3 * s + d] = a[d] + r[d];
    for (int q = 0; q < NT; ++q) {
      const int deg = degreeOf(q);
      M[std::size_t(s) * stride + q] = deg == 0 ? 1.0 + 0.5 * u(rng) : deg == 1 && !Dip ? 0.0 : u(rng) * std::pow(0.3, deg);
    }
  }
  const std::vector<double> got = emulateStaged<P, Dip, LowRegs, Direct>(a, centres, M, stride);
  // the CPU's arithmetic per pair, and each term's scale: the sum of its products' sizes (M_q signed by (-1)^|q|
  // cancels the kernel's signs, so positive D and those M give every product's size)
  std::vector<double> ref(NT, 0.0), scale(NT, 0.0), Mabs(stride, 0.0);
  for (unsigned s = 0; s < sources; ++s) {
    const double* c = &centres[3 * s];
    const double x = a[0] - c[0], y = a[1] - c[1], z = a[2] - c[2];
    cpuPair<P, Dip>(x, y, z, &M[std::size_t(s) * stride], ref.data());
    // each derivative's size without cancellation, |j|! / R^(|j| + 1) (a derivative near a zero is rounded to
    // that size's precision, by the CPU and the device alike)
    double D[NT];
    const double R = std::sqrt(x * x + y * y + z * z);
    for (int j = 0; j < NT; ++j) {
      const int dj = degreeOf(j);
      D[j] = std::tgamma(dj + 1.0) / std::pow(R, dj + 1);
    }
    for (int q = 0; q < NT; ++q)
      Mabs[q] = (degreeOf(q) % 2 ? -1.0 : 1.0) * std::fabs(M[std::size_t(s) * stride + q]);
    double S[NT] = {};
    if (!Dip) {
      if constexpr (P == 3) fmm::m2lOne3nd(D, Mabs.data(), S);
      else if constexpr (P == 4) fmm::m2lOne4nd(D, Mabs.data(), S);
      else if constexpr (P == 5) fmm::m2lOne5nd(D, Mabs.data(), S);
      else if constexpr (P == 6) fmm::m2lOne6nd(D, Mabs.data(), S);
      else fmm::m2lOne7nd(D, Mabs.data(), S);
    } else {
      if constexpr (P == 3) fmm::m2lOne3(D, Mabs.data(), S);
      else if constexpr (P == 4) fmm::m2lOne4(D, Mabs.data(), S);
      else if constexpr (P == 5) fmm::m2lOne5(D, Mabs.data(), S);
      else if constexpr (P == 6) fmm::m2lOne6(D, Mabs.data(), S);
      else fmm::m2lOne7(D, Mabs.data(), S);
    }
    for (int k = 0; k < NT; ++k) scale[k] += S[k];
  }
  double worst = 0;
  bool finite = true, positive = true;
  for (int k = 0; k < NT; ++k) {
    finite = finite && std::isfinite(got[k]);
    positive = positive && scale[k] > 0;
    if (scale[k] > 0) worst = std::max(worst, std::fabs(got[k] - ref[k]) / scale[k]);
  }
  char detail[200];
  std::snprintf(detail, sizeof detail, "%u sources, %d of %d L terms in registers: max |dL| / sum of the products' sizes %.2e",
                sources, fmm::m2lStagedRegTerms(P, LowRegs), NT, worst);
  check(std::string(Direct ? "m2l-direct" : "m2l-staged") + (LowRegs ? "-lowregs" : "") + "-p" + std::to_string(P) + (Dip ? "-dip" : "") +
            "-" + std::to_string(sources),
        finite && positive && worst <= 1e-13, detail);
}

template <int P> void order(std::mt19937_64& rng) {
  for (const unsigned n : {1u, 32u, 33u, 75u}) {
    for (const bool lowRegs : {false, true}) {
      if (lowRegs) {
        caseOf<P, false, true, false>(n, rng);
        caseOf<P, true, true, false>(n, rng);
        caseOf<P, false, true, true>(n, rng);
        caseOf<P, true, true, true>(n, rng);
      } else {
        caseOf<P, false, false, false>(n, rng);
        caseOf<P, true, false, false>(n, rng);
        caseOf<P, false, false, true>(n, rng);
        caseOf<P, true, false, true>(n, rng);
      }
    }
  }
}

/// Within a half warp (16 lanes) 64-bit words hit distinct bank pairs iff their indices differ mod 16.
bool conflictFree(const unsigned w[16]) {
  bool seen[16] = {};
  for (int l = 0; l < 16; ++l) {
    if (seen[w[l] % 16]) return false;
    seen[w[l] % 16] = true;
  }
  return true;
}

void layout() {
  bool writes = true, reads = true;
  for (unsigned i = 0; i < 32; ++i)      // the copy of source i: lanes over terms q = lane + 32 r
    for (unsigned r = 0; r < 4; ++r)
      for (unsigned h = 0; h < 2; ++h) {
        unsigned w[16];
        for (unsigned l = 0; l < 16; ++l) w[l] = fmm::m2lStageAt(16 * h + l + 32 * r, i);
        writes = writes && conflictFree(w);
      }
  for (unsigned q = 0; q < 120; ++q)      // lane i reads term q of its source
    for (unsigned h = 0; h < 2; ++h) {
      unsigned w[16];
      for (unsigned l = 0; l < 16; ++l) w[l] = fmm::m2lStageAt(q, 16 * h + l);
      reads = reads && conflictFree(w);
    }
  check("m2l-staged-layout-banks", writes && reads,
        std::string("the copy's writes ") + (writes ? "conflict-free" : "CONFLICT") + ", the lanes' reads " +
            (reads ? "conflict-free" : "CONFLICT"));
  const int bytes7 = (fmm::m2lStageDoubles(120) + 32 * (120 - fmm::m2lStagedRegTerms(7, false))) * 8;
  check("m2l-staged-p7-shared", bytes7 + 1024 <= 233472 / 4,
        std::to_string(bytes7) + " bytes a block at p 7 (+1 KB reserved): 4 blocks in an H100 SM's 228 KB");
}

}  // namespace

int main() {
  std::mt19937_64 rng(20261126);
  layout();
  order<3>(rng);
  order<4>(rng);
  order<5>(rng);
  order<6>(rng);
  order<7>(rng);
  std::printf("%d checks, %d failed\n", tests::gChecks, tests::gFailed);
  return tests::gFailed == 0 ? 0 : 1;
}
