/// \file fixed_sum.cpp
/// \brief fixedOrderSum (see fixed_sum.h).
#include "core/fixed_sum.h"

#include <algorithm>
#include <vector>

#include "core/thread_pool.h"

namespace amrgrav {

double fixedOrderSum(const double* v, std::size_t n, int threads) {
  const std::size_t chunks = (n + kFixedSumChunk - 1) / kFixedSumChunk;
  std::vector<double> part(chunks, 0.0);
  parallelFor(chunks, 1, resolveThreadCount(threads), [&](std::size_t b, std::size_t e, int) {
    for (std::size_t c = b; c < e; ++c) {
      const std::size_t end = std::min(n, (c + 1) * kFixedSumChunk);
      double s = 0;
      for (std::size_t i = c * kFixedSumChunk; i < end; ++i) s += v[i];
      part[c] = s;
    }
  });
  double total = 0;
  for (double s : part) total += s;
  return total;
}

}  // namespace amrgrav
