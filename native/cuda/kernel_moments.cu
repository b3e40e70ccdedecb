/// \file kernel_moments.cu
/// \brief Bottom-up moments, one level per launch (deepest first), in double, bit-for-bit as tree/moments.cpp:
/// the same operations in the same order, each product and sum rounded on its own (__dmul_rn/__dadd_rn, which
/// nvcc never fuses into an FMA, and the file is compiled with -fmad=false as well). The MAC radius and centre
/// of mass then equal the CPU's exactly, so the walk accepts exactly the CPU's nodes.
/// Also writes what the walk reads: the MAC record (double com, macRadius) and mass + quadrupole as float.
#include <math_constants.h>

#include "tree/keys.h"
#include "cuda/check.h"
#include "cuda/kernels.h"

namespace amrgrav {
namespace cuda {
namespace {

constexpr int kThreads = 128;

__device__ __forceinline__ double stdMin(double a, double b) { return b < a ? b : a; }
__device__ __forceinline__ double stdMax(double a, double b) { return a < b ? b : a; }

/// Inverse of spreadBits3: bits 0, 3, 6, ... of v to bits 0, 1, 2, ...
__device__ __forceinline__ std::uint32_t compactBits3(std::uint64_t v) {
  v &= 0x1249249249249249ULL;
  v = (v ^ (v >> 2)) & 0x10c30c30c30c30c3ULL;
  v = (v ^ (v >> 4)) & 0x100f00f00f00f00fULL;
  v = (v ^ (v >> 8)) & 0x1f0000ff0000ffULL;
  v = (v ^ (v >> 16)) & 0x1f00000000ffffULL;
  v = (v ^ (v >> 32)) & 0x1fffffULL;
  return std::uint32_t(v);
}

/// dx^2 + dy^2 + dz^2, left to right and unfused.
__device__ __forceinline__ double squaredNorm(double dx, double dy, double dz) {
  return __dadd_rn(__dadd_rn(__dmul_rn(dx, dx), __dmul_rn(dy, dy)), __dmul_rn(dz, dz));
}

/// moments.cpp addQuadrupole: q += m (3 d d^T - |d|^2 I), with C++'s left-to-right evaluation.
__device__ __forceinline__ void addQuadrupole(double* q, double m, double dx, double dy, double dz) {
  const double d2 = squaredNorm(dx, dy, dz);
  q[0] = __dadd_rn(q[0], __dmul_rn(m, __dsub_rn(__dmul_rn(__dmul_rn(3.0, dx), dx), d2)));
  q[1] = __dadd_rn(q[1], __dmul_rn(m, __dmul_rn(__dmul_rn(3.0, dx), dy)));
  q[2] = __dadd_rn(q[2], __dmul_rn(m, __dmul_rn(__dmul_rn(3.0, dx), dz)));
  q[3] = __dadd_rn(q[3], __dmul_rn(m, __dsub_rn(__dmul_rn(__dmul_rn(3.0, dy), dy), d2)));
  q[4] = __dadd_rn(q[4], __dmul_rn(m, __dmul_rn(__dmul_rn(3.0, dy), dz)));
  q[5] = __dadd_rn(q[5], __dmul_rn(m, __dsub_rn(__dmul_rn(__dmul_rn(3.0, dz), dz), d2)));
}

/// The moments a parent reads of its child k. Those of the deepest level's nodes (all leaves, most of the nodes)
/// are not stored, to save device memory: they are recomputed here from the leaf's cells with the leaf code's
/// operations in the same order (mass and quadrupole in one pass: the centre of mass, which the leaf code finds
/// between its two passes, is the child's MAC record's, exactly), so they equal the leaf's own bit for bit.
/// Recompute: only the level above the deepest has such children (and the registers this takes).
/// A leaf's cell about the leaf's centre of mass: its quadrupole and second-moment trace S (tree/moments.cpp,
/// ewald/walk_setup.cpp), one rounded operation at a time; the leaf code and childMoments' recomputation share it, so
/// both give the same bits.
__device__ __forceinline__ void addCellSecondMoments(const D4& cell, double cx, double cy, double cz, double* q,
                                                     double& S) {
  const double dx = __dsub_rn(cell.x, cx), dy = __dsub_rn(cell.y, cy), dz = __dsub_rn(cell.z, cz);
  addQuadrupole(q, cell.w, dx, dy, dz);
  S = __dadd_rn(S, __dmul_rn(cell.w, squaredNorm(dx, dy, dz)));
}

/// tree/moments.cpp's leaf dipole about (cx, cy, cz): d += m (x - c), the same differences as the quadrupole's.
__device__ __forceinline__ void addCellDipole(const D4& cell, double cx, double cy, double cz, double* d) {
  d[0] = __dadd_rn(d[0], __dmul_rn(cell.w, __dsub_rn(cell.x, cx)));
  d[1] = __dadd_rn(d[1], __dmul_rn(cell.w, __dsub_rn(cell.y, cy)));
  d[2] = __dadd_rn(d[2], __dmul_rn(cell.w, __dsub_rn(cell.z, cz)));
}

/// moments.cpp addDipoleShift: the child's dipole's part of moving its quadrupole to the parent's centre.
__device__ __forceinline__ void addDipoleShift(double* q, const double* D, const double* s) {
  const double ds = __dadd_rn(__dadd_rn(__dmul_rn(D[0], s[0]), __dmul_rn(D[1], s[1])), __dmul_rn(D[2], s[2]));
  const double ds2 = __dmul_rn(2.0, ds);
  q[0] = __dadd_rn(q[0], __dsub_rn(__dmul_rn(__dmul_rn(6.0, D[0]), s[0]), ds2));
  q[1] = __dadd_rn(q[1], __dmul_rn(3.0, __dadd_rn(__dmul_rn(D[0], s[1]), __dmul_rn(s[0], D[1]))));
  q[2] = __dadd_rn(q[2], __dmul_rn(3.0, __dadd_rn(__dmul_rn(D[0], s[2]), __dmul_rn(s[0], D[2]))));
  q[3] = __dadd_rn(q[3], __dsub_rn(__dmul_rn(__dmul_rn(6.0, D[1]), s[1]), ds2));
  q[4] = __dadd_rn(q[4], __dmul_rn(3.0, __dadd_rn(__dmul_rn(D[1], s[2]), __dmul_rn(s[1], D[2]))));
  q[5] = __dadd_rn(q[5], __dsub_rn(__dmul_rn(__dmul_rn(6.0, D[2]), s[2]), ds2));
}

template <bool Recompute>
__device__ __forceinline__ NodeMoments childMoments(const MomentsParams& p, unsigned k) {
  if (!Recompute || k < p.stored) return p.moments[k];
  const uint4 t = p.topo[k];
  const D4 mac = p.nodeMac[k];
  NodeMoments c;
  c.m = 0;
  c.a = 0;
  c.d[0] = c.d[1] = c.d[2] = 0;
  c.cx = mac.x;
  c.cy = mac.y;
  c.cz = mac.z;
  for (int r = 0; r < 6; ++r) c.q[r] = 0;
  c.s = 0;
  for (int d = 0; d < 3; ++d) {
    c.lo[d] = CUDART_INF;
    c.hi[d] = -CUDART_INF;
  }
  for (unsigned j = t.x; j < t.x + t.y; ++j) {
    const D4 cell = p.cells[j];
    c.m = __dadd_rn(c.m, cell.w);
    if (p.signedSources) c.a = __dadd_rn(c.a, fabs(cell.w));
    const double h = __dmul_rn(0.5, p.size[j]);
    c.lo[0] = stdMin(c.lo[0], __dsub_rn(cell.x, h));
    c.hi[0] = stdMax(c.hi[0], __dadd_rn(cell.x, h));
    c.lo[1] = stdMin(c.lo[1], __dsub_rn(cell.y, h));
    c.hi[1] = stdMax(c.hi[1], __dadd_rn(cell.y, h));
    c.lo[2] = stdMin(c.lo[2], __dsub_rn(cell.z, h));
    c.hi[2] = stdMax(c.hi[2], __dadd_rn(cell.z, h));
    addCellSecondMoments(cell, c.cx, c.cy, c.cz, c.q, c.s);
    if (p.signedSources) addCellDipole(cell, c.cx, c.cy, c.cz, c.d);
  }
  if (!p.signedSources) c.a = c.m;
  return c;
}

template <bool Recompute>
__global__ void __launch_bounds__(kThreads) momentsLevelKernel(MomentsParams p, unsigned begin, unsigned end,
                                                               int level) {
  const unsigned ii = begin + blockIdx.x * kThreads + threadIdx.x;
  if (ii >= end) return;
  const uint4 t = p.topo[ii];
  const bool leaf = t.w == 0;

  // geometric cube: side = root.side / 2^level, centre = lo + (i + 0.5) side, i = the key prefix (the CPU's
  // coords: 2 * parent + octant bit, per level)
  const double side = __ddiv_rn(p.rootSide, double(1u << level));
  const std::uint64_t prefix = p.nodeKeys[ii] >> (3 * (kKeyBits - level));
  const std::uint32_t ic[3] = {compactBits3(prefix), compactBits3(prefix >> 1), compactBits3(prefix >> 2)};
  double centre[3];
  for (int d = 0; d < 3; ++d) centre[d] = __dadd_rn(p.rootLo[d], __dmul_rn(double(ic[d]) + 0.5, side));

  const bool sgn = p.signedSources;
  double M = 0, A = 0, sx = 0, sy = 0, sz = 0;  // A: sum |m| (signed sources)
  double lo[3] = {CUDART_INF, CUDART_INF, CUDART_INF}, hi[3] = {-CUDART_INF, -CUDART_INF, -CUDART_INF};
  double q[6] = {0, 0, 0, 0, 0, 0};
  double D[3] = {0, 0, 0};
  if (leaf) {
    for (unsigned j = t.x; j < t.x + t.y; ++j) {
      const D4 c = p.cells[j];
      M = __dadd_rn(M, c.w);
      if (sgn) A = __dadd_rn(A, fabs(c.w));
      sx = __dadd_rn(sx, __dmul_rn(c.w, c.x));
      sy = __dadd_rn(sy, __dmul_rn(c.w, c.y));
      sz = __dadd_rn(sz, __dmul_rn(c.w, c.z));
      const double h = __dmul_rn(0.5, p.size[j]);
      lo[0] = stdMin(lo[0], __dsub_rn(c.x, h));
      hi[0] = stdMax(hi[0], __dadd_rn(c.x, h));
      lo[1] = stdMin(lo[1], __dsub_rn(c.y, h));
      hi[1] = stdMax(hi[1], __dadd_rn(c.y, h));
      lo[2] = stdMin(lo[2], __dsub_rn(c.z, h));
      hi[2] = stdMax(hi[2], __dadd_rn(c.z, h));
    }
  } else {
    for (unsigned k = t.z; k < t.z + t.w; ++k) {
      const NodeMoments c = childMoments<Recompute>(p, k);
      M = __dadd_rn(M, c.m);
      if (sgn) A = __dadd_rn(A, c.a);
      sx = __dadd_rn(sx, __dmul_rn(c.m, c.cx));
      sy = __dadd_rn(sy, __dmul_rn(c.m, c.cy));
      sz = __dadd_rn(sz, __dmul_rn(c.m, c.cz));
      for (int d = 0; d < 3; ++d) {
        lo[d] = stdMin(lo[d], c.lo[d]);
        hi[d] = stdMax(hi[d], c.hi[d]);
      }
    }
  }
  // the MAC's length and centre (moments.cpp: Barnes the cube's, Bonsai the tight box's)
  double l, ctr[3];
  if (p.mac == int(MacKind::Bonsai)) {
    // std::max({a, b, c})
    l = __dsub_rn(hi[0], lo[0]);
    const double l1 = __dsub_rn(hi[1], lo[1]), l2 = __dsub_rn(hi[2], lo[2]);
    if (l < l1) l = l1;
    if (l < l2) l = l2;
    for (int d = 0; d < 3; ++d) ctr[d] = __dmul_rn(0.5, __dadd_rn(lo[d], hi[d]));
  } else {
    l = side;
    for (int d = 0; d < 3; ++d) ctr[d] = centre[d];
  }
  const double W = sgn ? A : M;  // the node is empty unless W > 0
  double cm[3];
  if (sgn) {
    for (int d = 0; d < 3; ++d) cm[d] = ctr[d];  // signed sources: about the MAC's centre, with the dipole
  } else if (M > 0) {
    cm[0] = __ddiv_rn(sx, M);
    cm[1] = __ddiv_rn(sy, M);
    cm[2] = __ddiv_rn(sz, M);
  } else {
    for (int d = 0; d < 3; ++d) cm[d] = centre[d];  // massless: as the CPU (the walk skips it anyway)
  }
  double S = 0;  // ewald/walk_setup.cpp nodeSecondMoments
  if (leaf) {
    for (unsigned j = t.x; j < t.x + t.y; ++j) {
      const D4 cell = p.cells[j];
      addCellSecondMoments(cell, cm[0], cm[1], cm[2], q, S);
      if (sgn) addCellDipole(cell, cm[0], cm[1], cm[2], D);
    }
  } else {
    for (unsigned k = t.z; k < t.z + t.w; ++k) {  // parallel-axis theorem (with the child's dipole when signed)
      const NodeMoments c = childMoments<Recompute>(p, k);
      const double dx = __dsub_rn(c.cx, cm[0]), dy = __dsub_rn(c.cy, cm[1]), dz = __dsub_rn(c.cz, cm[2]);
      for (int r = 0; r < 6; ++r) q[r] = __dadd_rn(q[r], c.q[r]);
      addQuadrupole(q, c.m, dx, dy, dz);
      S = __dadd_rn(S, __dadd_rn(c.s, __dmul_rn(c.m, squaredNorm(dx, dy, dz))));
      if (sgn) {
        const double s[3] = {dx, dy, dz};
        addDipoleShift(q, c.d, s);
        for (int d = 0; d < 3; ++d) D[d] = __dadd_rn(D[d], __dadd_rn(c.d[d], __dmul_rn(c.m, s[d])));
        // ewald/walk_setup.cpp: + 2 D.s
        S = __dadd_rn(S, __dmul_rn(2.0, __dadd_rn(__dadd_rn(__dmul_rn(c.d[0], dx), __dmul_rn(c.d[1], dy)),
                                                  __dmul_rn(c.d[2], dz))));
      }
    }
  }
  if (ii < p.stored) {
    NodeMoments& out = p.moments[ii];
    out.m = M;
    out.cx = cm[0];
    out.cy = cm[1];
    out.cz = cm[2];
    for (int r = 0; r < 6; ++r) out.q[r] = q[r];
    out.s = S;
    for (int d = 0; d < 3; ++d) out.d[d] = D[d];
    out.a = W;
    for (int d = 0; d < 3; ++d) {
      out.lo[d] = lo[d];
      out.hi[d] = hi[d];
    }
  }

  // MAC radius l/theta + delta (moments.cpp: signed sources |D + M (cm - ctr)| / sum |m|, else |cm - ctr|)
  double delta;
  if (sgn && W > 0) {
    double e[3];
    for (int d = 0; d < 3; ++d) e[d] = __dadd_rn(D[d], __dmul_rn(M, __dsub_rn(cm[d], ctr[d])));
    delta = __ddiv_rn(__dsqrt_rn(squaredNorm(e[0], e[1], e[2])), W);
  } else {
    const double e0 = __dsub_rn(cm[0], ctr[0]), e1 = __dsub_rn(cm[1], ctr[1]), e2 = __dsub_rn(cm[2], ctr[2]);
    delta = __dsqrt_rn(squaredNorm(e0, e1, e2));
  }
  const double macRadius = __dadd_rn(__ddiv_rn(l, p.theta), delta);

  D4 mac;
  mac.x = cm[0];
  mac.y = cm[1];
  mac.z = cm[2];
  mac.w = W > 0 ? macRadius : -1.0;  // -1: no mass at all, the walks skip it (moments.cpp)
  p.nodeMac[ii] = mac;
  const double s = p.massScale;
  p.nodeMQ[2 * ii] = make_float4(float(M * s), float(q[0] * s), float(q[1] * s), float(q[2] * s));
  p.nodeMQ[2 * ii + 1] = make_float4(float(q[3] * s), float(q[4] * s), float(q[5] * s), float(S * s));
  if (p.nodeDip) p.nodeDip[ii] = make_float4(float(D[0] * s), float(D[1] * s), float(D[2] * s), 0.f);
}

__global__ void __launch_bounds__(kThreads) densityContrastKernel(double* __restrict__ mass,
                                                                  const double* __restrict__ size, unsigned n,
                                                                  double rho) {
  for (unsigned i = blockIdx.x * kThreads + threadIdx.x; i < n; i += gridDim.x * kThreads) {
    const double h = size[i];
    mass[i] = __dsub_rn(mass[i], __dmul_rn(rho, __dmul_rn(__dmul_rn(h, h), h)));  // moments.cpp, unfused
  }
}

}  // namespace

Status launchDensityContrast(double* mass, const double* size, unsigned n, double rho, cudaStream_t s) {
  if (n == 0) return Status::success();
  const unsigned want = (n + kThreads - 1) / kThreads, blocks = want < 4096u ? want : 4096u;
  densityContrastKernel<<<blocks, kThreads, 0, s>>>(mass, size, n, rho);
  AG_CUDA_LAUNCHED("densityContrastKernel");
  return Status::success();
}

Status launchMomentsLevel(const MomentsParams& p, unsigned begin, unsigned end, int level, cudaStream_t s) {
  if (end <= begin) return Status::success();
  const unsigned blocks = (end - begin + kThreads - 1) / kThreads;
  if (end == p.stored)  // the level above the deepest
    momentsLevelKernel<true><<<blocks, kThreads, 0, s>>>(p, begin, end, level);
  else
    momentsLevelKernel<false><<<blocks, kThreads, 0, s>>>(p, begin, end, level);
  AG_CUDA_LAUNCHED("momentsLevelKernel");
  return Status::success();
}

}  // namespace cuda
}  // namespace amrgrav
