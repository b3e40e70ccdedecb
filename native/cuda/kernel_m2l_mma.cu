/// \file kernel_m2l_mma.cu
/// \brief The M2L of same-level lattice nodes on the FP64 tensor cores (kernels_m2l_mma.h, fmm/m2l_mma_k.h): one warp
/// per tile of 8 x NT targets, the tile's 8 x NT locals in registers (NT x row tiles x 2 doubles a lane), its
/// offsets in turn; per offset, step by step, one load of the sources' 4 terms a column tile (B) and, for each row
/// tile the step feeds, one coalesced load of the offset's piece (A; or gathered from its derivatives in shared
/// memory) and NT products. No derivatives computed, no atomics: each target belongs to one tile, and its sums run
/// in a fixed order (the same bits run to run).
#include "cuda/kernels_m2l_mma.h"

#include <string>

#include "cuda/dmma.h"
#include "fmm/m2l_mma_k.h"

namespace amrgrav {
namespace cuda {
namespace {

constexpr int kWarpsPerBlock = 4;

/// Order P's plan's sizes (fmm/m2l_mma_k.h).
template <int P> struct Plan {
  static constexpr int kRows = fmm::m2lMmaRowTiles(P), kSteps = fmm::m2lMmaStepCount(P);
  static constexpr int kTerms = fmm::m2lMmaTerms(P), kPieces = fmm::m2lMmaPieces(P);
};

/// Gather (M2lMmaView::D set): each offset's derivatives staged in the warp's shared memory (D and -D, then a zero)
/// and each piece's elements gathered from them through the order's index table (shared by the block), instead of
/// reading the offset's pieces (19.7 KB at p 7) from memory: 960 bytes an offset.
template <int P, int NT, bool Gather>
__global__ void __launch_bounds__(32 * kWarpsPerBlock) m2lMmaKernel(const M2lMmaView v) {
  using Pl = Plan<P>;
  extern __shared__ double smem[];
  constexpr int kStage = 2 * Pl::kTerms + 1;  // a warp's D, -D and 0
  double* sD = smem + (threadIdx.x >> 5) * kStage;
  const std::uint8_t* sIdx = reinterpret_cast<const std::uint8_t*>(smem + kWarpsPerBlock * kStage);
  if constexpr (Gather) {
    std::uint8_t* idx = reinterpret_cast<std::uint8_t*>(smem + kWarpsPerBlock * kStage);
    for (int i = int(threadIdx.x); i < 32 * Pl::kPieces; i += int(blockDim.x)) idx[i] = v.index[i];
    __syncthreads();  // the only block-wide barrier: warps without a tile leave after it
  }
  const unsigned tile = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  if (tile >= v.tiles) return;  // whole warps leave together
  const int lane = int(threadIdx.x & 31u);
  double c[NT][Pl::kRows][2];
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int r = 0; r < Pl::kRows; ++r) c[j][r][0] = c[j][r][1] = 0.0;
  const int bRow = fmm::dmmaBRow(lane), bCol = fmm::dmmaBCol(lane);
  for (std::uint32_t q = v.start[tile]; q < v.start[tile + 1]; ++q) {
    const double* Mj[NT];
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const std::int32_t src = v.source[std::size_t(8 * NT) * q + 8 * j + bCol];
      Mj[j] = src >= 0 ? v.M + std::size_t(src) * v.mStride : nullptr;
    }
    const double* A = nullptr;
    if constexpr (Gather) {
      __syncwarp();  // every lane done with the last offset's D
      const double* Do = v.D + std::size_t(v.offset[q]) * Pl::kTerms;
      for (int i = lane; i < Pl::kTerms; i += 32) {
        const double d = __ldg(Do + i);
        sD[i] = d;
        sD[Pl::kTerms + i] = -d;
      }
      if (lane == 0) sD[2 * Pl::kTerms] = 0.0;
      __syncwarp();
    } else {
      A = v.pieces + std::size_t(v.offset[q]) * (32 * Pl::kPieces) + lane;
    }
    int piece = 0;  // a constant in every unrolled step (step outer, row tile inner: fmm::m2lMmaPiece)
#pragma unroll
    for (int s = 0; s < Pl::kSteps; ++s) {
      const int n = 4 * s + bRow;
      double b[NT];
#pragma unroll
      for (int j = 0; j < NT; ++j) b[j] = Mj[j] && n < Pl::kTerms ? __ldg(Mj[j] + n) : 0.0;
#pragma unroll
      for (int r = 0; r < Pl::kRows; ++r) {
        if (s < fmm::m2lMmaSteps(P, r)) {
          double a;
          if constexpr (Gather) a = sD[sIdx[32 * piece + lane]];
          else a = __ldg(A + 32 * piece);
          ++piece;
#pragma unroll
          for (int j = 0; j < NT; ++j) dmma(c[j][r][0], c[j][r][1], a, b[j]);
        }
      }
    }
  }
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    std::int32_t tgt[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) tgt[i] = v.target[std::size_t(8 * NT) * tile + 8 * j + fmm::dmmaCCol(lane, i)];
#pragma unroll
    for (int r = 0; r < Pl::kRows; ++r) {
      const int k = 8 * r + fmm::dmmaCRow(lane);
      if (k >= Pl::kTerms) continue;
#pragma unroll
      for (int i = 0; i < 2; ++i)
        if (tgt[i] >= 0) v.L[std::size_t(tgt[i]) * v.terms + k] += c[j][r][i];
    }
  }
}

template <int P, int NT> void launchShape(const M2lMmaView& v, cudaStream_t s) {
  using Pl = Plan<P>;
  const unsigned blocks = (v.tiles + kWarpsPerBlock - 1) / kWarpsPerBlock;
  if (v.D) {
    const std::size_t bytes = kWarpsPerBlock * (2 * Pl::kTerms + 1) * sizeof(double) + 32 * Pl::kPieces;
    m2lMmaKernel<P, NT, true><<<blocks, 32 * kWarpsPerBlock, bytes, s>>>(v);
  } else {
    m2lMmaKernel<P, NT, false><<<blocks, 32 * kWarpsPerBlock, 0, s>>>(v);
  }
}

template <int P> Status launchOrder(const M2lMmaView& v, cudaStream_t s) {
  if (v.columnTiles == 1) launchShape<P, 1>(v, s);
  else launchShape<P, 2>(v, s);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    return Status::error(ErrorCode::Internal, std::string("CUDA backend: the tensor-core M2L: ") +
                                                  cudaGetErrorString(e));
  return Status::success();
}

}  // namespace

Status launchM2lMma(const M2lMmaView& v, cudaStream_t s) {
  if (v.tiles == 0) return Status::success();
  if (v.columnTiles != 1 && v.columnTiles != 2)
    return Status::error(ErrorCode::InvalidOption, "CUDA backend: the tensor-core M2L takes 1 or 2 column tiles");
  if (v.D ? !v.index : !v.pieces)
    return Status::error(ErrorCode::Internal,
                         "CUDA backend: the tensor-core M2L has no matrices (pieces, or D and index)");
  switch (v.order) {
    case 3: return launchOrder<3>(v, s);
    case 4: return launchOrder<4>(v, s);
    case 5: return launchOrder<5>(v, s);
    case 6: return launchOrder<6>(v, s);
    case 7: return launchOrder<7>(v, s);
    default:
      return Status::error(ErrorCode::Internal,
                           "CUDA backend: FMM order " + std::to_string(v.order) + " has no tensor-core M2L");
  }
}

}  // namespace cuda
}  // namespace amrgrav
