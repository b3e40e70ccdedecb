/// \file walk_setup.cpp
/// \brief Table acquisition for a solve and the nodes' second moments.
#include "ewald/walk_setup.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

namespace amrgrav {

Status prepareEwaldTable(const SolveOptions& opt, double lengthScale, int threads, EwaldWalk& out, SolveStats& stats) {
  const auto t0 = std::chrono::steady_clock::now();
  double L[3], period[3];
  for (int d = 0; d < 3; ++d) {
    L[d] = (opt.boxHi[d] - opt.boxLo[d]) * lengthScale;
    period[d] = opt.periodic[d] ? L[d] : 0.0;
  }
  const EwaldTableSpec spec = ewaldSpecFor(L, opt.periodic, opt.ewaldResolution);
  Status st = acquireEwaldTable(spec, threads, true, out.table, &stats.ewaldTableSource);
  if (!st.ok()) return st;
  out.view = out.table->view(std::max({L[0], L[1], L[2]}), period);
  // built here and not cached: said once per process (later solves find the table in memory)
  if (stats.ewaldTableSource == 3 && !out.table->cacheWriteError.empty()) {
    char took[32];
    std::snprintf(took, sizeof took, "%.2g", out.table->secondsBuild);
    stats.ewaldCacheWarning = std::string("the Ewald table (") + took + " s to build) could not be cached on disk: " +
                              out.table->cacheWriteError +
                              "; every new process builds it again (set AMRGRAV_CACHE_DIR to a writable directory)";
  }
  stats.secondsEwaldTable = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return Status::success();
}

std::vector<double> nodeSecondMoments(const SortedCells& c, const Octree& t) {
  const std::size_t m = t.nodeCount();
  std::vector<double> S(m, 0.0);
  for (std::size_t i = m; i-- > 0;) {  // children follow their parent: reverse order sees children first
    const double* cm = &t.com[3 * i];
    double s = 0;
    if (t.isLeaf(i)) {
      const std::uint32_t b = t.cellBegin[i], e = b + t.cellCount[i];
      for (std::uint32_t j = b; j < e; ++j) {
        const double dx = c.x[j] - cm[0], dy = c.y[j] - cm[1], dz = c.z[j] - cm[2];
        s += c.mass[j] * (dx * dx + dy * dy + dz * dz);
      }
    } else {
      const std::uint32_t b = t.childBegin[i], e = b + t.childCount[i];
      for (std::uint32_t k = b; k < e; ++k) {
        const double dx = t.com[3 * k] - cm[0], dy = t.com[3 * k + 1] - cm[1], dz = t.com[3 * k + 2] - cm[2];
        s += S[k] + t.mass[k] * (dx * dx + dy * dy + dz * dz);
        if (!t.dipole.empty())  // about a centre that is not the child's centre of mass: 2 D.s
          s += 2 * (t.dipole[3 * k] * dx + t.dipole[3 * k + 1] * dy + t.dipole[3 * k + 2] * dz);
      }
    }
    S[i] = s;
  }
  return S;
}

}  // namespace amrgrav
