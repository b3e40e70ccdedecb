/// \file grid_stride.h
/// \brief The launch size of the backend's grid-stride kernels (one item per thread, the loop strides over the
/// rest): blocks of kGridThreads, enough for n items, at least one and at most 4 x 65535.
#pragma once
#include <cstddef>

namespace amrgrav {
namespace cuda {

constexpr int kGridThreads = 256;

inline unsigned gridFor(std::size_t n) {
  const std::size_t b = (n + kGridThreads - 1) / kGridThreads;
  return unsigned(b < 1 ? 1 : (b > 65535u * 4 ? 65535u * 4 : b));
}

}  // namespace cuda
}  // namespace amrgrav
