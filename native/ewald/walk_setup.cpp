/// \file walk_setup.cpp
/// \brief Table acquisition for a solve and the nodes' second moments.
#include "ewald/walk_setup.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "physics/moments_k.h"

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
  // physics/moments_k.h's rules, as cuda/kernel_moments.cu applies them on the device
  const std::size_t m = t.nodeCount();
  std::vector<double> S(m, 0.0);
  for (std::size_t i = m; i-- > 0;) {  // children follow their parent: reverse order sees children first
    const double* cm = &t.com[3 * i];
    double s = 0;
    if (t.isLeaf(i)) {
      const std::uint32_t b = t.cellBegin[i], e = b + t.cellCount[i];
      for (std::uint32_t j = b; j < e; ++j) {
        const double p[3] = {c.x[j], c.y[j], c.z[j]};
        double d[3];
        offsetFrom(p, cm, d);
        s = addCellSecondMoment(s, c.mass[j], d);
      }
    } else {
      const std::uint32_t b = t.childBegin[i], e = b + t.childCount[i];
      for (std::uint32_t k = b; k < e; ++k) {
        double d[3];
        offsetFrom(&t.com[3 * k], cm, d);
        s = addChildSecondMoment(s, S[k], t.mass[k], d);
        // with dipoles the child's centre is not its centre of mass: + 2 D.s
        if (!t.dipole.empty()) s = addDipoleSecondMoment(s, dipoleDot(&t.dipole[3 * k], d));
      }
    }
    S[i] = s;
  }
  return S;
}

}  // namespace amrgrav
