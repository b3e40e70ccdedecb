/// \file fmm_m2l_mma.cpp
/// \brief amrgrav_fmm_m2l_mma: the tensor-core M2L of lattice nodes (cuda/kernel_m2l_mma.cu, fmm/m2l_mma_k.h,
/// fmm/m2l_mma.h) emulated on the host. (1) The plan: every product |k| + |n| <= p of orders 3..7 lies in exactly one
/// lane's element of one piece, and every other element is zero. (2) The kernel's work lane by lane (tiles of 8 and
/// 16 targets from buildM2lMmaTiles, each offset's pieces from m2lMmaPiecesOf, B's loads, each m8n8k4 product as the
/// PTX ISA defines its fragments, the locals written back) on a lattice of nodes whose lists differ from target to
/// target, against the CPU's per-pair M2L (fmm/m2l_kernels.h derivatives and m2lOne with the dipole terms): every
/// term within 1e-13 of the sum of its products' sizes; the pieces (gathered through m2lMmaIndexOf from the offset's
/// staged derivatives, as the gathering kernel does) equal to (-1)^|n| D[k + n] element by element. CTest (label cpu).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "fmm/m2l_mma.h"
#include "fmm/m2l_mma_k.h"
#include "fmm/multi_index.h"
#include "fmm/simd.h"  // before m2l_kernels.h: its templates name bc and vsqrt
#include "fmm/m2l_kernels.h"
#include "tests/check_report.h"

using namespace amrgrav;
using tests::check;

