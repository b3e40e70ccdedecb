/// \file kernel_direct.cu
/// \brief O(N^2) direct summation on the GPU: tiled all-pairs. A block owns kDirectThreads consecutive targets
/// (sorted cells, or a system solve's probes) and streams every cell through shared memory in tiles of
/// kDirectThreads. Positions relative to the block's first target are carried as float pairs hi + lo (one double
/// subtraction per source per block) and d = (t_hi - s_hi) + (t_lo - s_lo) is accurate to float rounding of d
/// itself, however far the block's targets are spread (a sparse input) and however deep the mesh. Each tile's sum
/// is taken in float and added to double accumulators. The interaction bodies are physics/interact_k.h's, with
/// R = float.
#include "physics/interact_k.h"
#include "cuda/check.h"
#include "cuda/kernels.h"

namespace amrgrav {
namespace cuda {
namespace {

/// v - c as hi + lo floats (the difference (v - c) - hi is exact in double).
__device__ __forceinline__ void splitRel(double v, double c, float& hi, float& lo) {
  const double r = v - c;
  hi = float(r);
  lo = float(r - double(hi));
}

template <bool Accel>
__global__ void __launch_bounds__(kDirectThreads) directKernel(const DeviceCells targets, unsigned nt,
                                                               const DeviceCells cells, unsigned n,
                                                               double massScale, double* __restrict__ phi,
                                                               double* __restrict__ gx, double* __restrict__ gy,
                                                               double* __restrict__ gz) {
  __shared__ float4 tileHi[kDirectThreads];  // x, y, z (hi), mass
  __shared__ float4 tileLo[kDirectThreads];  // x, y, z (lo), unused
  const unsigned i = blockIdx.x * kDirectThreads + threadIdx.x;
  const bool valid = i < nt;
  const D4 ref = targets[blockIdx.x * kDirectThreads];
  const D4 me = targets[valid ? i : nt - 1];
  // the same conversion as the sources': a cell meets itself at exactly zero distance
  float tx, ty, tz, txl, tyl, tzl;
  splitRel(me.x, ref.x, tx, txl);
  splitRel(me.y, ref.y, ty, tyl);
  splitRel(me.z, ref.z, tz, tzl);
  double P = 0, GX = 0, GY = 0, GZ = 0;
  for (unsigned base = 0; base < n; base += kDirectThreads) {
    const unsigned j = base + threadIdx.x;
    float4 h = make_float4(0.f, 0.f, 0.f, 0.f), l = h;  // padding: mass 0 adds nothing
    if (j < n) {
      const D4 c = cells[j];
      splitRel(c.x, ref.x, h.x, l.x);
      splitRel(c.y, ref.y, h.y, l.y);
      splitRel(c.z, ref.z, h.z, l.z);
      h.w = float(c.w * massScale);
    }
    __syncthreads();  // the previous tile is consumed
    tileHi[threadIdx.x] = h;
    tileLo[threadIdx.x] = l;
    __syncthreads();
    float p = 0.f, fx = 0.f, fy = 0.f, fz = 0.f;
#pragma unroll 16
    for (int k = 0; k < kDirectThreads; ++k) {
      const float4 s = tileHi[k], sl = tileLo[k];
      const float dx = (tx - s.x) + (txl - sl.x), dy = (ty - s.y) + (tyl - sl.y), dz = (tz - s.z) + (tzl - sl.z);
      if (Accel) cellCellForce<float>(dx, dy, dz, s.w, p, fx, fy, fz);
      else cellCellPotential<float>(dx, dy, dz, s.w, p);
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

Status launchDirectAt(const DeviceCells& targets, unsigned nt, const DeviceCells& cells, unsigned n, double massScale,
                      bool accelerations, double* phi, double* gx, double* gy, double* gz, cudaStream_t s) {
  if (nt == 0 || n == 0) return Status::success();
  const unsigned blocks = (nt + kDirectThreads - 1) / kDirectThreads;
  if (accelerations)
    directKernel<true><<<blocks, kDirectThreads, 0, s>>>(targets, nt, cells, n, massScale, phi, gx, gy, gz);
  else directKernel<false><<<blocks, kDirectThreads, 0, s>>>(targets, nt, cells, n, massScale, phi, gx, gy, gz);
  AG_CUDA_LAUNCHED("directKernel");
  return Status::success();
}

Status launchDirect(const DeviceCells& cells, unsigned n, double massScale, bool accelerations, double* phi, double* gx,
                    double* gy, double* gz, cudaStream_t s) {
  return launchDirectAt(cells, n, cells, n, massScale, accelerations, phi, gx, gy, gz, s);
}

}  // namespace cuda
}  // namespace amrgrav
