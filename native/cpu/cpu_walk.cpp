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
#include "cpu/lattice_eval.h"
#include "cpu/walk_lists.h"
#include "core/thread_pool.h"

namespace amrgrav {
namespace {

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
  const bool intTargets = Periodic && !expand && L.latticeTargets && (!Accel || block);
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
    if (Accel && nodeOnLattice && block) {  // a lattice block's node by rows: after the loop (latticeNodeForceRows)
      int kx0;
      if (latticeRowStep(ix[0], L.nodeLattice->index(sx, 0), L.nodeLattice->n[0], kx0)) {
        L.latNodes.push_back(std::uint32_t(k));
        continue;
      }
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
  if (Periodic && !L.latNodes.empty()) {
    if (!Accel) latticeNodePotentials<Order, Dipole>(L, tx, ty, tz, it, nt, p, block);
    else latticeNodeForceRows<Order, Dipole>(L, tx, ty, tz, it, nt, *block, p, fx, fy, fz);
  }
  const std::size_t nc = L.cm.size();
  for (std::size_t k = 0; k < nc; ++k) {
    if (Periodic && !Accel && block) {  // a run of lattice cells as rows, the group's sums in registers
      const std::size_t e = latticeRows(*L.lattice, L, *block, ilo, ihi, k, p);
      if (e > k) {
        k = e - 1;
        continue;
      }
    }
    if (Periodic && Accel && block && L.sourceLattice && !L.lattice->accelRows[0].empty()) {  // rows, with gradients
      const std::size_t e = latticeRowsAccel(*L.lattice, L, *block, ilo, ihi, k, p, fx, fy, fz);
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

/// The evaluation of a group's lists. A periodic group whose cells fill a block of lattice points kLatticeRun wide
/// along x (LatticeBlock) runs on the cells in the block's order, and its results go back in the group's: each cell's
/// sum keeps its order, and the block's reads by rows (cpu/lattice_eval.h) equal the per-pair reads to rounding.
template <int Order, bool Accel, bool Periodic, bool Dipole>
inline __attribute__((always_inline)) void evaluateLists(const WalkLists& L, const double* tx, const double* ty,
                                                         const double* tz, int nt, const double* centre, double* phi,
                                                         double* gx, double* gy, double* gz) {
  // source cells by rows (sourceLattice); with accelerations also the nodes (nodeLattice)
  if (Periodic && !centre && L.latticeTargets && (L.sourceLattice != nullptr || (Accel && L.nodeLattice != nullptr)) &&
      nt % kLatticeRun == 0) {
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
      double bgx[Accel ? kMaxGroup : 1], bgy[Accel ? kMaxGroup : 1], bgz[Accel ? kMaxGroup : 1];
      for (int i = 0; i < nt; ++i) { bx[slot[i]] = tx[i]; byy[slot[i]] = ty[i]; bzz[slot[i]] = tz[i]; }
      evaluateListsIn<Order, Accel, Periodic, Dipole>(L, bx, byy, bzz, nt, centre, bp, bgx, bgy, bgz, &block);
      for (int i = 0; i < nt; ++i) phi[i] = bp[slot[i]];
      if (Accel)
        for (int i = 0; i < nt; ++i) { gx[i] = bgx[slot[i]]; gy[i] = bgy[slot[i]]; gz[i] = bgz[slot[i]]; }
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
  // lattice rows: each source cell's lattice point, once (kOffLattice off it)
  std::vector<std::int32_t> sourceLattice;
  if (lattice.usable && (!lattice.rows.empty() || !lattice.accelRows[0].empty())) {
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
