/// \file kernel_fmm_tree.cu
/// \brief The FMM's tree and upward pass on the device (kernels_fmm_tree.h). Every rounding is explicit
/// (fmm/upward_k.h over physics/rounding.h's RoundNearest); built with -fmad=false all the same (cmake/cuda.cmake).
#include <string>

#include "cuda/check.h"
#include "cuda/grid_stride.h"
#include "cuda/kernels_fmm_tree.h"
#include "physics/fmm_mac_k.h"
#include "physics/moments_k.h"
#include "tree/keys.h"

namespace amrgrav {
namespace cuda {
namespace {

/// The level of node i (levelStart ascending; its last entry the node count).
__device__ __forceinline__ int levelOf(const FmmTreeView& v, unsigned i) {
  int l = 0;
  while (l + 1 < v.levels && v.levelStart[l + 1] <= i) ++l;
  return l;
}

__global__ void __launch_bounds__(kGridThreads) topologyKernel(FmmTreeView v, const uint4* __restrict__ topo,
                                                               const std::uint64_t* __restrict__ nodeKeys) {
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < v.nodes; i += gridDim.x * blockDim.x) {
    const uint4 t = topo[i];
    v.cellBegin[i] = t.x;
    v.cellCount[i] = t.y;
    v.childBegin[i] = t.z;
    v.childCount[i] = std::uint8_t(t.w);
    const int level = levelOf(v, i);
    const double side = nodeCubeSide(v.rootSide, level);  // tree/build.cpp's cube centres
    for (int d = 0; d < 3; ++d)
      v.cube[3 * i + d] = nodeCubeCentre(v.rootLo[d], nodeCubeCoordinate(nodeKeys[i], level, d), side);
  }
}

/// A node's warp works on monomial rows in shared memory, a slice of kSliceTerms terms at a time: a leaf's cells
/// kRowCells at a time, a lane per cell, or its children's offsets, a lane per child. kRowCells is a multiple of 8,
/// so row r of a chunk is the host's lane r mod 8. The slices keep a warp's shared memory near 9 KB, so that 16
/// warps share an SM (their 128 registers bound it; the whole rows took 31 KB: 6 warps, and the pass waited on
/// latency); each slice remakes its rows in registers, which costs little.
constexpr int kRowCells = 32;
/// The rows' term stride (term q of row r at (q - slice start) * kRowStride + r): padded, so lanes of different terms
/// reading one row meet 2-way bank conflicts at most, and lanes of one term writing their rows none.
constexpr int kRowStride = kRowCells + 1;
/// Terms of a slice: a lane per term.
constexpr int kSliceTerms = 32;
/// Slices of the highest order (120 terms at order 7).
constexpr int kMaxSlices = 4;
static_assert(kRowCells == 32 && kRowCells % fmm::kUpwardLanes == 0 && kSliceTerms * kMaxSlices >= 120 &&
                  kSliceTerms * kRowStride >= fmm::kUpwardLanes * 120,
              "the upward pass's lanes and shared memory (a slice's rows hold M2M's 8 children's rows of 120 terms)");

/// Dynamic shared memory of upwardLevelKernel (its warp's rows and masses: about 8.7 KB).
std::size_t upwardSharedBytes() { return (std::size_t(kSliceTerms) * kRowStride + kRowCells) * sizeof(double); }

/// The monomials h^n / n! of offset h, made in term order from compile-time tables (fmmMonomialStep's arithmetic,
/// so fmmMonomial's bits; the row stays in registers); the terms of [first, first + kSliceTerms) written to
/// out[(q - first) * stride] (all terms when first < 0: out[q * stride]).
template <int P>
__device__ __forceinline__ void monomialRowInto(const double h[3], double* out, int stride, int first) {
  constexpr fmm::MonoTablesOf<P> tab{};
  double row[tab.kTerms];
  row[0] = 1.0;
  if (first <= 0) out[0] = 1.0;
#pragma unroll
  for (int q = 1; q < tab.kTerms; ++q) {
    row[q] = fmm::fmmMonomialStepOf(row[tab.prev[q]], h[tab.axis[q]], tab.scale[q]);
    if (first < 0) out[q * stride] = row[q];
    else if (q >= first && q < first + kSliceTerms) out[(q - first) * stride] = row[q];
  }
}

/// A warp (block) per node of one level: lane 0 its sums and centre (a leaf's cells, loaded 32 at a time by the
/// lanes, handed to lane 0 in order by shuffles; or its children's sums in child order); then its multipoles. A
/// leaf: for each chunk of 32 cells and each slice of 32 terms, the cells' monomial rows (a lane per cell), then each
/// term's products (a lane per term) into its 8 lane sums in the cells' order (cell j in the host's lane
/// (j - b) mod 8: fmmP2MTerm's bits); a node with children: its children's offsets' rows (a lane per child), then
/// each term's M2M (fmmM2MTermOfRows; the children's multipoles read where they lie).
template <int P>
__global__ void __launch_bounds__(32) upwardLevelKernel(FmmTreeView v, unsigned levelBegin) {
  extern __shared__ double upwardShared[];
  constexpr unsigned kFull = 0xffffffffu;
  constexpr int T = fmm::MonoTablesOf<P>::kTerms, S = (T + kSliceTerms - 1) / kSliceTerms;
  const unsigned lane = threadIdx.x;
  const unsigned i = levelBegin + blockIdx.x;
  double* mono = upwardShared;                    // kSliceTerms x kRowStride
  double* ms = mono + kSliceTerms * kRowStride;   // kRowCells
  const int nc = v.childCount[i];
  const std::uint32_t b = v.cellBegin[i], e = b + v.cellCount[i];
  // the node's sums: a leaf's cells in order, else its children's sums in child order (lane 0's)
  fmm::FmmSums a;
  if (nc == 0) {
    for (std::uint32_t cb = b; cb < e; cb += 32) {
      const std::uint32_t j = cb + lane;
      const bool in = j < e;
      const double cx = in ? v.x[j] : 0.0, cy = in ? v.y[j] : 0.0, cz = in ? v.z[j] : 0.0, cm = in ? v.mass[j] : 0.0;
      const int rows = e - cb < 32u ? int(e - cb) : 32;
      for (int r = 0; r < rows; ++r) {
        const double x = __shfl_sync(kFull, cx, r), y = __shfl_sync(kFull, cy, r), z = __shfl_sync(kFull, cz, r),
                     m = __shfl_sync(kFull, cm, r);
        if (lane == 0) fmm::fmmAddCell(a, m, x, y, z);
      }
    }
  } else if (lane == 0) {
    for (int k = 0; k < nc; ++k) {
      const double* s = v.sums + 5 * std::size_t(v.childBegin[i] + unsigned(k));
      fmm::FmmSums c;
      c.m = s[0];
      c.am = s[1];
      for (int d = 0; d < 3; ++d) c.s[d] = s[2 + d];
      fmm::fmmAddSums(a, c);
    }
  }
  double ctr[3] = {0.0, 0.0, 0.0};
  if (lane == 0) {
    double* s = v.sums + 5 * std::size_t(i);
    s[0] = a.m;
    s[1] = a.am;
    for (int d = 0; d < 3; ++d) {
      s[2 + d] = a.s[d];
      ctr[d] = fmm::fmmCentreOf(a, d, v.cube[3 * std::size_t(i) + d], v.dipoles);
      v.centre[3 * std::size_t(i) + d] = ctr[d];
    }
  }
  for (int d = 0; d < 3; ++d) ctr[d] = __shfl_sync(kFull, ctr[d], 0);
  double* M = v.M + std::size_t(i) * std::size_t(v.mStride);
  if (nc == 0) {
    double lanes[S][fmm::kUpwardLanes];
#pragma unroll
    for (int u = 0; u < S; ++u)
#pragma unroll
      for (int l = 0; l < fmm::kUpwardLanes; ++l) lanes[u][l] = 0.0;
    for (std::uint32_t cb = b; cb < e; cb += kRowCells) {
      const int rows = e - cb < std::uint32_t(kRowCells) ? int(e - cb) : kRowCells;
      double h[3] = {0.0, 0.0, 0.0};
      if (int(lane) < rows) {
        const std::uint32_t j = cb + lane;
        h[0] = RoundNearest::sub(v.x[j], ctr[0]);
        h[1] = RoundNearest::sub(v.y[j], ctr[1]);
        h[2] = RoundNearest::sub(v.z[j], ctr[2]);
        ms[lane] = v.mass[j];
      }
#pragma unroll
      for (int u = 0; u < S; ++u) {
        if (int(lane) < rows) monomialRowInto<P>(h, mono + lane, kRowStride, kSliceTerms * u);
        __syncwarp();
        if (int(lane) + kSliceTerms * u < T)
#pragma unroll
          for (int r = 0; r < kRowCells; ++r)  // row r is the host's lane r mod 8 (cb - b a multiple of 32)
            if (r < rows)
              lanes[u][r % fmm::kUpwardLanes] =
                  fmm::fmmP2MLaneAdd(lanes[u][r % fmm::kUpwardLanes], ms[r], mono[lane * kRowStride + r]);
        __syncwarp();  // the rows are rewritten by the next slice
      }
    }
#pragma unroll
    for (int u = 0; u < S; ++u)
      if (int(lane) + kSliceTerms * u < T) M[lane + kSliceTerms * u] = fmm::fmmLaneTotal(lanes[u]);
    return;
  }
  // the children's offsets' rows, every term (term t of child l at rows[t * 8 + l])
  double* rows = upwardShared;
  const double* Mc = v.M + std::size_t(v.childBegin[i]) * std::size_t(v.mStride);
  if (int(lane) < nc) {
    const std::size_t ch = v.childBegin[i] + lane;
    double h[3];
    for (int d = 0; d < 3; ++d) h[d] = RoundNearest::sub(v.centre[3 * ch + d], ctr[d]);
    monomialRowInto<P>(h, rows + lane, fmm::kUpwardLanes, -1);
  }
  __syncwarp();
#pragma unroll
  for (int u = 0; u < S; ++u) {
    const int q = int(lane) + kSliceTerms * u;
    if (q < T)
      M[q] = fmm::fmmM2MTermOfRows(v.m2mJ, v.m2mNJ, v.m2mStart[q], v.m2mStart[q + 1], Mc, std::size_t(v.mStride), 1,
                                   rows, 1, fmm::kUpwardLanes, nc);
  }
}

template <int P>
Status launchUpwardLevelOf(const FmmTreeView& v, int level, unsigned width, cudaStream_t s) {
  // the most shared memory the SM can give: the warps' rows, not registers, bound how many nodes an SM works on
  static const cudaError_t carveout = cudaFuncSetAttribute(
      upwardLevelKernel<P>, cudaFuncAttributePreferredSharedMemoryCarveout, int(cudaSharedmemCarveoutMaxShared));
  AG_CUDA_TRY(carveout);
  upwardLevelKernel<P><<<width, 32, upwardSharedBytes(), s>>>(v, v.levelStart[level]);
  AG_CUDA_LAUNCHED("upwardLevelKernel");
  return Status::success();
}

/// A thread per cell, descending from the root (fmmChildHolding): the cell's squared distance to its node's centre
/// at each level; lanes of one node (contiguous: a level's nodes hold ascending cell ranges) reduced by a segmented
/// maximum, the first lane's value into the node's by an integer atomicMax on the bits (non-negative doubles order
/// as their bits).
__global__ void __launch_bounds__(kGridThreads) radiusKernel(FmmTreeView v) {
  const unsigned lane = threadIdx.x & 31u;
  const unsigned stride = gridDim.x * blockDim.x;
  for (unsigned base = blockIdx.x * blockDim.x + (threadIdx.x & ~31u); base < v.cells; base += stride) {
    const unsigned j = base + lane;
    unsigned node = j < v.cells ? 0u : 0xffffffffu;  // the root
    for (int l = 0; l < v.levels; ++l) {
      if (__all_sync(0xffffffffu, node == 0xffffffffu)) break;
      double r2 = node != 0xffffffffu ? fmm::fmmCellDistance2(v.x[j], v.y[j], v.z[j], v.centre + 3 * std::size_t(node))
                                      : 0.0;
      for (unsigned off = 1; off < 32; off <<= 1) {
        const double o = __shfl_down_sync(0xffffffffu, r2, off);
        const unsigned on = __shfl_down_sync(0xffffffffu, node, off);
        if (lane + off < 32 && on == node) r2 = stdMax(r2, o);
      }
      const unsigned prev = __shfl_up_sync(0xffffffffu, node, 1);
      if (node != 0xffffffffu && (lane == 0 || prev != node))
        atomicMax(v.r2 + node, static_cast<unsigned long long>(__double_as_longlong(r2)));
      if (node != 0xffffffffu) node = fmm::fmmChildHolding(v.cellBegin, v.childBegin, v.childCount, node, j);
    }
  }
}

__global__ void __launch_bounds__(kGridThreads) macKernel(FmmTreeView v) {
  const double rootAbsMass = v.sums[1];
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < v.nodes; i += gridDim.x * blockDim.x) {
    const double r = RoundNearest::sqrt(__longlong_as_double(static_cast<long long>(v.r2[i])));
    v.mac[i] = r;
    v.mac[v.nodes + i] = fmmCriticalRadius(r, v.theta);
    v.mac[2 * std::size_t(v.nodes) + i] = v.sums[5 * std::size_t(i) + 1];
    v.mac[3 * std::size_t(v.nodes) + i] =
        fmmPotentialLowerBound(v.centre + 3 * std::size_t(i), r, v.rootLo, v.rootSide, rootAbsMass);
  }
}

}  // namespace

