/// \file kernel_fmm.cu
/// \brief The FMM's evaluation kernels (kernels_fmm.h): the generated fused M2L kernels (cuda/m2l_device.h, in
/// double, one interaction per thread) and the exact L2L and L2P over fmm/multi_index.h's tables, in the CPU's term order
/// (fmm/expansions.cpp). Every sum has a fixed order (no atomics): results are the same bits run to run; against the
/// CPU (lanes of 8, Newton reciprocal square roots) they differ by rounding only.
#include <cuda_runtime.h>

#include <string>

#include "cuda/check.h"
#include "cuda/kernels_fmm.h"
#include "cuda/m2l_device.h"

namespace amrgrav {
namespace cuda {
namespace {

constexpr int kMaxTerms = 120;       // termCount(7)
constexpr int kM2LThreads = 64;      // 2 target nodes (warps) per block: p 7 shares 56 KB, 4 blocks per SM
constexpr int kLeafThreads = 64;     // a leaf's cells (fmm/fmm_tree.h kFmmLeafSize), one per thread
constexpr unsigned kFull = 0xffffffffu;

__host__ __device__ constexpr int termsOf(int p) { return (p + 1) * (p + 2) * (p + 3) / 6; }

template <int P> struct FusedM2L;
#define AG_FUSED_M2L(P)                                                                                 \
  template <> struct FusedM2L<P> {                                                                      \
    static constexpr int kRegs = kM2LRegTerms##P, kShared = kM2LSharedTerms##P;                         \
    static __device__ __forceinline__ void add(double x, double y, double z, const double* Mb, double* La, \
                                               volatile double* Ls) {                                   \
      m2lFused##P(x, y, z, Mb, La, Ls);                                                                 \
    }                                                                                                   \
  };
AG_FUSED_M2L(3)
AG_FUSED_M2L(4)
AG_FUSED_M2L(5)
AG_FUSED_M2L(6)
AG_FUSED_M2L(7)
#undef AG_FUSED_M2L

/// Shared memory of one M2L block: a column per lane of each warp's shared L terms.
template <int P> constexpr std::size_t m2lSharedBytes() {
  return std::size_t(kM2LThreads) * FusedM2L<P>::kShared * sizeof(double);
}

/// Adds an L term's 32 lane sums into lane 0 by a fixed shuffle tree; lane 0 adds the total to *Lk.
__device__ __forceinline__ void addLaneSums(double s, unsigned lane, double* Lk) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) s += __shfl_down_sync(kFull, s, off);
  if (lane == 0) *Lk += s;
}

/// One warp per target node A: lane l takes A's sources l, l + 32, ... (the sources' multipoles read where they
/// lie) through m2l_device.h's fused kernel, its low-degree L terms in registers and the others in the lane's column
/// of shared memory (the p 7 kernel's 120 terms and 120 derivatives do not fit one thread's registers); then each
/// term's 32 lane sums are added by a fixed shuffle tree into lane 0, which adds them to L.
template <int P>
__global__ void __launch_bounds__(kM2LThreads) fmmM2L(FmmDeviceView v) {
  extern __shared__ double m2lShared[];
  using K = FusedM2L<P>;
  const unsigned A = (blockIdx.x * unsigned(kM2LThreads) + threadIdx.x) / 32u;
  const unsigned lane = threadIdx.x & 31u;
  if (A >= v.nodes) return;  // the whole warp
  const unsigned s0 = v.m2lStart[A], s1 = v.m2lStart[A + 1];
  if (s0 == s1) return;  // the whole warp
  double La[K::kRegs];
#pragma unroll
  for (int k = 0; k < K::kRegs; ++k) La[k] = 0.0;
  // this lane's column; volatile, so that the compiler does not keep its terms in registers across the loop (which
  // is what spilled)
  volatile double* Ls = m2lShared + (threadIdx.x / 32u) * (32u * K::kShared) + lane;
#pragma unroll
  for (int k = 0; k < K::kShared; ++k) Ls[32 * k] = 0.0;
  const double ax = v.centre[3 * std::size_t(A)], ay = v.centre[3 * std::size_t(A) + 1],
               az = v.centre[3 * std::size_t(A) + 2];
  for (unsigned q = s0 + lane; q < s1; q += 32u) {
    const std::size_t B = v.m2lSource[q];
    K::add(ax - v.centre[3 * B], ay - v.centre[3 * B + 1], az - v.centre[3 * B + 2], v.M + B * std::size_t(v.mStride),
           La, Ls);
  }
  // the terms in fmm/multi_index.h's order: those in registers are degrees 0..d, those in shared memory the rest
  double* Lt = v.L + std::size_t(A) * termsOf(P);
#pragma unroll
  for (int k = 0; k < K::kRegs; ++k) addLaneSums(La[k], lane, Lt + k);
#pragma unroll 4
  for (int k = 0; k < K::kShared; ++k) addLaneSums(Ls[32 * k], lane, Lt + K::kRegs + k);
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
/// leaves in the list's order, a block's worth of source cells at a time through shared memory (x, y and z, m as two
/// 16-byte loads). A leaf's own cell pairs (r = 0) are left out, as evaluate.cpp's p2pSelf does. 1/r is rsqrt (within
/// 1 ulp, as a division by the rounded sqrt is; one multi-function estimate and Newton steps instead of a sqrt and a
/// division).
template <bool Accel>
__global__ void __launch_bounds__(kLeafThreads) fmmP2P(FmmDeviceView v) {
  __shared__ double2 sxy[kLeafThreads], szm[kLeafThreads];
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
          sxy[threadIdx.x] = make_double2(v.x[j], v.y[j]);
          szm[threadIdx.x] = make_double2(v.z[j], v.mass[j]);
        }
        __syncthreads();
        const unsigned m = min(unsigned(kLeafThreads), sn - j0);
        if (!active) continue;
        for (unsigned j = 0; j < m; ++j) {
          const double2 a = sxy[j], b = szm[j];
          const double dx = xi - a.x, dy = yi - a.y, dz = zi - b.x;
          const double r2 = dx * dx + dy * dy + dz * dz;
          if (same && !(r2 > 0.0)) continue;
          const double rinv = rsqrt(r2);
          p += b.y * rinv;
          if constexpr (Accel) {
            const double t = b.y * (rinv * rinv * rinv);
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

namespace {

template <int P> Status launchM2L(const FmmDeviceView& v, unsigned blocks, cudaStream_t s) {
  constexpr std::size_t bytes = m2lSharedBytes<P>();
  if constexpr (bytes > 48 * 1024)  // above the default: asked for (once per process and device is enough; cheap)
    AG_CUDA_TRY(cudaFuncSetAttribute(fmmM2L<P>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
  fmmM2L<P><<<blocks, kM2LThreads, bytes, s>>>(v);
  AG_CUDA_LAUNCHED("fmmM2L");
  return Status::success();
}

}  // namespace

Status launchFmmM2L(const FmmDeviceView& v, cudaStream_t s) {
  if (v.nodes == 0) return Status::success();
  constexpr unsigned perBlock = kM2LThreads / 32;
  const unsigned blocks = (v.nodes + perBlock - 1) / perBlock;
  switch (v.order) {
    case 3: return launchM2L<3>(v, blocks, s);
    case 4: return launchM2L<4>(v, blocks, s);
    case 5: return launchM2L<5>(v, blocks, s);
    case 6: return launchM2L<6>(v, blocks, s);
    case 7: return launchM2L<7>(v, blocks, s);
    default:
      return Status::error(ErrorCode::Internal,
                           "CUDA backend: FMM order " + std::to_string(v.order) + " has no M2L kernel");
  }
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
