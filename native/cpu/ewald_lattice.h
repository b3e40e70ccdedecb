/// \file ewald_lattice.h
/// \brief The periodic Green's function at the separations of a regular lattice, for the CPU walk's per-pair
/// evaluation of groups that do not expand their Ewald correction.
/// On a mesh most (cell, cell) separations are whole multiples of the finest cell size dx (every pair of finest
/// cells, and every periodic image of one when the periods are whole multiples of dx too), and the expansion
/// centres of signed sources' nodes lie half a cell off. For those the walk reads psi = 1/r + C (the point mass
/// and its periodic images) and its derivatives at k dx from small arrays made once per walk, instead of
/// computing 1/r and its multipole terms and evaluating the table's cubic per pair (20 gathered coefficients and
/// ~60 operations): one read set per pair instead of two kernels. C is the table's polynomial about the grid point
/// nearest k dx (as a per-pair lookup evaluates it), 1/r and its derivatives are exact at k dx; so the sums agree
/// with the per-pair kernels to rounding, except where k dx lies half-way between two table points (there the
/// neighbouring polynomial's value, the table's own error apart). A point counts as on the lattice only within a
/// few dozen ulps of its coordinates (kLatticeUlps): the 1/r read at k dx then differs from 1/|t - s| by no more
/// than the coordinates' own rounding. Pairs off the lattice keep the per-pair kernels. Interaction lists are
/// untouched.
#pragma once
#include <climits>
#include <cmath>
#include <cstdint>
#include <vector>

#include "ewald/lookup_k.h"
#include "tree/tree.h"

namespace amrgrav {

/// Is coordinate x a lattice point (origin + k / invDx) to within kLatticeUlps ulps of the coordinates' size? The
/// lattices hold 1/r exactly at k dx, so a point is taken as on the lattice only as far as its own rounding.
constexpr double kLatticeUlps = 32;
inline bool onLatticeAxis(double x, double origin, double invDx) {
  const double k = (x - origin) * invDx;
  const double tol = kLatticeUlps * 2.220446049250313e-16 * (1 + (std::fabs(x) + std::fabs(origin)) * invDx);
  return std::fabs(k - std::rint(k)) <= tol;
}

/// Cells along x in one row read of the unfolded lattice (EwaldCellLattice::rows).
constexpr int kLatticeRun = 4;
/// A source cell off the cells' lattice (WalkLists::sourceLattice).
constexpr std::int32_t kOffLattice = INT32_MIN;

struct EwaldCellLattice {
  bool usable = false;
  double origin[3] = {0, 0, 0};  ///< a lattice point (the centre of a finest cell)
  double dx = 0, invDx = 0;      ///< the lattice spacing (the finest cell size)
  int n[3] = {0, 0, 0};          ///< largest |k| per axis held
  /// psi = 1/r + C (C(0) at k = 0: a cell's own images) and its gradient at (kx, ky, kz) dx, k >= 0, x fastest;
  /// gradients only with accelerations
  std::vector<double> c, gx, gy, gz;

  int period[3] = {0, 0, 0};      ///< periods in spacings (0 on isolated axes)
  /// Potentials with x periodic: c again with x unfolded, at (ux, ky, kz) for ux in [0, period[0] + kLatticeRun - 1)
  /// (x fastest, rowStride per row): ux is the separation along x modulo the period, so that a run of kLatticeRun
  /// cells along x reads kLatticeRun consecutive values from one source cell (cpu/lattice_eval.h's rows)
  std::vector<double> rows;
  int rowStride = 0;
  /// With rows, on a periodic axis d = 1, 2: the offset in `rows` of separation s in [-period, period] along d,
  /// fold[d][s + period]: min(|s|, period - |s|) clamped to n[d], times the axis's stride in `rows`
  std::vector<std::int32_t> fold[3];
  /// With accelerations and x periodic: psi and its gradient (accelRows[0..3]: psi, gx, gy, gz) at (d, ky, kz) for d in
  /// [-period[0], period[0] + kLatticeRun - 1) (d + period[0] fastest, accelRowStride per row): d the separation
  /// along x itself, gx signed as its nearest image (ties to even, as nearestImage), so that a run of kLatticeRun
  /// cells reads kLatticeRun consecutive values of each
  std::vector<double> accelRows[4];
  int accelRowStride = 0;
  /// With accelRows, on a periodic axis d = 1, 2: the offset in accelRows of separation s in [-period, period],
  /// accelFold[d][s + period] (its nearest image's distance clamped to n[d], times the axis's stride), and that
  /// image's sign, accelSign[d][s + period] (+1 at s = 0, as nearestImage and the per-pair reads give it)
  std::vector<std::int32_t> accelFold[3];
  std::vector<double> accelSign[3];

