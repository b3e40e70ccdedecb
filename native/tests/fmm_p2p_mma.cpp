/// \file fmm_p2p_mma.cpp
/// \brief amrgrav_fmm_p2p_mma: the GPU near field's tensor-core table step (cuda/kernel_fmm.cu fmmP2PTilesMma over
/// fmm/p2p_mma_k.h) emulated on the host. The lanes' elements of mma.m8n8k4 .f64 are written here a second time,
/// straight from the PTX ISA's fragment tables, as the model of the hardware; the header's functions must agree with
/// them. Then one block's 4 warps x 32 simulated lanes load what the kernel loads (the header's offsets into a random
/// 64 x 64 table and staged 64 x 32 masses), the model multiplies each 8 x 8 x 4 piece, and every lane's sums must be
/// the plain triple loop's sum_s K[s][t] m_b[s] for its (cell, target) within 1e-14 (each of the 64 x 32 once); the
/// kernel's pre-sm_80 path (shuffles from the header's inverse lanes) must give the model's bits. Also the loads'
/// shapes the kernel relies on: A's 16-byte loads aligned and whole 128-byte lines, B's shared loads free of bank
/// conflicts. The accelerations' step (fmmP2PTilesMma<true>: three more products from d K^3) likewise. CTest (label cpu). What only a GPU shows (that the hardware holds what the PTX ISA says) is
/// ctest gpu.fmm's CPU-vs-GPU parity.
#include <cmath>
#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "fmm/p2p_mma_k.h"
#include "tests/check_report.h"

using namespace amrgrav::fmm;
using namespace amrgrav::tests;

namespace {

struct At {
  int row, col;
};

// The PTX ISA's table for mma.m8n8k4 with .f64 (groupID = lane >> 2, threadID_in_group = lane % 4): A 8 x 4 row
// major, one double (row groupID, col threadID_in_group); B 4 x 8 column major, one double (row threadID_in_group,
// col groupID); C and D 8 x 8, two doubles (row groupID, col 2 threadID_in_group + i).
At ptxA(int lane) { return {lane / 4, lane % 4}; }
At ptxB(int lane) { return {lane % 4, lane / 4}; }
At ptxC(int lane, int i) { return {lane / 4, (lane % 4) * 2 + i}; }

/// The hardware model: each lane's (d0, d1) += A B, A and B gathered from the lanes by the PTX table, each D element
/// c + a0 b0 + a1 b1 + a2 b2 + a3 b3 fused in k order (the tensor core's own rounding of the four is not specified;
/// any is within the tolerance below).
void modelMma(double d[32][2], const double a[32], const double b[32]) {
  double A[8][4], B[4][8], D[8][8];
  for (int l = 0; l < 32; ++l) {
    A[ptxA(l).row][ptxA(l).col] = a[l];
    B[ptxB(l).row][ptxB(l).col] = b[l];
    for (int i = 0; i < 2; ++i) D[ptxC(l, i).row][ptxC(l, i).col] = d[l][i];
  }
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c)
      for (int k = 0; k < 4; ++k) D[r][c] = std::fma(A[r][k], B[k][c], D[r][c]);
  for (int l = 0; l < 32; ++l)
    for (int i = 0; i < 2; ++i) d[l][i] = D[ptxC(l, i).row][ptxC(l, i).col];
}

/// The kernel's pre-sm_80 dmma: lane l reads A[row][k] and B[k][col] from the lanes the header names (a shuffle).
void shuffleMma(double d[32][2], const double a[32], const double b[32]) {
  double out[32][2];
  for (int l = 0; l < 32; ++l) {
    const int row = dmmaCRow(l);
    double d0 = d[l][0], d1 = d[l][1];
    for (int k = 0; k < 4; ++k) {
      const double ak = a[dmmaALane(row, k)];
      d0 = std::fma(ak, b[dmmaBLane(k, dmmaCCol(l, 0))], d0);
      d1 = std::fma(ak, b[dmmaBLane(k, dmmaCCol(l, 1))], d1);
    }
    out[l][0] = d0;
    out[l][1] = d1;
  }
  for (int l = 0; l < 32; ++l)
    for (int i = 0; i < 2; ++i) d[l][i] = out[l][i];
}

