/// \file far_kernel.h
/// \brief The smooth kernel through which the FMM takes the far periodic images (far_images.h):
/// C_far(r) = psi(r) - sum_(near n) 1/|r - n L|, psi the periodic Green's function of ewald/sums.h (same convention
/// and constant) and the near images those with |n_d| <= 1 along every periodic axis and n_d = 0 along the others
/// (27 in a fully periodic box, 9 in a sheet, 3 on a line), and its derivatives to order p from Ewald sums
/// differentiated term by term (not a fit):
///  - real space, every periodic axis's images: erfc(a r)/r for the far ones, -erf(a r)/r (smooth at r = 0) for the
///    near ones, as radial functions of u = r^2/2 turned into Cartesian derivatives;
///  - 3 periodic axes: (4 pi / V) sum_(k != 0) e^(-k^2/4a^2) / k^2 cos(k.r) - pi / (a^2 V): lap C_far = 4 pi / V;
///  - 2 periodic axes (p, q; isolated w): Parry's sum (pi / A) sum_(k != 0) cos(k.rho) / k [e^(kw) erfc(k/2a + a w)
///    + e^(-kw) erfc(k/2a - a w)] - (2 pi / A) [w erf(a w) + e^(-a^2 w^2) / (a sqrt pi)], its w-derivatives by the
///    recurrence of each branch (g' = +-k g -+ (2a / sqrt pi) e^(-k^2/4a^2 - a^2 w^2)) and Hermite polynomials;
///    psi's plane average is -2 pi |w| / A, C_far is harmonic (no background);
///  - 1 periodic axis (period L, rho the distance from it): -(1/L) (Ein(a^2 rho^2) - gamma - 2 ln(a L)) + (4/L)
///    sum_(k > 0) cos(k x_p) int_0^a dt/t e^(-t^2 rho^2 - k^2/4t^2), radial in rho (Ein's derivatives are
///    int_0^1 (-v)^(m-1) e^(-x v) dv); psi's line average is -(2/L) ln(rho / L), C_far is harmonic.
/// psi's linear (sheet) and logarithmic (line) growth away from the periodic axes are psi's own, not C_far's
/// singularities: the near images' kink (sheet) and log (line) cancel them, so C_far is analytic wherever no far
/// image lies, i.e. within a distance L_d of the central period along each periodic axis, at any offset along the
/// isolated ones. Split a = 3 / (shortest period); real space to a r = 7.5, reciprocal space to k^2 / 4a^2 = 50 (2 and
/// 1 axes; 46 for 3): terms below ~1e-18 of the kernel's scale.
#pragma once
#include <vector>

namespace amrgrav {
namespace fmm {

/// What every offset of one (periods, order) shares: the periodic axes, the split, and (3 periodic axes) the
/// reciprocal-space rows.
struct FarKernelSetup {
  double period[3] = {0, 0, 0};  ///< > 0 along a periodic axis, 0 along an isolated one
  int order = 0;
  int per[3] = {0, 0, 0}, nper = 0, iso[3] = {0, 0, 0}, niso = 0;
  double a = 0;
  std::vector<double> k;     ///< reciprocal vectors of one half space, 3 per vector
  std::vector<double> rows;  ///< 3 periodic axes: 2 (4 pi / V) e^(-k^2/4a^2) k^n / k^2, terms per vector
};

/// period[d] > 0: axis d is periodic with that period; 0: isolated. At least one axis periodic; order in [0, 7].
FarKernelSetup farKernelSetup(const double period[3], int order);

/// Derivatives of C_far up to the setup's order (termCount(order) values in fmm/multi_index.h's order) at `offset`
/// (same length unit as the periods). Valid (converged) for |offset_d| < 2 period_d along the periodic axes.
std::vector<double> farKernelAt(const FarKernelSetup& setup, const double offset[3]);

/// The two above in one call (exposed for the tests).
std::vector<double> farKernelDerivatives(const double period[3], int order, const double offset[3]);

}  // namespace fmm
}  // namespace amrgrav
