/// \file kernel_particles.cu
/// \brief Particles on the device (issue #18, physics/softening_k.h): the softened direct sums of the 'direct'
/// method and the removal of a particle's own pair. The softened tree walks are kernel_walk.cu's (Soft kernels).
#include <math_constants.h>

#include "cuda/check.h"
#include "cuda/grid_stride.h"
#include "cuda/kernels.h"
#include "physics/softening_k.h"

namespace amrgrav {
namespace cuda {
namespace {

constexpr int kThreads = kGridThreads;

/// One thread per target, every source in double (the reference: exact pair softening, no tree).
template <bool Accel>
__global__ void __launch_bounds__(kThreads)
    directSoftKernel(const DeviceCells t, const double* __restrict__ tEps, unsigned nt, const DeviceCells src,
                     const double* __restrict__ sEps, unsigned n, SofteningKernel kernel, double massScale,
                     double* __restrict__ phi, double* __restrict__ gx, double* __restrict__ gy,
                     double* __restrict__ gz) {
  for (unsigned i = blockIdx.x * kThreads + threadIdx.x; i < nt; i += gridDim.x * kThreads) {
    const D4 a = t[i];
    const double ea = tEps ? tEps[i] : 0.0;
    double p = 0, x = 0, y = 0, z = 0;
    for (unsigned j = 0; j < n; ++j) {
      const D4 b = src[j];
      const double eps = pairSoftening(ea, sEps ? sEps[j] : 0.0);
      if (Accel) softPairForce<double>(a.x - b.x, a.y - b.y, a.z - b.z, b.w, eps, kernel, p, x, y, z);
      else softPairPotential<double>(a.x - b.x, a.y - b.y, a.z - b.z, b.w, eps, kernel, p);
    }
    phi[i] += p;
    if (Accel) {  // the walk's g convention: times massScale (kernel_finish.cu divides it out)
      gx[i] += x * massScale;
      gy[i] += y * massScale;
      gz[i] += z * massScale;
    }
  }
}

__global__ void __launch_bounds__(kThreads) removeOwnPairKernel(double* __restrict__ phi,
                                                                const double* __restrict__ mass,
                                                                const double* __restrict__ eps, unsigned n) {
  for (unsigned i = blockIdx.x * kThreads + threadIdx.x; i < n; i += gridDim.x * kThreads)
    phi[i] -= mass[i] / eps[i];
}

/// The nodes [begin, end) of one level: a leaf's softening range and source extent over its particles, an internal
/// node's over its children's (the next level's, complete); physics/softening_k.h's extent rules in the host's
/// order (tree/particle_tree.cpp), every operation rounded on its own: the same bits.
__global__ void __launch_bounds__(kThreads) nodeEpsKernel(const uint4* __restrict__ topo, const D4* __restrict__ mac,
                                                          const DeviceCells cells, const double* __restrict__ eps,
                                                          unsigned begin, unsigned end, double2* __restrict__ range,
                                                          double* __restrict__ extent) {
  for (unsigned i = begin + blockIdx.x * kThreads + threadIdx.x; i < end; i += gridDim.x * kThreads) {
    const uint4 t = topo[i];
    const D4 m = mac[i];
    const double com[3] = {m.x, m.y, m.z};
    double lo = CUDART_INF, hi = 0.0, b = 0.0;
    if (t.w == 0u) {
      double d2 = 0.0;
      for (unsigned j = t.x; j < t.x + t.y; ++j) {
        lo = fmin(lo, eps[j]);
        hi = fmax(hi, eps[j]);
        double x, y, z;
        cells.centre(j, x, y, z);
        d2 = stdMax(d2, extentDistance2(x, y, z, com));
      }
      b = leafExtent(d2);
    } else {
      for (unsigned c = t.z; c < t.z + t.w; ++c) {
        const double2 r = range[c];
        lo = fmin(lo, r.x);
        hi = fmax(hi, r.y);
        const D4 mc = mac[c];
        const double cc[3] = {mc.x, mc.y, mc.z};
        b = stdMax(b, childExtent(cc, extent[c], com));
      }
    }
    range[i] = make_double2(lo, hi);
    extent[i] = b;
  }
}

__global__ void __launch_bounds__(kThreads) groupEpsKernel(const unsigned* __restrict__ groupBegin, unsigned numGroups,
                                                           const double* __restrict__ eps,
                                                           double2* __restrict__ range) {
  for (unsigned g = blockIdx.x * kThreads + threadIdx.x; g < numGroups; g += gridDim.x * kThreads) {
    double lo = CUDART_INF, hi = 0.0;
    for (unsigned j = groupBegin[g]; j < groupBegin[g + 1]; ++j) {
      lo = fmin(lo, eps[j]);
      hi = fmax(hi, eps[j]);
    }
    range[g] = make_double2(lo, hi);
  }
}

}  // namespace

Status launchSofteningRanges(const uint4* topo, const D4* nodeMac, const DeviceCells& cells, const unsigned* levelStart,
                             int levels, const unsigned* groupBegin, unsigned numGroups, const double* eps,
                             double2* nodeRange, double* nodeExtent, double2* groupRange, cudaStream_t s) {
  for (int L = levels - 1; L >= 0; --L) {  // bottom-up: children before their parents
    const unsigned b = levelStart[L], e = levelStart[L + 1];
    if (e == b) continue;
    nodeEpsKernel<<<gridFor(e - b), kThreads, 0, s>>>(topo, nodeMac, cells, eps, b, e, nodeRange, nodeExtent);
    AG_CUDA_LAUNCHED("nodeEpsKernel");
  }
  if (numGroups > 0) {
    groupEpsKernel<<<gridFor(numGroups), kThreads, 0, s>>>(groupBegin, numGroups, eps, groupRange);
    AG_CUDA_LAUNCHED("groupEpsKernel");
  }
  return Status::success();
}

Status launchDirectSoft(const DeviceCells& targets, const double* targetEps, unsigned nt, const DeviceCells& sources,
                        const double* sourceEps, unsigned n, SofteningKernel kernel, double massScale,
                        bool accelerations, double* phi, double* gx, double* gy, double* gz, cudaStream_t s) {
  if (nt == 0 || n == 0) return Status::success();
  if (accelerations)
    directSoftKernel<true><<<gridFor(nt), kThreads, 0, s>>>(targets, targetEps, nt, sources, sourceEps, n, kernel,
                                                             massScale, phi, gx, gy, gz);
  else
    directSoftKernel<false><<<gridFor(nt), kThreads, 0, s>>>(targets, targetEps, nt, sources, sourceEps, n, kernel,
                                                              massScale, phi, gx, gy, gz);
  AG_CUDA_LAUNCHED("directSoftKernel");
  return Status::success();
}

Status launchRemoveOwnPair(double* phi, const double* mass, const double* eps, unsigned n, cudaStream_t s) {
  if (n == 0) return Status::success();
  removeOwnPairKernel<<<gridFor(n), kThreads, 0, s>>>(phi, mass, eps, n);
  AG_CUDA_LAUNCHED("removeOwnPairKernel");
  return Status::success();
}

}  // namespace cuda
}  // namespace amrgrav
