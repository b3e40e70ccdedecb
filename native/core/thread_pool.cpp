/// \file thread_pool.cpp
#include "core/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace amrgrav {

int resolveThreadCount(int requested) {
  if (requested > 0) return requested;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? int(hw) : 1;
}

void parallelFor(std::size_t n, std::size_t chunk, int threads,
                 const std::function<void(std::size_t, std::size_t, int)>& fn) {
  if (n == 0) return;
  chunk = std::max<std::size_t>(1, chunk);
  const std::size_t chunks = (n + chunk - 1) / chunk;
  const int t = int(std::min<std::size_t>(std::max(1, threads), chunks));
  std::atomic<std::size_t> next{0};
  auto worker = [&](int tid) {
    for (;;) {
      const std::size_t c = next.fetch_add(1);
      if (c >= chunks) return;
      const std::size_t b = c * chunk;
      fn(b, std::min(n, b + chunk), tid);
    }
  };
  if (t == 1) { worker(0); return; }
  std::vector<std::thread> pool;
  pool.reserve(t - 1);
  for (int i = 1; i < t; ++i) pool.emplace_back(worker, i);
  worker(0);
  for (auto& th : pool) th.join();
}

}  // namespace amrgrav
