/// \file cpu_walk.cpp
/// \brief Group walk of the CPU backend. Loops run sources outer, the group's cells inner: the inner loop
/// vectorises without reassociating any sum, so each cell's sum has a fixed order (bitwise deterministic for any
/// thread count) and matches the scalar definition.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cassert>
#include <vector>

#include "ewald/expansion_k.h"
#include "ewald/walk_setup.h"
#include "physics/image_k.h"
#include "physics/interact_k.h"
#include "cpu/cpu_walk.h"
#include "cpu/ewald_lattice.h"
#include "cpu/walk_lists.h"
#include "core/thread_pool.h"

namespace amrgrav {
namespace {

constexpr int kMaxGroup = 256;

/// The expansion's coefficients a (ewald/expansion_k.h) of a group's lists: accepted nodes that add their
/// own correction, hoisted nodes, and cells that add their own (seen through their image nearest the centre).
/// One table lookup per entry that adds a correction, kLanes such entries at a time (the loop over lanes
/// vectorises: gathered table loads, contiguous partial sums). The partial
/// sums are added in lane order at the end: a fixed order, so the result is the same for any thread count.
constexpr int kLanes = 8;
struct LaneSums {
  double* p;
  int lane;
  double& operator[](int e) const { return p[e * kLanes + lane]; }
};
template <int Order, bool Accel, bool Dipole>
inline __attribute__((always_inline)) void ewaldExpansionTerms(const WalkLists& L, const double* centre,
                                                               double* a) {
  alignas(64) double part[kEwaldLocalCoefs * kLanes] = {};
  const EwaldTableView v = L.ewald->view;  // a local copy: provably not aliased by the sums
  const double cx = centre[0], cy = centre[1], cz = centre[2];
  std::uint32_t idx[kLanes];
  // accepted nodes that add their own correction (their com already at the image nearest the group)
  const std::size_t nn = L.nm.size();
  for (std::size_t k0 = 0; k0 < nn;) {
    int lanes = 0;
    for (; k0 < nn && lanes < kLanes; ++k0) if (L.nCorrect[k0]) idx[lanes++] = std::uint32_t(k0);
#pragma GCC ivdep
    for (int l = 0; l < lanes; ++l) {
      const std::size_t k = idx[l];
      // the correction takes the plain quadrupole; the potential-only list holds half-upper coefficients (exact x2)
      const double qf[6] = {Accel ? L.q0[k] : 2 * L.q0[k], L.q1[k], L.q2[k], Accel ? L.q3[k] : 2 * L.q3[k], L.q4[k],
                            Accel ? L.q5[k] : 2 * L.q5[k]};
      ewaldLocalAddNode<Order>(v, cx - L.nx[k], cy - L.ny[k], cz - L.nz[k], L.nm[k], qf, L.ns[k], LaneSums{part, l},
                               Dipole ? &L.nd[3 * k] : nullptr);
    }
  }
  // hoisted nodes: the correction of their subtrees
  const std::size_t nh = L.hm.size();
  for (std::size_t k0 = 0; k0 < nh; k0 += kLanes) {
    const int lanes = int(std::min<std::size_t>(kLanes, nh - k0));
#pragma GCC ivdep
    for (int l = 0; l < lanes; ++l) {
      const std::size_t k = k0 + l;
      ewaldLocalAddNode<Order>(v, cx - L.hx[k], cy - L.hy[k], cz - L.hz[k], L.hm[k], &L.hq[6 * k], L.hs[k],
                               LaneSums{part, l}, Dipole ? &L.hd[3 * k] : nullptr);
    }
  }
  // cells that add their own correction, through their image nearest the centre (a whole number of periods; none
  // for the group's own cells)
  const std::size_t nc = L.cm.size();
  for (std::size_t k0 = 0; k0 < nc;) {
    int lanes = 0;
    for (; k0 < nc && lanes < kLanes; ++k0) if (L.cCorrect[k0]) idx[lanes++] = std::uint32_t(k0);
#pragma GCC ivdep
    for (int l = 0; l < lanes; ++l) {
      const std::size_t k = idx[l];
      const double sx = imageNearCentre(L.cx[k], cx, v.period[0], v.invPeriod[0]);
      const double sy = imageNearCentre(L.cy[k], cy, v.period[1], v.invPeriod[1]);
      const double sz = imageNearCentre(L.cz[k], cz, v.period[2], v.invPeriod[2]);
      ewaldLocalAddCell(v, cx - sx, cy - sy, cz - sz, L.cm[k], LaneSums{part, l});
    }
  }
  for (int e = 0; e < kEwaldLocalCoefs; ++e) {
    double t = 0;
    for (int l = 0; l < kLanes; ++l) t += part[e * kLanes + l];
    a[e] = t;
  }
}

/// Potentials of signed sources' nodes on the node lattice (cpu/ewald_lattice.h), a batch of nodes at a time: each
/// (cell, node) pair is psi's 10 coefficients at the separation (a cache line of 8 and 2 more, not 10 gathered
/// values) times the node's weights for that octant, summed per coefficient over the nodes and once over the
/// coefficients per cell (each cell's sums in node order, whatever the blocking). The weights are ewaldNodeTerms's potential: m, -p, and (q + S 1)/6 with the off-diagonal
/// quadrupole doubled, times the octant's signs (C even along every axis: gradients odd, the Hessian's off-diagonal
/// terms by the product of two signs). The sum's order is fixed: the same for any thread count.
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
  double lo[3] = {tx[0], ty[0], tz[0]}, hi[3] = {tx[0], ty[0], tz[0]};  // the cells' extent
  for (int i = 1; i < nt; ++i) {
    lo[0] = std::min(lo[0], tx[i]); lo[1] = std::min(lo[1], ty[i]); lo[2] = std::min(lo[2], tz[i]);
    hi[0] = std::max(hi[0], tx[i]); hi[1] = std::max(hi[1], ty[i]); hi[2] = std::max(hi[2], tz[i]);
  }
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
      // the octants some cell of the group sees the node in (dx < 0 exactly when tx < sx): far nodes have one
      const int neg = (lo[0] < sx ? 1 : 0) | (lo[1] < sy ? 2 : 0) | (lo[2] < sz ? 4 : 0);
      const int pos = (hi[0] >= sx ? 1 : 0) | (hi[1] >= sy ? 2 : 0) | (hi[2] >= sz ? 4 : 0);
      // one octant for every cell (neg and pos complementary): one read of the weights serves four pairs below
      single[kk] = (neg ^ pos) == 7 ? (kk * 8 + neg) : -1;
      for (int oct = 0; oct < 8; ++oct) {
        if ((oct & ~neg) | (~oct & ~pos & 7)) continue;  // an axis's sign no cell has
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
          const int rows = block->by * block->bz;
          for (int r = 0; r < rows; ++r) {
            const int i = kLatticeRun * r;
            const int dy = iy[i] - ny, dz = iz[i] - nz;
            int ky = dy > 0 ? dy - 1 : -dy, kz = dz > 0 ? dz - 1 : -dz;
            ky = ky > m1 ? m1 : ky;
            kz = kz > m2 ? m2 : kz;
            od[r] = s0 * (ky + s1 * kz);
            ow[r] = kk * 8 + ((dy > 0 ? 0 : 2) | (dz > 0 ? 0 : 4));
          }
          continue;
        }
        if (dx0 > 0 || dxLast <= 0) {
          const int step = dx0 > 0 ? 1 : -1;
          const int kx0 = dx0 > 0 ? dx0 - 1 : -dx0, kxLast = kx0 + step * (kLatticeRun - 1);
          if ((kx0 > kxLast ? kx0 : kxLast) <= m0) {  // no point of the row clamped (else per cell, below)
            byRow[kk] = std::int8_t(step);
            const int rows = block->by * block->bz, octX = dx0 > 0 ? 0 : 1;
            for (int r = 0; r < rows; ++r) {
              const int i = kLatticeRun * r;
              const int dy = iy[i] - ny, dz = iz[i] - nz;
              int ky = dy > 0 ? dy - 1 : -dy, kz = dz > 0 ? dz - 1 : -dz;
              ky = ky > m1 ? m1 : ky;
              kz = kz > m2 ? m2 : kz;
              od[r] = kx0 + s0 * (ky + s1 * kz);
              ow[r] = kk * 8 + (octX | (dy > 0 ? 0 : 2) | (dz > 0 ? 0 : 4));
            }
            continue;
          }
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
  for (int d = 0; d < 3; ++d) F[d] = lat.period[d] > 0 ? lat.period[d] : 1 << 30;
  V4d acc[BY && BZ ? BY * BZ : 1];
  if (BY && BZ)
    for (int r = 0; r < rows; ++r) __builtin_memcpy(&acc[r], p + kLatticeRun * r, sizeof(V4d));
  const std::size_t nc = L.cm.size();
  const std::int32_t* const fy = lat.fold[1].empty() ? nullptr : lat.fold[1].data() + F[1];
  const std::int32_t* const fz = lat.fold[2].empty() ? nullptr : lat.fold[2].data() + F[2];
  for (; k < nc; ++k) {
    const std::int32_t* j = L.sourceLattice + 3 * std::size_t(L.cSource[k]);  // the source cell's lattice point
    const double sm = L.cm[k];
    if (j[0] == kOffLattice) break;
    bool inRange = true;
    for (int d = 0; d < 3; ++d)
      if (lat.period[d] > 0) inRange = inRange && ihi[d] - j[d] < F[d] && j[d] - ilo[d] < F[d];
    if (!inRange) break;
    const int dx = ilo[0] - j[0], ux0 = dx < 0 ? dx + F[0] : dx;  // |dx| < F[0]: in range
    // each row's first value: the same fold and clamp as the pairs' below (tabled on periodic axes)
    int oy[BY ? BY : kMaxGroup / kLatticeRun], oz[BZ ? BZ : kMaxGroup / kLatticeRun];
    for (int a = 0; a < by; ++a) {
      int q = ilo[1] + a - j[1];
      if (fy) {
        oy[a] = ux0 + fy[q];
        continue;
      }
      q = q < 0 ? -q : q;
      oy[a] = ux0 + rs * (q > m1 ? m1 : q);
    }
    for (int a = 0; a < bz; ++a) {
      int q = ilo[2] + a - j[2];
      if (fz) {
        oz[a] = fz[q];
        continue;
      }
      q = q < 0 ? -q : q;
      oz[a] = rs * s1 * (q > m2 ? m2 : q);
    }
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

/// Periodic walks: with `centre` (the group's, ewald/expansion_k.h) the correction is one expansion about it,
/// summed once per source and evaluated once per cell, and source cells are seen through their image nearest the
/// centre; without, every (cell, source) pair looks the table up through its own nearest image. Dipole: the nodes
/// carry dipoles (signed sources, periodic walks only). block: the group is a lattice block, its cells in the
/// block's order (evaluateLists).
template <int Order, bool Accel, bool Periodic, bool Dipole>
inline __attribute__((always_inline)) void evaluateListsIn(const WalkLists& L, const double* tx, const double* ty,
                                                           const double* tz, int nt, const double* centre,
                                                           double* phi, double* gx, double* gy, double* gz,
                                                           const LatticeBlock* block) {
  double p[kMaxGroup], fx[kMaxGroup], fy[kMaxGroup], fz[kMaxGroup], qx[kMaxGroup], qy[kMaxGroup], qz[kMaxGroup];
  for (int i = 0; i < nt; ++i) { p[i] = 0; fx[i] = 0; fy[i] = 0; fz[i] = 0; qx[i] = 0; qy[i] = 0; qz[i] = 0; }
  const bool expand = Periodic && centre;
  double a[kEwaldLocalCoefs] = {};  // the expansion's coefficients (expand only)
  // potentials with every cell of the group on the lattice: the cells' lattice indices, for integer separations
  alignas(64) std::int32_t ix[kMaxGroup], iy[kMaxGroup], iz[kMaxGroup];
  const std::int32_t* const it[3] = {ix, iy, iz};
  int ilo[3] = {0, 0, 0}, ihi[3] = {0, 0, 0};
  const bool intTargets = Periodic && !Accel && !expand && L.latticeTargets;
  if (intTargets) {
    const EwaldCellLattice& lat = *L.lattice;
    for (int i = 0; i < nt; ++i) { ix[i] = lat.index(tx[i], 0); iy[i] = lat.index(ty[i], 1); iz[i] = lat.index(tz[i], 2); }
    for (int d = 0; d < 3; ++d) {
      ilo[d] = *std::min_element(it[d], it[d] + nt);
      ihi[d] = *std::max_element(it[d], it[d] + nt);
    }
  }
  const std::size_t nn = L.nm.size();
  L.latNodes.clear();
  for (std::size_t k = 0; k < nn; ++k) {
    const double sx = L.nx[k], sy = L.ny[k], sz = L.nz[k], sm = L.nm[k];
    const double q[6] = {L.q0[k], L.q1[k], L.q2[k], L.q3[k], L.q4[k], L.q5[k]};
    // signed sources are expanded about the MAC centre with a dipole (tree/moments.cpp)
    const double pd[3] = {Dipole ? L.nd[3 * k] : 0.0, Dipole ? L.nd[3 * k + 1] : 0.0, Dipole ? L.nd[3 * k + 2] : 0.0};
    // every separation a point of the node lattice: psi = 1/r + C and its derivatives read, the node's whole
    // interaction (multipole and correction) from them, below
    const bool nodeOnLattice = Periodic && !expand && (Order >= 2 || Dipole) && L.latticeTargets && L.nodeLattice &&
                               L.nodeLattice->onLattice(sx, sy, sz);
    if (nodeOnLattice && !Accel) {  // potentials: in batches, after the loop (latticeNodePotentials)
      L.latNodes.push_back(std::uint32_t(k));
      continue;
    }
    if (!nodeOnLattice) {
#pragma GCC ivdep
      for (int i = 0; i < nt; ++i) {
        if (Accel)
          nodeCellForce<double, Order, Dipole>(tx[i] - sx, ty[i] - sy, tz[i] - sz, sm, q, p[i], fx[i], fy[i], fz[i],
                                               qx[i], qy[i], qz[i], pd);
        else nodeCellPotential<double, Order, Dipole>(tx[i] - sx, ty[i] - sy, tz[i] - sz, sm, q, p[i], pd);
      }
    }
    if (Periodic) {  // the node's other images; its com is already the image nearest the group
      const EwaldTableView v = L.ewald->view;  // a local copy: provably not aliased by the outputs
      // the correction takes the plain quadrupole; the potential-only list holds half-upper coefficients (exact x2)
      const double qf[6] = {Accel ? q[0] : 2 * q[0], q[1], q[2], Accel ? q[3] : 2 * q[3], q[4], Accel ? q[5] : 2 * q[5]};
      if (expand) continue;  // the expansion's terms: ewaldExpansionTerms, after the lists
      if (nodeOnLattice) {
        const EwaldNodeLattice& lat = *L.nodeLattice;
        const double* lc = lat.coef.data();
        const double inv = lat.invDx;
        const int m0 = lat.n[0], m1 = lat.n[1], m2 = lat.n[2], s0 = m0 + 1, s1 = m1 + 1;
        const double S = L.ns[k];
#pragma GCC ivdep
        for (int i = 0; i < nt; ++i) {
          const double dx = tx[i] - sx, dy = ty[i] - sy, dz = tz[i] - sz;
          int kx = int(std::fabs(dx) * inv), ky = int(std::fabs(dy) * inv), kz = int(std::fabs(dz) * inv);
          kx = kx > m0 ? m0 : kx;
          ky = ky > m1 ? m1 : ky;
          kz = kz > m2 ? m2 : kz;
          const int o = (Accel ? kEwaldCoefs : 10) * (kx + s0 * (ky + s1 * kz));  // the lattice's stride
          // the other octants: C even along every axis (the signs of ewaldLookup)
          const double ex = dx < 0 ? -1.0 : 1.0, ey = dy < 0 ? -1.0 : 1.0, ez = dz < 0 ? -1.0 : 1.0;
          const double g[3] = {ex * lc[o + 1], ey * lc[o + 2], ez * lc[o + 3]};
          const double H[6] = {lc[o + 4], ex * ey * lc[o + 5], ex * ez * lc[o + 6],
                               lc[o + 7], ey * ez * lc[o + 8], lc[o + 9]};
          double T[10];
          if (Accel) {
            T[0] = ex * lc[o + 10]; T[1] = ey * lc[o + 11]; T[2] = ez * lc[o + 12]; T[3] = ex * lc[o + 13];
            T[4] = ex * ey * ez * lc[o + 14]; T[5] = ex * lc[o + 15]; T[6] = ey * lc[o + 16];
            T[7] = ez * lc[o + 17]; T[8] = ey * lc[o + 18]; T[9] = ez * lc[o + 19];
          }
          ewaldNodeTerms<Order, Accel, Dipole>(lc[o], g, H, T, sm, qf, S, p[i], fx[i], fy[i], fz[i], pd);
        }
        continue;
      }
#pragma GCC ivdep
      for (int i = 0; i < nt; ++i)
        ewaldNodeCorrection<Order, Accel, Dipole>(v, tx[i] - sx, ty[i] - sy, tz[i] - sz, sm, qf, L.ns[k], p[i],
                                                  fx[i], fy[i], fz[i], pd);
    }
  }
  if (Periodic && !Accel && !L.latNodes.empty())
    latticeNodePotentials<Order, Dipole>(L, tx, ty, tz, it, nt, p, block);
  const std::size_t nc = L.cm.size();
  for (std::size_t k = 0; k < nc; ++k) {
    if (Periodic && !Accel && block) {  // a run of lattice cells as rows, the group's sums in registers
      const std::size_t e = latticeRows(*L.lattice, L, *block, ilo, ihi, k, p);
      if (e > k) {
        k = e - 1;
        continue;
      }
    }
    double sx = L.cx[k], sy = L.cy[k], sz = L.cz[k];
    const double sm = L.cm[k];
    if (Periodic && !expand) {  // each pair through its nearest image, plus the other images (C(0) for the cell)
      const EwaldTableView v = L.ewald->view;  // a local copy: provably not aliased by the outputs
      if (L.latticeTargets && L.lattice->onLattice(sx, sy, sz)) {  // every separation a lattice point: psi read
        const EwaldCellLattice& lat = *L.lattice;
        if (!Accel) {
          // in lattice indices: the nearest image's separation is min(|d|, P - |d|) on a periodic axis of P
          // spacings when |d| < P (the same point as nearestImage and rounding give in doubles)
          const int jx = lat.index(sx, 0), jy = lat.index(sy, 1), jz = lat.index(sz, 2);
          const int j[3] = {jx, jy, jz};
          bool inRange = true;
          int F[3];
          for (int d = 0; d < 3; ++d) {
            F[d] = lat.period[d] > 0 ? lat.period[d] : 1 << 30;
            if (lat.period[d] > 0) inRange = inRange && ihi[d] - j[d] < F[d] && j[d] - ilo[d] < F[d];
          }
          if (inRange) {
            const double* lc = lat.c.data();
            const int m0 = lat.n[0], m1 = lat.n[1], m2 = lat.n[2], s0 = m0 + 1, s1 = m1 + 1;
            const int F0 = F[0], F1 = F[1], F2 = F[2];
#pragma GCC ivdep
            for (int i = 0; i < nt; ++i) {
              int kx = ix[i] - jx, ky = iy[i] - jy, kz = iz[i] - jz;
              kx = kx < 0 ? -kx : kx;
              ky = ky < 0 ? -ky : ky;
              kz = kz < 0 ? -kz : kz;
              kx = F0 - kx < kx ? F0 - kx : kx;
              ky = F1 - ky < ky ? F1 - ky : ky;
              kz = F2 - kz < kz ? F2 - kz : kz;
              kx = kx > m0 ? m0 : kx;
              ky = ky > m1 ? m1 : ky;
              kz = kz > m2 ? m2 : kz;
              p[i] += sm * lc[kx + s0 * (ky + s1 * kz)];  // psi = 1/r + C: the pair and its images
            }
            continue;
          }
        }
        const double* lc = lat.c.data();
        const double *lgx = Accel ? lat.gx.data() : nullptr, *lgy = Accel ? lat.gy.data() : nullptr,
                     *lgz = Accel ? lat.gz.data() : nullptr;
        const double inv = lat.invDx;
        const int m0 = lat.n[0], m1 = lat.n[1], m2 = lat.n[2], s0 = m0 + 1, s1 = m1 + 1;
#pragma GCC ivdep
        for (int i = 0; i < nt; ++i) {
          const double dx = nearestImage(tx[i] - sx, v.period[0], v.invPeriod[0]);
          const double dy = nearestImage(ty[i] - sy, v.period[1], v.invPeriod[1]);
          const double dz = nearestImage(tz[i] - sz, v.period[2], v.invPeriod[2]);
          int kx = int(std::fabs(dx) * inv + 0.5), ky = int(std::fabs(dy) * inv + 0.5);
          int kz = int(std::fabs(dz) * inv + 0.5);
          kx = kx > m0 ? m0 : kx;
          ky = ky > m1 ? m1 : ky;
          kz = kz > m2 ? m2 : kz;
          const int id = kx + s0 * (ky + s1 * kz);
          p[i] += sm * lc[id];  // psi = 1/r + C: the pair and its images
          if (Accel) {  // psi is even along every axis, its gradient odd (the per-pair lookup's signs)
            fx[i] -= sm * (dx < 0 ? -lgx[id] : lgx[id]);
            fy[i] -= sm * (dy < 0 ? -lgy[id] : lgy[id]);
            fz[i] -= sm * (dz < 0 ? -lgz[id] : lgz[id]);
          }
        }
        continue;
      }
#pragma GCC ivdep
      for (int i = 0; i < nt; ++i) {
        const double dx = nearestImage(tx[i] - sx, v.period[0], v.invPeriod[0]);
        const double dy = nearestImage(ty[i] - sy, v.period[1], v.invPeriod[1]);
        const double dz = nearestImage(tz[i] - sz, v.period[2], v.invPeriod[2]);
        if (Accel) cellCellForce<double>(dx, dy, dz, sm, p[i], fx[i], fy[i], fz[i]);
        else cellCellPotential<double>(dx, dy, dz, sm, p[i]);
        ewaldCellCorrection<Accel>(v, dx, dy, dz, sm, p[i], fx[i], fy[i], fz[i]);
      }
      continue;
    }
    const bool correct = expand && L.cCorrect[k];  // else seen through a hoisted node's image, already corrected
    if (correct) {  // the image nearest the centre: a whole number of periods (none for the group's own cells)
      const EwaldTableView& v = L.ewald->view;
      sx = imageNearCentre(sx, centre[0], v.period[0], v.invPeriod[0]);
      sy = imageNearCentre(sy, centre[1], v.period[1], v.invPeriod[1]);
      sz = imageNearCentre(sz, centre[2], v.period[2], v.invPeriod[2]);
    }
#pragma GCC ivdep
    for (int i = 0; i < nt; ++i) {
      if (Accel) cellCellForce<double>(tx[i] - sx, ty[i] - sy, tz[i] - sz, sm, p[i], fx[i], fy[i], fz[i]);
      else cellCellPotential<double>(tx[i] - sx, ty[i] - sy, tz[i] - sz, sm, p[i]);
    }
  }
  if (expand) ewaldExpansionTerms<Order, Accel, Dipole>(L, centre, a);
  for (int i = 0; i < nt; ++i) {
    double ex = 0, ey = 0, ez = 0;
    if (expand) ewaldLocalEval<Accel>(a, tx[i] - centre[0], ty[i] - centre[1], tz[i] - centre[2], p[i], ex, ey, ez);
    phi[i] = p[i];
    if (Accel) { gx[i] = fx[i] - qx[i] + ex; gy[i] = fy[i] - qy[i] + ey; gz[i] = fz[i] - qz[i] + ez; }
  }
}

/// The evaluation of a group's lists. Potentials of a group whose cells fill a block of lattice points kLatticeRun wide
/// along x (LatticeBlock) run on the cells in the block's order, and go back in the group's: each cell's sum keeps
/// its order, and the block's reads by rows (latticeRows, latticeNodePotentials) equal the per-pair reads to rounding.
template <int Order, bool Accel, bool Periodic, bool Dipole>
inline __attribute__((always_inline)) void evaluateLists(const WalkLists& L, const double* tx, const double* ty,
                                                         const double* tz, int nt, const double* centre, double* phi,
                                                         double* gx, double* gy, double* gz) {
  if (Periodic && !Accel && !centre && L.latticeTargets && L.sourceLattice && nt % kLatticeRun == 0) {
    const EwaldCellLattice& lat = *L.lattice;
    int lo[3], hi[3];
    std::int32_t slot[kMaxGroup];
    const double* t[3] = {tx, ty, tz};
    for (int d = 0; d < 3; ++d) {
      lo[d] = hi[d] = lat.index(t[d][0], d);
      for (int i = 1; i < nt; ++i) {
        const int k = lat.index(t[d][i], d);
        lo[d] = k < lo[d] ? k : lo[d];
        hi[d] = k > hi[d] ? k : hi[d];
      }
    }
    LatticeBlock block{hi[1] - lo[1] + 1, hi[2] - lo[2] + 1};
    bool full = hi[0] - lo[0] + 1 == kLatticeRun && kLatticeRun * block.by * block.bz == nt;
    if (full) {  // every point of the box exactly once
      bool seen[kMaxGroup] = {};
      for (int i = 0; i < nt && full; ++i) {
        const int s = (lat.index(tx[i], 0) - lo[0]) + kLatticeRun * ((lat.index(ty[i], 1) - lo[1]) +
                                                                      block.by * (lat.index(tz[i], 2) - lo[2]));
        full = !seen[s];
        seen[s] = true;
        slot[i] = s;
      }
    }
    if (full) {
      double bx[kMaxGroup], byy[kMaxGroup], bzz[kMaxGroup], bp[kMaxGroup];
      for (int i = 0; i < nt; ++i) { bx[slot[i]] = tx[i]; byy[slot[i]] = ty[i]; bzz[slot[i]] = tz[i]; }
      evaluateListsIn<Order, Accel, Periodic, Dipole>(L, bx, byy, bzz, nt, centre, bp, gx, gy, gz, &block);
      for (int i = 0; i < nt; ++i) phi[i] = bp[slot[i]];
      return;
    }
  }
  evaluateListsIn<Order, Accel, Periodic, Dipole>(L, tx, ty, tz, nt, centre, phi, gx, gy, gz, nullptr);
}

// The evaluation loops are compiled for several instruction sets and picked at load time (ifunc), so one binary
// runs everywhere and uses AVX-512 or AVX2 where the processor has them.
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#define AG_MULTIVERSION __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define AG_MULTIVERSION
#endif

using EvalFn = void (*)(const WalkLists&, const double*, const double*, const double*, int, const double*, double*,
                        double*, double*, double*);
#define AG_EVAL(NAME, ORDER, ACCEL, PERIODIC, DIPOLE)                                                             \
  AG_MULTIVERSION void NAME(const WalkLists& L, const double* x, const double* y, const double* z, int n,             \
                            const double* centre, double* p, double* gx, double* gy, double* gz) {                \
    evaluateLists<ORDER, ACCEL, PERIODIC, DIPOLE>(L, x, y, z, n, centre, p, gx, gy, gz);                          \
  }
AG_EVAL(evalPot1, 1, false, false, false)
AG_EVAL(evalPot2, 2, false, false, false)
AG_EVAL(evalForce1, 1, true, false, false)
AG_EVAL(evalForce2, 2, true, false, false)
AG_EVAL(evalPerPot1, 1, false, true, false)
AG_EVAL(evalPerPot2, 2, false, true, false)
AG_EVAL(evalPerForce1, 1, true, true, false)
AG_EVAL(evalPerForce2, 2, true, true, false)
AG_EVAL(evalSignedPot1, 1, false, true, true)
AG_EVAL(evalSignedPot2, 2, false, true, true)
AG_EVAL(evalSignedForce1, 1, true, true, true)
AG_EVAL(evalSignedForce2, 2, true, true, true)
#undef AG_EVAL

/// The evaluator of a walk: isolated, periodic, or periodic with the dipoles of signed sources.
EvalFn pickEval(int order, bool accel, bool periodic, bool dipole) {
  static constexpr EvalFn fns[3][2][2] = {{{evalPot1, evalForce1}, {evalPot2, evalForce2}},
                                          {{evalPerPot1, evalPerForce1}, {evalPerPot2, evalPerForce2}},
                                          {{evalSignedPot1, evalSignedForce1}, {evalSignedPot2, evalSignedForce2}}};
  return fns[periodic ? (dipole ? 2 : 1) : 0][order == 1 ? 0 : 1][accel ? 1 : 0];
}

template <bool Accel, bool Periodic>
void walkRange(const SourceTree& t, const SortedCells& c, const Groups& g, std::size_t gb, std::size_t ge, bool vote,
               WalkPass pass, EvalFn eval, WalkLists& L, WalkOutput& out, std::uint64_t& approx,
               std::uint64_t& direct) {
  for (std::size_t gi = gb; gi < ge; ++gi) {
    // periodic: small groups take the correction as one expansion about their centre
    const bool expand = Periodic && L.expandEwald && groupExpands(L.ewald->view, g, gi);
    buildLists<Periodic>(t, c, g, gi, vote, !Accel, expand && pass.hoistCorrection, L);
    const std::uint32_t b = g.begin[gi];
    const int nt = int(g.count[gi]);
    double centre[3];
    for (int d = 0; d < 3; ++d) centre[d] = 0.5 * (g.lo[3 * gi + d] + g.hi[3 * gi + d]);
    const double* ctr = expand ? centre : nullptr;
    // per-pair lookups: can the group's cells read C at lattice separations (cpu/ewald_lattice.h)?
    L.latticeTargets = false;
    if (Periodic && !expand && L.lattice) {
      L.latticeTargets = true;
      for (int i = 0; i < nt && L.latticeTargets; ++i)
        L.latticeTargets = L.lattice->onLattice(c.x[b + i], c.y[b + i], c.z[b + i]);
    }
    if (pass.accumulate) {
      // a further source tree (a LET): its sums are added to the local tree's, tree by tree in a fixed order
      double p[kMaxGroup], fx[kMaxGroup], fy[kMaxGroup], fz[kMaxGroup];
      eval(L, &c.x[b], &c.y[b], &c.z[b], nt, ctr, p, fx, fy, fz);
      for (int i = 0; i < nt; ++i) {
        out.phi[b + i] += p[i];
        if (Accel) { out.gx[b + i] += fx[i]; out.gy[b + i] += fy[i]; out.gz[b + i] += fz[i]; }
      }
    } else {
      eval(L, &c.x[b], &c.y[b], &c.z[b], nt, ctr, out.phi + b, Accel ? out.gx + b : nullptr,
                                  Accel ? out.gy + b : nullptr, Accel ? out.gz + b : nullptr);
    }
    approx += std::uint64_t(nt) * L.nm.size();
    // in its own tree every cell of the group meets itself in the opened leaves; that pair is not an interaction
    const std::size_t self = pass.sourcesAreTargets ? std::min<std::size_t>(L.cm.size(), 1) : 0;
    direct += std::uint64_t(nt) * (L.cm.size() - self);
  }
}

}  // namespace

void walkGroups(const SourceTree& t, const SortedCells& c, const Groups& g, std::size_t gb, std::size_t ge,
                const SolveOptions& opt, int threads, WalkPass pass, WalkOutput& out, const EwaldWalk* ewald) {
  if (t.nodeCount == 0 || ge <= gb) return;
  assert(!ewald || t.secondMoment);  // every periodic source tree carries its nodes' second moments
  assert(!t.dipole || ewald);        // signed sources only in (fully) periodic boxes
  // periodic walks with groups that look the table up per pair: C at the lattice separations, once
  const bool accel = out.gx != nullptr;
  EwaldCellLattice lattice;
  if (ewald) {
    bool perPair = !opt.ewaldExpansion;
    for (std::size_t gi = gb; gi < ge && !perPair; ++gi) perPair = !groupExpands(ewald->view, g, gi);
    if (perPair) lattice = makeEwaldCellLattice(ewald->view, c, accel);
  }
  // node centres half a spacing off the cells' lattice: the expansion centres of signed sources (tree/moments.cpp)
  EwaldNodeLattice nodeLattice;
  if (lattice.usable && t.dipole) nodeLattice = makeEwaldNodeLattice(ewald->view, lattice, accel);
  // potentials with lattice rows: each source cell's lattice point, once (kOffLattice off it)
  std::vector<std::int32_t> sourceLattice;
  if (lattice.usable && !lattice.rows.empty()) {
    sourceLattice.resize(3 * t.cellTotal);
    for (std::size_t j = 0; j < t.cellTotal; ++j) {
      const bool on = lattice.onLattice(t.x[j], t.y[j], t.z[j]);
      for (int d = 0; d < 3; ++d)
        sourceLattice[3 * j + d] = on ? lattice.index(d == 0 ? t.x[j] : d == 1 ? t.y[j] : t.z[j], d) : kOffLattice;
    }
  }
  std::vector<WalkLists> lists(std::max(1, threads));
  for (auto& l : lists) {
    l.sourceLattice = sourceLattice.empty() ? nullptr : sourceLattice.data();
    l.ewald = ewald;
    l.expandEwald = opt.ewaldExpansion;
    l.lattice = lattice.usable ? &lattice : nullptr;
    l.nodeLattice = nodeLattice.usable ? &nodeLattice : nullptr;
  }
  std::atomic<std::uint64_t> approx{0}, direct{0};
  const bool vote = opt.walk == WalkKind::Vote;
  const EvalFn eval = pickEval(opt.order, accel, ewald != nullptr, t.dipole != nullptr);
  parallelFor(ge - gb, 8, threads, [&](std::size_t b, std::size_t e, int tid) {
    std::uint64_t a = 0, d = 0;
    b += gb;
    e += gb;
    WalkLists& L = lists[tid];
    if (ewald) {
      if (accel) walkRange<true, true>(t, c, g, b, e, vote, pass, eval, L, out, a, d);
      else walkRange<false, true>(t, c, g, b, e, vote, pass, eval, L, out, a, d);
    } else {
      if (accel) walkRange<true, false>(t, c, g, b, e, vote, pass, eval, L, out, a, d);
      else walkRange<false, false>(t, c, g, b, e, vote, pass, eval, L, out, a, d);
    }
    approx += a;
    direct += d;
  });
  out.approx += approx;
  out.direct += direct;
}

void walkAllGroups(const Octree& t, const SortedCells& c, const Groups& g, const SolveOptions& opt, int threads,
                   WalkOutput& out, const EwaldWalk* ewald) {
  SourceTree src = sourceTreeOf(t, c);
  if (ewald) src.secondMoment = ewald->nodeS.data();
  walkGroups(src, c, g, 0, g.size(), opt, threads, WalkPass{false, true}, out, ewald);
}

namespace {

/// Direct sums for one block of targets (nt from sorted position b of `t`) against all sources `c`, sources outer
/// (see the file comment).
template <bool Accel>
inline __attribute__((always_inline)) void directBlock(const SortedCells& c, const SortedCells& t, std::size_t b,
                                                      int nt, double* p, double* fx, double* fy, double* fz) {
  const std::size_t n = c.order.size();
  const double *tx = &t.x[b], *ty = &t.y[b], *tz = &t.z[b];
  for (int i = 0; i < nt; ++i) { p[i] = 0; fx[i] = 0; fy[i] = 0; fz[i] = 0; }
  for (std::size_t k = 0; k < n; ++k) {
    const double sx = c.x[k], sy = c.y[k], sz = c.z[k], sm = c.mass[k];
#pragma GCC ivdep
    for (int i = 0; i < nt; ++i) {
      if (Accel) cellCellForce<double>(tx[i] - sx, ty[i] - sy, tz[i] - sz, sm, p[i], fx[i], fy[i], fz[i]);
      else cellCellPotential<double>(tx[i] - sx, ty[i] - sy, tz[i] - sz, sm, p[i]);
    }
  }
}
AG_MULTIVERSION void directBlockPot(const SortedCells& c, const SortedCells& t, std::size_t b, int nt, double* p,
                                    double* fx, double* fy, double* fz) {
  directBlock<false>(c, t, b, nt, p, fx, fy, fz);
}
AG_MULTIVERSION void directBlockForce(const SortedCells& c, const SortedCells& t, std::size_t b, int nt, double* p,
                                      double* fx, double* fy, double* fz) {
  directBlock<true>(c, t, b, nt, p, fx, fy, fz);
}

/// Direct sums at every point of `t` (sorted order) over the sources `c`.
void directInto(const SortedCells& c, const SortedCells& t, bool accel, int threads, WalkOutput& out) {
  const std::size_t n = t.x.size();
  constexpr std::size_t kBlock = 64;
  parallelFor((n + kBlock - 1) / kBlock, 4, threads, [&](std::size_t bb, std::size_t be, int) {
    double p[kBlock], fx[kBlock], fy[kBlock], fz[kBlock];
    for (std::size_t blk = bb; blk < be; ++blk) {
      const std::size_t b = blk * kBlock;
      const int nt = int(std::min(n, b + kBlock) - b);
      (accel ? directBlockForce : directBlockPot)(c, t, b, nt, p, fx, fy, fz);
      for (int i = 0; i < nt; ++i) {
        out.phi[b + i] = p[i];
        if (accel) { out.gx[b + i] = fx[i]; out.gy[b + i] = fy[i]; out.gz[b + i] = fz[i]; }
      }
    }
  });
}

}  // namespace

void directAll(const SortedCells& c, bool accel, int threads, WalkOutput& out) {
  const std::size_t n = c.order.size();
  directInto(c, c, accel, threads, out);
  out.direct = n > 0 ? std::uint64_t(n) * (n - 1) : 0;
}

void directAt(const SortedCells& sources, const SortedCells& points, bool accel, int threads, WalkOutput& out) {
  directInto(sources, points, accel, threads, out);
  out.direct += std::uint64_t(points.x.size()) * sources.order.size();
}

}  // namespace amrgrav