Status launchFmmTopology(const FmmTreeView& v, const uint4* topo, const std::uint64_t* nodeKeys, cudaStream_t s) {
  if (v.nodes == 0) return Status::success();
  topologyKernel<<<gridFor(v.nodes), kGridThreads, 0, s>>>(v, topo, nodeKeys);
  AG_CUDA_LAUNCHED("topologyKernel");
  return Status::success();
}

Status launchFmmUpwardLevel(const FmmTreeView& v, int level, cudaStream_t s) {
  const unsigned width = v.levelStart[level + 1] - v.levelStart[level];
  if (width == 0) return Status::success();
  switch (v.terms) {
    case fmm::MonoTablesOf<1>::kTerms: return launchUpwardLevelOf<1>(v, level, width, s);
    case fmm::MonoTablesOf<2>::kTerms: return launchUpwardLevelOf<2>(v, level, width, s);
    case fmm::MonoTablesOf<3>::kTerms: return launchUpwardLevelOf<3>(v, level, width, s);
    case fmm::MonoTablesOf<4>::kTerms: return launchUpwardLevelOf<4>(v, level, width, s);
    case fmm::MonoTablesOf<5>::kTerms: return launchUpwardLevelOf<5>(v, level, width, s);
    case fmm::MonoTablesOf<6>::kTerms: return launchUpwardLevelOf<6>(v, level, width, s);
    case fmm::MonoTablesOf<7>::kTerms: return launchUpwardLevelOf<7>(v, level, width, s);
    default:
      return Status::error(ErrorCode::Internal,
                           "CUDA backend: the FMM's upward pass has no kernel for " + std::to_string(v.terms) + " terms");
  }
}

Status launchFmmRadius(const FmmTreeView& v, cudaStream_t s) {
  if (v.cells == 0) return Status::success();
  radiusKernel<<<gridFor(v.cells), kGridThreads, 0, s>>>(v);
  AG_CUDA_LAUNCHED("radiusKernel");
  return Status::success();
}

Status launchFmmMac(const FmmTreeView& v, cudaStream_t s) {
  if (v.nodes == 0) return Status::success();
  macKernel<<<gridFor(v.nodes), kGridThreads, 0, s>>>(v);
  AG_CUDA_LAUNCHED("macKernel");
  return Status::success();
}

}  // namespace cuda
}  // namespace amrgrav
