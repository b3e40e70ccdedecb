/// \file kernel_keys.cu
/// \brief Root-cube bounds, Morton keys, the stable key sort (CUB radix sort), the gather of one array into sorted,
/// scaled order and the nodes' first keys. Compiled with -fmad=false: every double here must round exactly as in
/// tree/sort_keys.cpp (the cells' extents through physics/moments_k.h's rules, the keys through tree/keys.h's).
#include <cub/device/device_radix_sort.cuh>
#include <math_constants.h>

#include "physics/moments_k.h"  // a cell's extent, std::min/max's pick (physics/rounding.h)
#include "tree/keys.h"
#include "core/validate.h"
#include "core/blocks.h"
#include "cuda/block_index.h"
#include "cuda/check.h"
#include "cuda/grid_stride.h"
#include "cuda/kernels.h"

namespace amrgrav {
namespace cuda {
namespace {

constexpr int kThreads = kGridThreads;

struct Bounds {
  double lo[3], hi[3], mass, minSize;
};

__device__ __forceinline__ void combine(Bounds& a, const Bounds& b) {
  for (int d = 0; d < 3; ++d) {
    a.lo[d] = stdMin(a.lo[d], b.lo[d]);
    a.hi[d] = stdMax(a.hi[d], b.hi[d]);
  }
  a.mass += b.mass;
  a.minSize = stdMin(a.minSize, b.minSize);
}

__device__ __forceinline__ Bounds emptyBounds() {
  Bounds b;
  for (int d = 0; d < 3; ++d) {
    b.lo[d] = CUDART_INF;
    b.hi[d] = -CUDART_INF;
  }
  b.mass = 0;
  b.minSize = CUDART_INF;
  return b;
}

/// Block-wide reduction of one Bounds per thread; the result is valid in thread 0.
__device__ Bounds blockReduce(Bounds b) {
  __shared__ Bounds warpPart[kThreads / 32];
  for (int off = 16; off > 0; off >>= 1) {
    Bounds o;
    for (int d = 0; d < 3; ++d) {
      o.lo[d] = __shfl_down_sync(0xffffffffu, b.lo[d], off);
      o.hi[d] = __shfl_down_sync(0xffffffffu, b.hi[d], off);
    }
    o.mass = __shfl_down_sync(0xffffffffu, b.mass, off);
    o.minSize = __shfl_down_sync(0xffffffffu, b.minSize, off);
    combine(b, o);
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) warpPart[warp] = b;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kThreads / 32; ++w) combine(b, warpPart[w]);
  }
  return b;
}

/// A block's part of a bounds pass: the first bad cell to the checks, the block's bounds reduced and written as
/// its partial (boundsFinalKernel combines them).
__device__ void finishBlockBounds(Bounds b, unsigned firstBad, const CellChecks& checks,
                                  double* __restrict__ partials) {
  if (firstBad != 0xffffffffu && checks.firstBad) atomicMin(checks.firstBad, firstBad);
  b = blockReduce(b);
  if (threadIdx.x == 0) {
    double* o = partials + kBoundsStride * blockIdx.x;
    for (int d = 0; d < 3; ++d) {
      o[d] = b.lo[d];
      o[3 + d] = b.hi[d];
    }
    o[6] = b.mass;
    o[7] = b.minSize;
  }
}

__global__ void __launch_bounds__(kThreads) boundsKernel(const DeviceCells cells, const double* __restrict__ mass,
                                                         const double* __restrict__ size, unsigned n,
                                                         const CellChecks checks, double* __restrict__ partials) {
  Bounds b = emptyBounds();
  const bool centres = cells.hasCentres(), sized = size || cells.made();
  unsigned firstBad = 0xffffffffu;
  for (unsigned i = blockIdx.x * kThreads + threadIdx.x; i < n; i += gridDim.x * kThreads) {
    // validateCells: finite position (inside the box if any), finite mass (non-negative unless signed), finite
    // positive size
    bool bad = false;
    if (centres) {
      double p[3];
      cells.centre(i, p[0], p[1], p[2]);
      const double s = size ? size[i] : sized ? cells.blockSize(i) : 0.0;  // without sizes: the box of the centres
      const double h = cellHalfSize(s);  // as chooseRootCube (physics/moments_k.h): lo = min(p - h), hi = max(p + h)
      bad = sized && !(isfinite(s) && s > 0.0);
      if (sized) b.minSize = stdMin(b.minSize, s);
      for (int d = 0; d < 3; ++d) {
        const double v = p[d];
        bad = bad || !isfinite(v) || (checks.hasBox && (v < checks.boxLo[d] || v > checks.boxHi[d]));
        growByCell(b.lo[d], b.hi[d], v, h);
      }
    }
    if (mass) {
      const double m = mass[i];
      bad = bad || !isfinite(m) || (m < 0.0 && !checks.signedMasses);
      b.mass += m;
    }
    if (bad && i < firstBad) firstBad = i;
  }
  finishBlockBounds(b, firstBad, checks, partials);
}

/// A block solve's masses made from the densities (core/blocks.h blockCellMass, written to mass) and checked and summed
/// as boundsKernel checks and sums a mass array: each thread takes the same cells in the same order (the grid's
/// stride), so the total has boundsKernel's bits. The densities of kUnroll of a thread's cells are read before
/// any is summed (the sum's order is kept; the reads overlap).
// no __restrict__: the packed float64 density may be the mass array itself (each cell is read before it is written)
constexpr unsigned kUnroll = 8;
__global__ void __launch_bounds__(kThreads) blockMassBoundsKernel(const BlockGeometry g, const BlockField rho,
                                                                  double* mass, const CellChecks checks,
                                                                  double* __restrict__ partials) {
  Bounds b = emptyBounds();
  unsigned firstBad = 0xffffffffu;
  const unsigned n = g.n, stride = gridDim.x * kThreads;  // n < 2^32 - 2^26 and kUnroll stride <= 2^19: no wrap
  for (unsigned i = blockIdx.x * kThreads + threadIdx.x; i < n; i += kUnroll * stride) {
    double m[kUnroll];
#pragma unroll
    for (unsigned u = 0; u < kUnroll; ++u) {
      const unsigned p = i + u * stride;
      if (p < n) {
        const CellIndex c = cellIndex(g, p);
        const double* h = g.geo + 6 * std::size_t(c.b);
        m[u] = blockCellMass(readField(rho, elementOf(rho, c)), h[3], h[4], h[5]);
      }
    }
#pragma unroll
    for (unsigned u = 0; u < kUnroll; ++u) {
      const unsigned p = i + u * stride;
      if (p < n) {
        mass[p] = m[u];
        const bool bad = !isfinite(m[u]) || (m[u] < 0.0 && !checks.signedMasses);
        b.mass += m[u];
        if (bad && p < firstBad) firstBad = p;
      }
    }
  }
  finishBlockBounds(b, firstBad, checks, partials);
}

__global__ void __launch_bounds__(kThreads) boundsFinalKernel(const double* __restrict__ partials, int count,
                                                              double* __restrict__ result) {
  Bounds b = emptyBounds();
  for (int i = threadIdx.x; i < count; i += kThreads) {
    Bounds o;
    for (int d = 0; d < 3; ++d) {
      o.lo[d] = partials[kBoundsStride * i + d];
      o.hi[d] = partials[kBoundsStride * i + 3 + d];
    }
    o.mass = partials[kBoundsStride * i + 6];
    o.minSize = partials[kBoundsStride * i + 7];
    combine(b, o);
  }
  b = blockReduce(b);
  if (threadIdx.x == 0) {
    for (int d = 0; d < 3; ++d) {
      result[d] = b.lo[d];
      result[3 + d] = b.hi[d];
    }
    result[6] = b.mass;
    result[7] = b.minSize;
  }
}

__global__ void __launch_bounds__(kThreads) keysKernel(const DeviceCells cells, unsigned n, double lo0, double lo1,
                                                       double lo2, double inv, std::uint64_t* __restrict__ keys,
                                                       std::uint32_t* __restrict__ idx) {
  for (unsigned i = blockIdx.x * kThreads + threadIdx.x; i < n; i += gridDim.x * kThreads) {
    // the same expression as sortCellsByKey (tree/keys.h is shared)
    double x, y, z;
    cells.centre(i, x, y, z);
    keys[i] = mortonKey(keyCoordinate(x, lo0, inv), keyCoordinate(y, lo1, inv), keyCoordinate(z, lo2, inv));
    idx[i] = i;
  }
}

__global__ void __launch_bounds__(kThreads) gatherKernel(const double* __restrict__ in,
                                                         const std::uint32_t* __restrict__ order, unsigned n,
                                                         double scale, double* __restrict__ out) {
  for (unsigned i = blockIdx.x * kThreads + threadIdx.x; i < n; i += gridDim.x * kThreads) out[i] = in[order[i]] * scale;
}

__global__ void __launch_bounds__(kThreads) nodeKeysKernel(const uint4* __restrict__ topo,
                                                           const std::uint64_t* __restrict__ keys, unsigned nodes,
                                                           std::uint64_t* __restrict__ out) {
  for (unsigned i = blockIdx.x * kThreads + threadIdx.x; i < nodes; i += gridDim.x * kThreads) out[i] = keys[topo[i].x];
}

/// checkCoincidentCells (core/validate.cpp) on the device: the smallest sorted position i whose cell has an
/// earlier one at the same centre within its run of equal keys, at most kCoincidentLookBack back (atomicMin).
/// x, y, z: the caller's (unsorted) centres; order: sorted position -> caller's index.
__global__ void __launch_bounds__(kThreads) coincidentKernel(const DeviceCells cells,
                                                             const std::uint64_t* __restrict__ keys,
                                                             const std::uint32_t* __restrict__ order, unsigned n,
                                                             unsigned* __restrict__ firstSorted) {
  for (unsigned i = blockIdx.x * kThreads + threadIdx.x + 1; i < n; i += gridDim.x * kThreads) {
    const std::uint64_t k = keys[i];
    if (keys[i - 1] != k) continue;  // the common case: one cell per key
    double bx, by, bz;
    cells.centre(order[i], bx, by, bz);
    unsigned back = 0;
    for (unsigned j = i; j-- > 0 && back < unsigned(kCoincidentLookBack) && keys[j] == k; ++back) {
      double ax, ay, az;
      cells.centre(order[j], ax, ay, az);
      if (ax == bx && ay == by && az == bz) {
        atomicMin(firstSorted, i);
        break;
      }
    }
  }
}

/// The bounds kernels' grid for n cells.
unsigned boundsBlocks(unsigned n) {
  unsigned blocks = (n + kThreads - 1) / kThreads;
  if (blocks > unsigned(kBoundsBlocks)) blocks = kBoundsBlocks;
  return blocks < 1 ? 1 : blocks;
}

}  // namespace

