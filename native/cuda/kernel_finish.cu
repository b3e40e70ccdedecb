/// \file kernel_finish.cu
/// \brief Scaling, self term and scatter to the caller's order (cpu_backend.cpp finish()), and output poisoning.
#include "cuda/check.h"
#include "cuda/kernels.h"

namespace amrgrav {
namespace cuda {
namespace {

constexpr int kThreads = 256;

template <bool Accel>
__global__ void __launch_bounds__(kThreads) finishKernel(const FinishParams p) {
  const double s2 = p.scale * p.scale;
  for (unsigned i = blockIdx.x * kThreads + threadIdx.x; i < p.n; i += gridDim.x * kThreads) {
    const std::uint32_t j = p.order[i];
    double v = p.phi[i] * p.invMassScale;  // a power of two: exact
    v += p.selfCoefficient * p.cells[i].w / p.size[i];
    p.pot[j] = -p.G * (v * p.scale);
    if (Accel) {
      p.ax[j] = -p.G * ((p.gx[i] * p.invMassScale) * s2);
      p.ay[j] = -p.G * ((p.gy[i] * p.invMassScale) * s2);
      p.az[j] = -p.G * ((p.gz[i] * p.invMassScale) * s2);
    }
  }
}

__global__ void __launch_bounds__(kThreads) poisonKernel(double* p, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(kThreads) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * kThreads)
    p[i] = __longlong_as_double(0x7ff8dead0000beefLL);  // a quiet NaN with a recognisable payload
}

unsigned gridFor(std::size_t n) {
  const std::size_t b = (n + kThreads - 1) / kThreads;
  return unsigned(b < 1 ? 1 : (b > 65535u * 4 ? 65535u * 4 : b));
}

}  // namespace

Status launchFinish(const FinishParams& p, bool accelerations, cudaStream_t s) {
  if (p.n == 0) return Status::success();
  if (accelerations) finishKernel<true><<<gridFor(p.n), kThreads, 0, s>>>(p);
  else finishKernel<false><<<gridFor(p.n), kThreads, 0, s>>>(p);
  AG_CUDA_LAUNCHED("finishKernel");
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
