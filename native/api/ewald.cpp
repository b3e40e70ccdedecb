/// \file ewald.cpp
/// \brief An Ewald table for the front ends (ewald.h) over ewald/.
#include "api/ewald.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <thread>
#include <utility>

#include "ewald/sums.h"
#include "ewald/table.h"

namespace amrgrav {
namespace api {

int ewaldDefaultResolution() { return kEwaldDefaultResolution; }

Status ewaldTable(const EwaldTableRequest& q, EwaldTableReport& r) {
  const double* L = q.L;
  const bool* periodic = q.periodic;
  EwaldGeometry geo;
  for (int d = 0; d < 3; ++d) { geo.L[d] = L[d]; geo.periodic[d] = periodic[d]; }
  Status st = validateEwaldGeometry(geo);
  if (!st.ok()) return st;
  std::shared_ptr<const EwaldTable> t;
  int source = 0;
  st = acquireEwaldTable(ewaldSpecFor(L, periodic, q.resolution),
                         std::max(1, q.threads == 0 ? int(std::thread::hardware_concurrency()) : q.threads),
                         q.memoryCache, t, &source);
  if (!st.ok()) return st;

  r = EwaldTableReport{};
  for (int d = 0; d < 3; ++d) { r.n[d] = t->n[d]; r.h[d] = t->h[d]; }
  r.points = double(t->points());
  r.bytes = double(t->coef.size() * sizeof(double));
  r.secondsBuild = t->secondsBuild;
  r.secondsLoad = t->secondsLoad;
  r.source = source == 1 ? "memory" : source == 2 ? "disk" : "built";
  r.cachePath = t->cachePath;
  r.cacheNote = t->cacheNote;

  // gridCheck: N: the stored coefficients at N grid points spread over the table (every point when N >= points)
  // against the exact sums at the same points: the largest difference and the largest |exact| of each
  // coefficient (tests: the fast fully periodic build equals the point-by-point sums)
  if (q.gridCheck) {
    const std::size_t want = std::size_t(std::max(1.0, q.gridPoints));
    const std::size_t total = t->points(), step = std::max<std::size_t>(1, total / want);
    std::vector<double> diff(kEwaldCoefs, 0.0), scale(kEwaldCoefs, 0.0);
    for (std::size_t p = 0; p < total; p += step) {
      const int i = int(p % (t->n[0] + 1)), j = int((p / (t->n[0] + 1)) % (t->n[1] + 1)),
                k = int(p / (std::size_t(t->n[0] + 1) * (t->n[1] + 1)));
      const double rr[3] = {i * t->h[0], j * t->h[1], k * t->h[2]};
      double ex[kEwaldCoefs];
      ewaldCorrectionExact(t->spec.box, rr, ex);
      for (int e = 0; e < kEwaldCoefs; ++e) {
        diff[e] = std::max(diff[e], std::fabs(t->coef[p * kEwaldCoefs + e] - ex[e]));
        scale[e] = std::max(scale[e], std::fabs(ex[e]));
      }
    }
    r.hasGrid = true;
    r.gridMaxDiff = std::move(diff);
    r.gridMaxAbs = std::move(scale);
  }

  if (q.hasPoints) {
    const double* pts = q.points.data();
    const std::size_t np = q.points.size() / 3;
    double period[3];
    for (int d = 0; d < 3; ++d) period[d] = periodic[d] ? L[d] : 0.0;
    const EwaldTableView v = t->view(std::max({L[0], L[1], L[2]}), period);
    std::vector<double> look(4 * np);
    for (std::size_t i = 0; i < np; ++i) {
      double dd[3];
      for (int d = 0; d < 3; ++d) dd[d] = nearestImage(pts[3 * i + d], v.period[d], v.invPeriod[d]);
      double* none = nullptr;
      ewaldLookup<1>(v, dd[0], dd[1], dd[2], &look[4 * i], &look[4 * i + 1], none, none);
    }
    r.hasLookup = true;
    r.lookup = std::move(look);
    if (q.exact) {
      std::vector<double> ex(kEwaldCoefs * np);
      for (std::size_t i = 0; i < np; ++i) {
        double dd[3];
        for (int d = 0; d < 3; ++d) dd[d] = nearestImage(pts[3 * i + d], v.period[d], v.invPeriod[d]);
        ewaldCorrectionExact(geo, dd, &ex[kEwaldCoefs * i]);
      }
      r.hasExact = true;
      r.exact = std::move(ex);
    }
  }
  return Status::success();
}

Status checkPeriodicBox(const SolveOptions& opt) {
  if (!opt.anyPeriodic()) return Status::success();
  double L[3];
  for (int d = 0; d < 3; ++d) L[d] = opt.boxHi[d] - opt.boxLo[d];
  int n[3];
  double h[3];
  return ewaldGrid(ewaldSpecFor(L, opt.periodic, opt.ewaldResolution), n, h);
}

}  // namespace api
}  // namespace amrgrav
