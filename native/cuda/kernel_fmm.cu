/// \file kernel_fmm.cu
/// \brief The FMM's evaluation kernels (kernels_fmm.h): the generated M2L kernels (fmm/m2l_kernels.h, in double, one
/// interaction per thread) and the exact L2L and L2P over fmm/multi_index.h's tables, in the CPU's term order
/// (fmm/expansions.cpp). Every sum has a fixed order (no atomics): results are the same bits run to run; against the
/// CPU (lanes of 8, Newton reciprocal square roots) they differ by rounding only.
#include <cuda_runtime.h>

#include <string>

#include "cuda/check.h"
#include "cuda/kernels_fmm.h"

namespace amrgrav {
namespace fmm {
// What the generated kernels need of their arithmetic type (fmm/simd.h gives the CPU's): double on the device.
template <class T> __host__ __device__ __forceinline__ T bc(double c);
template <> __host__ __device__ __forceinline__ double bc<double>(double c) { return c; }
__host__ __device__ __forceinline__ double vsqrt(double v) { return sqrt(v); }
}  // namespace fmm
}  // namespace amrgrav

#include "fmm/m2l_kernels.h"

namespace amrgrav {
namespace cuda {
namespace {

constexpr int kMaxTerms = 120;       // termCount(7)
constexpr int kM2LThreads = 128;     // 4 target nodes (warps) per block
constexpr int kLeafThreads = 64;     // a leaf's cells (fmm/fmm_tree.h kFmmLeafSize), one per thread
constexpr unsigned kFull = 0xffffffffu;

__host__ __device__ constexpr int termsOf(int p) { return (p + 1) * (p + 2) * (p + 3) / 6; }

template <int P> __device__ __forceinline__ void derivativesFor(double x, double y, double z, double* D) {
  if constexpr (P == 3) fmm::derivatives3(x, y, z, D);
  else if constexpr (P == 4) fmm::derivatives4(x, y, z, D);
  else if constexpr (P == 5) fmm::derivatives5(x, y, z, D);
  else if constexpr (P == 6) fmm::derivatives6(x, y, z, D);
  else fmm::derivatives7(x, y, z, D);
}
/// Isolated boxes: multipoles about centres of mass, no dipole terms (evaluate.cpp's m2lOneFor<P, false>).
template <int P> __device__ __forceinline__ void m2lOneFor(const double* D, const double* Mb, double* La) {
  if constexpr (P == 3) fmm::m2lOne3nd(D, Mb, La);
  else if constexpr (P == 4) fmm::m2lOne4nd(D, Mb, La);
  else if constexpr (P == 5) fmm::m2lOne5nd(D, Mb, La);
  else if constexpr (P == 6) fmm::m2lOne6nd(D, Mb, La);
  else fmm::m2lOne7nd(D, Mb, La);
}

/// One warp per target node A: lane l takes A's sources l, l + 32, ... (the sources' multipoles read where they
/// lie), then each coefficient's 32 lane sums are added by a fixed shuffle tree into lane 0, which adds them to L.
template <int P>
__global__ void __launch_bounds__(kM2LThreads) fmmM2L(FmmDeviceView v) {
  constexpr int NT = termsOf(P);
  const unsigned A = (blockIdx.x * unsigned(kM2LThreads) + threadIdx.x) / 32u;
  const unsigned lane = threadIdx.x & 31u;
  if (A >= v.nodes) return;  // the whole warp
  const unsigned s0 = v.m2lStart[A], s1 = v.m2lStart[A + 1];
  if (s0 == s1) return;  // the whole warp
  double La[NT];
#pragma unroll
  for (int k = 0; k < NT; ++k) La[k] = 0.0;
  const double ax = v.centre[3 * std::size_t(A)], ay = v.centre[3 * std::size_t(A) + 1],
               az = v.centre[3 * std::size_t(A) + 2];
  for (unsigned q = s0 + lane; q < s1; q += 32u) {
    const std::size_t B = v.m2lSource[q];
    double D[NT];
    derivativesFor<P>(ax - v.centre[3 * B], ay - v.centre[3 * B + 1], az - v.centre[3 * B + 2], D);
    m2lOneFor<P>(D, v.M + B * std::size_t(v.mStride), La);
  }
  double* Lt = v.L + std::size_t(A) * NT;
#pragma unroll
  for (int k = 0; k < NT; ++k) {
    double s = La[k];
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) s += __shfl_down_sync(kFull, s, off);
    if (lane == 0) Lt[k] += s;
  }
}

/// out[t] = h^n / n! for every term (expansions.cpp's monomials, the same products in the same order).
__device__ __forceinline__ void monomials(const FmmDeviceView& v, double hx, double hy, double hz, double* out) {
  out[0] = 1.0;
  for (int t = 1; t < v.terms; ++t) {
    const int a = v.monoAxis[t];
    const double h = a == 0 ? hx : (a == 1 ? hy : hz);
    out[t] = out[v.monoPrev[t]] * h * v.monoScale[t];
  }
}

/// One thread per (node of [b, e), child slot): the node's L shifted to the child's centre, added to the child's L.
__global__ void fmmL2L(FmmDeviceView v, unsigned b, unsigned e) {
  const std::size_t tid = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (tid >= std::size_t(e - b) * 8) return;
  const unsigned i = b + unsigned(tid / 8), k = unsigned(tid % 8);
  if (k >= v.childCount[i]) return;
  const std::size_t c = v.childBegin[i] + k;
  double mono[kMaxTerms];
  monomials(v, v.centre[3 * c] - v.centre[3 * std::size_t(i)], v.centre[3 * c + 1] - v.centre[3 * std::size_t(i) + 1],
            v.centre[3 * c + 2] - v.centre[3 * std::size_t(i) + 2], mono);
  const double* Li = v.L + std::size_t(i) * v.terms;
  double* Lc = v.L + c * v.terms;
  for (int q = 0; q < v.terms; ++q) {
    double a = 0.0;
    for (int r = v.l2lStart[q]; r < v.l2lStart[q + 1]; ++r) a += Li[v.l2lKJ[r]] * mono[v.l2lJ[r]];
    Lc[q] += a;
  }
}

/// One block per leaf, a thread per cell: the leaf's L at the cell, added to phi; minus its gradient to g.
__global__ void __launch_bounds__(kLeafThreads) fmmL2P(FmmDeviceView v) {
  const unsigned leaf = v.leaves[blockIdx.x];
  const double* Li = v.L + std::size_t(leaf) * v.terms;
  const double cx = v.centre[3 * std::size_t(leaf)], cy = v.centre[3 * std::size_t(leaf) + 1],
               cz = v.centre[3 * std::size_t(leaf) + 2];
  const int ng = termsOf(v.order - 1);  // the gradient's terms: degree < p
  const unsigned b = v.cellBegin[leaf], e = b + v.cellCount[leaf];
  for (unsigned j = b + threadIdx.x; j < e; j += blockDim.x) {
    double mono[kMaxTerms];
    monomials(v, v.x[j] - cx, v.y[j] - cy, v.z[j] - cz, mono);
    double p = 0.0;
    for (int q = 0; q < v.terms; ++q) p += Li[q] * mono[q];
    v.phi[j] += p;
    if (!v.gx) continue;
    double f[3] = {0.0, 0.0, 0.0};
    for (int q = 0; q < ng; ++q)
      for (int d = 0; d < 3; ++d) f[d] += Li[v.plusAxis[d * v.terms + q]] * mono[q];
    v.gx[j] -= f[0];
    v.gy[j] -= f[1];
    v.gz[j] -= f[2];
  }
}

/// One block per target leaf: its cells (a thread each; more than a block's in rounds) against the cells of its near
/// leaves in the list's order, a block's worth of source cells at a time through shared memory. A leaf's own cell
/// pairs (r = 0) are left out, as evaluate.cpp's p2pSelf does.
template <bool Accel>
__global__ void __launch_bounds__(kLeafThreads) fmmP2P(FmmDeviceView v) {
  __shared__ double sx[kLeafThreads], sy[kLeafThreads], sz[kLeafThreads], sm[kLeafThreads];
  const unsigned li = blockIdx.x;
  const unsigned T = v.leaves[li];
  const unsigned tb = v.cellBegin[T], tn = v.cellCount[T];
  const unsigned n0 = v.nearStart[li], n1 = v.nearStart[li + 1];
  for (unsigned t0 = 0; t0 < tn; t0 += kLeafThreads) {  // block-uniform
    const bool active = t0 + threadIdx.x < tn;
    const unsigned i = tb + t0 + threadIdx.x;
    const double xi = active ? v.x[i] : 0.0, yi = active ? v.y[i] : 0.0, zi = active ? v.z[i] : 0.0;
    double p = 0.0, fx = 0.0, fy = 0.0, fz = 0.0;
    for (unsigned k = n0; k < n1; ++k) {
      const unsigned S = v.nearSource[k];
      const bool same = S == T;
      const unsigned sb = v.cellBegin[S], sn = v.cellCount[S];
      for (unsigned j0 = 0; j0 < sn; j0 += kLeafThreads) {
        __syncthreads();  // the previous tile is read by every thread
        if (j0 + threadIdx.x < sn) {
          const unsigned j = sb + j0 + threadIdx.x;
          sx[threadIdx.x] = v.x[j];
          sy[threadIdx.x] = v.y[j];
          sz[threadIdx.x] = v.z[j];
          sm[threadIdx.x] = v.mass[j];
        }
        __syncthreads();
        const unsigned m = min(unsigned(kLeafThreads), sn - j0);
        if (!active) continue;
        for (unsigned j = 0; j < m; ++j) {
          const double dx = xi - sx[j], dy = yi - sy[j], dz = zi - sz[j];
          const double r2 = dx * dx + dy * dy + dz * dz;
          if (same && !(r2 > 0.0)) continue;
          const double rinv = 1.0 / sqrt(r2);
          p += sm[j] * rinv;
          if constexpr (Accel) {
            const double t = sm[j] * (rinv * rinv * rinv);
            fx += t * dx;
            fy += t * dy;
            fz += t * dz;
          }
        }
      }
    }
    if (active) {
      v.phi[i] = p;
      if constexpr (Accel) {
        v.gx[i] = fx;
        v.gy[i] = fy;
        v.gz[i] = fz;
      }
    }
  }
}

}  // namespace

Status launchFmmP2P(const FmmDeviceView& v, cudaStream_t s) {
  if (v.leafCount == 0) return Status::success();
  if (v.gx) fmmP2P<true><<<v.leafCount, kLeafThreads, 0, s>>>(v);
  else fmmP2P<false><<<v.leafCount, kLeafThreads, 0, s>>>(v);
  AG_CUDA_LAUNCHED("fmmP2P");
  return Status::success();
}

Status launchFmmM2L(const FmmDeviceView& v, cudaStream_t s) {
  if (v.nodes == 0) return Status::success();
  constexpr unsigned perBlock = kM2LThreads / 32;
  const unsigned blocks = (v.nodes + perBlock - 1) / perBlock;
  switch (v.order) {
    case 3: fmmM2L<3><<<blocks, kM2LThreads, 0, s>>>(v); break;
    case 4: fmmM2L<4><<<blocks, kM2LThreads, 0, s>>>(v); break;
    case 5: fmmM2L<5><<<blocks, kM2LThreads, 0, s>>>(v); break;
    case 6: fmmM2L<6><<<blocks, kM2LThreads, 0, s>>>(v); break;
    case 7: fmmM2L<7><<<blocks, kM2LThreads, 0, s>>>(v); break;
    default:
      return Status::error(ErrorCode::Internal,
                           "CUDA backend: FMM order " + std::to_string(v.order) + " has no M2L kernel");
  }
  AG_CUDA_LAUNCHED("fmmM2L");
  return Status::success();
}

Status launchFmmL2L(const FmmDeviceView& v, unsigned b, unsigned e, cudaStream_t s) {
  if (e <= b) return Status::success();
  const std::size_t threads = std::size_t(e - b) * 8;
  fmmL2L<<<unsigned((threads + 127) / 128), 128, 0, s>>>(v, b, e);
  AG_CUDA_LAUNCHED("fmmL2L");
  return Status::success();
}

Status launchFmmL2P(const FmmDeviceView& v, cudaStream_t s) {
  if (v.leafCount == 0) return Status::success();
  fmmL2P<<<v.leafCount, kLeafThreads, 0, s>>>(v);
  AG_CUDA_LAUNCHED("fmmL2P");
  return Status::success();
}

}  // namespace cuda
}  // namespace amrgrav
