/// \file lattice_eval.h
/// \brief The CPU walk's evaluation of periodic pairs at lattice separations (cpu/ewald_lattice.h), for groups that do
/// not expand their Ewald correction: signed sources' nodes in batches (potentials; with accelerations by rows), and
/// source cells by rows of a lattice block. Internal to cpu/cpu_walk.cpp, which includes it alone; every function
/// equals the per-pair reads of evaluateListsIn there to rounding, and sums each cell's terms in a fixed order (the
/// same for any thread count).
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

#include "cpu/ewald_lattice.h"
#include "cpu/walk_lists.h"
#include "ewald/lookup_k.h"

namespace amrgrav {
namespace {

/// Most cells in a walk group.
constexpr int kMaxGroup = 256;

/// Potentials of signed sources' nodes on the node lattice (cpu/ewald_lattice.h), a batch of nodes at a time: each
/// (cell, node) pair is psi's 10 coefficients at the separation (a cache line of 8 and 2 more, not 10 gathered
/// values) times the node's weights for that octant, summed per coefficient over the nodes and once over the
/// coefficients per cell (each cell's sums in node order, whatever the blocking). The weights are ewaldNodeTerms's
/// potential: m, -p, and (q + S 1)/6 with the off-diagonal quadrupole doubled, times the octant's signs (C even along
/// every axis: gradients odd, the Hessian's off-diagonal terms by the product of two signs). The sum's order is
/// fixed: the same for any thread count.
typedef double V8d __attribute__((vector_size(64)));
typedef double V2d __attribute__((vector_size(16)));
typedef double V4d __attribute__((vector_size(32)));
/// One lattice pair with the weights already loaded.
inline __attribute__((always_inline)) void latticePairW(const LatticeCoef8& d8p, const double* d2p, V8d w8, V2d w2,
                                                        V8d& a, V2d& b) {
  V8d d8;
  V2d d2;
  __builtin_memcpy(&d8, d8p.v, sizeof d8);
  __builtin_memcpy(&d2, d2p, sizeof d2);
  a += d8 * w8;
  b += d2 * w2;
}
/// One lattice pair: psi's 10 coefficients (8 at d8, 2 at d2) times the weights (w8, w2), added to the cell's
/// partial sums.
inline __attribute__((always_inline)) void latticePair(const LatticeCoef8& d8p, const double* d2p,
                                                       const LatticeCoef8& w8p, const double* w2p, V8d& a, V2d& b) {
  V8d d8, w8;
  V2d d2, w2;
  __builtin_memcpy(&d8, d8p.v, sizeof d8);
  __builtin_memcpy(&w8, w8p.v, sizeof w8);
  __builtin_memcpy(&d2, d2p, sizeof d2);
  __builtin_memcpy(&w2, w2p, sizeof w2);
  a += d8 * w8;
  b += d2 * w2;
}
/// A group whose cells fill a block of lattice points kLatticeRun wide along x (the groups of uniform grids, and of a
/// mesh's finest blocks), its cells in the block's order: x fastest, then `by` rows along y and `bz` along z. Such a
/// group reads each source cell's values a row at a time (EwaldCellLattice::rows: one load of kLatticeRun values),
/// and the nodes it sees in one octant by rows of consecutive lattice points (latticeNodePotentials).
struct LatticeBlock {
  int by = 0, bz = 0;
};

/// A lattice block's rows for node (ny, nz) (lattice indices): each row's lattice point, x index kx0 and the row's y
/// and z separations folded and clamped (m1, m2) as the per-cell reads fold them, times `stride` coefficients a point
/// (od), and its weights' index, (w0 + the row's y and z octant bits) times `wScale` (ow).
inline __attribute__((always_inline)) void latticeBlockRows(const std::int32_t* iy, const std::int32_t* iz, int rows,
                                                            int ny, int nz, int kx0, int m1, int m2, int s0, int s1,
                                                            int stride, int w0, int wScale, std::int32_t* od,
                                                            std::int32_t* ow) {
  for (int r = 0; r < rows; ++r) {
    const int i = kLatticeRun * r;
    const int dy = iy[i] - ny, dz = iz[i] - nz;
    int ky = dy > 0 ? dy - 1 : -dy, kz = dz > 0 ? dz - 1 : -dz;
    ky = ky > m1 ? m1 : ky;
    kz = kz > m2 ? m2 : kz;
    od[r] = stride * (kx0 + s0 * (ky + s1 * kz));
    ow[r] = (w0 + ((dy > 0 ? 0 : 2) | (dz > 0 ? 0 : 4))) * wScale;
  }
}

/// Can a lattice block (its rows' first x index ix0) take a node at x index nx by rows: on one side of the block in x
/// (every row's cells in one octant), no row's x point clamped (m0)? Returns the step of the rows' points in x (+1,
/// -1) or 0, and the first cell's x point (kx0).
inline __attribute__((always_inline)) int latticeRowStep(int ix0, int nx, int m0, int& kx0) {
  const int dx0 = ix0 - nx, dxLast = dx0 + kLatticeRun - 1;
  if (!(dx0 > 0 || dxLast <= 0)) return 0;
  const int step = dx0 > 0 ? 1 : -1;
  kx0 = dx0 > 0 ? dx0 - 1 : -dx0;
  const int kxLast = kx0 + step * (kLatticeRun - 1);
  return (kx0 > kxLast ? kx0 : kxLast) <= m0 ? step : 0;
}

/// The group's cells' extent [lo, hi] per axis.
inline __attribute__((always_inline)) void cellsExtent(const double* tx, const double* ty, const double* tz, int nt,
                                                       double* lo, double* hi) {
  lo[0] = hi[0] = tx[0];
  lo[1] = hi[1] = ty[0];
  lo[2] = hi[2] = tz[0];
  for (int i = 1; i < nt; ++i) {
    lo[0] = std::min(lo[0], tx[i]); lo[1] = std::min(lo[1], ty[i]); lo[2] = std::min(lo[2], tz[i]);
    hi[0] = std::max(hi[0], tx[i]); hi[1] = std::max(hi[1], ty[i]); hi[2] = std::max(hi[2], tz[i]);
  }
}

/// The octants (bit d set: negative along axis d) in which some cell of an extent [lo, hi] sees a node: the axes on
/// which some cell lies below it (neg: dx < 0 exactly when t < s) and those on which some cell does not (pos).
struct OctantsSeen {
  int neg, pos;
  bool has(int oct) const { return !((oct & ~neg) | (~oct & ~pos & 7)); }  // each of its axes' signs is seen
  bool one() const { return (neg ^ pos) == 7; }                             // every cell in one octant (neg)
};
inline __attribute__((always_inline)) OctantsSeen octantsSeen(const double* lo, const double* hi, double sx, double sy,
                                                              double sz) {
  return {(lo[0] < sx ? 1 : 0) | (lo[1] < sy ? 2 : 0) | (lo[2] < sz ? 4 : 0),
          (hi[0] >= sx ? 1 : 0) | (hi[1] >= sy ? 2 : 0) | (hi[2] >= sz ? 4 : 0)};
}

template <int Order, bool Dipole>
inline __attribute__((always_inline)) void latticeNodePotentials(const WalkLists& L, const double* tx,
                                                                 const double* ty, const double* tz,
                                                                 const std::int32_t* const* it, int nt, double* p,
                                                                 const LatticeBlock* block) {
  constexpr int kBatch = 64;
  const EwaldNodeLattice& lat = *L.nodeLattice;
  const LatticeCoef8* lc8 = lat.c8.data();
  const double* lc2 = lat.c2.data();
  const int m0 = lat.n[0], m1 = lat.n[1], m2 = lat.n[2], s0 = m0 + 1, s1 = m1 + 1;
  const std::size_t nl = L.latNodes.size();
  L.latW8.resize(kBatch * 8);
  L.latW2.resize(kBatch * 8 * 2);
  L.latW2x4.resize(kBatch * 8);
  LatticeCoef8* W2x4 = L.latW2x4.data();
  L.latCode.resize(2 * std::size_t(kBatch) * nt);
  LatticeCoef8* W8 = L.latW8.data();
  int single[kBatch];
  // a lattice block's node on one side of the block in x: by rows (+1 or -1, the step of the rows' points in x); inside
  // the block's x range: kStraddle + c (cells 0..c see it in the negative x octant); else per cell (0)
  constexpr int kStraddle = 2;
  std::int8_t byRow[kBatch];
  double* W2 = L.latW2.data();
  // per pair (node kk, cell i) at kk * nt + i: the lattice point of psi's coefficients, and the node's weights
  // for the pair's octant (kk * 8 + octant), each split 8 + 2 as the lattice is
  std::int32_t* offD = L.latCode.data();
  std::int32_t* offW = offD + std::size_t(kBatch) * nt;
  V8d acc8[kMaxGroup];
  V2d acc2[kMaxGroup];
  // the rows' last two coefficients, four cells to a vector (cells in order up, in reverse order down)
  V8d accUp[kMaxGroup / kLatticeRun], accDown[kMaxGroup / kLatticeRun];
  for (int i = 0; i < nt; ++i) { acc8[i] = V8d{}; acc2[i] = V2d{}; }
  for (int r = 0; r < nt / kLatticeRun; ++r) { accUp[r] = V8d{}; accDown[r] = V8d{}; }
  double lo[3], hi[3];
  cellsExtent(tx, ty, tz, nt, lo, hi);
  for (std::size_t b0 = 0; b0 < nl; b0 += kBatch) {
    const int nb = int(std::min<std::size_t>(kBatch, nl - b0));
    for (int kk = 0; kk < nb; ++kk) {
      const std::size_t k = L.latNodes[b0 + kk];
      const double sx = L.nx[k], sy = L.ny[k], sz = L.nz[k];
      // the weights (the potential-only list holds half-upper quadrupoles: h = q/2 on the diagonal)
      const double S = L.ns[k], sixth = 1.0 / 6.0;
      double w[10] = {L.nm[k], 0, 0, 0, 0, 0, 0, 0, 0, 0};
      if (Dipole) { w[1] = -L.nd[3 * k]; w[2] = -L.nd[3 * k + 1]; w[3] = -L.nd[3 * k + 2]; }
      if (Order >= 2) {
        w[4] = sixth * (2 * L.q0[k] + S); w[5] = sixth * (2 * L.q1[k]); w[6] = sixth * (2 * L.q2[k]);
        w[7] = sixth * (2 * L.q3[k] + S); w[8] = sixth * (2 * L.q4[k]); w[9] = sixth * (2 * L.q5[k] + S);
      }
      const OctantsSeen seen = octantsSeen(lo, hi, sx, sy, sz);
      // one octant for every cell: one read of the weights serves four pairs below
      single[kk] = seen.one() ? (kk * 8 + seen.neg) : -1;
      for (int oct = 0; oct < 8; ++oct) {
        if (!seen.has(oct)) continue;
        const double ex = oct & 1 ? -1.0 : 1.0, ey = oct & 2 ? -1.0 : 1.0, ez = oct & 4 ? -1.0 : 1.0;
        double* wo = W8[kk * 8 + oct].v;
        double* wt = W2 + 2 * (kk * 8 + oct);
        wo[0] = w[0]; wo[1] = ex * w[1]; wo[2] = ey * w[2]; wo[3] = ez * w[3]; wo[4] = w[4];
        wo[5] = ex * ey * w[5]; wo[6] = ex * ez * w[6]; wo[7] = w[7]; wt[0] = ey * ez * w[8]; wt[1] = w[9];
        double* w4 = W2x4[kk * 8 + oct].v;
        for (int r = 0; r < kLatticeRun; ++r) { w4[2 * r] = wt[0]; w4[2 * r + 1] = wt[1]; }
      }
      // each cell's point: its coefficients' offset in the lattice and its octant. In lattice indices (cells at
      // k dx, the node at (n + 1/2) dx from the cells' origin) the separation is (d - 1/2) dx, d = k - n: the
      // point floor(|d - 1/2|), negative when d <= 0 (as |t - s| / dx and t - s < 0 give them in doubles)
      const int nx = lat.index(sx, 0), ny = lat.index(sy, 1), nz = lat.index(sz, 2);
      const std::int32_t *ix = it[0], *iy = it[1], *iz = it[2];
      std::int32_t* od = offD + std::size_t(kk) * nt;
      std::int32_t* ow = offW + std::size_t(kk) * nt;
      byRow[kk] = 0;
      if (block) {
        // the cells in the block's order (x fastest, rows of kLatticeRun, every row over the same x points). A node on
        // one side of the block in x: along a row the point's x index moves by one, up when the node lies below the
        // row (d > 0), else down, and the row's cells share one octant (y and z are the row's). od holds each row's
        // first point, ow each row's weights; nodes with the block on both sides in x go per cell, below
        const int dx0 = ix[0] - nx, dxLast = dx0 + kLatticeRun - 1;
        if (dx0 <= 0 && dxLast > 0 && m0 >= kLatticeRun) {
          // the node inside the block's x range: cells up to c = -dx0 see it at x points c - i (the negative x
          // octant), the rest at i - c - 1; od holds each row's point at x index 0, ow its positive-x weights
          byRow[kk] = std::int8_t(kStraddle - dx0);
          latticeBlockRows(iy, iz, block->by * block->bz, ny, nz, 0, m1, m2, s0, s1, 1, kk * 8, 1, od, ow);
          continue;
        }
        int kx0 = 0;
        const int step = latticeRowStep(ix[0], nx, m0, kx0);  // 0: a row's point clamped (per cell, below)
        if (step) {
          byRow[kk] = std::int8_t(step);
          latticeBlockRows(iy, iz, block->by * block->bz, ny, nz, kx0, m1, m2, s0, s1, 1, kk * 8 + (step > 0 ? 0 : 1),
                           1, od, ow);
          continue;
        }
      }
#pragma GCC ivdep
      for (int i = 0; i < nt; ++i) {
        const int dx = ix[i] - nx, dy = iy[i] - ny, dz = iz[i] - nz;
        int kx = dx > 0 ? dx - 1 : -dx, ky = dy > 0 ? dy - 1 : -dy, kz = dz > 0 ? dz - 1 : -dz;
        kx = kx > m0 ? m0 : kx;
        ky = ky > m1 ? m1 : ky;
        kz = kz > m2 ? m2 : kz;
        const int oct = (dx > 0 ? 0 : 1) | (dy > 0 ? 0 : 2) | (dz > 0 ? 0 : 4);
        od[i] = kx + s0 * (ky + s1 * kz);
        ow[i] = kk * 8 + oct;
      }
    }
    // four cells at a time, the batch's nodes in turn (each cell's sum in node order, as before): the four cells'
    // sums stay in registers, and a pair is two offset loads, its 80 bytes of psi, its weights and two fused
    // multiply-adds
    int i0 = 0;
    for (; i0 + 4 <= nt; i0 += 4) {
      V8d a0 = acc8[i0], a1 = acc8[i0 + 1], a2 = acc8[i0 + 2], a3 = acc8[i0 + 3];
      V2d b0 = acc2[i0], b1 = acc2[i0 + 1], b2 = acc2[i0 + 2], b3 = acc2[i0 + 3];
      V8d rowUp = accUp[i0 / kLatticeRun], rowDown = accDown[i0 / kLatticeRun];
      for (int kk = 0; kk < nb; ++kk) {
        const int mode = byRow[kk];
        if (mode >= kStraddle) {  // one row of the block about the node in x: two octants' weights, points by cell
          const std::size_t at = std::size_t(kk) * nt + i0 / kLatticeRun;
          const int o = offD[at], so = offW[at];
          V8d wp, wn;
          V2d w2p, w2n;
          __builtin_memcpy(&wp, W8[so].v, sizeof wp);
          __builtin_memcpy(&wn, W8[so + 1].v, sizeof wn);
          __builtin_memcpy(&w2p, W2 + 2 * so, sizeof w2p);
          __builtin_memcpy(&w2n, W2 + 2 * (so + 1), sizeof w2n);
          const LatticeCoef8* q = lc8 + o;
          const double* q2 = lc2 + 2 * o;
          if (mode == kStraddle) {  // x points 0 | 0 1 2
            latticePairW(q[0], q2, wn, w2n, a0, b0);
            latticePairW(q[0], q2, wp, w2p, a1, b1);
            latticePairW(q[1], q2 + 2, wp, w2p, a2, b2);
            latticePairW(q[2], q2 + 4, wp, w2p, a3, b3);
          } else if (mode == kStraddle + 1) {  // 1 0 | 0 1
            latticePairW(q[1], q2 + 2, wn, w2n, a0, b0);
            latticePairW(q[0], q2, wn, w2n, a1, b1);
            latticePairW(q[0], q2, wp, w2p, a2, b2);
            latticePairW(q[1], q2 + 2, wp, w2p, a3, b3);
          } else {  // 2 1 0 | 0
            latticePairW(q[2], q2 + 4, wn, w2n, a0, b0);
            latticePairW(q[1], q2 + 2, wn, w2n, a1, b1);
            latticePairW(q[0], q2, wn, w2n, a2, b2);
            latticePairW(q[0], q2, wp, w2p, a3, b3);
          }
          continue;
        }
        if (mode) {  // one row of the block: four consecutive points (up or down), one octant's weights
          const std::size_t at = std::size_t(kk) * nt + i0 / kLatticeRun;
          const int o = offD[at], so = offW[at];
          V8d w8, w2x4;
          __builtin_memcpy(&w8, W8[so].v, sizeof w8);
          __builtin_memcpy(&w2x4, W2x4[so].v, sizeof w2x4);
          const LatticeCoef8* q = lc8 + o;
          V8d d0, d1, d2, d3, e;
          if (mode > 0) {
            // the four points' last two coefficients lie side by side: one load, cells in order
            __builtin_memcpy(&d0, q[0].v, sizeof d0);
            __builtin_memcpy(&d1, q[1].v, sizeof d1);
            __builtin_memcpy(&d2, q[2].v, sizeof d2);
            __builtin_memcpy(&d3, q[3].v, sizeof d3);
            __builtin_memcpy(&e, lc2 + 2 * o, sizeof e);
            rowUp += e * w2x4;
          } else {
            __builtin_memcpy(&d0, q[0].v, sizeof d0);
            __builtin_memcpy(&d1, q[-1].v, sizeof d1);
            __builtin_memcpy(&d2, q[-2].v, sizeof d2);
            __builtin_memcpy(&d3, q[-3].v, sizeof d3);
            __builtin_memcpy(&e, lc2 + 2 * (o - 3), sizeof e);  // cells in reverse order
            rowDown += e * w2x4;
          }
          a0 += d0 * w8;
          a1 += d1 * w8;
          a2 += d2 * w8;
          a3 += d3 * w8;
          continue;
        }
        const std::int32_t* od = offD + std::size_t(kk) * nt + i0;
        const int so = single[kk];
        if (so >= 0) {
          V8d w8;
          V2d w2;
          __builtin_memcpy(&w8, W8[so].v, sizeof w8);
          __builtin_memcpy(&w2, W2 + 2 * so, sizeof w2);
          latticePairW(lc8[od[0]], lc2 + 2 * od[0], w8, w2, a0, b0);
          latticePairW(lc8[od[1]], lc2 + 2 * od[1], w8, w2, a1, b1);
          latticePairW(lc8[od[2]], lc2 + 2 * od[2], w8, w2, a2, b2);
          latticePairW(lc8[od[3]], lc2 + 2 * od[3], w8, w2, a3, b3);
          continue;
        }
        const std::int32_t* ow = offW + std::size_t(kk) * nt + i0;
        latticePair(lc8[od[0]], lc2 + 2 * od[0], W8[ow[0]], W2 + 2 * ow[0], a0, b0);
        latticePair(lc8[od[1]], lc2 + 2 * od[1], W8[ow[1]], W2 + 2 * ow[1], a1, b1);
        latticePair(lc8[od[2]], lc2 + 2 * od[2], W8[ow[2]], W2 + 2 * ow[2], a2, b2);
        latticePair(lc8[od[3]], lc2 + 2 * od[3], W8[ow[3]], W2 + 2 * ow[3], a3, b3);
      }
      acc8[i0] = a0; acc8[i0 + 1] = a1; acc8[i0 + 2] = a2; acc8[i0 + 3] = a3;
      acc2[i0] = b0; acc2[i0 + 1] = b1; acc2[i0 + 2] = b2; acc2[i0 + 3] = b3;
      accUp[i0 / kLatticeRun] = rowUp;
      accDown[i0 / kLatticeRun] = rowDown;
    }
    for (; i0 < nt; ++i0) {
      V8d a = acc8[i0];
      V2d b = acc2[i0];
      for (int kk = 0; kk < nb; ++kk) {
        const std::int32_t od = offD[std::size_t(kk) * nt + i0], ow = offW[std::size_t(kk) * nt + i0];
        latticePair(lc8[od], lc2 + 2 * od, W8[ow], W2 + 2 * ow, a, b);
      }
      acc8[i0] = a;
      acc2[i0] = b;
    }
  }
  for (int i = 0; i < nt; ++i) {
    const V8d a = acc8[i];
    const V2d c = acc2[i];
    double rows = 0;
    if (i < nt / kLatticeRun * kLatticeRun) {
      const V8d& u = accUp[i / kLatticeRun];
      const V8d& d = accDown[i / kLatticeRun];
      const int j = i % kLatticeRun, jr = kLatticeRun - 1 - j;
      rows = (u[2 * j] + u[2 * j + 1]) + (d[2 * jr] + d[2 * jr + 1]);
    }
    p[i] += ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7])) + (c[0] + c[1]) + rows;
  }
}