std::string sci(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2e", v);
  return b;
}

void checkLayout() {
  bool same = true, once = true, inverse = true;
  std::set<int> a, b, c;
  for (int l = 0; l < 32; ++l) {
    same = same && dmmaARow(l) == ptxA(l).row && dmmaACol(l) == ptxA(l).col && dmmaBRow(l) == ptxB(l).row &&
           dmmaBCol(l) == ptxB(l).col;
    for (int i = 0; i < 2; ++i) {
      same = same && dmmaCRow(l) == ptxC(l, i).row && dmmaCCol(l, i) == ptxC(l, i).col;
      c.insert(ptxC(l, i).row * 8 + ptxC(l, i).col);
    }
    a.insert(ptxA(l).row * 4 + ptxA(l).col);
    b.insert(ptxB(l).row * 8 + ptxB(l).col);
    inverse = inverse && dmmaALane(ptxA(l).row, ptxA(l).col) == l && dmmaBLane(ptxB(l).row, ptxB(l).col) == l;
  }
  once = a.size() == 32 && b.size() == 32 && c.size() == 64;
  check("dmma-layout", same && once && inverse,
        "the header's lane elements are the PTX table's (A 8x4, B 4x8, C 8x8: each element in one lane), and "
        "dmmaALane / dmmaBLane invert them");
}

/// The pieces cover the product: every (cell, target) in one lane of one warp, every source in one K step row.
void checkCover() {
  std::vector<int> seen(64 * 32, 0), src(64, 0);
  for (int w = 0; w < kMmaWarps; ++w)
    for (int l = 0; l < 32; ++l)
      for (int m = 0; m < kMmaMTiles; ++m)
        for (int j = 0; j < kMmaNTiles; ++j)
          for (int i = 0; i < 2; ++i) {
            const int t = mmaCell(w, dmmaCRow(l), m), b = mmaTarget(j, dmmaCCol(l, i));
            if (t >= 0 && t < 64 && b >= 0 && b < 32) ++seen[t * 32 + b];
          }
  for (int k = 0; k < kMmaKSteps; ++k)
    for (int q = 0; q < 4; ++q) ++src[mmaSource(k, q)];
  bool ok = true;
  for (int v : seen) ok = ok && v == 1;
  for (int v : src) ok = ok && v == 1;
  check("mma-cover", ok, "4 warps x 32 lanes x (2 x 4 x 2) sums hold each of the 64 cells x 32 targets once; the 16 K "
                         "steps x 4 rows each of the 64 sources once");
}

/// The kernel's loads: A (global, 16 bytes per lane) aligned, the warp's 32 loads whole 128-byte lines; B (shared,
/// 8 bytes per lane) without bank conflicts: each half-warp's 16 doubles in 32 distinct 4-byte banks.
void checkLoads() {
  bool aligned = true, lines = true, banks = true;
  for (int w = 0; w < kMmaWarps; ++w)
    for (int k = 0; k < kMmaKSteps; ++k) {
      std::set<int> words, lineSet;
      for (int l = 0; l < 32; ++l) {
        const int o = mmaAOffset(w, l, k);
        aligned = aligned && o % 2 == 0;
        words.insert(o);
        words.insert(o + 1);
        lineSet.insert(o / 16);
        const int t0 = mmaCell(w, dmmaARow(l), 0), t1 = mmaCell(w, dmmaARow(l), 1);
        aligned = aligned && t1 == t0 + 1 && o == mmaSource(k, dmmaACol(l)) * kMmaTableCells + t0;
      }
      lines = lines && words.size() == 64 && lineSet.size() == 4;
    }
  for (int k = 0; k < kMmaKSteps; ++k)
    for (int j = 0; j < kMmaNTiles; ++j)
      for (int half = 0; half < 2; ++half) {
        std::set<int> bank;
        for (int l = 16 * half; l < 16 * half + 16; ++l) {
          const int word = 2 * mmaBOffset(l, k, j);
          bank.insert(word % 32);
          bank.insert((word + 1) % 32);
        }
        banks = banks && bank.size() == 32;
      }
  check("mma-loads", aligned && lines && banks,
        "A: each lane's two elements one aligned 16-byte load, a warp's 32 loads 4 whole 128-byte lines; B: 16 "
        "lanes' doubles in 32 distinct banks (row stride " + std::to_string(kMassRowStride) + ")");
}