Status launchBounds(const DeviceCells& cells, const double* mass, const double* size, unsigned n,
                    const CellChecks& checks, double* partials, double* result, cudaStream_t s) {
  const unsigned blocks = boundsBlocks(n);
  boundsKernel<<<blocks, kThreads, 0, s>>>(cells, mass, size, n, checks, partials);
  AG_CUDA_LAUNCHED("boundsKernel");
  boundsFinalKernel<<<1, kThreads, 0, s>>>(partials, int(blocks), result);
  AG_CUDA_LAUNCHED("boundsFinalKernel");
  return Status::success();
}

Status launchBlockMassBounds(const BlockGeometry& g, const BlockField& rho, double* mass, const CellChecks& checks,
                             double* partials, double* result, cudaStream_t s) {
  const unsigned blocks = boundsBlocks(g.n);  // launchBounds' grid: the same cells per thread, the same sums
  blockMassBoundsKernel<<<blocks, kThreads, 0, s>>>(g, rho, mass, checks, partials);
  AG_CUDA_LAUNCHED("blockMassBoundsKernel");
  boundsFinalKernel<<<1, kThreads, 0, s>>>(partials, int(blocks), result);
  AG_CUDA_LAUNCHED("boundsFinalKernel");
  return Status::success();
}

Status launchCoincident(const DeviceCells& cells, const std::uint64_t* sortedKeys, const std::uint32_t* order,
                        unsigned n, unsigned* firstSorted, cudaStream_t s) {
  if (n < 2) return Status::success();
  coincidentKernel<<<gridFor(n - 1), kThreads, 0, s>>>(cells, sortedKeys, order, n, firstSorted);
  AG_CUDA_LAUNCHED("coincidentKernel");
  return Status::success();
}

