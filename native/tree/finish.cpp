/// \file finish.cpp
/// \brief Scaling, self term and scatter back to the caller's order (see finish.h).
#include "tree/finish.h"

#include "core/thread_pool.h"

namespace amrgrav {

void finishSolve(const SortedCells& c, const SolveOptions& opt, const std::vector<double>& phi,
                 const std::vector<double>* g, SolveResult& out, int threads) {
  const std::size_t n = c.order.size();
  const ResultTargets t = out.targets(n, g != nullptr);
  const double s = c.scale, s2 = c.scale * c.scale;
  const double self = selfCoefficient(opt.selfPotential);
  constexpr std::size_t kGrain = std::size_t(1) << 16;  // each cell's outputs written once: any thread count
  parallelFor(n, kGrain, threads, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t i = b; i < e; ++i) {
      const double p = phi[i] + self * c.mass[i] / c.size[i];
      t.potential[c.order[i]] = -opt.G * (p * s);
    }
  });
  // fully periodic boxes: the volume-weighted mean of the potential (stats.meanPotential), in the sorted order; each
  // value made again as above rather than read back from the caller's order (sequential reads, the same bits)
  double vPhi = 0, vol = 0;
  if (opt.fullyPeriodic())
    for (std::size_t i = 0; i < n; ++i) {
      const double v = c.size[i] * c.size[i] * c.size[i];
      vPhi += v * (-opt.G * ((phi[i] + self * c.mass[i] / c.size[i]) * s));
      vol += v;
    }
  out.stats.meanPotential = vol > 0 ? vPhi / vol : 0.0;
  if (g) {
    double* a[3] = {t.ax, t.ay, t.az};
    parallelFor(n, kGrain, threads, [&](std::size_t b, std::size_t e, int) {
      for (int d = 0; d < 3; ++d)
        for (std::size_t i = b; i < e; ++i) a[d][c.order[i]] = -opt.G * (g[d][i] * s2);
    });
  }
}

double finishTargets(const SortedCells& c, const SolveOptions& opt, const std::vector<double>& phi,
                     const std::vector<double>* g, const std::uint32_t* targets, std::size_t count,
                     const std::vector<std::uint32_t>& sortedOf, PointResults& out) {
  const ResultTargets t = out.targets(count, g != nullptr);
  const double s = c.scale, s2 = c.scale * c.scale;
  const double self = selfCoefficient(opt.selfPotential);
  double vPhi = 0, vol = 0;
  for (std::size_t k = 0; k < count; ++k) {
    const std::size_t i = sortedOf[targets[k]];
    const double p = phi[i] + self * c.mass[i] / c.size[i];  // finishSolve's expression, so its bits
    t.potential[k] = -opt.G * (p * s);
    if (opt.fullyPeriodic()) {
      const double v = c.size[i] * c.size[i] * c.size[i];
      vPhi += v * t.potential[k];
      vol += v;
    }
    if (g) {
      t.ax[k] = -opt.G * (g[0][i] * s2);
      t.ay[k] = -opt.G * (g[1][i] * s2);
      t.az[k] = -opt.G * (g[2][i] * s2);
    }
  }
  return vol > 0 ? vPhi / vol : 0.0;
}

void finishPoints(const SortedCells& p, const SolveOptions& opt, const std::vector<double>& phi,
                  const std::vector<double>* g, PointResults& out) {
  const std::size_t n = p.order.size();
  const ResultTargets t = out.targets(n, g != nullptr);
  const double s = p.scale, s2 = p.scale * p.scale;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t j = p.order[i];
    t.potential[j] = -opt.G * (phi[i] * s);
    if (g) {
      t.ax[j] = -opt.G * (g[0][i] * s2);
      t.ay[j] = -opt.G * (g[1][i] * s2);
      t.az[j] = -opt.G * (g[2][i] * s2);
    }
  }
}

}  // namespace amrgrav