/// Potentials and gradients of signed sources' nodes on the node lattice with accelerations, for a lattice block and
/// the nodes it takes by rows (latticeRowStep), a batch at a time: each (cell, node) pair is psi's 20 coefficients
/// (value, gradient, Hessian, third derivatives; read as 8 + 8 + 8, the last 4 weighted 0) against the node's weights
/// for the row's octant, for four outputs: the potential and the three terms ewaldNodeTerms subtracts from the
/// gradient. The weights fold in the octant's signs (psi even along every axis: a derivative of order n along an
/// axis by its sign to the n). A row's four cells read four consecutive points; their sums stay in registers over
/// the batch. Each cell's sums run over the nodes in list order: the same for any thread count.
template <int Order, bool Dipole>
inline __attribute__((always_inline)) void latticeNodeForceRows(const WalkLists& L, const double* tx,
                                                                const double* ty, const double* tz,
                                                                const std::int32_t* const* it, int nt,
                                                                const LatticeBlock& block, double* p, double* fx,
                                                                double* fy, double* fz) {
  constexpr int kBatch = 32, kC = kEwaldCoefs, kW = 12;  // kW lines of weights per octant: 4 outputs x 3
  const EwaldNodeLattice& lat = *L.nodeLattice;
  const double* lc = lat.coef.data();
  const int m0 = lat.n[0], m1 = lat.n[1], m2 = lat.n[2], s0 = m0 + 1, s1 = m1 + 1;
  const int rows = block.by * block.bz;
  const std::size_t nl = L.latNodes.size();
  L.latWF.resize(std::size_t(kBatch) * 8 * kW);
  L.latCode.resize(2 * std::size_t(kBatch) * rows);
  LatticeCoef8* W = L.latWF.data();
  std::int32_t* offD = L.latCode.data();
  std::int32_t* offW = offD + std::size_t(kBatch) * rows;
  int step[kBatch];
  // a coefficient's derivative orders along x, y, z (ewaldLookup's layout: c, g, H xx xy xz yy yz zz, T xxx xxy xxz
  // xyy xyz xzz yyy yyz yzz zzz)
  static constexpr std::uint8_t kOrders[kC][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {2, 0, 0}, {1, 1, 0},
                                                   {1, 0, 1}, {0, 2, 0}, {0, 1, 1}, {0, 0, 2}, {3, 0, 0}, {2, 1, 0},
                                                   {2, 0, 1}, {1, 2, 0}, {1, 1, 1}, {1, 0, 2}, {0, 3, 0}, {0, 2, 1},
                                                   {0, 1, 2}, {0, 0, 3}};
  // each octant's signs per coefficient (24: the last 4 padding), once per thread
  static thread_local const auto signs = [] {
    std::array<std::array<LatticeCoef8, 3>, 8> t{};
    for (int oct = 0; oct < 8; ++oct)
      for (int e = 0; e < 24; ++e) {
        const int n = e < kC ? (oct & 1 ? kOrders[e][0] : 0) + (oct & 2 ? kOrders[e][1] : 0) +
                                   (oct & 4 ? kOrders[e][2] : 0)
                             : 0;
        t[oct][e / 8].v[e % 8] = n & 1 ? -1.0 : 1.0;
      }
    return t;
  }();
  double lo[3], hi[3];
  cellsExtent(tx, ty, tz, nt, lo, hi);
  const std::int32_t *ix = it[0], *iy = it[1], *iz = it[2];
  for (std::size_t b0 = 0; b0 < nl; b0 += kBatch) {
    const int nb = int(std::min<std::size_t>(kBatch, nl - b0));
    for (int kk = 0; kk < nb; ++kk) {
      const std::size_t k = L.latNodes[b0 + kk];
      const double sx = L.nx[k], sy = L.ny[k], sz = L.nz[k], m = L.nm[k];
      // ewaldNodeTerms's terms in the positive octant (the accelerations' lists hold plain quadrupoles): the
      // potential, and -a for the gradient (gx -= a there)
      double w[4][24] = {};
      w[0][0] = m;
      w[1][1] = -m; w[2][2] = -m; w[3][3] = -m;
      if (Dipole) {
        const double d0 = L.nd[3 * k], d1 = L.nd[3 * k + 1], d2 = L.nd[3 * k + 2];
        w[0][1] = -d0; w[0][2] = -d1; w[0][3] = -d2;
        w[1][4] = d0; w[1][5] = d1; w[1][6] = d2;  // grad(-p.grad C) = -H p
        w[2][5] = d0; w[2][7] = d1; w[2][8] = d2;
        w[3][6] = d0; w[3][8] = d1; w[3][9] = d2;
      }
      if (Order >= 2) {
        const double sixth = 1.0 / 6.0, S6 = L.ns[k] / 6.0;
        const double a = sixth * L.q0[k] + S6, bq = sixth * L.q3[k] + S6, c = sixth * L.q5[k] + S6;
        const double xy = sixth * (2 * L.q1[k]), xz = sixth * (2 * L.q2[k]), yz = sixth * (2 * L.q4[k]);
        w[0][4] = a; w[0][5] = xy; w[0][6] = xz; w[0][7] = bq; w[0][8] = yz; w[0][9] = c;
        // the gradient of (1/6) Q:H + (S/6) lap C: T xxx xyy xzz with a, bq, c and T xxy xxz xyz with the
        // off-diagonal terms for x, and so on
        w[1][10] = -a; w[1][13] = -bq; w[1][15] = -c; w[1][11] = -xy; w[1][12] = -xz; w[1][14] = -yz;
        w[2][11] = -a; w[2][16] = -bq; w[2][18] = -c; w[2][13] = -xy; w[2][14] = -xz; w[2][17] = -yz;
        w[3][12] = -a; w[3][17] = -bq; w[3][19] = -c; w[3][14] = -xy; w[3][15] = -xz; w[3][18] = -yz;
      }
      const OctantsSeen seen = octantsSeen(lo, hi, sx, sy, sz);
      V8d wv[kW];
      for (int e = 0; e < kW; ++e) __builtin_memcpy(&wv[e], &w[e / 3][8 * (e % 3)], sizeof(V8d));
      for (int oct = 0; oct < 8; ++oct) {
        if (!seen.has(oct)) continue;
        LatticeCoef8* f = W + (kk * 8 + oct) * kW;
        for (int e = 0; e < kW; ++e) {
          V8d sg;
          __builtin_memcpy(&sg, signs[oct][e % 3].v, sizeof sg);
          const V8d v = wv[e] * sg;
          __builtin_memcpy(f[e].v, &v, sizeof v);
        }
      }
      // each row's first point (its x point kx0, moving by step along the row) and weights
      const int nx = lat.index(sx, 0), ny = lat.index(sy, 1), nz = lat.index(sz, 2);
      int kx0 = 0;
      step[kk] = latticeRowStep(ix[0], nx, m0, kx0);
      latticeBlockRows(iy, iz, rows, ny, nz, kx0, m1, m2, s0, s1, kC, kk * 8 + (step[kk] > 0 ? 0 : 1), kW,
                       offD + std::size_t(kk) * rows, offW + std::size_t(kk) * rows);
    }
    for (int r = 0; r < rows; ++r) {
      V8d a[kLatticeRun][4] = {};
      for (int kk = 0; kk < nb; ++kk) {
        const double* q = lc + offD[std::size_t(kk) * rows + r];
        const LatticeCoef8* f = W + offW[std::size_t(kk) * rows + r];
        const int d = step[kk] * kC;
        V8d w[kW];
        for (int e = 0; e < kW; ++e) __builtin_memcpy(&w[e], f[e].v, sizeof(V8d));
#pragma GCC unroll 4
        for (int t = 0; t < kLatticeRun; ++t) {
          const double* c = q + t * d;
          V8d c0, c1, c2;
          __builtin_memcpy(&c0, c, sizeof c0);
          __builtin_memcpy(&c1, c + 8, sizeof c1);
          __builtin_memcpy(&c2, c + 16, sizeof c2);  // 4 past the point's 20: weighted 0
          // one fused multiply-add per product (a sum of products first would cost a multiply and an add more)
          a[t][0] += c0 * w[0];
          a[t][0] += c1 * w[1];
          a[t][1] += c0 * w[3];
          a[t][1] += c1 * w[4];
          a[t][2] += c0 * w[6];
          a[t][2] += c1 * w[7];
          a[t][2] += c2 * w[8];
          a[t][3] += c0 * w[9];
          a[t][3] += c1 * w[10];
          a[t][3] += c2 * w[11];
        }
      }
      for (int t = 0; t < kLatticeRun; ++t) {
        const int i = kLatticeRun * r + t;
        double out[4];
        for (int o = 0; o < 4; ++o) {
          const V8d v = a[t][o];
          out[o] = ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
        }
        p[i] += out[0];
        fx[i] += out[1];
        fy[i] += out[2];
        fz[i] += out[3];
      }
    }
  }
}

