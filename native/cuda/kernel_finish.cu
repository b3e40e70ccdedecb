/// \file kernel_finish.cu
/// \brief Scaling and scatter to the caller's order (cpu_backend.cpp finish()), the self terms (added by the walk as
/// it writes, or for the direct path by a kernel of their own), and output poisoning.
#include <math_constants.h>

#include "cuda/check.h"
#include "cuda/grid_stride.h"
#include "cuda/kernels.h"
#include "physics/finish_k.h"

namespace amrgrav {
namespace cuda {
namespace {

constexpr int kThreads = kGridThreads;

template <bool Accel>
__global__ void __launch_bounds__(kThreads) finishKernel(const FinishParams p) {
  const double s2 = p.scale * p.scale;
  for (unsigned i = blockIdx.x * kThreads + threadIdx.x; i < p.n; i += gridDim.x * kThreads) {
    const std::uint32_t j = p.order[i];
    p.pot[j] = finishedPotential(p.phi[i], p.G, p.scale);  // phi folded: foldSelfTerm
    if (Accel) {
      p.ax[j] = finishedAcceleration(p.gx[i], p.G, p.invMassScale, s2);
      p.ay[j] = finishedAcceleration(p.gy[i], p.G, p.invMassScale, s2);
      p.az[j] = finishedAcceleration(p.gz[i], p.G, p.invMassScale, s2);
    }
  }
}

__global__ void __launch_bounds__(kThreads) foldSelfKernel(double* __restrict__ phi, const double* __restrict__ mass,
                                                           const double* __restrict__ size, unsigned n,
                                                           double invMassScale, double selfCoef) {
  const bool self = selfCoef != 0.0;
  for (unsigned i = blockIdx.x * kThreads + threadIdx.x; i < n; i += gridDim.x * kThreads)
    phi[i] = foldSelfTerm(phi[i], invMassScale, self ? selfTerm(selfCoef, mass[i], size[i]) : 0.0, self);
}

/// One warp per group: the group's smallest size, then the sizes replaced by the self terms.
__global__ void __launch_bounds__(kThreads) walkPrepKernel(double* __restrict__ size, const double* __restrict__ mass,
                                                           const unsigned* __restrict__ groupBegin,
                                                           unsigned numGroups, double selfCoef,
                                                           double* __restrict__ groupHmin) {
  const bool self = selfCoef != 0.0;
  const unsigned lane = threadIdx.x & 31, warps = gridDim.x * (kThreads / 32);
  for (unsigned g = blockIdx.x * (kThreads / 32) + (threadIdx.x >> 5); g < numGroups; g += warps) {
    const unsigned gb = groupBegin[g], nt = groupBegin[g + 1] - gb;
    double h = CUDART_INF;
    for (unsigned t = lane; t < nt; t += 32) {
      const double s = size[gb + t];
      h = s < h ? s : h;
      if (self) size[gb + t] = selfTerm(selfCoef, mass[gb + t], s);
    }
    for (int off = 16; off > 0; off >>= 1) {
      const double o = __shfl_xor_sync(0xffffffffu, h, off);
      h = o < h ? o : h;
    }
    if (lane == 0) groupHmin[g] = h;
  }
}

__global__ void __launch_bounds__(kThreads) poisonKernel(double* p, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(kThreads) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * kThreads)
    p[i] = __longlong_as_double(0x7ff8dead0000beefLL);  // a quiet NaN with a recognisable payload
}

__global__ void __launch_bounds__(kThreads) addIntoKernel(double* dst, const double* src, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(kThreads) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * kThreads)
    dst[i] = __dadd_rn(dst[i], src[i]);
}

}  // namespace

Status launchFinish(const FinishParams& p, bool accelerations, cudaStream_t s) {
  if (p.n == 0) return Status::success();
  if (accelerations) finishKernel<true><<<gridFor(p.n), kThreads, 0, s>>>(p);
  else finishKernel<false><<<gridFor(p.n), kThreads, 0, s>>>(p);
  AG_CUDA_LAUNCHED("finishKernel");
  return Status::success();
}

Status launchFoldSelf(double* phi, const double* mass, const double* size, unsigned n, double invMassScale,
                      double selfCoef, cudaStream_t s) {
  if (n == 0) return Status::success();
  foldSelfKernel<<<gridFor(n), kThreads, 0, s>>>(phi, mass, size, n, invMassScale, selfCoef);
  AG_CUDA_LAUNCHED("foldSelfKernel");
  return Status::success();
}

Status launchWalkPrep(double* size, const double* mass, const unsigned* groupBegin, unsigned numGroups,
                      double selfCoef, double* groupHmin, cudaStream_t s) {
  if (numGroups == 0) return Status::success();
  walkPrepKernel<<<gridFor(std::size_t(numGroups) * 32), kThreads, 0, s>>>(size, mass, groupBegin, numGroups,
                                                                           selfCoef, groupHmin);
  AG_CUDA_LAUNCHED("walkPrepKernel");
  return Status::success();
}

Status launchAddInto(double* dst, const double* src, std::size_t n, cudaStream_t s) {
  if (n == 0) return Status::success();
  addIntoKernel<<<gridFor(n), kThreads, 0, s>>>(dst, src, n);
  AG_CUDA_LAUNCHED("addIntoKernel");
  return Status::success();
}

Status launchPoison(double* p, std::size_t n, cudaStream_t s) {
  if (n == 0 || !p) return Status::success();
  poisonKernel<<<gridFor(n), kThreads, 0, s>>>(p, n);
  AG_CUDA_LAUNCHED("poisonKernel");
  return Status::success();
}

}  // namespace cuda
}  // namespace amrgrav
