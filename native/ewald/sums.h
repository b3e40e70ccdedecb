/// \file sums.h
/// \brief Exact Ewald sums for the periodic Green's function of a box periodic along 1, 2 or 3 axes, and the
/// correction C(r) = psi(r) - 1/|r| with its derivatives to third order (the table's Taylor coefficients).
///
/// Conventions (psi is the potential of a unit mass and all its periodic images, without the factor -G):
///  - 3 periodic axes: lap psi = -4 pi (sum of deltas - 1/V): the mean density is removed, and psi has zero
///    mean over the box (the usual Ewald convention: Hernquist, Bouchet & Suto 1991).
///  - 2 periodic axes (a sheet lattice, isolated along w): lap psi = -4 pi sum of deltas, nothing neutralised;
///    psi averaged over the periodic plane is exactly -2 pi |w| / A (A the periodic cell's area), so a layer's
///    potential is 2 pi G integral Sigma(w') |w - w'| dw' with no extra constant (Parry 1975's sum).
///  - 1 periodic axis (a line lattice of period L, isolated across it): psi averaged along the axis is exactly
///    -(2/L) ln(rho / L), rho the distance from the axis (Porto 2000-type sum; the constant fixes ln's scale L).
#pragma once
#include "ewald/lookup_k.h"
#include "core/status.h"

namespace amrgrav {

/// A box shape: side lengths (any unit) and which axes are periodic (at least one).
struct EwaldGeometry {
  double L[3] = {1, 1, 1};
  bool periodic[3] = {true, true, true};
};

/// Checks the geometry (finite positive sides, 1 to 3 periodic axes, aspect ratio at most kEwaldMaxAspect).
Status validateEwaldGeometry(const EwaldGeometry& g);
constexpr double kEwaldMaxAspect = 16;

/// C and its derivatives at r (same unit as g.L), where every periodic component satisfies |r_d| <= L_d / 2.
/// out: c, gx, gy, gz, hxx, hxy, hxz, hyy, hyz, hzz, txxx, txxy, txxz, txyy, txyz, txzz, tyyy, tyyz, tyzz, tzzz.
/// Terms are summed until they fall below ~1e-16 of the leading term (real and reciprocal space).
void ewaldCorrectionExact(const EwaldGeometry& g, const double r[3], double out[kEwaldCoefs]);

/// A fully periodic box's coefficients at every grid point (i h[0], j h[1], k h[2]), 0 <= i <= n[0] etc., x fastest,
/// kEwaldCoefs per point, into out, on `threads` threads: the same sums as ewaldCorrectionExact (equal to ~1e-13 of
/// each coefficient's scale, test/ewald-table.test.ts) with a larger splitting parameter, so that real space needs
/// at most the 8 nearest images, and the reciprocal sum done separably over the grid (cos(k.r) is a product of
/// one-axis cosines for the even C): ~30x less work than point by point. Only for 3 periodic axes.
void ewaldCorrectionGrid3(const EwaldGeometry& g, const int n[3], const double h[3], int threads, double* out);

}  // namespace amrgrav
