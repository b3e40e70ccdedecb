/// \file block_index.h
/// \brief Where a block solve's cell lives (device code, kernels_blocks.h's layout): cell p in block order as its
/// block and (i, j, k), its element in a caller's field, and a field's value read as double. Shared by
/// kernel_blocks.cu and the block solve's mass check (kernel_keys.cu).
#pragma once
#include <cstddef>

#include "core/blocks.h"
#include "cuda/kernels_blocks.h"

namespace amrgrav {
namespace cuda {

/// Block and (i, j, k) of cell p.
struct CellIndex {
  unsigned b;
  int i, j, k;
};

__device__ __forceinline__ CellIndex cellIndex(const BlockGeometry& g, unsigned p) {
  CellIndex c;
  if (g.pow2) {
    c.b = p >> g.lb;
    c.i = int(p & (g.nxb - 1));
    c.j = int((p >> g.lx) & (g.nyb - 1));
    c.k = int((p >> g.ly) & (g.nzb - 1));
    return c;
  }
  const unsigned cpb = g.nxb * g.nyb * g.nzb;
  c.b = p / cpb;
  unsigned r = p - c.b * cpb;
  c.i = int(r % g.nxb);
  r /= g.nxb;
  c.j = int(r % g.nyb);
  c.k = int(r / g.nyb);
  return c;
}

/// Centre of the block solve's cell p times scale (x 1 is exact): the bits the sorted cells had when they were
/// stored (kernel_blocks.cu's gather), from core/blocks.h's formula with each operation rounded on its own.
__device__ __forceinline__ void blockCellAt(const BlockGeometry& g, unsigned p, double scale, double& x, double& y,
                                            double& z) {
  const CellIndex c = cellIndex(g, p);
  // the block's 48 bytes in three read-only 16-byte loads (geo is 256-byte aligned, so each block's are 16-aligned)
  const double2* b = reinterpret_cast<const double2*>(g.geo + 6 * std::size_t(c.b));
  const double2 b0 = __ldg(b), b1 = __ldg(b + 1), b2 = __ldg(b + 2);  // lo x, y | lo z, dx | dy, dz
  x = __dmul_rn(blockCellCentre(b0.x, c.i, b1.y), scale);
  y = __dmul_rn(blockCellCentre(b0.y, c.j, b2.x), scale);
  z = __dmul_rn(blockCellCentre(b1.x, c.k, b2.y), scale);
}

/// Size (the block's dx) of cell p times scale.
__device__ __forceinline__ double blockCellSize(const BlockGeometry& g, unsigned p, double scale) {
  return __dmul_rn(g.geo[6 * std::size_t(cellIndex(g, p).b) + 3], scale);
}

__device__ __forceinline__ unsigned long long elementOf(const BlockField& f, const CellIndex& c) {
  const unsigned long long s = f.slots ? (unsigned long long)f.slots[c.b] : (unsigned long long)c.b;
  const unsigned long long cell =
      ((unsigned long long)(c.k + f.gz) * (unsigned long long)f.ny + (unsigned long long)(c.j + f.gy)) *
          (unsigned long long)f.nx +
      (unsigned long long)(c.i + f.gx);
  return s * f.blockStride + f.varStride * cell;
}

__device__ __forceinline__ double readField(const BlockField& f, unsigned long long e) {
  return f.dtype == 1 ? double(static_cast<const float*>(f.data)[e]) : static_cast<const double*>(f.data)[e];
}

}  // namespace cuda
}  // namespace amrgrav
