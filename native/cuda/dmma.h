/// \file dmma.h
/// \brief One m8n8k4 FP64 product on the tensor cores, as the FMM's kernels take it (the near field's table steps,
/// cuda/kernel_fmm.cu; the study's lattice M2L, cuda/kernel_m2l_mma.cu). Internal to native/cuda (device code).
#pragma once
#include "fmm/p2p_mma_k.h"  // the lanes' elements

namespace amrgrav {
namespace cuda {

/// d (this lane's two elements of an 8 x 8 D) += A (8 x 4) B (4 x 8), this lane holding a of A and b of B: fmm/
/// p2p_mma_k.h's elements. sm_80 and later: one FP64 tensor-core instruction (DMMA; its four products' rounding is
/// the hardware's, the same bits run to run). Before sm_80: the same elements by shuffles, k ascending, fused.
__device__ __forceinline__ void dmma(double& d0, double& d1, double a, double b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  constexpr unsigned kAll = 0xffffffffu;
  const int lane = int(threadIdx.x & 31u), row = fmm::dmmaCRow(lane);
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const double ak = __shfl_sync(kAll, a, fmm::dmmaALane(row, k));
    const double b0 = __shfl_sync(kAll, b, fmm::dmmaBLane(k, fmm::dmmaCCol(lane, 0)));
    const double b1 = __shfl_sync(kAll, b, fmm::dmmaBLane(k, fmm::dmmaCCol(lane, 1)));
    d0 = fma(ak, b0, d0);
    d1 = fma(ak, b1, d1);
  }
#else
  asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};"
      : "+d"(d0), "+d"(d1)
      : "d"(a), "d"(b));
#endif
}

}  // namespace cuda
}  // namespace amrgrav
