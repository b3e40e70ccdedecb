/// \file signed_scale_k.h
/// \brief The signed sources' scale (fmm_tree.h signedSourceScale: kSignedScaleShare x max(leaf near max, coarse
/// field of the level-2 nodes)) found with the sorted cells on the device alone (the CUDA backend's periodic FMM,
/// cuda/fmm_scale_phase.h), the same bits as the host's, by the rules here (the device's kernels and their host
/// emulation, native/tests/fmm_signed_scale.cpp):
///  - the leaf near max: each leaf's estimate on the device (leafNearCellEstimate: its value and the sum of its
///    terms' magnitudes, as the host's leafNearOf computes it but rounded otherwise) with a margin (leafNearMargin)
///    that bounds the estimate's distance from the host's value; the leaves that may hold the host's maximum
///    (leafNearCandidate: every leaf whose estimate plus margin reaches the largest estimate minus margin) have their
///    cells copied down and the host's own leafNearOf takes their maximum, which is the host's maximum over all.
///    Candidates that tie (a uniform grid's contrast: every leaf alike, every leaf a candidate) come down once:
///    regular leaves of one h whose masses hash alike (leafMassHash) are grouped, each member's masses compared bit
///    for bit with its group's first leaf's on the device (a regular leaf's value is a function of its masses and h
///    alone: tableP2P), and only the first and the members that differ come down;
///  - the coarse field: each level-2 node's net mass as one chain of adds over its cells in their order (netMassStep,
///    the host's coarseFieldOfNodes' sum: the same bits), the field of those masses on the host (coarseFieldOfNets).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/hostdevice.h"
#include "fmm/p2p_tiles_k.h"
#include "physics/rounding.h"

namespace amrgrav {
namespace fmm {

/// The margin per cell of a leaf, relative to the largest sum of its terms' magnitudes at one of its cells. The
/// host's value (tableP2P: 64 products summed, possibly fused, then times 1/h, the table's 1/|d| rounded twice; or
/// pair by pair: count - 1 quotients by a rounded distance summed) and the device's estimate (the same terms, an
/// inverse distance rounded once more, summed in its own way) each lie within (count + 6) eps of those magnitudes
/// from the exact value (eps = 2^-53 ~ 1.1e-16), so within 2 (count + 6) eps ~ 2.2e-16 (count + 6) of each other;
/// the margin 1e-14 (count + 64) is ~40 times that and also covers the rounding of the estimate, its margin and
/// their sum (each within eps of values the margin exceeds: a leaf's |q| is at most its sum of magnitudes).
constexpr double kLeafNearMarginPerCell = 1e-14;

/// The squared lattice distances of two cells of a 4^3 leaf: 0 .. kLatticeR2 - 1.
constexpr int kLatticeR2 = 28;

/// 1 / sqrt(r2) for a squared lattice distance (0 for the cell itself), as fillTable makes the table's entries; the
/// device keeps the kLatticeR2 values in shared memory.
AG_HD double latticeInverseDistance(int r2) { return r2 > 0 ? 1.0 / sqrt(double(r2)) : 0.0; }

/// Cell t of a leaf whose `count` cells are at x, y, z with masses m (sorted order, scaled lengths): its near field
/// from the leaf's other cells (q) and the sum of those terms' magnitudes (a). A regular leaf (p2p_tiles_k.h
/// regularLeaf: 64 cells of size h on their Morton lattice) by its lattice, as the host's self table
/// (p2p_tables.cpp fillTable, tableP2P: (sum_s m_s / |d_st|) / h, d the lattice offset; invR: latticeInverseDistance
/// of each r2); the others pair by pair, as the host (m_j / |x_t - x_j|).
AG_HD void leafNearCellEstimate(const double* x, const double* y, const double* z, const double* m,
                                std::uint32_t count, bool regular, double h, const double* invR, std::uint32_t t,
                                double& q, double& a) {
  double sq = 0, sa = 0;
  if (regular) {
    int pt[3];
    latticeOfK(int(t), pt);
    for (int s = 0; s < kTileCellsK; ++s) {
      int ps[3];
      latticeOfK(s, ps);
      const int d[3] = {pt[0] - ps[0], pt[1] - ps[1], pt[2] - ps[2]};
      const double k = invR[d[0] * d[0] + d[1] * d[1] + d[2] * d[2]];  // 0 for s = t
      sq += k * m[s];
      sa += k * fabs(m[s]);
    }
    const double ih = 1.0 / h;
    sq *= ih;
    sa *= ih;
  } else {
    for (std::uint32_t j = 0; j < count; ++j) {
      if (j == t) continue;
      const double ir = 1.0 / sqrt(squaredNorm(x[t] - x[j], y[t] - y[j], z[t] - z[j]));
      sq += m[j] * ir;
      sa += fabs(m[j]) * ir;
    }
  }
  q = sq;
  a = sa;
}

/// The margin of a leaf of `count` cells whose cells' largest sum of magnitudes is a (kLeafNearMarginPerCell).
AG_HD double leafNearMargin(double a, std::uint32_t count) {
  return kLeafNearMarginPerCell * (double(count) + 64.0) * a;
}

/// Whether a leaf whose estimate is v with margin e may hold the host's largest leaf near max, `floor` being the
/// largest (v - e) over all leaves: its host value is at most v + e, and the host's maximum at least the floor.
AG_HD bool leafNearCandidate(double v, double e, double floor) { return v + e >= floor; }

/// A double's bits (the mass hash's words).
AG_HD std::uint64_t doubleBits(double v) {
#if defined(__CUDA_ARCH__)
  return std::uint64_t(__double_as_longlong(v));
#else
  std::uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
#endif
}

/// A regular leaf's 64 masses' hash (FNV-1a over their bits in cell order): leaves that hash alike are compared bit
/// for bit before one stands for the other, so a collision costs a comparison, never a wrong value.
AG_HD std::uint64_t leafMassHash(const double* m) {
  std::uint64_t h = 14695981039346656037ull;
  for (int k = 0; k < kTileCellsK; ++k) {
    h ^= doubleBits(m[k]);
    h *= 1099511628211ull;
  }
  return h;
}

/// One step of a node's net mass (coarseFieldOfNodes: m = 0, then m += mass[j] over its cells in their order), each
/// add rounded on its own (RoundNearest: no fusing, no reassociation on either side).
AG_HD double netMassStep(double m, double v) { return RoundNearest::add(m, v); }

/// A node's net mass over its cells [begin, begin + count) in their order (the host's chain).
AG_HD double netMassOf(const double* mass, std::uint32_t begin, std::uint32_t count) {
  double m = 0;
  for (std::uint32_t j = begin; j < begin + count; ++j) m = netMassStep(m, mass[j]);
  return m;
}

}  // namespace fmm
}  // namespace amrgrav
