/// \file table.cpp
/// \brief Table grid, threaded build from the exact sums, the view, and the per-process memory cache.
#include "ewald/table.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

namespace amrgrav {

EwaldTableSpec ewaldSpecFor(const double L[3], const bool periodic[3], int resolution) {
  EwaldTableSpec s;
  const double m = std::max({L[0], L[1], L[2]});
  for (int d = 0; d < 3; ++d) {
    s.box.L[d] = L[d] == m ? 1.0 : L[d] / m;
    s.box.periodic[d] = periodic[d];
  }
  s.resolution = resolution;
  return s;
}

std::string ewaldSpecKey(const EwaldTableSpec& s) {
  char buf[160];
  std::uint64_t bits[3];
  for (int d = 0; d < 3; ++d) std::memcpy(&bits[d], &s.box.L[d], sizeof bits[d]);
  std::snprintf(buf, sizeof buf, "ewald-v3-p%d%d%d-n%d-%016llx-%016llx-%016llx", int(s.box.periodic[0]),
                int(s.box.periodic[1]), int(s.box.periodic[2]), s.resolution, (unsigned long long)bits[0],
                (unsigned long long)bits[1], (unsigned long long)bits[2]);
  return buf;
}

Status ewaldGrid(const EwaldTableSpec& s, int n[3], double h[3]) {
  Status st = validateEwaldGeometry(s.box);
  if (!st.ok()) return st;
  if (s.resolution < 4 || s.resolution > 512)
    return Status::error(ErrorCode::InvalidOption, "Ewald table resolution must be in [4, 512], got " +
                                                       std::to_string(s.resolution));
  double shortest = INFINITY;
  for (int d = 0; d < 3; ++d) if (s.box.periodic[d]) shortest = std::min(shortest, s.box.L[d]);
  const double h0 = shortest / (2.0 * s.resolution);
  std::size_t points = 1;
  for (int d = 0; d < 3; ++d) {
    const double range = s.box.periodic[d] ? kEwaldReach * s.box.L[d] : s.box.L[d];
    n[d] = std::max(1, int(std::ceil(range / h0 - 1e-9)));
    h[d] = range / n[d];
    points *= std::size_t(n[d] + 1);
  }
  if (points > kEwaldMaxPoints)
    return Status::error(ErrorCode::InvalidOption, "the Ewald table for this box would have " + std::to_string(points) +
                                                       " points (limit " + std::to_string(kEwaldMaxPoints) +
                                                       "): lower the resolution or the aspect ratio");
  return Status::success();
}

Status buildEwaldTable(const EwaldTableSpec& spec, int threads, EwaldTable& out) {
  const auto t0 = std::chrono::steady_clock::now();
  out = EwaldTable{};
  out.spec = spec;
  Status st = ewaldGrid(spec, out.n, out.h);
  if (!st.ok()) return st;
  const int nx = out.n[0] + 1, ny = out.n[1] + 1, nz = out.n[2] + 1;
  out.coef.assign(out.points() * kEwaldCoefs, 0.0);
  if (spec.box.periodic[0] && spec.box.periodic[1] && spec.box.periodic[2]) {
    // fully periodic: the whole grid at once (separable reciprocal sum, few real-space images; ~30 ms)
    ewaldCorrectionGrid3(spec.box, out.n, out.h, std::max(1, threads), out.coef.data());
    out.secondsBuild = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return Status::success();
  }
  // rows of constant (y, z) handed out dynamically: rows near the far corner cost more than others
  std::atomic<int> next{0};
  auto work = [&] {
    for (int row; (row = next.fetch_add(1)) < ny * nz;) {
      const int j = row % ny, k = row / ny;
      for (int i = 0; i < nx; ++i) {
        const double r[3] = {i * out.h[0], j * out.h[1], k * out.h[2]};
        ewaldCorrectionExact(spec.box, r, &out.coef[(std::size_t(row) * nx + i) * kEwaldCoefs]);
      }
    }
  };
  const int nt = std::max(1, std::min(threads, ny * nz));
  std::vector<std::thread> pool;
  for (int t = 1; t < nt; ++t) pool.emplace_back(work);
  work();
  for (auto& th : pool) th.join();
  out.secondsBuild = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return Status::success();
}

EwaldTableView EwaldTable::view(double unitLength, const double period[3]) const {
  EwaldTableView v;
  v.coef = coef.data();
  for (int d = 0; d < 3; ++d) {
    v.n[d] = n[d];
    v.h[d] = h[d];
    v.invH[d] = 1.0 / h[d];
    v.period[d] = period[d];
    v.invPeriod[d] = period[d] > 0 ? 1.0 / period[d] : 0.0;
    v.reach[d] = kEwaldReach * period[d];
  }
  v.invUnit = 1.0 / unitLength;
  return v;
}

Status acquireEwaldTable(const EwaldTableSpec& spec, int threads, bool useMemory,
                         std::shared_ptr<const EwaldTable>& out, int* source) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const EwaldTable>> memory;
  const std::string key = ewaldSpecKey(spec);
  // one builder at a time: concurrent solves of one shape wait for the first instead of building twice
  std::lock_guard<std::mutex> lock(mutex);
  if (useMemory) {
    auto it = memory.find(key);
    if (it != memory.end()) {
      out = it->second;
      if (source) *source = 1;
      return Status::success();
    }
  }
  auto table = std::make_shared<EwaldTable>();
  const std::string dir = ewaldCacheDir();
  const std::string path = dir.empty() ? std::string() : dir + "/" + key + ".bin";
  std::string why;
  if (path.empty()) {
    why = "no cache directory (set AMRGRAV_CACHE_DIR, XDG_CACHE_HOME or HOME)";
  } else if (readEwaldTableFile(path, spec, *table, why)) {
    table->fromCache = true;
  }
  if (!table->fromCache) {
    Status st = buildEwaldTable(spec, threads, *table);
    if (!st.ok()) return st;
    std::string wwhy;
    if (path.empty()) {
      table->cacheWriteError = why;
    } else if (!writeEwaldTableFile(path, *table, wwhy)) {
      why += (why.empty() ? "" : "; ") + wwhy;
      table->cacheWriteError = wwhy;
    }
  }
  table->cachePath = path;
  table->cacheNote = why;
  if (memory.size() >= 8) memory.erase(memory.begin());  // a few shapes per process at most, in practice one
  memory[key] = table;
  out = table;
  if (source) *source = table->fromCache ? 2 : 3;
  return Status::success();
}

}  // namespace amrgrav
