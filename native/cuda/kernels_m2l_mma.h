/// \file kernels_m2l_mma.h
/// \brief The M2L of same-level lattice nodes on the FP64 tensor cores (fmm/m2l_mma_k.h; issue #20's study, run by
/// amrgrav_m2l_bench --mma; not yet in the solve). Tiles of 8 x `columnTiles` targets take their sources offset by
/// offset, each offset's matrix pieces made once on the host (fmm/m2l_mma.h).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "core/status.h"

namespace amrgrav {
namespace cuda {

/// Device pointers. Tile t (of 8 x columnTiles targets) holds targets target[8 columnTiles t + c] (-1: none) and
/// the offsets start[t] .. start[t + 1]: offset id offset[q] with column c's source source[8 columnTiles q + c]
/// (-1: none). pieces: each offset id's fmm::m2lMmaPieces(order) pieces of 32 doubles (lane order,
/// fmm::m2lMmaPiecesOf). L (terms per node) is added to.
struct M2lMmaView {
  int order = 0, terms = 0, mStride = 0, columnTiles = 1;
  unsigned tiles = 0;
  const std::uint32_t *start = nullptr, *offset = nullptr;
  const std::int32_t *source = nullptr, *target = nullptr;
  const double* pieces = nullptr;
  /// Instead of pieces (when set): each offset id's derivatives (terms doubles, at R = target - source) and the
  /// order's index table (fmm::m2lMmaIndexOf), the pieces gathered from the derivatives in shared memory.
  const double* D = nullptr;
  const std::uint8_t* index = nullptr;
  const double* M = nullptr;
  double* L = nullptr;
};

/// One launch over every tile, on s (orders 3..7, columnTiles 1 or 2).
Status launchM2lMma(const M2lMmaView& v, cudaStream_t s);

}  // namespace cuda
}  // namespace amrgrav