/// Each axis's period in lattice spacings, a large number on isolated axes (no fold).
inline __attribute__((always_inline)) void latticePeriods(const EwaldCellLattice& lat, int* F) {
  for (int d = 0; d < 3; ++d) F[d] = lat.period[d] > 0 ? lat.period[d] : 1 << 30;
}

/// Source cell k's lattice point (3 indices) when it lies on the lattice within a period (F, latticePeriods) of
/// every cell of the block [ilo, ihi] along each periodic axis (the rows' condition), else null.
inline __attribute__((always_inline)) const std::int32_t* rowSource(const EwaldCellLattice& lat, const WalkLists& L,
                                                                    std::size_t k, const int* ilo, const int* ihi,
                                                                    const int* F) {
  const std::int32_t* j = L.sourceLattice + 3 * std::size_t(L.cSource[k]);
  if (j[0] == kOffLattice) return nullptr;
  for (int d = 0; d < 3; ++d)
    if (lat.period[d] > 0 && !(ihi[d] - j[d] < F[d] && j[d] - ilo[d] < F[d])) return nullptr;
  return j;
}

/// A block's rows' first values along y or z for one source cell: row a's separation q = q0 + a, folded to its nearest
/// image and clamped as the per-pair reads fold it (`fold`, EwaldCellLattice::fold or accelFold, on a periodic axis;
/// else |q| clamped to m, times `stride`), plus `base`. Signed: also that image's sign times the mass sm (`sign` on a
/// periodic axis), which the gradient along the axis takes.
template <bool Signed>
inline __attribute__((always_inline)) void foldedRowOffsets(int q0, int n, const std::int32_t* fold, const double* sign,
                                                            int stride, int m, int base, double sm, int* off,
                                                            double* msign) {
  for (int a = 0; a < n; ++a) {
    const int q = q0 + a;
    if (fold) {
      off[a] = base + fold[q];
      if (Signed) msign[a] = sm * sign[q];
      continue;
    }
    const int aq = q < 0 ? -q : q;
    off[a] = base + stride * (aq > m ? m : aq);
    if (Signed) msign[a] = q < 0 ? -sm : sm;
  }
}

