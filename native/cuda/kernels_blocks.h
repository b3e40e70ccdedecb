/// \file kernels_blocks.h
/// \brief The block entry's kernels (kernel_blocks.cu, built with -fmad=false): the cells made from the blocks'
/// geometry with core/blocks.h's formula (the host's bits), the masses from the caller's density in its own layout
/// (or packed), the sorted keys and cells of a kept tree, the results scattered into the caller's layout, and the
/// fixed-order chunk sums (core/fixed_sum.h) of the density contrast and the mean potential. Internal to native/cuda.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "core/status.h"

namespace amrgrav {
namespace cuda {

struct CellChecks;

/// The blocks as the kernels read them: per block lo[3], dx[3] (6 doubles, device memory), cells per block axis.
/// Cell p: block p / (nxb nyb nzb), then i fastest. With pow2 the cells per axis are powers of two and
/// cellIndex shifts by log2 of them (the walk makes every source cell's centre from it: cuda/block_index.h).
struct BlockGeometry {
  const double* geo = nullptr;
  unsigned nxb = 0, nyb = 0, nzb = 0;
  unsigned n = 0;  ///< cells
  bool pow2 = false;
  unsigned lx = 0, ly = 0, lb = 0;  ///< with pow2: log2 of nxb, nxb nyb, nxb nyb nzb
};

/// g with pow2 and the shifts set from its cells per axis.
BlockGeometry withShifts(BlockGeometry g);

/// A per-cell field over the blocks in device memory (core/blocks.h's layout): element of cell (i, j, k) of the
/// block at slot s = slots ? slots[b] : b is s * blockStride + varStride * (((k + gz) ny + (j + gy)) nx + i + gx).
/// The packed form (cells in order) is varStride 1, no guards, blockStride = cells per block, no slots.
struct BlockField {
  void* data = nullptr;
  int dtype = 0;  ///< 0 float64, 1 float32
  unsigned long long varStride = 1, blockStride = 0;
  int nx = 0, ny = 0;
  int gx = 0, gy = 0, gz = 0;
  const std::int32_t* slots = nullptr;
};

/// mass[p] = blockCellMass(rho(p), dx, dy, dz) of every cell (rho may be packed in `mass` itself, float64: each
/// element is read before it is written), checked and summed as launchBounds checks and sums a mass array, in the
/// same pass (kernel_keys.cu): the first bad cell flagged in checks.firstBad and the total in result[6], with
/// launchBounds' bits (its grid and order).
Status launchBlockMassBounds(const BlockGeometry& g, const BlockField& rho, double* mass, const CellChecks& checks,
                             double* partials, double* result, cudaStream_t s);

/// keys[i] of the cell order[i] (unscaled positions on the root cube, as launchKeys makes them).
Status launchBlockSortedKeys(const BlockGeometry& g, const std::uint32_t* order, double lo0, double lo1, double lo2,
                             double invCellSide, std::uint64_t* keys, cudaStream_t s);

/// The sorted cells' positions and sizes times `scale` (as launchGather of the unsorted ones gives them), and with
/// massOut the masses massIn gathered (launchGather's values); any output may be null.
Status launchBlockSortedCells(const BlockGeometry& g, const std::uint32_t* order, double scale, double* x, double* y,
                              double* z, double* size, const double* massIn, double* massOut, cudaStream_t s);

/// What the finish makes of the walk's sums (kernel_finish.cu finishKernel), sorted order.
struct BlockFinishValues {
  const double *phi = nullptr, *gx = nullptr, *gy = nullptr, *gz = nullptr;
  bool accelerations = false;
  double invMassScale = 1, scale = 1, G = 1;
};

/// The finish and the scatter in one pass (the device entry): finishKernel's values of sorted cell i written
/// straight into the caller's fields (dst[0] the potential, dst[1..3] the accelerations when asked for) at the
/// element of cell order[i] (its dtype; guard cells untouched). The same bits as launchFinish then
/// launchBlockScatter.
Status launchBlockFinish(const BlockGeometry& g, const std::uint32_t* order, const BlockFinishValues& v,
                         const BlockField dst[4], cudaStream_t s);

/// The packed results (cells in order) into the caller's field (its dtype; guard cells untouched).
Status launchBlockScatter(const BlockGeometry& g, const double* packed, const BlockField& dst, cudaStream_t s);

/// out[c] = sum of v[c chunk .. (c + 1) chunk) in order (core/fixed_sum.h's chunks), c < ceil(n / chunk).
Status launchChunkSums(const double* v, unsigned n, unsigned chunk, double* out, cudaStream_t s);

/// The mean potential's chunk sums (walk_phase.h meanPotentialOf): vp[c] = sum size^3 phi, vv[c] = sum size^3 over
/// the packed cells of chunk c, in order; size = the block's dx.
Status launchChunkVolumePhi(const BlockGeometry& g, const double* phi, unsigned chunk, double* vp, double* vv,
                            cudaStream_t s);

}  // namespace cuda
}  // namespace amrgrav