namespace {

template <int P> void derivatives(double x, double y, double z, double* D) {
  if constexpr (P == 3) fmm::derivatives3(x, y, z, D);
  else if constexpr (P == 4) fmm::derivatives4(x, y, z, D);
  else if constexpr (P == 5) fmm::derivatives5(x, y, z, D);
  else if constexpr (P == 6) fmm::derivatives6(x, y, z, D);
  else fmm::derivatives7(x, y, z, D);
}

template <int P> void m2lOne(const double* D, const double* Mb, double* L) {
  if constexpr (P == 3) fmm::m2lOne3(D, Mb, L);
  else if constexpr (P == 4) fmm::m2lOne4(D, Mb, L);
  else if constexpr (P == 5) fmm::m2lOne5(D, Mb, L);
  else if constexpr (P == 6) fmm::m2lOne6(D, Mb, L);
  else fmm::m2lOne7(D, Mb, L);
}

/// (1) Every (k, n) inside the order in exactly one piece's lane, nothing else nonzero.
void planCovers(int p) {
  const int T = fmm::m2lMmaTerms(p);
  std::vector<int> cover(std::size_t(T) * T, 0);
  bool outside = false;
  int pieces = 0;
  for (int s = 0; s < fmm::m2lMmaStepCount(p); ++s)
    for (int r = 0; r < fmm::m2lMmaRows(p, s); ++r, ++pieces)
      for (int lane = 0; lane < 32; ++lane) {
        const int k = fmm::m2lMmaRow(r, lane), n = fmm::m2lMmaCol(s, lane);
        if (fmm::m2lMmaSign(p, s, r, lane) == 0) continue;
        if (k >= T || n >= T || fmm::m2lMmaDegree(k) + fmm::m2lMmaDegree(n) > p) outside = true;
        else ++cover[std::size_t(k) * T + n];
      }
  int missing = 0, twice = 0, products = 0;
  for (int k = 0; k < T; ++k)
    for (int n = 0; n < T; ++n) {
      const bool inside = fmm::m2lMmaDegree(k) + fmm::m2lMmaDegree(n) <= p;
      const int c = cover[std::size_t(k) * T + n];
      products += inside ? 1 : 0;
      missing += inside && c == 0 ? 1 : 0;
      twice += c > 1 ? 1 : 0;
    }
  char detail[200];
  std::snprintf(detail, sizeof detail, "%d products in %d pieces (%.0f%% of their elements), missing %d, twice %d",
                products, pieces, 100.0 * products / (32.0 * pieces), missing, twice);
  check("plan-p" + std::to_string(p), !outside && missing == 0 && twice == 0 && pieces == fmm::m2lMmaPieces(p),
        detail);
}

/// (2) A lattice of n^3 nodes (spacing h), each target's sources at squared offsets 7..14 with a fifth dropped at
/// random (so a tile's targets miss some of its offsets), multipoles with dipole terms (geometric centres).
template <int P> void kernelMatches(int columnTiles, std::mt19937_64& rng) {
  constexpr int T = fmm::m2lMmaTerms(P), stride = (T + 7) / 8 * 8, NP = fmm::m2lMmaPieces(P);
  constexpr int n = 6;
  const double h = 0.37, origin[3] = {0.1, -0.2, 0.05};
  const std::size_t nodes = std::size_t(n) * n * n;
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<int> lat(3 * nodes);
  std::vector<double> centre(3 * nodes), M(nodes * stride, 0.0);
  for (std::size_t i = 0; i < nodes; ++i) {
    const int c[3] = {int(i % n), int(i / n % n), int(i / (n * n))};
    for (int d = 0; d < 3; ++d) {
      lat[3 * i + d] = c[d];
      centre[3 * i + d] = origin[d] + h * c[d];
    }
    for (int q = 0; q < T; ++q) {
      const int deg = fmm::m2lMmaDegree(q);
      M[i * stride + q] = deg == 0 ? 1.0 + 0.5 * u(rng) : u(rng) * std::pow(0.3 * h, deg);
    }
  }
  std::vector<std::uint32_t> start(nodes + 1, 0), source;
  for (std::size_t A = 0; A < nodes; ++A) {
    for (std::size_t B = 0; B < nodes; ++B) {
      int r2 = 0;
      for (int d = 0; d < 3; ++d) r2 += (lat[3 * B + d] - lat[3 * A + d]) * (lat[3 * B + d] - lat[3 * A + d]);
      if (r2 >= 7 && r2 <= 14 && u(rng) > -0.6) source.push_back(std::uint32_t(B));
    }
    start[A + 1] = std::uint32_t(source.size());
  }
  // the targets in the child order's pattern (a permutation: every target in one tile)
  const std::vector<std::uint32_t> targets = fmm::m2lMmaChildOrder(0, nodes);
  const fmm::M2lMmaTiles t =
      fmm::buildM2lMmaTiles(targets.data(), targets.size(), start.data(), source.data(), lat.data(), columnTiles);
  std::vector<double> D(t.offsets.size() * T);
  for (std::size_t o = 0; o < t.offsets.size(); ++o)  // R = target - source
    derivatives<P>(-h * t.offsets[o][0], -h * t.offsets[o][1], -h * t.offsets[o][2], &D[o * T]);
  const std::vector<double> pieces = fmm::m2lMmaPiecesOf(P, D.data(), t.offsets.size());
  // the pieces (gathered through the index table, as the gathering kernel does) against their definition, element
  // by element: (-1)^|n| D[k + n] inside the order, 0 outside, the multi-index sum made here from fmm::MultiIndex
  const fmm::MultiIndex& mi = fmm::MultiIndex::of(P);
  bool gatherSame = pieces.size() == t.offsets.size() * NP * 32;
  for (std::size_t o = 0; o < t.offsets.size() && gatherSame; ++o) {
    int piece = 0;
    for (int s = 0; s < fmm::m2lMmaStepCount(P); ++s)
      for (int r = 0; r < fmm::m2lMmaRowTiles(P); ++r) {
        if (s >= fmm::m2lMmaSteps(P, r)) continue;
        for (int lane = 0; lane < 32; ++lane) {
          const int k = fmm::m2lMmaRow(r, lane), nn = fmm::m2lMmaCol(s, lane);
          double want = 0.0;
          if (k < T && nn < T && fmm::m2lMmaDegree(k) + fmm::m2lMmaDegree(nn) <= P) {
            const auto &a = mi.n[k], &b = mi.n[nn];
            const double d = D[o * T + mi.at(a[0] + b[0], a[1] + b[1], a[2] + b[2])];
            want = fmm::m2lMmaDegree(nn) % 2 ? -d : d;
          }
          gatherSame = gatherSame && pieces[(o * NP + piece) * 32 + lane] == want;
        }
        ++piece;
      }
  }
  // the kernel, lane by lane: each warp (tile) its locals c[j][r][lane][i]
  const int width = 8 * columnTiles;
  std::vector<double> L(nodes * T, 0.0);
  const std::size_t tiles = t.start.size() - 1;
  for (std::size_t tile = 0; tile < tiles; ++tile) {
    std::vector<double> c(std::size_t(columnTiles) * fmm::m2lMmaRowTiles(P) * 64, 0.0);
    for (std::uint32_t q = t.start[tile]; q < t.start[tile + 1]; ++q) {
      int piece = 0;
      for (int s = 0; s < fmm::m2lMmaStepCount(P); ++s) {
        double b[2][32];
        for (int j = 0; j < columnTiles; ++j)
          for (int lane = 0; lane < 32; ++lane) {
            const int nn = 4 * s + fmm::dmmaBRow(lane);
            const std::int32_t src = t.source[std::size_t(width) * q + 8 * j + fmm::dmmaBCol(lane)];
            b[j][lane] = src >= 0 && nn < T ? M[std::size_t(src) * stride + nn] : 0.0;
          }
        for (int r = 0; r < fmm::m2lMmaRowTiles(P); ++r) {
          if (s >= fmm::m2lMmaSteps(P, r)) continue;
          const double* a = &pieces[(std::size_t(t.offset[q]) * NP + piece) * 32];
          ++piece;
          for (int j = 0; j < columnTiles; ++j)
            for (int lane = 0; lane < 32; ++lane)
              for (int i = 0; i < 2; ++i) {
                double sum = c[((std::size_t(j) * fmm::m2lMmaRowTiles(P) + r) * 32 + lane) * 2 + i];
                for (int kk = 0; kk < 4; ++kk)
                  sum += a[fmm::dmmaALane(fmm::dmmaCRow(lane), kk)] * b[j][fmm::dmmaBLane(kk, fmm::dmmaCCol(lane, i))];
                c[((std::size_t(j) * fmm::m2lMmaRowTiles(P) + r) * 32 + lane) * 2 + i] = sum;
              }
        }
      }
    }
    for (int j = 0; j < columnTiles; ++j)
      for (int r = 0; r < fmm::m2lMmaRowTiles(P); ++r)
        for (int lane = 0; lane < 32; ++lane)
          for (int i = 0; i < 2; ++i) {
            const int k = 8 * r + fmm::dmmaCRow(lane);
            const std::int32_t tgt = t.target[std::size_t(width) * tile + 8 * j + fmm::dmmaCCol(lane, i)];
            if (k < T && tgt >= 0)
              L[std::size_t(tgt) * T + k] += c[((std::size_t(j) * fmm::m2lMmaRowTiles(P) + r) * 32 + lane) * 2 + i];
          }
  }

  // the CPU's per-pair M2L, and each term's scale (the sum of its products' sizes, as fmm_m2l_staged.cpp)
  double worst = 0;
  bool finite = true;
  for (std::size_t A = 0; A < nodes; ++A) {
    double ref[T] = {}, scale[T] = {};
    for (std::uint32_t q = start[A]; q < start[A + 1]; ++q) {
      const std::uint32_t B = source[q];
      const double x = centre[3 * A] - centre[3 * B], y = centre[3 * A + 1] - centre[3 * B + 1],
                   z = centre[3 * A + 2] - centre[3 * B + 2];
      double Dp[T], Dabs[T], Mabs[T], S[T] = {};
      derivatives<P>(x, y, z, Dp);
      m2lOne<P>(Dp, &M[std::size_t(B) * stride], ref);
      const double R = std::sqrt(x * x + y * y + z * z);
      for (int j = 0; j < T; ++j) {
        const int dj = fmm::m2lMmaDegree(j);
        Dabs[j] = std::tgamma(dj + 1.0) / std::pow(R, dj + 1);
        Mabs[j] = (dj % 2 ? -1.0 : 1.0) * std::fabs(M[std::size_t(B) * stride + j]);
      }
      m2lOne<P>(Dabs, Mabs, S);
      for (int k = 0; k < T; ++k) scale[k] += S[k];
    }
    for (int k = 0; k < T; ++k) {
      const double got = L[A * T + k];
      finite = finite && std::isfinite(got);
      if (scale[k] > 0) worst = std::max(worst, std::fabs(got - ref[k]) / scale[k]);
      else if (got != 0) worst = INFINITY;
    }
  }
  char detail[240];
  std::snprintf(detail, sizeof detail,
                "%zu targets, %zu pairs, %zu offsets, tiles of %d: %zu slots (%.2f a pair); max |dL| / sum of the "
                "products' sizes %.2e",
                nodes, t.pairs, t.offsets.size(), width, t.slots(), double(t.slots()) / double(t.pairs), worst);
  check("m2l-mma-p" + std::to_string(P) + "-tiles" + std::to_string(width), finite && worst <= 1e-13 &&
            t.pairs == source.size() && gatherSame, std::string(detail) + (gatherSame ? "; gathered pieces the same as (-1)^|n| D[k + n] per element" :
                                                                             "; GATHERED PIECES DIFFER"));
}

template <int P> void order(std::mt19937_64& rng) {
  planCovers(P);
  kernelMatches<P>(1, rng);
  kernelMatches<P>(2, rng);
}

}  // namespace

int main() {
  std::mt19937_64 rng(20261127);
  order<3>(rng);
  order<4>(rng);
  order<5>(rng);
  order<6>(rng);
  order<7>(rng);
  std::printf("%d checks, %d failed\n", tests::gChecks, tests::gFailed);
  return tests::gFailed == 0 ? 0 : 1;
}
