/// \file ewald_lattice.h
/// \brief The Ewald correction at the separations of a regular lattice, for the CPU walk's per-pair lookups.
/// On a mesh most (cell, cell) separations are whole multiples of the finest cell size dx (every pair of finest
/// cells, and every periodic image of one when the periods are whole multiples of dx too). For those the walk
/// reads C(k dx) and its gradient from a small array made once per walk, instead of evaluating the table's cubic
/// per pair (20 gathered coefficients and ~60 operations): the same function at the same point (the table's
/// polynomial about the grid point nearest k dx), so the sums agree with per-pair lookups to rounding, except
/// where k dx lies half-way between two table points (there the neighbouring polynomial's value, the table's own
/// error apart). Pairs off the lattice keep per-pair lookups. Interaction lists are untouched.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "ewald/lookup_k.h"
#include "tree/tree.h"

namespace amrgrav {

struct EwaldCellLattice {
  bool usable = false;
  double origin[3] = {0, 0, 0};  ///< a lattice point (the centre of a finest cell)
  double dx = 0, invDx = 0;      ///< the lattice spacing (the finest cell size)
  int n[3] = {0, 0, 0};          ///< largest |k| per axis held
  std::vector<double> c, gx, gy, gz;  ///< at (kx, ky, kz) dx, k >= 0, x fastest; gradients only with accelerations

  /// Is x a lattice point along axis d (to 1e-9 of a spacing)?
  bool onLattice(double x, int d) const {
    const double k = (x - origin[d]) * invDx;
    return std::fabs(k - std::rint(k)) <= 1e-9 * (1 + std::fabs(k));
  }
  bool onLattice(double x, double y, double z) const { return onLattice(x, 0) && onLattice(y, 1) && onLattice(z, 2); }
};

/// C and its derivatives at the separations of a cell centre from a node's expansion centre when both are lattice
/// points of the finest cells, the centre shifted by half a spacing on every axis: the centres of nodes of 2^k
/// finest cells a side (k >= 1), about which signed sources (the density contrast) are expanded. Each point holds
/// the coefficients of ewaldLookup (C, gradient, Hessian, and third derivatives with accelerations) at
/// ((k + 1/2) dx) with k >= 0;
/// the other octants follow from the signs (C even along every axis). Pairs off this lattice (centres of mass, other
/// levels) keep per-pair lookups.
struct EwaldNodeLattice {
  bool usable = false;
  double origin[3] = {0, 0, 0};  ///< a lattice point (a finest cell's centre shifted by dx/2 on every axis)
  double dx = 0, invDx = 0;
  int n[3] = {0, 0, 0};          ///< largest k per axis held: (n + 1/2) dx beyond the table's reach
  int stride = 0;                ///< coefficients per point: 10 (C, gradient, Hessian) for potentials, 20 with T
  std::vector<double> coef;      ///< `stride` per point, x fastest

  bool onLattice(double x, int d) const {
    const double k = (x - origin[d]) * invDx;
    return std::fabs(k - std::rint(k)) <= 1e-9 * (1 + std::fabs(k));
  }
  bool onLattice(double x, double y, double z) const { return onLattice(x, 0) && onLattice(y, 1) && onLattice(z, 2); }
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
