/// \file plummer.h
/// \brief A seeded Plummer sphere of equal point masses for the C++ checks and timings (issue #18), the recipe of
/// validation/plummer.ts: G = M = a = 1, truncated at rMax, radii by inverting the enclosed mass
/// M(r) = r^3 / (1 + r^2)^{3/2} at a uniform fraction of M(rMax), directions uniform, each mass 1 / n, each point a
/// cube of side `size` (solve with SelfPotential::None). mulberry32 as validation/random.ts, so the same seed draws
/// the same uniforms in both languages.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/thread_pool.h"
#include "tools/host_cells.h"
#include "physics/softening_k.h"

namespace amrgrav::tools {

/// mulberry32 (validation/random.ts rng): uniforms in [0, 1).
class Mulberry32 {
 public:
  explicit Mulberry32(std::uint32_t seed) : a_(seed) {}
  double next() {
    a_ += 0x6d2b79f5u;
    std::uint32_t t = a_;
    t = (t ^ (t >> 15)) * (t | 1u);
    t ^= t + (t ^ (t >> 7)) * (t | 61u);
    return double(t ^ (t >> 14)) / 4294967296.0;
  }

 private:
  std::uint32_t a_;
};

/// The points as cells (x, y, z, mass, size), so that the checks solve them as they are.
using PlummerPoints = HostCells;

inline PlummerPoints plummerPoints(std::size_t n, std::uint32_t seed = 18, double rMax = 20, double size = 1e-6) {
  PlummerPoints p;
  p.x.resize(n);
  p.y.resize(n);
  p.z.resize(n);
  p.m.assign(n, 1.0 / double(n));
  p.h.assign(n, size);
  Mulberry32 u(seed);
  const double mMax = rMax * rMax * rMax / std::pow(1 + rMax * rMax, 1.5);
  const double twoPi = 6.283185307179586;
  for (std::size_t i = 0; i < n; ++i) {
    const double mass = (1 - u.next()) * mMax;  // (0, mMax]: no radius 0
    const double r = 1 / std::sqrt(std::pow(mass, -2.0 / 3.0) - 1);
    const double cz = 2 * u.next() - 1;
    const double phi = twoPi * u.next();
    const double s = std::sqrt(std::fmax(0.0, 1 - cz * cz));
    p.x[i] = r * s * std::cos(phi);
    p.y[i] = r * s * std::sin(phi);
    p.z[i] = r * cz;
  }
  return p;
}

/// The reference of the particle timings: float64 softened direct sums (G = 1, one softening eps) at the points
/// `targets` of `pts`, over every point; the accelerations, 3 per target (a particle's own pair adds none).
inline std::vector<double> softenedAccelerations(const PlummerPoints& pts, const std::vector<std::size_t>& targets,
                                                 double eps, SofteningKernel kernel, int threads) {
  const std::size_t n = pts.x.size();
  std::vector<double> ref(3 * targets.size(), 0.0);
  parallelFor(targets.size(), 1, resolveThreadCount(threads), [&](std::size_t b, std::size_t e, int) {
    for (std::size_t k = b; k < e; ++k) {
      const std::size_t t = targets[k];
      double p = 0, gx = 0, gy = 0, gz = 0;
      for (std::size_t j = 0; j < n; ++j)
        softPairForce<double>(pts.x[t] - pts.x[j], pts.y[t] - pts.y[j], pts.z[t] - pts.z[j], pts.m[j], eps, kernel, p,
                              gx, gy, gz);
      ref[3 * k] = -gx;  // acceleration = -G g
      ref[3 * k + 1] = -gy;
      ref[3 * k + 2] = -gz;
    }
  });
  return ref;
}

}  // namespace amrgrav::tools