/// The potentials of the source cells k, k + 1, ... of the lists that lie on the lattice within a period of every
/// cell of the group (a lattice block, cells in its order, lattice indices [ilo, ihi]), up to the first that does
/// not: returns where it stopped. Per source, the same lattice point as the per-pair reads (evaluateListsIn): on y
/// and z the separation folded to the nearest image and clamped (tabled on periodic axes, EwaldCellLattice::fold),
/// and x unfolded (EwaldCellLattice::rows), so that every row of kLatticeRun cells reads its values with one load.
/// Each cell's sum runs over the sources in the same order as the per-pair reads', each term a product and a sum
/// (the per-pair loop fuses them where the processor can: the two agree to rounding).
/// BY, BZ: the block's rows along y and z when fixed (its sums then stay in registers), else 0.
template <int BY, int BZ>
inline __attribute__((always_inline)) std::size_t latticeRowsOf(const EwaldCellLattice& lat, const WalkLists& L,
                                                                const LatticeBlock& block, const int* ilo,
                                                                const int* ihi, std::size_t k, double* p) {
  const int by = BY ? BY : block.by, bz = BZ ? BZ : block.bz, rows = by * bz;
  const double* table = lat.rows.data();
  const int rs = lat.rowStride, s1 = lat.n[1] + 1, m1 = lat.n[1], m2 = lat.n[2];
  int F[3];
  latticePeriods(lat, F);
  V4d acc[BY && BZ ? BY * BZ : 1];
  if (BY && BZ)
    for (int r = 0; r < rows; ++r) __builtin_memcpy(&acc[r], p + kLatticeRun * r, sizeof(V4d));
  const std::size_t nc = L.cm.size();
  const std::int32_t* const fy = lat.fold[1].empty() ? nullptr : lat.fold[1].data() + F[1];
  const std::int32_t* const fz = lat.fold[2].empty() ? nullptr : lat.fold[2].data() + F[2];
  for (; k < nc; ++k) {
    const std::int32_t* j = rowSource(lat, L, k, ilo, ihi, F);
    if (!j) break;
    const double sm = L.cm[k];
    const int dx = ilo[0] - j[0], ux0 = dx < 0 ? dx + F[0] : dx;  // |dx| < F[0]: in range
    // each row's first value: the same fold and clamp as the per-pair reads (tabled on periodic axes)
    int oy[BY ? BY : kMaxGroup / kLatticeRun], oz[BZ ? BZ : kMaxGroup / kLatticeRun];
    foldedRowOffsets<false>(ilo[1] - j[1], by, fy, nullptr, rs, m1, ux0, sm, oy, nullptr);
    foldedRowOffsets<false>(ilo[2] - j[2], bz, fz, nullptr, rs * s1, m2, 0, sm, oz, nullptr);
    // psi = 1/r + C: the pairs and their images
    if (BY && BZ) {
      const V4d m = {sm, sm, sm, sm};
#pragma GCC unroll 4
      for (int z = 0; z < BZ; ++z)
#pragma GCC unroll 4
        for (int y = 0; y < BY; ++y) {
          V4d r;
          __builtin_memcpy(&r, table + oy[y] + oz[z], sizeof r);
          acc[y + BY * z] += m * r;
        }
    } else {
      for (int z = 0; z < bz; ++z)
        for (int y = 0; y < by; ++y) {
          const double* r = table + oy[y] + oz[z];
          double* q = p + kLatticeRun * (y + by * z);
          for (int t = 0; t < kLatticeRun; ++t) q[t] += sm * r[t];
        }
    }
  }
  if (BY && BZ)
    for (int r = 0; r < rows; ++r) __builtin_memcpy(p + kLatticeRun * r, &acc[r], sizeof(V4d));
  return k;
}
inline __attribute__((always_inline)) std::size_t latticeRows(const EwaldCellLattice& lat, const WalkLists& L,
                                                              const LatticeBlock& block, const int* ilo,
                                                              const int* ihi, std::size_t k, double* p) {
  if (block.by == 4 && block.bz == 4) return latticeRowsOf<4, 4>(lat, L, block, ilo, ihi, k, p);  // groups of 64
  if (block.by == 4 && block.bz == 2) return latticeRowsOf<4, 2>(lat, L, block, ilo, ihi, k, p);  // groups of 32
  return latticeRowsOf<0, 0>(lat, L, block, ilo, ihi, k, p);
}

