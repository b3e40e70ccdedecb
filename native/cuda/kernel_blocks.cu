/// \file kernel_blocks.cu
/// \brief The block entry's kernels (kernels_blocks.h). Compiled with -fmad=false, and the formula itself
/// (core/blocks.h blockCellCentre, blockCellMass) rounds each operation explicitly: the cells are the host's bits.
#include "core/blocks.h"
#include "cuda/block_index.h"
#include "cuda/check.h"
#include "cuda/grid_stride.h"
#include "cuda/kernels_blocks.h"
#include "tree/keys.h"

namespace amrgrav {
namespace cuda {
namespace {

constexpr int kThreads = kGridThreads;

__global__ void __launch_bounds__(kThreads) blockSortedKeysKernel(const BlockGeometry g,
                                                                  const std::uint32_t* __restrict__ order, double lo0,
                                                                  double lo1, double lo2, double inv,
                                                                  std::uint64_t* __restrict__ keys) {
  for (unsigned i = blockIdx.x * kThreads + threadIdx.x; i < g.n; i += gridDim.x * kThreads) {
    const CellIndex c = cellIndex(g, order[i]);
    const double* b = g.geo + 6 * std::size_t(c.b);
    // launchKeys' expression (tree/keys.h) on the cell's unscaled centre
    keys[i] = mortonKey(keyCoordinate(blockCellCentre(b[0], c.i, b[3]), lo0, inv),
                        keyCoordinate(blockCellCentre(b[1], c.j, b[4]), lo1, inv),
                        keyCoordinate(blockCellCentre(b[2], c.k, b[5]), lo2, inv));
  }
}

__global__ void __launch_bounds__(kThreads) blockSortedCellsKernel(const BlockGeometry g,
                                                                   const std::uint32_t* __restrict__ order,
                                                                   double scale, double* x, double* y, double* z,
                                                                   double* size, const double* __restrict__ massIn,
                                                                   double* __restrict__ massOut) {
  for (unsigned i = blockIdx.x * kThreads + threadIdx.x; i < g.n; i += gridDim.x * kThreads) {
    const std::uint32_t o = order[i];
    if (massOut) massOut[i] = massIn[o];  // launchGather's value (times 1: exact)
    // launchGather's in[order[i]] * scale
    if (x || y || z) {
      double cx, cy, cz;
      blockCellAt(g, o, scale, cx, cy, cz);
      if (x) x[i] = cx;
      if (y) y[i] = cy;
      if (z) z[i] = cz;
    }
    if (size) size[i] = blockCellSize(g, o, scale);
  }
}

__global__ void __launch_bounds__(kThreads) blockScatterKernel(const BlockGeometry g,
                                                               const double* __restrict__ packed,
                                                               const BlockField dst) {
  for (unsigned p = blockIdx.x * kThreads + threadIdx.x; p < g.n; p += gridDim.x * kThreads) {
    const unsigned long long e = elementOf(dst, cellIndex(g, p));
    if (dst.dtype == 1) static_cast<float*>(dst.data)[e] = float(packed[p]);
    else static_cast<double*>(dst.data)[e] = packed[p];
  }
}

__device__ __forceinline__ void writeField(const BlockField& f, unsigned long long e, double v) {
  if (f.dtype == 1) static_cast<float*>(f.data)[e] = float(v);
  else static_cast<double*>(f.data)[e] = v;
}

/// finishKernel's products (kernel_finish.cu), each rounded as there: -G (phi scale), -G ((g / massScale) scale^2).
template <bool Accel>
__global__ void __launch_bounds__(kThreads) blockFinishKernel(const BlockGeometry g,
                                                              const std::uint32_t* __restrict__ order,
                                                              const BlockFinishValues v, const BlockField pot,
                                                              const BlockField ax, const BlockField ay,
                                                              const BlockField az) {
  const double s2 = __dmul_rn(v.scale, v.scale), minusG = -v.G;
  for (unsigned i = blockIdx.x * kThreads + threadIdx.x; i < g.n; i += gridDim.x * kThreads) {
    const CellIndex c = cellIndex(g, order[i]);
    writeField(pot, elementOf(pot, c), __dmul_rn(minusG, __dmul_rn(v.phi[i], v.scale)));
    if (Accel) {
      writeField(ax, elementOf(ax, c), __dmul_rn(minusG, __dmul_rn(__dmul_rn(v.gx[i], v.invMassScale), s2)));
      writeField(ay, elementOf(ay, c), __dmul_rn(minusG, __dmul_rn(__dmul_rn(v.gy[i], v.invMassScale), s2)));
      writeField(az, elementOf(az, c), __dmul_rn(minusG, __dmul_rn(__dmul_rn(v.gz[i], v.invMassScale), s2)));
    }
  }
}

__global__ void __launch_bounds__(kThreads) chunkSumsKernel(const double* __restrict__ v, unsigned n,
                                                            unsigned chunk, unsigned chunks,
                                                            double* __restrict__ out) {
  const unsigned c = blockIdx.x * kThreads + threadIdx.x;
  if (c >= chunks) return;
  const unsigned long long b = (unsigned long long)c * chunk;
  const unsigned long long e = b + chunk < n ? b + chunk : n;
  double s = 0;
  for (unsigned long long i = b; i < e; ++i) s = __dadd_rn(s, v[i]);
  out[c] = s;
}

__global__ void __launch_bounds__(kThreads) chunkVolumePhiKernel(const BlockGeometry g,
                                                                 const double* __restrict__ phi, unsigned chunk,
                                                                 unsigned chunks, double* __restrict__ vp,
                                                                 double* __restrict__ vv) {
  const unsigned c = blockIdx.x * kThreads + threadIdx.x;
  if (c >= chunks) return;
  const unsigned long long b = (unsigned long long)c * chunk;
  const unsigned long long e = b + chunk < g.n ? b + chunk : g.n;
  const unsigned cpb = g.nxb * g.nyb * g.nzb;
  double p = 0, w = 0;
  for (unsigned long long i = b; i < e; ++i) {
    const double h = g.geo[6 * (i / cpb) + 3];
    const double v = __dmul_rn(__dmul_rn(h, h), h);  // size * size * size
    p = __dadd_rn(p, __dmul_rn(v, phi[i]));
    w = __dadd_rn(w, v);
  }
  vp[c] = p;
  vv[c] = w;
}

}  // namespace

BlockGeometry withShifts(BlockGeometry g) {
  const auto log2Of = [](unsigned v, unsigned* l) {
    if (v == 0 || (v & (v - 1)) != 0) return false;
    unsigned k = 0;
    while ((1u << k) < v) ++k;
    *l = k;
    return true;
  };
  unsigned lx = 0, ly = 0, lz = 0;
  g.pow2 = log2Of(g.nxb, &lx) && log2Of(g.nyb, &ly) && log2Of(g.nzb, &lz);
  g.lx = lx;
  g.ly = lx + ly;
  g.lb = lx + ly + lz;
  return g;
}

Status launchBlockSortedKeys(const BlockGeometry& g, const std::uint32_t* order, double lo0, double lo1, double lo2,
                             double invCellSide, std::uint64_t* keys, cudaStream_t s) {
  if (g.n == 0) return Status::success();
  blockSortedKeysKernel<<<gridFor(g.n), kThreads, 0, s>>>(g, order, lo0, lo1, lo2, invCellSide, keys);
  AG_CUDA_LAUNCHED("blockSortedKeysKernel");
  return Status::success();
}

Status launchBlockSortedCells(const BlockGeometry& g, const std::uint32_t* order, double scale, double* x, double* y,
                              double* z, double* size, const double* massIn, double* massOut, cudaStream_t s) {
  if (g.n == 0) return Status::success();
  blockSortedCellsKernel<<<gridFor(g.n), kThreads, 0, s>>>(g, order, scale, x, y, z, size, massIn, massOut);
  AG_CUDA_LAUNCHED("blockSortedCellsKernel");
  return Status::success();
}

Status launchBlockScatter(const BlockGeometry& g, const double* packed, const BlockField& dst, cudaStream_t s) {
  if (g.n == 0) return Status::success();
  blockScatterKernel<<<gridFor(g.n), kThreads, 0, s>>>(g, packed, dst);
  AG_CUDA_LAUNCHED("blockScatterKernel");
  return Status::success();
}

Status launchBlockFinish(const BlockGeometry& g, const std::uint32_t* order, const BlockFinishValues& v,
                         const BlockField dst[4], cudaStream_t s) {
  if (g.n == 0) return Status::success();
  if (v.accelerations)
    blockFinishKernel<true><<<gridFor(g.n), kThreads, 0, s>>>(g, order, v, dst[0], dst[1], dst[2], dst[3]);
  else
    blockFinishKernel<false><<<gridFor(g.n), kThreads, 0, s>>>(g, order, v, dst[0], dst[0], dst[0], dst[0]);
  AG_CUDA_LAUNCHED("blockFinishKernel");
  return Status::success();
}

Status launchChunkSums(const double* v, unsigned n, unsigned chunk, double* out, cudaStream_t s) {
  const unsigned chunks = (n + chunk - 1) / chunk;
  if (chunks == 0) return Status::success();
  chunkSumsKernel<<<(chunks + kThreads - 1) / kThreads, kThreads, 0, s>>>(v, n, chunk, chunks, out);
  AG_CUDA_LAUNCHED("chunkSumsKernel");
  return Status::success();
}

Status launchChunkVolumePhi(const BlockGeometry& g, const double* phi, unsigned chunk, double* vp, double* vv,
                            cudaStream_t s) {
  const unsigned chunks = (g.n + chunk - 1) / chunk;
  if (chunks == 0) return Status::success();
  chunkVolumePhiKernel<<<(chunks + kThreads - 1) / kThreads, kThreads, 0, s>>>(g, phi, chunk, chunks, vp, vv);
  AG_CUDA_LAUNCHED("chunkVolumePhiKernel");
  return Status::success();
}

}  // namespace cuda
}  // namespace amrgrav