/// One block's table step, emulated lane by lane, against the triple loop.
void checkProduct(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> kd(0.05, 1.0), md(0.5, 1.5);
  std::vector<double> K(64 * 64), ms(64 * kMassRowStride, -1.0);  // -1: padding the kernel must never read
  for (double& k : K) k = kd(rng);
  K[0] = 0.0;  // the self table's zero diagonal
  for (int s = 0; s < 64; ++s)
    for (int b = 0; b < 32; ++b) ms[s * kMassRowStride + b] = b % 11 == 7 ? 0.0 : 1e-3 * md(rng);  // some: no source
  double worst = 0, worstShuffle = 0;
  bool bitwise = true, zeros = true;
  for (int w = 0; w < kMmaWarps; ++w) {
    double acc[kMmaMTiles][kMmaNTiles][32][2] = {}, accS[kMmaMTiles][kMmaNTiles][32][2] = {};
    for (int k = 0; k < kMmaKSteps; ++k) {
      double a[kMmaMTiles][32], b[kMmaNTiles][32];
      for (int l = 0; l < 32; ++l) {
        const int o = mmaAOffset(w, l, k);
        a[0][l] = K[o];
        a[1][l] = K[o + 1];
        for (int j = 0; j < kMmaNTiles; ++j) b[j][l] = ms[mmaBOffset(l, k, j)];
      }
      for (int j = 0; j < kMmaNTiles; ++j)
        for (int m = 0; m < kMmaMTiles; ++m) {
          modelMma(acc[m][j], a[m], b[j]);
          shuffleMma(accS[m][j], a[m], b[j]);
        }
    }
    for (int l = 0; l < 32; ++l)
      for (int m = 0; m < kMmaMTiles; ++m)
        for (int j = 0; j < kMmaNTiles; ++j)
          for (int i = 0; i < 2; ++i) {
            const int t = mmaCell(w, dmmaCRow(l), m), b = mmaTarget(j, dmmaCCol(l, i));
            long double ref = 0;
            for (int s = 0; s < 64; ++s) ref += (long double)K[s * 64 + t] * ms[s * kMassRowStride + b];
            const double got = acc[m][j][l][i], gotS = accS[m][j][l][i];
            if (ref == 0) {
              zeros = zeros && got == 0 && gotS == 0;
              continue;
            }
            worst = std::fmax(worst, double(std::fabs((long double)got - ref) / ref));
            worstShuffle = std::fmax(worstShuffle, double(std::fabs((long double)gotS - ref) / ref));
            if (!std::isfinite(got)) worst = INFINITY;
            bitwise = bitwise && got == gotS;
          }
  }
  check("mma-product-seed" + std::to_string(seed), worst <= 1e-14 && worstShuffle <= 1e-14 && bitwise && zeros,
        "one block's 4 warps x 32 lanes against sum_s K[s][t] m_b[s]: max relative error " + sci(worst) +
            " (<= 1e-14); the pre-sm_80 shuffles " + sci(worstShuffle) + ", " +
            (bitwise ? "the model's bits" : "NOT the model's bits") + "; targets without a source exactly 0");
}

/// A cell's position in a 4^3 leaf from its Morton index, written out here (bits x0 y0 z0 x1 y1 z1, low first) as
/// the reference for the header's leafLatticeAxis.
int mortonAxis(int cell, int axis) {
  int v = 0;
  for (int bit = 0; bit < 2; ++bit) v |= (cell >> (3 * bit + axis) & 1) << bit;
  return v;
}