/// With accelerations: the potentials and gradients of the source cells k, k + 1, ... of the lists that lie on the
/// lattice within a period of every cell of the group (as latticeRowsOf), up to the first that does not: returns
/// where it stopped. Each row of the lattice block reads kLatticeRun consecutive values of psi and of its gradient
/// (EwaldCellLattice::accelRows, x the separation itself with gx's nearest-image sign; y and z folded, their signs
/// tabled on periodic axes): the same lattice points and signs as the per-pair reads (evaluateListsIn), whose sums
/// these equal to rounding, in the same order per cell.
inline __attribute__((always_inline)) std::size_t latticeRowsAccel(const EwaldCellLattice& lat, const WalkLists& L,
                                                                   const LatticeBlock& block, const int* ilo,
                                                                   const int* ihi, std::size_t k, double* p,
                                                                   double* fx, double* fy, double* fz) {
  const int by = block.by, bz = block.bz;
  const double *tp = lat.accelRows[0].data(), *tgx = lat.accelRows[1].data(), *tgy = lat.accelRows[2].data(),
               *tgz = lat.accelRows[3].data();
  const int rs = lat.accelRowStride, s1 = lat.n[1] + 1, m1 = lat.n[1], m2 = lat.n[2];
  int F[3];
  latticePeriods(lat, F);
  const std::int32_t* const foy = lat.accelFold[1].empty() ? nullptr : lat.accelFold[1].data() + F[1];
  const std::int32_t* const foz = lat.accelFold[2].empty() ? nullptr : lat.accelFold[2].data() + F[2];
  const double* const sgy = lat.accelSign[1].empty() ? nullptr : lat.accelSign[1].data() + F[1];
  const double* const sgz = lat.accelSign[2].empty() ? nullptr : lat.accelSign[2].data() + F[2];
  const std::size_t nc = L.cm.size();
  for (; k < nc; ++k) {
    const std::int32_t* j = rowSource(lat, L, k, ilo, ihi, F);
    if (!j) break;
    const double sm = L.cm[k];
    const int d0 = ilo[0] - j[0] + lat.period[0];  // each row's first separation in x, + the period
    // each row's first values and the nearest images' signs along y and z (times the mass)
    int oy[kMaxGroup / kLatticeRun], oz[kMaxGroup / kLatticeRun];
    double my[kMaxGroup / kLatticeRun], mz[kMaxGroup / kLatticeRun];
    foldedRowOffsets<true>(ilo[1] - j[1], by, foy, sgy, rs, m1, d0, sm, oy, my);
    foldedRowOffsets<true>(ilo[2] - j[2], bz, foz, sgz, rs * s1, m2, 0, sm, oz, mz);
    const V4d m = {sm, sm, sm, sm};
    for (int z = 0; z < bz; ++z) {
      const V4d wz = {mz[z], mz[z], mz[z], mz[z]};
      for (int y = 0; y < by; ++y) {
        const int o = oy[y] + oz[z], r = kLatticeRun * (y + by * z);
        const V4d wy = {my[y], my[y], my[y], my[y]};
        V4d vp, vx, vy, vz, ap, ax, ay, az;
        __builtin_memcpy(&vp, tp + o, sizeof vp);
        __builtin_memcpy(&vx, tgx + o, sizeof vx);
        __builtin_memcpy(&vy, tgy + o, sizeof vy);
        __builtin_memcpy(&vz, tgz + o, sizeof vz);
        __builtin_memcpy(&ap, p + r, sizeof ap);
        __builtin_memcpy(&ax, fx + r, sizeof ax);
        __builtin_memcpy(&ay, fy + r, sizeof ay);
        __builtin_memcpy(&az, fz + r, sizeof az);
        ap += m * vp;  // psi = 1/r + C: the pairs and their images
        ax -= m * vx;
        ay -= wy * vy;
        az -= wz * vz;
        __builtin_memcpy(p + r, &ap, sizeof ap);
        __builtin_memcpy(fx + r, &ax, sizeof ax);
        __builtin_memcpy(fy + r, &ay, sizeof ay);
        __builtin_memcpy(fz + r, &az, sizeof az);
      }
    }
  }
  return k;
}

}  // namespace
}  // namespace amrgrav