Status launchKeys(const DeviceCells& cells, unsigned n, double lo0, double lo1, double lo2, double invCellSide,
                  std::uint64_t* keys, std::uint32_t* idx, cudaStream_t s) {
  keysKernel<<<gridFor(n), kThreads, 0, s>>>(cells, n, lo0, lo1, lo2, invCellSide, keys, idx);
  AG_CUDA_LAUNCHED("keysKernel");
  return Status::success();
}

Status sortPairs(void* temp, std::size_t& tempBytes, std::uint64_t* const keys[2], std::uint32_t* const idx[2],
                 unsigned n, int* selector, cudaStream_t s) {
  // Radix sort is stable, so equal keys keep ascending index order: the CPU's LSD sort gives the same order.
  cub::DoubleBuffer<std::uint64_t> k(keys[0], keys[1]);
  cub::DoubleBuffer<std::uint32_t> v(idx[0], idx[1]);
  AG_CUDA_TRY(cub::DeviceRadixSort::SortPairs(temp, tempBytes, k, v, n, 0, 3 * kKeyBits, s));
  if (temp) AG_CUDA_LAUNCHED("cub::DeviceRadixSort::SortPairs");
  // the pass count follows from the bit range, so the host knows where the result lands before the sort runs
  *selector = k.selector;
  if (v.selector != k.selector) return Status::error(ErrorCode::Internal, "CUDA backend: sort buffers out of step");
  return Status::success();
}

Status launchGather(const double* in, const std::uint32_t* order, unsigned n, double scale, double* out,
                    cudaStream_t s) {
  gatherKernel<<<gridFor(n), kThreads, 0, s>>>(in, order, n, scale, out);
  AG_CUDA_LAUNCHED("gatherKernel");
  return Status::success();
}

Status launchNodeKeys(const uint4* topo, const std::uint64_t* keys, unsigned nodes, std::uint64_t* out,
                      cudaStream_t s) {
  if (nodes == 0) return Status::success();
  nodeKeysKernel<<<gridFor(nodes), kThreads, 0, s>>>(topo, keys, nodes, out);
  AG_CUDA_LAUNCHED("nodeKeysKernel");
  return Status::success();
}

}  // namespace cuda
}  // namespace amrgrav