/// The accelerations' table step (fmmP2PTilesMma<true>): each lane's three more A elements (mmaAccelElement from the
/// K element it loaded), the model's products, against sum_s (p_t - p_s - delta) K[s][t]^3 m_b[s] for every (cell,
/// target) and axis, relative to the sum of the terms' magnitudes (the components cancel).
void checkAccelProduct(std::uint64_t seed, const int leafOffset[3]) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> kd(0.05, 1.0), md(0.5, 1.5);
  std::vector<double> K(64 * 64), ms(64 * kMassRowStride, -1.0);
  for (double& k : K) k = kd(rng);
  K[0] = 0.0;
  for (int s = 0; s < 64; ++s)
    for (int b = 0; b < 32; ++b) ms[s * kMassRowStride + b] = b % 11 == 7 ? 0.0 : 1e-3 * md(rng);
  const int off[3] = {4 * leafOffset[0], 4 * leafOffset[1], 4 * leafOffset[2]};
  bool lattice = true;
  for (int c = 0; c < 64; ++c)
    for (int a = 0; a < 3; ++a) lattice = lattice && leafLatticeAxis(c, a) == mortonAxis(c, a);
  double worst = 0;
  for (int w = 0; w < kMmaWarps; ++w) {
    double acc[3][kMmaMTiles][kMmaNTiles][32][2] = {};
    for (int k = 0; k < kMmaKSteps; ++k) {
      double a[3][kMmaMTiles][32], b[kMmaNTiles][32];
      for (int l = 0; l < 32; ++l) {
        const int o = mmaAOffset(w, l, k);
        for (int d = 0; d < 3; ++d) {
          a[d][0][l] = mmaAccelElement(K[o], w, l, k, 0, d, off);
          a[d][1][l] = mmaAccelElement(K[o + 1], w, l, k, 1, d, off);
        }
        for (int j = 0; j < kMmaNTiles; ++j) b[j][l] = ms[mmaBOffset(l, k, j)];
      }
      for (int d = 0; d < 3; ++d)
        for (int j = 0; j < kMmaNTiles; ++j)
          for (int m = 0; m < kMmaMTiles; ++m) modelMma(acc[d][m][j], a[d][m], b[j]);
    }
    for (int l = 0; l < 32; ++l)
      for (int m = 0; m < kMmaMTiles; ++m)
        for (int j = 0; j < kMmaNTiles; ++j)
          for (int i = 0; i < 2; ++i)
            for (int d = 0; d < 3; ++d) {
              const int t = mmaCell(w, dmmaCRow(l), m), b = mmaTarget(j, dmmaCCol(l, i));
              long double ref = 0, mag = 0;
              for (int s = 0; s < 64; ++s) {
                const long double kst = K[s * 64 + t];
                const long double term =
                    (mortonAxis(t, d) - mortonAxis(s, d) - off[d]) * kst * kst * kst * ms[s * kMassRowStride + b];
                ref += term;
                mag += std::fabs(term);
              }
              const double got = acc[d][m][j][l][i];
              if (!std::isfinite(got)) worst = INFINITY;
              if (mag > 0) worst = std::fmax(worst, double(std::fabs((long double)got - ref) / mag));
              else if (got != 0) worst = INFINITY;
            }
  }
  check("mma-accel-product-seed" + std::to_string(seed),
        lattice && worst <= 1e-14,
        "the accelerations' A elements (d K^3, leaf offset " + std::to_string(leafOffset[0]) + "," +
            std::to_string(leafOffset[1]) + "," + std::to_string(leafOffset[2]) + "), one block's lanes against "
            "sum_s d K[s][t]^3 m_b[s]: max error " + sci(worst) + " of the terms' magnitudes (<= 1e-14); the lattice " +
            (lattice ? "the Morton decode's" : "NOT the Morton decode's"));
}

}  // namespace

int main() {
  checkLayout();
  checkCover();
  checkLoads();
  for (std::uint64_t seed : {1u, 2u, 3u}) checkProduct(seed);
  const int offsets[3][3] = {{0, 0, 0}, {1, -1, 0}, {-2, 1, 3}};
  for (std::uint64_t seed : {4u, 5u, 6u}) checkAccelProduct(seed, offsets[seed - 4]);
  std::printf("%d checks, %d failed\n", gChecks, gFailed);
  return gFailed == 0 ? 0 : 1;
}
