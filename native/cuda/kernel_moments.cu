/// \file kernel_moments.cu
/// \brief Bottom-up moments in double (the deepest level with the one above it in one launch, then one launch per
/// level), bit-for-bit as tree/moments.cpp and ewald/walk_setup.cpp: the rules are physics/moments_k.h's, shared
/// with the host, every product and sum rounded on its own (__dmul_rn/__dadd_rn, which nvcc never fuses into an
/// FMA; the file is compiled with -fmad=false as well), called over the same cells and children in the same order
/// as the host's sweep. The MAC radius and centre of mass then equal the CPU's exactly, so the walk accepts exactly
/// the CPU's nodes. Also writes what the walk reads: the MAC record (double com, macRadius) and mass + quadrupole
/// as float.
#include "physics/moments_k.h"
#include "tree/keys.h"
#include "cuda/check.h"
#include "cuda/kernels.h"

namespace amrgrav {
namespace cuda {
namespace {

constexpr int kThreads = 128;

/// A cell as the moments read it: centre, mass and side.
struct MomentCell {
  double x, y, z, m, size;
};

/// A leaf's cell about the expansion centre cm: its quadrupole, second-moment trace S and (signed sources) dipole,
/// with physics/moments_k.h's rules in the host's order (tree/moments.cpp, ewald/walk_setup.cpp).
__device__ __forceinline__ void addCellMoments(const MomentCell& cell, const double* cm, bool signedSources,
                                               double* q, double& S, double* D) {
  const double pos[3] = {cell.x, cell.y, cell.z};
  double d[3];
  offsetFrom(pos, cm, d);
  addQuadrupole(q, cell.m, d[0], d[1], d[2]);
  S = addCellSecondMoment(S, cell.m, d);
  if (signedSources) addCellDipole(D, cell.m, d);
}

/// The sorted cells read straight from device memory.
struct GlobalCells {
  const MomentsParams* p;
  __device__ __forceinline__ MomentCell operator()(unsigned j) const {
    const D4 c = p->cells[j];
    return MomentCell{c.x, c.y, c.z, c.w, p->size[j]};
  }
};

// ---- the bottom kernel's shared memory: cells staged in a padded layout (thread t's 8 cells at 9 t + j: a
//      half-warp's 64-bit reads then fall in distinct banks), later the leaf children's moments

constexpr unsigned kBottomParents = 16;                     ///< nodes of the level above the deepest per block
constexpr unsigned kStageCells = kBottomParents * 8 * 8;     ///< their cells when each has 8 children of 8 cells
constexpr unsigned kStagePadded = kStageCells + kStageCells / 8;
constexpr unsigned kStageArrays = 5;                         ///< x, y, z, mass, size
constexpr unsigned kKidFields = 21;                          ///< the doubles of NodeMoments
constexpr unsigned kKidStride = kThreads + kThreads / 8;
static_assert(kBottomParents * 8 <= unsigned(kThreads), "one thread per leaf child");
static_assert(kKidFields * kKidStride <= kStageArrays * kStagePadded, "the children's moments fit the stage");

__device__ __forceinline__ unsigned padded(unsigned i) { return i + (i >> 3); }

/// The block's cells [base, base + count): staged in shared memory when they fit, else read from device memory.
struct StagedCells {
  const MomentsParams* p;
  const double* stage;
  unsigned base;
  bool staged;
  __device__ __forceinline__ MomentCell operator()(unsigned j) const {
    if (!staged) return GlobalCells{p}(j);
    const unsigned i = padded(j - base);
    return MomentCell{stage[i], stage[kStagePadded + i], stage[2 * kStagePadded + i], stage[3 * kStagePadded + i],
                      stage[4 * kStagePadded + i]};
  }
};

/// Stored moments of the nodes above the deepest level (device memory).
struct StoredChildren {
  const NodeMoments* moments;
  __device__ __forceinline__ NodeMoments operator()(unsigned k) const { return moments[k]; }
};

/// The bottom kernel's leaf children, slot k - base of the shared SoA (NodeMoments' fields in kidField's order).
struct SharedChildren {
  const double* kids;
  unsigned base;
  __device__ __forceinline__ NodeMoments operator()(unsigned k) const {
    const double* f = kids + padded(k - base);
    NodeMoments c;
    c.m = f[0];
    c.cx = f[kKidStride];
    c.cy = f[2 * kKidStride];
    c.cz = f[3 * kKidStride];
    for (int r = 0; r < 6; ++r) c.q[r] = f[(4 + r) * kKidStride];
    c.s = f[10 * kKidStride];
    for (int d = 0; d < 3; ++d) {
      c.lo[d] = f[(11 + d) * kKidStride];
      c.hi[d] = f[(14 + d) * kKidStride];
      c.d[d] = f[(17 + d) * kKidStride];
    }
    c.a = f[20 * kKidStride];
    return c;
  }
};

__device__ __forceinline__ void storeSharedChild(double* kids, unsigned slot, const NodeMoments& c) {
  double* f = kids + padded(slot);
  f[0] = c.m;
  f[kKidStride] = c.cx;
  f[2 * kKidStride] = c.cy;
  f[3 * kKidStride] = c.cz;
  for (int r = 0; r < 6; ++r) f[(4 + r) * kKidStride] = c.q[r];
  f[10 * kKidStride] = c.s;
  for (int d = 0; d < 3; ++d) {
    f[(11 + d) * kKidStride] = c.lo[d];
    f[(14 + d) * kKidStride] = c.hi[d];
    f[(17 + d) * kKidStride] = c.d[d];
  }
  f[20 * kKidStride] = c.a;
}

/// Node ii's geometric cube at `level`: side = root.side / 2^level, centre = lo + (i + 0.5) side, i = the key
/// prefix (the CPU's coords: 2 * parent + octant bit, per level).
__device__ __forceinline__ double nodeCube(const MomentsParams& p, unsigned ii, int level, double centre[3]) {
  const double side = nodeCubeSide(p.rootSide, level);
  const std::uint64_t prefix = p.nodeKeys[ii] >> (3 * (kKeyBits - level));
  const std::uint32_t ic[3] = {compactBits3(prefix), compactBits3(prefix >> 1), compactBits3(prefix >> 2)};
  for (int d = 0; d < 3; ++d) centre[d] = nodeCubeCentre(p.rootLo[d], ic[d], side);
  return side;
}

/// What every node writes once its sums are done: its moments (nodes above the deepest level), the MAC record and
/// the walk's float multipoles. Returns the moments as its parent reads them.
__device__ __forceinline__ NodeMoments writeNode(const MomentsParams& p, unsigned ii, const NodeSums& sums, double l,
                                                 const double* ctr, const double* cm, const double* q, double S,
                                                 const double* D) {
  const bool sgn = p.signedSources;
  const double M = sums.M, W = nodeWeight(sums, sgn);  // the node is empty unless W > 0
  NodeMoments out;
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
  if (ii < p.stored) p.moments[ii] = out;

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
  return out;
}

/// A leaf (topology t at `level`) from its cells, two passes in the host's order; cells(j) gives sorted cell j.
template <class Cells>
__device__ __forceinline__ NodeMoments leafMoments(const MomentsParams& p, unsigned ii, int level, uint4 t,
                                                   const Cells& cells) {
  double centre[3];
  const double side = nodeCube(p, ii, level, centre);
  // first pass: mass, weight (sum |m| for signed sources), first moments, extent box
  const bool sgn = p.signedSources;
  NodeSums sums = emptyNodeSums();
  for (unsigned j = t.x; j < t.x + t.y; ++j) {
    const MomentCell c = cells(j);
    addCellToSums(sums, c.x, c.y, c.z, c.m, c.size, sgn);
  }
  // the MAC's length and centre (Barnes the cube's, Bonsai the tight box's), then the expansion centre
  double l, ctr[3], cm[3];
  macFrame(p.mac == int(MacKind::Bonsai), sums, side, centre, l, ctr);
  expansionCentre(sums, sgn, ctr, centre, cm);
  // second pass: quadrupole, S (ewald/walk_setup.cpp) and dipole about cm
  double q[6] = {0, 0, 0, 0, 0, 0};
  double S = 0;
  double D[3] = {0, 0, 0};
  for (unsigned j = t.x; j < t.x + t.y; ++j) addCellMoments(cells(j), cm, sgn, q, S, D);
  return writeNode(p, ii, sums, l, ctr, cm, q, S, D);
}

/// A node with children (topology t at `level`) from their moments, two passes in the host's order;
/// children(k) gives node k's moments.
template <class Children>
__device__ __forceinline__ void parentMoments(const MomentsParams& p, unsigned ii, int level, uint4 t,
                                              const Children& children) {
  double centre[3];
  const double side = nodeCube(p, ii, level, centre);
  const bool sgn = p.signedSources;
  NodeSums sums = emptyNodeSums();
  for (unsigned k = t.z; k < t.z + t.w; ++k) {
    const NodeMoments c = children(k);
    const double com[3] = {c.cx, c.cy, c.cz};
    addChildToSums(sums, c.m, c.a, com, c.lo, c.hi, sgn);
  }
  double l, ctr[3], cm[3];
  macFrame(p.mac == int(MacKind::Bonsai), sums, side, centre, l, ctr);
  expansionCentre(sums, sgn, ctr, centre, cm);
  double q[6] = {0, 0, 0, 0, 0, 0};
  double S = 0;
  double D[3] = {0, 0, 0};
  for (unsigned k = t.z; k < t.z + t.w; ++k) {  // parallel-axis theorem (with the child's dipole when signed)
    const NodeMoments c = children(k);
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
  (void)writeNode(p, ii, sums, l, ctr, cm, q, S, D);
}

/// One level above the deepest: its children's moments are stored.
__global__ void __launch_bounds__(kThreads) momentsLevelKernel(MomentsParams p, unsigned begin, unsigned end,
                                                               int level) {
  const unsigned ii = begin + blockIdx.x * kThreads + threadIdx.x;
  if (ii >= end) return;
  const uint4 t = p.topo[ii];
  if (t.w == 0)
    (void)leafMoments(p, ii, level, t, GlobalCells{&p});
  else
    parentMoments(p, ii, level, t, StoredChildren{p.moments});
}

/// The deepest level and the level above it in one launch, kBottomParents nodes of the level above per block. The
/// deepest level's nodes (all leaves, most of the nodes) have no stored moments (device memory): each is computed
/// once here, by one thread, and handed to its parent through shared memory. The block's cells (a contiguous range
/// of the sorted cells) are first staged in shared memory with coalesced loads when they fit. Then one thread per
/// leaf (the children, then the level's own leaves) runs the leaf code, and one thread per parent sums its children
/// in their order: every node's sums are the host's, in the host's order.
__global__ void __launch_bounds__(kThreads, 4) momentsBottomKernel(MomentsParams p, unsigned begin, unsigned end,
                                                                   int level) {
  __shared__ double stage[kStageArrays * kStagePadded];  // the cells, then the children's moments
  __shared__ uint4 ptopo[kBottomParents];
  __shared__ unsigned leafJob[kBottomParents];  // the thread of each of the level's own leaves, else ~0
  __shared__ unsigned kidBegin, kidCount, jobs, cellBegin, cellCount;
  const unsigned tid = threadIdx.x;
  const unsigned first = begin + blockIdx.x * kBottomParents;
  const unsigned count = end - first < kBottomParents ? end - first : kBottomParents;
  if (tid < count) ptopo[tid] = p.topo[first + tid];
  __syncthreads();
  if (tid == 0) {
    // the children of consecutive nodes of a level are consecutive nodes (the build's exclusive scan), at most 8
    // each: one range of at most kBottomParents * 8 nodes
    unsigned kb = 0xffffffffu, ke = 0;
    for (unsigned q = 0; q < count; ++q) {
      const uint4 t = ptopo[q];
      if (t.w != 0) {
        kb = min(kb, t.z);
        ke = max(ke, t.z + t.w);
      }
    }
    const unsigned kc = ke > 0 ? ke - kb : 0u;
    if (kc > kBottomParents * 8) __trap();  // not an octree level: never
    kidBegin = kc > 0 ? kb : 0u;
    kidCount = kc;
    unsigned j = kc;
    for (unsigned q = 0; q < count; ++q) leafJob[q] = ptopo[q].w == 0 ? j++ : 0xffffffffu;
    jobs = j;
    // the nodes of a level hold increasing, disjoint cell ranges
    cellBegin = ptopo[0].x;
    cellCount = ptopo[count - 1].x + ptopo[count - 1].y - ptopo[0].x;
  }
  __syncthreads();
  const bool staged = cellCount <= kStageCells;
  if (staged) {
    const unsigned base = cellBegin, nc = cellCount;
    for (unsigned i = tid; i < nc; i += kThreads) {
      const unsigned j = base + i, k = padded(i);
      const D4 c = p.cells[j];
      stage[k] = c.x;
      stage[kStagePadded + k] = c.y;
      stage[2 * kStagePadded + k] = c.z;
      stage[3 * kStagePadded + k] = c.w;
      stage[4 * kStagePadded + k] = p.size[j];
    }
  }
  __syncthreads();
  // the leaves: the children (deepest level), then the level's own
  const StagedCells cells{&p, stage, cellBegin, staged};
  const bool kid = tid < kidCount;
  NodeMoments mine;
  if (kid) {
    const unsigned ii = kidBegin + tid;
    mine = leafMoments(p, ii, level + 1, p.topo[ii], cells);
  } else if (tid < jobs) {
    unsigned q = 0;
    while (leafJob[q] != tid) ++q;
    (void)leafMoments(p, first + q, level, ptopo[q], cells);
  }
  __syncthreads();  // the stage is dead: the children's moments take its room
  if (kid) storeSharedChild(stage, tid, mine);
  __syncthreads();
  // the parents, one per 8 threads (spread over the warps)
  if ((tid & 7u) == 0) {
    const unsigned q = tid >> 3;
    if (q < count && ptopo[q].w != 0) parentMoments(p, first + q, level, ptopo[q], SharedChildren{stage, kidBegin});
  }
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

Status launchMoments(const MomentsParams& p, const unsigned* levelStart, int depth, cudaStream_t s) {
  int level = depth;
  if (depth >= 1) {  // the deepest level with the one above it
    const unsigned begin = levelStart[depth - 1], end = levelStart[depth];
    if (end > begin) {
      const unsigned blocks = (end - begin + kBottomParents - 1) / kBottomParents;
      momentsBottomKernel<<<blocks, kThreads, 0, s>>>(p, begin, end, depth - 1);
      AG_CUDA_LAUNCHED("momentsBottomKernel");
    }
    level = depth - 2;
  }
  for (; level >= 0; --level) {
    const unsigned begin = levelStart[level], end = levelStart[level + 1];
    if (end <= begin) continue;
    momentsLevelKernel<<<(end - begin + kThreads - 1) / kThreads, kThreads, 0, s>>>(p, begin, end, level);
    AG_CUDA_LAUNCHED("momentsLevelKernel");
  }
  return Status::success();
}

}  // namespace cuda
}  // namespace amrgrav
