/// \file kernel_direct.cu
/// \brief O(N^2) direct summation on the GPU: tiled all-pairs. A block owns kDirectThreads consecutive sorted
/// cells (spatially compact) and streams every cell through shared memory in tiles of kDirectThreads. Sources and
/// targets are converted to float relative to the block's first cell (one double subtraction per source per
/// block), so close pairs keep their float accuracy however deep the mesh; each tile's sum is taken in float
/// and added to double accumulators. The interaction bodies are core/interact_k.h's, with R = float.
#include "core/interact_k.h"
#include "cuda/check.h"
#include "cuda/kernels.h"

namespace amrgrav {
namespace cuda {
namespace {

template <bool Accel>
__global__ void __launch_bounds__(kDirectThreads) directKernel(const D4* __restrict__ cells, unsigned n,
                                                               double massScale, double* __restrict__ phi,
                                                               double* __restrict__ gx, double* __restrict__ gy,
                                                               double* __restrict__ gz) {
  __shared__ float4 tile[kDirectThreads];
  const unsigned i = blockIdx.x * kDirectThreads + threadIdx.x;
  const bool valid = i < n;
  const D4 ref = cells[blockIdx.x * kDirectThreads];
  const D4 me = cells[valid ? i : n - 1];
  // the same conversion as the sources': a cell meets itself at exactly zero distance
  const float tx = float(me.x - ref.x), ty = float(me.y - ref.y), tz = float(me.z - ref.z);
  double P = 0, GX = 0, GY = 0, GZ = 0;
  for (unsigned base = 0; base < n; base += kDirectThreads) {
    const unsigned j = base + threadIdx.x;
    float4 s = make_float4(0.f, 0.f, 0.f, 0.f);  // padding: mass 0 adds nothing
    if (j < n) {
      const D4 c = cells[j];
      s = make_float4(float(c.x - ref.x), float(c.y - ref.y), float(c.z - ref.z), float(c.w * massScale));
    }
    __syncthreads();  // the previous tile is consumed
    tile[threadIdx.x] = s;
    __syncthreads();
    float p = 0.f, fx = 0.f, fy = 0.f, fz = 0.f;
#pragma unroll 16
    for (int k = 0; k < kDirectThreads; ++k) {
      const float4 src = tile[k];
      if (Accel) cellCellForce<float>(tx - src.x, ty - src.y, tz - src.z, src.w, p, fx, fy, fz);
      else cellCellPotential<float>(tx - src.x, ty - src.y, tz - src.z, src.w, p);
    }
    P += double(p);
    if (Accel) {
      GX += double(fx);
      GY += double(fy);
      GZ += double(fz);
    }
  }
  if (valid) {
    phi[i] = P;
    if (Accel) {
      gx[i] = GX;
      gy[i] = GY;
      gz[i] = GZ;
    }
  }
}

}  // namespace

Status launchDirect(const D4* cells, unsigned n, double massScale, bool accelerations, double* phi, double* gx,
                    double* gy, double* gz, cudaStream_t s) {
  if (n == 0) return Status::success();
  const unsigned blocks = (n + kDirectThreads - 1) / kDirectThreads;
  if (accelerations) directKernel<true><<<blocks, kDirectThreads, 0, s>>>(cells, n, massScale, phi, gx, gy, gz);
  else directKernel<false><<<blocks, kDirectThreads, 0, s>>>(cells, n, massScale, phi, gx, gy, gz);
  AG_CUDA_LAUNCHED("directKernel");
  return Status::success();
}

}  // namespace cuda
}  // namespace amrgrav
