/// \file thread_pool.h
/// \brief parallelFor over [0, n) in chunks handed out dynamically; which thread runs a chunk never changes
/// the result, because every chunk writes only its own outputs.
#pragma once
#include <cstddef>
#include <functional>

namespace amrgrav {

/// Number of threads to use for a request of `requested` (0 = all hardware threads).
int resolveThreadCount(int requested);

/// Calls fn(begin, end, threadIndex) for chunks of [0, n); returns when all are done.
void parallelFor(std::size_t n, std::size_t chunk, int threads,
                 const std::function<void(std::size_t, std::size_t, int)>& fn);

}  // namespace amrgrav
