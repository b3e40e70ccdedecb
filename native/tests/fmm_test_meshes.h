/// \file fmm_test_meshes.h
/// \brief The FMM host tests' meshes (native/tests/fmm_dual_walk.cpp, fmm_device_tiles.cpp): a uniform grid, a
/// random AMR-like mesh and clustered points.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "tools/fmm_host_tree.h"
#include "tools/host_cells.h"
#include "tools/plummer.h"

namespace amrgrav::tests {

using Cells = amrgrav::tools::HostCells;
using tools::HostFmmTree;
using tools::hostFmmTree;
using tools::periodicFmmBox;
using tools::scaledPeriod;

/// An n^3 grid on [0, 1)^3 of masses h^3 times a random factor in [0.5, 1.5).
inline Cells uniformGrid(int n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> f(0.5, 1.5);
  const double h = 1.0 / n;
  Cells c;
  for (int k = 0; k < n; ++k)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) c.push((i + 0.5) * h, (j + 0.5) * h, (k + 0.5) * h, h * h * h * f(rng), h);
  return c;
}

/// A random AMR-like mesh on [0, 1)^3: an 8^3 base grid, each cell refined into its 8 children with a probability
/// that falls with the distance from three random centres, down to 5 levels below the base; density ~ 1 / (r^2 +
/// 0.01) about the first centre times a random factor, so masses span orders of magnitude.
inline Cells randomAmr(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1), pos(0.2, 0.8);
  double centre[3][3];
  for (auto& c : centre)
    for (double& x : c) x = pos(rng);
  Cells out;
  struct Box {
    double lo[3], h;
    int level;
  };
  std::vector<Box> stack;
  const int base = 8;
  for (int k = 0; k < base; ++k)
    for (int j = 0; j < base; ++j)
      for (int i = 0; i < base; ++i) stack.push_back({{double(i) / base, double(j) / base, double(k) / base}, 1.0 / base, 0});
  while (!stack.empty()) {
    const Box b = stack.back();
    stack.pop_back();
    double mid[3], d2 = 1e30;
    for (int d = 0; d < 3; ++d) mid[d] = b.lo[d] + 0.5 * b.h;
    for (auto& c : centre) {
      double s = 0;
      for (int d = 0; d < 3; ++d) s += (mid[d] - c[d]) * (mid[d] - c[d]);
      d2 = std::min(d2, s);
    }
    const double p = 0.9 * std::exp(-std::sqrt(d2) / (0.1 * (b.level + 1)));
    if (b.level < 5 && u(rng) < p) {
      const double q = 0.5 * b.h;
      for (int o = 0; o < 8; ++o)
        stack.push_back({{b.lo[0] + (o & 1) * q, b.lo[1] + (o >> 1 & 1) * q, b.lo[2] + (o >> 2) * q}, q, b.level + 1});
      continue;
    }
    double r2 = 0;
    for (int d = 0; d < 3; ++d) r2 += (mid[d] - centre[0][d]) * (mid[d] - centre[0][d]);
    out.push(mid[0], mid[1], mid[2], b.h * b.h * b.h * (0.5 + u(rng)) / (r2 + 0.01), b.h);
  }
  return out;
}

/// A Plummer sphere of n points (tools/plummer.h; cubes of side 1e-6).
inline Cells plummer(std::size_t n) {
  tools::PlummerPoints p = tools::plummerPoints(n, 20);
  Cells c;
  c.x = std::move(p.x);
  c.y = std::move(p.y);
  c.z = std::move(p.z);
  c.m = std::move(p.m);
  c.h = std::move(p.h);
  return c;
}

}  // namespace amrgrav::tests
