/// \file kernel_moments.cu
/// \brief Bottom-up moments, one level per launch (deepest first), in double, bit-for-bit as tree/moments.cpp and
/// ewald/walk_setup.cpp: the rules are physics/moments_k.h's, shared with the host, every product and sum rounded
/// on its own (__dmul_rn/__dadd_rn, which nvcc never fuses into an FMA; the file is compiled with -fmad=false as
/// well), called over the same cells and children in the same order as the host's sweep. The MAC radius and centre
/// of mass then equal the CPU's exactly, so the walk accepts exactly the CPU's nodes.
/// Also writes what the walk reads: the MAC record (double com, macRadius) and mass + quadrupole as float.
#include "physics/moments_k.h"
#include "tree/keys.h"
#include "cuda/check.h"
#include "cuda/kernels.h"

namespace amrgrav {
namespace cuda {
namespace {

constexpr int kThreads = 128;

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

/// A leaf's cell about the expansion centre cm: its quadrupole, second-moment trace S and (signed sources) dipole,
/// with physics/moments_k.h's rules in the host's order (tree/moments.cpp, ewald/walk_setup.cpp); the leaf code
/// and childMoments' recomputation share it, so both give the same bits.
__device__ __forceinline__ void addCellMoments(const D4& cell, const double* cm, bool signedSources, double* q,
                                               double& S, double* D) {
  const double pos[3] = {cell.x, cell.y, cell.z};
  double d[3];
  offsetFrom(pos, cm, d);
  addQuadrupole(q, cell.w, d[0], d[1], d[2]);
  S = addCellSecondMoment(S, cell.w, d);
  if (signedSources) addCellDipole(D, cell.w, d);
}

/// The moments a parent reads of its child k. Those of the deepest level's nodes (all leaves, most of the nodes)
/// are not stored, to save device memory: they are recomputed here from the leaf's cells with the leaf code's
/// operations in the same order (mass and quadrupole in one pass: the centre of mass, which the leaf code finds
/// between its two passes, is the child's MAC record's, exactly), so they equal the leaf's own bit for bit.
/// Recompute: only the level above the deepest has such children (and the registers this takes).
template <bool Recompute>
__device__ __forceinline__ NodeMoments childMoments(const MomentsParams& p, unsigned k) {
  if (!Recompute || k < p.stored) return p.moments[k];
  const uint4 t = p.topo[k];
  const D4 mac = p.nodeMac[k];
  NodeMoments c;
  c.cx = mac.x;
  c.cy = mac.y;
  c.cz = mac.z;
  const double cm[3] = {mac.x, mac.y, mac.z};
  for (int r = 0; r < 6; ++r) c.q[r] = 0;
  c.s = 0;
  c.d[0] = c.d[1] = c.d[2] = 0;
  NodeSums sums = emptyNodeSums();
  for (unsigned j = t.x; j < t.x + t.y; ++j) {
    const D4 cell = p.cells[j];
    addCellToSums(sums, cell.x, cell.y, cell.z, cell.w, p.size[j], p.signedSources, false);  // com known: cm
    addCellMoments(cell, cm, p.signedSources, c.q, c.s, c.d);
  }
  c.m = sums.M;
  c.a = nodeWeight(sums, p.signedSources);
  for (int d = 0; d < 3; ++d) {
    c.lo[d] = sums.lo[d];
    c.hi[d] = sums.hi[d];
  }
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
  const double side = nodeCubeSide(p.rootSide, level);
  const std::uint64_t prefix = p.nodeKeys[ii] >> (3 * (kKeyBits - level));
  const std::uint32_t ic[3] = {compactBits3(prefix), compactBits3(prefix >> 1), compactBits3(prefix >> 2)};
  double centre[3];
  for (int d = 0; d < 3; ++d) centre[d] = nodeCubeCentre(p.rootLo[d], ic[d], side);

  // first pass: mass, weight (sum |m| for signed sources), first moments, extent box
  const bool sgn = p.signedSources;
  NodeSums sums = emptyNodeSums();
  if (leaf) {
    for (unsigned j = t.x; j < t.x + t.y; ++j) {
      const D4 c = p.cells[j];
      addCellToSums(sums, c.x, c.y, c.z, c.w, p.size[j], sgn);
    }
  } else {
    for (unsigned k = t.z; k < t.z + t.w; ++k) {
      const NodeMoments c = childMoments<Recompute>(p, k);
      const double com[3] = {c.cx, c.cy, c.cz};
      addChildToSums(sums, c.m, c.a, com, c.lo, c.hi, sgn);
    }
  }
  const double M = sums.M, W = nodeWeight(sums, sgn);  // the node is empty unless W > 0
  // the MAC's length and centre (Barnes the cube's, Bonsai the tight box's), then the expansion centre
  double l, ctr[3], cm[3];
  macFrame(p.mac == int(MacKind::Bonsai), sums, side, centre, l, ctr);
  expansionCentre(sums, sgn, ctr, centre, cm);
  // second pass: quadrupole, S (ewald/walk_setup.cpp) and dipole about cm
  double q[6] = {0, 0, 0, 0, 0, 0};
  double S = 0;
  double D[3] = {0, 0, 0};
  if (leaf) {
    for (unsigned j = t.x; j < t.x + t.y; ++j) addCellMoments(p.cells[j], cm, sgn, q, S, D);
  } else {
    for (unsigned k = t.z; k < t.z + t.w; ++k) {  // parallel-axis theorem (with the child's dipole when signed)
      const NodeMoments c = childMoments<Recompute>(p, k);
      const double com[3] = {c.cx, c.cy, c.cz};
      double s[3];
      offsetFrom(com, cm, s);
      addChildQuadrupole(q, c.q, c.m, s);
      S = addChildSecondMoment(S, c.s, c.m, s);
      if (sgn) {  // the child's dipole terms, in one branch (three cost the kernel 14 registers)
        const double ds = dipoleDot(c.d, s);
        addDipoleShift(q, c.d, s, ds);
        addChildDipole(D, c.d, c.m, s);
        S = addDipoleSecondMoment(S, ds);
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
      out.lo[d] = sums.lo[d];
      out.hi[d] = sums.hi[d];
    }
  }

  D4 mac;
  mac.x = cm[0];
  mac.y = cm[1];
  mac.z = cm[2];
  mac.w = nodeMacRadius(l, p.theta, M, W, sgn, D, cm, ctr);  // -1: no mass at all, the walks skip it
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
    mass[i] = contrastMass(mass[i], rho, size[i]);  // physics/moments_k.h, as applyDensityContrast
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
