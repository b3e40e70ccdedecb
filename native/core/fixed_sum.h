/// \file fixed_sum.h
/// \brief A sum whose rounding does not depend on the thread count or the backend: fixed chunks of consecutive
/// values, each summed in order, then the chunks' sums in order. The density contrast's total mass is taken so on
/// the CPU and for the GPU (on the host), so both subtract the same mean and build the same interaction lists.
#pragma once
#include <cstddef>

namespace amrgrav {

/// Values per chunk of fixedOrderSum.
constexpr std::size_t kFixedSumChunk = std::size_t(1) << 16;

/// sum_i v[i] in the fixed order above, over `threads` threads (0 = all).
double fixedOrderSum(const double* v, std::size_t n, int threads);

}  // namespace amrgrav