  /// Is x a lattice point along axis d (onLatticeAxis)?
  bool onLattice(double x, int d) const { return onLatticeAxis(x, origin[d], invDx); }
  bool onLattice(double x, double y, double z) const { return onLattice(x, 0) && onLattice(y, 1) && onLattice(z, 2); }
  /// The index k of lattice point x along axis d (x = origin + k dx).
  int index(double x, int d) const { return int(std::rint((x - origin[d]) * invDx)); }
};

/// psi = 1/r + C and its derivatives at the separations of a cell centre from a node's expansion centre when both
/// are lattice points of the finest cells, the centre shifted by half a spacing on every axis: the centres of nodes
/// of 2^k finest cells a side (k >= 1), about which signed sources (the density contrast) are expanded. Each point
/// holds psi's coefficients in ewaldLookup's layout (value, gradient, Hessian, and third derivatives with
/// accelerations) at ((k + 1/2) dx) with k >= 0, so that one ewaldNodeTerms gives a node's whole interaction
/// (multipole and correction: the same second-order expansion of both, lap(1/r) = 0);
/// the other octants follow from the signs (C even along every axis). Pairs off this lattice (centres of mass, other
/// levels) keep per-pair lookups.
/// Eight doubles on a cache line of their own: one read of psi's first eight coefficients at a lattice point.
struct alignas(64) LatticeCoef8 {
  double v[8];
};

struct EwaldNodeLattice {
  bool usable = false;
  double origin[3] = {0, 0, 0};  ///< a lattice point (a finest cell's centre shifted by dx/2 on every axis)
  double dx = 0, invDx = 0;
  int n[3] = {0, 0, 0};          ///< largest k per axis held: (n + 1/2) dx beyond the table's reach
  int stride = 0;                ///< coefficients per point: 10 (C, gradient, Hessian) for potentials, 20 with T
  std::vector<double> coef;      ///< `stride` per point, x fastest (accelerations only)
  /// Potentials: the same 10 coefficients per point split 8 + 2 (c8[p] a cache line, c2[2 p]), so that a pair's
  /// reads never straddle two lines
  std::vector<LatticeCoef8> c8;
  std::vector<double> c2;

  bool onLattice(double x, int d) const { return onLatticeAxis(x, origin[d], invDx); }
  bool onLattice(double x, double y, double z) const { return onLattice(x, 0) && onLattice(y, 1) && onLattice(z, 2); }
  /// The index k of lattice point x along axis d (x = origin + k dx: the cells' lattice point k + 1/2).
  int index(double x, int d) const { return int(std::rint((x - origin[d]) * invDx)); }
};

/// Largest node lattice held (points, kEwaldCoefs doubles each).
constexpr std::size_t kEwaldNodeLatticeMaxPoints = std::size_t(1) << 18;

/// The node lattice matching a (usable) cell lattice, with the third derivatives only for accelerations (half the
/// memory the potential's gathers stream through); not usable when it would exceed kEwaldNodeLatticeMaxPoints.
EwaldNodeLattice makeEwaldNodeLattice(const EwaldTableView& v, const EwaldCellLattice& cells, bool accel);

/// Largest lattice held (points); larger meshes keep per-pair lookups.
constexpr std::size_t kEwaldLatticeMaxPoints = std::size_t(1) << 20;

/// The lattice of the finest cells of `cells` (scaled lengths) for the table view `v`; not usable when a periodic
/// axis's period is not a whole number of spacings or the lattice would exceed kEwaldLatticeMaxPoints.
EwaldCellLattice makeEwaldCellLattice(const EwaldTableView& v, const SortedCells& cells, bool accel);

}  // namespace amrgrav
