/// \file gauss_legendre.h
/// \brief The 48-point Gauss-Legendre rule on [0, 1], made once per process: the line sums' incomplete Bessel
/// integrals (ewald/sums.cpp) and their derivatives in the FMM's far kernel (fmm/far_kernel.cpp).
#pragma once
#include <cmath>

#include "ewald/math_constants.h"

namespace amrgrav {

struct GaussLegendre {
  static constexpr int n = 48;
  double x[n], w[n];
  GaussLegendre() {
    for (int i = 0; i < n; ++i) {
      double z = std::cos(kPi * (i + 0.75) / (n + 0.5)), dp = 0;
      for (int it = 0; it < 100; ++it) {  // Newton on P_n from the usual first guess
        double p0 = 1, p1 = 0;
        for (int k = 1; k <= n; ++k) {
          const double p2 = p1;
          p1 = p0;
          p0 = ((2 * k - 1) * z * p1 - (k - 1) * p2) / k;
        }
        dp = n * (z * p0 - p1) / (z * z - 1);
        const double dz = p0 / dp;
        z -= dz;
        if (std::fabs(dz) < 1e-16) break;
      }
      x[i] = 0.5 * (1 - z);
      w[i] = 1.0 / ((1 - z * z) * dp * dp);  // = 2 / ((1 - z^2) P'^2) halved for [0, 1]
    }
  }
};

/// The process's rule (thread-safe static).
inline const GaussLegendre& gaussLegendre48() {
  static const GaussLegendre g;
  return g;
}

}  // namespace amrgrav
