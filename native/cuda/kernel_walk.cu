/// \file kernel_walk.cu
/// \brief The tree walk: one warp per group of up to 32 (or 64: two per lane) consecutive targets (sorted cells in
/// the groups of tree/groups_k.h, WalkParams::groupBegin; or a system solve's probes and subsets:
/// WalkParams::groupRange, in kernels of their own), a Bonsai-style breadth-first traversal with a per-warp node
/// queue, warp-compacted interaction lists in shared memory, and evaluation of the lists 32 entries at a time with
/// the core's float interaction kernels.
///
/// Traversal. The queue is a ring of node indices in global memory (one ring of queueCap entries per warp of the
/// grid, a power of two): popping 32 at a time from its head and pushing children at its tail visits the tree
/// level by level. While the ring is more than half full the warp pops from the tail instead (depth first), which
/// bounds its growth by about 224 entries per tree level (a breadth-first frontier alone reached 36k entries with
/// leafSize 1). Each lane takes one node of the batch and classifies it: skipped (massless), accepted (the
/// MAC holds), an opened leaf, or an opened internal node. Accepted nodes and the cells of opened leaves are
/// appended to two shared-memory lists at offsets from __ballot_sync/__popc (resp. a warp scan of the leaves'
/// cell counts); opened internal nodes push their children. A list that reaches 32 entries is evaluated at once.
/// The set of accepted nodes and of opened leaves is a property of each node alone (the MAC against the group
/// box), so it is exactly the CPU walk's (cpu_walk.cpp), whatever the visiting order: interaction counts match.
/// If a ring would overflow, the warp records the capacity it needed and the host reruns with a larger ring.
///
/// MAC. In double, on the same com, macRadius and group box as the CPU, with the CPU's own code: physics/mac_k.h's
/// macAccepts and physics/image_k.h's periodicNodeImage, whose every product and sum is rounded on its own
/// (physics/rounding.h: __dmul_rn/__dadd_rn, never fused into FMAs, while this file's float code is compiled with
/// FMA and fast math), so the lists are the CPU's bit for bit.
///   box  (default): accept when the node is acceptable for the group's bounding box (as the CPU);
///   vote (FLASH4's GPU solver, literally): each lane tests its own cell (a degenerate box) and the node is
///         accepted only if __all_sync agrees; interaction counts then differ from the CPU's, as expected.
///
/// Softened walks (particles, issue #18; physics/softening_k.h): kernels of their own (Soft), isolated and with the
/// box MAC. A node also passes softeningAccepts (the group's and the node's softening ranges, WalkParams::groupEps,
/// nodeEps, and the node's source extent, nodeExtent, or for the cells' tree its MAC radius), decided in double as
/// on the CPU (cpu/soft_lists.cpp); opened leaves' sources carry their softening
/// (dLo.w) and each target its own (Targets::eps).
///
/// Paired evaluation. In groups of 64 a lane holds cells l and l + 32; in a 4^3 cube of one level (Morton order, x in
/// each triple's lowest bit) those lie two cells apart in z and share x and y. When every lane's two do (checked per
/// group), each list entry's x-y terms are made once for both (physics/interact_k.h PlanarTerms), each cell adding
/// its z part: the same operations in the same order per cell, so the same bits (CudaOptions::pairedCells).
///
/// Precision. Positions stay double on the device. A source entering a list (node com or cell) is converted to
/// float relative to the group centre (one double subtraction per entry, shared by the 32 lanes), targets
/// likewise, so float differences stay accurate at 15+ refinement levels. A group can still be extended (a jump of
/// the Z curve inside its home node, a sparse input): then |target - centre| >> |target - source| for
/// near pairs and a single float loses digits. Such groups (half-diagonal > kCompact x their smallest cell) carry
/// each relative position as a float pair hi + lo and form d = (t_hi - s_hi) + (t_lo - s_lo), accurate to float
/// rounding of d itself (3 more adds per interaction; the choice is per group, warp-uniform). Each 32-entry batch
/// is summed in float and added to double accumulators. Masses and quadrupoles are stored times massScale (a
/// power of two) so that float never overflows whatever the mass unit.
#include <math_constants.h>

#include <cstdint>

#include "ewald/expansion_k.h"
#include "physics/image_k.h"
#include "physics/interact_k.h"
#include "physics/mac_k.h"
#include "physics/softening_k.h"
#include "cuda/check.h"
#include "cuda/kernels.h"

namespace amrgrav {
namespace cuda {
namespace {

constexpr unsigned kFull = 0xffffffffu;
constexpr int kWalkThreads = 32 * kWalkWarpsPerBlock;
constexpr int kListCap = 64;  ///< a list holds < 32 entries between flushes, plus at most 32 appended
constexpr double kCompact = 8;  ///< groups wider than this many of their smallest cells use split positions

/// A warp's interaction lists (structs of arrays in shared memory; reads are warp-wide broadcasts).
template <int Order>
struct WarpLists {
  float4 aPos[kListCap];                         ///< accepted nodes: com - group centre (hi part), mass
  float4 aLo[kListCap];                          ///< ... lo part of com - group centre
  float4 aQa[Order >= 2 ? kListCap : 1];         ///< q0..q3 (half-upper h0..h3 without accelerations)
  float2 aQb[Order >= 2 ? kListCap : 1];         ///< q4, q5 (h4, h5)
  float4 dPos[kListCap];                         ///< cells of opened leaves: centre - group centre (hi), mass
  float4 dLo[kListCap];                          ///< ... lo part
};

/// v - c as hi + lo floats: hi = float(v - c), lo = float((v - c) - hi) (that difference is exact in double).
__device__ __forceinline__ void splitRel(double v, double c, float& hi, float& lo) {
  const double r = v - c;
  hi = float(r);
  lo = float(r - double(hi));
}

__device__ __forceinline__ unsigned laneMaskLt() {
  unsigned m;
  asm("mov.u32 %0, %%lanemask_lt;" : "=r"(m));
  return m;
}

__device__ __forceinline__ unsigned warpInclusiveScan(unsigned v, int lane) {
#pragma unroll
  for (int off = 1; off < 32; off <<= 1) {
    const unsigned o = __shfl_up_sync(kFull, v, off);
    if (lane >= off) v += o;
  }
  return v;
}

/// The warp's next group (lane 0 takes it from the launch's counter, every lane gets it), or numGroups when the
/// groups are all taken or a queue overflowed somewhere (the host reruns the pass).
__device__ __forceinline__ unsigned claimGroup(const WalkParams& p, volatile unsigned* overflowFlag, int lane) {
  unsigned g = 0;
  if (lane == 0) g = *overflowFlag ? p.numGroups : atomicAdd(p.counters + kNextGroup, 1u);
  return __shfl_sync(kFull, g, 0);
}

/// Group g's first target and size: its cells in WalkParams::groupBegin (a cell walk: tree/groups_k.h's groups), or
/// with Ranges its entry of WalkParams::groupRange (a system solve's probes or subset; kernels of their own, so that
/// the cell walks' kernels keep their registers).
template <bool Ranges>
__device__ __forceinline__ void groupSpan(const WalkParams& p, unsigned g, unsigned& gb, int& nt) {
  if (Ranges) {
    const uint2 r = p.groupRange[g];
    gb = r.x;
    nt = int(r.y);
  } else {
    gb = p.groupBegin[g];
    nt = int(p.groupBegin[g + 1] - gb);
  }
}

/// One batch off a warp's ring of node indices: up to 32 entries, breadth-first, or depth-first (the newest) while
/// the ring is more than half full. Lane `lane` takes ring slot `slot` when `valid`; the slots from `keepFrom` on must
/// survive this batch's pushes (a LIFO pop frees its slots for the children, a FIFO pop keeps them).
struct RingBatch {
  unsigned slot, keepFrom;
  bool valid;
};
__device__ __forceinline__ RingBatch popBatch(unsigned& head, unsigned& tail, unsigned queueCap, int lane) {
  const unsigned batch = min(32u, tail - head);
  const bool lifo = tail - head > (queueCap >> 1);
  const unsigned from = lifo ? tail - batch : head;
  if (lifo) tail -= batch;
  else head += batch;
  return RingBatch{from + unsigned(lane), lifo ? head : from, unsigned(lane) < batch};
}

/// Every record a batch's node may need, loaded at once before the MAC decides which are used (one memory round
/// trip per batch instead of dependent ones); an invalid lane gets a massless record (mac.w = -1). Periodic walks
/// also take the node's dipole (0 unless the sources are signed: p.nodeDip).
template <int Order, bool Periodic>
__device__ __forceinline__ void loadNodeRecords(const WalkParams& p, unsigned node, bool valid, D4& mac, uint4& topo,
                                                float4& mq0, float4& mq1, float4& dip) {
  mac.x = mac.y = mac.z = 0.0;
  mac.w = -1.0;
  topo = make_uint4(0u, 0u, 0u, 0u);
  mq0 = make_float4(0.f, 0.f, 0.f, 0.f);
  mq1 = mq0;
  dip = mq0;
  if (valid) {
    mac = p.nodeMac[node];
    topo = p.topo[node];
    mq0 = p.nodeMQ[2 * std::size_t(node)];
    if (Order >= 2) mq1 = p.nodeMQ[2 * std::size_t(node) + 1];
    if (Periodic && p.nodeDip) dip = p.nodeDip[node];
  }
}

/// Per-lane targets and accumulators (CPL cells per lane: lane + 32 c).
template <int CPL>
struct Targets {
  float tx[CPL], ty[CPL], tz[CPL];     ///< relative to the group centre (hi part)
  float txl[CPL], tyl[CPL], tzl[CPL];  ///< lo part
  float eps[CPL];                      ///< softened walks: the target's softening (0: a cell or a probe)
  double phi[CPL], gx[CPL], gy[CPL], gz[CPL];
};

/// target - source from hi (and, for Split, lo) parts.
template <bool Split>
__device__ __forceinline__ float diff(float th, float tl, float sh, float sl) {
  return Split ? (th - sh) + (tl - sl) : th - sh;
}

// Unroll factor of the accepted-node loop (a tuning knob: -DAG_WALK_APPROX_UNROLL=N).
#ifndef AG_WALK_APPROX_UNROLL
#define AG_WALK_APPROX_UNROLL 4
#endif
#define AG_PRAGMA(x) _Pragma(#x)
#define AG_UNROLL(n) AG_PRAGMA(unroll n)

/// How a periodic walk adds the Ewald correction (kernel template argument of the evaluators). kEwaldExpand: the
/// walk only places sources at their images (and tags hoisted subtrees); the groups' expansions are summed by a
/// kernel of their own (ewaldCorrectionKernel), so the walk carries no table code. kEwaldPerCell: every pair
/// looks the table up inside the walk.
enum EwaldMode { kNoEwald = 0, kEwaldExpand = 1, kEwaldPerCell = 2 };

/// Softened walks (kernel template argument Soft, WalkConfig::softening): kUnsoftened, or the particles' kernel.
/// A spline walk evaluates its accepted nodes with the Newtonian kernels (exact there, physics/softening_k.h) and
/// its opened leaves with the softened pair; a Plummer walk also expands its nodes with the softened kernel, each
/// list entry carrying the node's softening (epsLists, beside the lists) and its second moment (aLo.w).
enum SoftMode { kUnsoftened = 0, kSoftSpline = 1, kSoftPlummer = 2 };
__device__ __forceinline__ constexpr SofteningKernel kernelOf(int soft) {
  return soft == kSoftPlummer ? SofteningKernel::Plummer : SofteningKernel::Spline;
}

/// A list entry's plain quadrupole: the potential-only lists hold half-upper coefficients (exact x2 back).
template <bool Accel>
__device__ __forceinline__ void plainQuadrupole(const float* q, float* qf) {
  const float d = Accel ? 1.0f : 2.0f;
  qf[0] = d * q[0]; qf[1] = q[1]; qf[2] = q[2]; qf[3] = d * q[3]; qf[4] = q[4]; qf[5] = d * q[5];
}

template <int Order>
__device__ __forceinline__ void entryQuadrupole(const WarpLists<Order>& L, int k, float* q) {
  q[0] = q[1] = q[2] = q[3] = q[4] = q[5] = 0.0f;
  if (Order >= 2) {
    const float4 a = L.aQa[k];
    const float2 b = L.aQb[k];
    q[0] = a.x; q[1] = a.y; q[2] = a.z; q[3] = a.w; q[4] = b.x; q[5] = b.y;
  }
}

/// Whether a walk kernel has the paired evaluators (two cells per lane sharing x and y: physics/interact_k.h
/// PlanarTerms): unsoftened cells without per-pair Ewald terms.
template <int CPL, int Ew, int Soft>
__device__ __forceinline__ constexpr bool pairedKernel() {
  return CPL == 2 && Ew != kEwaldPerCell && Soft == kUnsoftened;
}

/// Evaluates list entries [0, count) of the accepted nodes for this lane's targets. Full: count == 32 (a
/// compile-time trip count that unrolls). Ew = kEwaldPerCell: every (cell, entry) pair adds its own correction
/// (aLo.w holds the node's S). Paired (pairedKernel, compact groups): the lane's two cells share x and y, so each
/// entry's x-y terms are made once for both; each cell's bits are the unpaired evaluation's.
template <int Order, bool Accel, int CPL, bool Split, bool Full, int Ew, bool Dipole, int Soft, bool Paired = false>
__device__ __forceinline__ void evalApprox(const WarpLists<Order>& L, const float4* aDip, const float* aEps, int count,
                                           Targets<CPL>& T, const EwaldDeviceView& ev) {
  float p[CPL], fx[CPL], fy[CPL], fz[CPL], qx[CPL], qy[CPL], qz[CPL];
#pragma unroll
  for (int c = 0; c < CPL; ++c) p[c] = fx[c] = fy[c] = fz[c] = qx[c] = qy[c] = qz[c] = 0.0f;
  const int m = Full ? 32 : count;
  AG_UNROLL(AG_WALK_APPROX_UNROLL)
  for (int k = 0; k < m; ++k) {
    const float4 s = L.aPos[k];
    const float4 sl =
        Split || Ew == kEwaldPerCell || Soft == kSoftPlummer ? L.aLo[k] : make_float4(0.f, 0.f, 0.f, 0.f);
    float q[6];
    entryQuadrupole(L, k, q);
    const float nodeEps = Soft == kSoftPlummer ? aEps[k] : 0.f;
    float pd[3] = {0.f, 0.f, 0.f};
    if (Dipole) {
      const float4 dv = aDip[k];
      pd[0] = dv.x; pd[1] = dv.y; pd[2] = dv.z;
    }
    if constexpr (Paired) {
      static_assert(!Split && Ew != kEwaldPerCell && Soft == kUnsoftened, "paired: compact groups, plain kernels");
      const float dx = T.tx[0] - s.x, dy = T.ty[0] - s.y;
      if constexpr (Accel) {
        const PlanarForceTerms<float> f = nodePlanarForceTerms<float, Order, Dipole>(dx, dy, q, pd);
#pragma unroll
        for (int c = 0; c < CPL; ++c)
          nodeCellForceZ<float, Order, Dipole>(f, T.tz[c] - s.z, s.w, q, p[c], fx[c], fy[c], fz[c], qx[c], qy[c],
                                               qz[c], pd);
      } else {
        const PlanarTerms<float> t = nodePlanarTerms<float, Order, Dipole>(dx, dy, q, pd);
#pragma unroll
        for (int c = 0; c < CPL; ++c) nodeCellPotentialZ<float, Order, Dipole>(t, T.tz[c] - s.z, s.w, q, p[c], pd);
      }
    } else {
#pragma unroll
      for (int c = 0; c < CPL; ++c) {
        const float dx = diff<Split>(T.tx[c], T.txl[c], s.x, sl.x), dy = diff<Split>(T.ty[c], T.tyl[c], s.y, sl.y),
                    dz = diff<Split>(T.tz[c], T.tzl[c], s.z, sl.z);
        if (Soft == kSoftPlummer) {  // plain quadrupole and second moment (sl.w) in the list; eps of the pair
          const float eps = pairSoftening(T.eps[c], nodeEps);
          if (Accel) plummerNodeForce<float, Order>(dx, dy, dz, s.w, q, sl.w, eps, p[c], fx[c], fy[c], fz[c]);
          else plummerNodePotential<float, Order>(dx, dy, dz, s.w, q, sl.w, eps, p[c]);
        } else if (Accel)
          nodeCellForce<float, Order, Dipole>(dx, dy, dz, s.w, q, p[c], fx[c], fy[c], fz[c], qx[c], qy[c], qz[c], pd);
        else nodeCellPotential<float, Order, Dipole>(dx, dy, dz, s.w, q, p[c], pd);
        if (Ew == kEwaldPerCell) {
          float qf[6];
          plainQuadrupole<Accel>(q, qf);
          ewaldNodeCorrection<Order, Accel, Dipole>(ev, dx, dy, dz, s.w, qf, sl.w, p[c], fx[c], fy[c], fz[c], pd);
        }
      }
    }
  }
#pragma unroll
  for (int c = 0; c < CPL; ++c) {
    T.phi[c] += double(p[c]);
    if (Accel) {
      T.gx[c] += double(fx[c] - qx[c]);
      T.gy[c] += double(fy[c] - qy[c]);
      T.gz[c] += double(fz[c] - qz[c]);
    }
  }
}

/// As evalApprox for the cells of opened leaves (the coincident self pair adds 0). Periodic: with kEwaldExpand the
/// cells were entered at their image nearest the group's centre, or at their hoisted ancestor's image; with
/// kEwaldPerCell each pair takes its own nearest image, then the correction (C(0) for the cell itself).
template <int Order, bool Accel, int CPL, bool Split, bool Full, int Ew, int Soft, bool Paired = false>
__device__ __forceinline__ void evalDirect(const WarpLists<Order>& L, int count, Targets<CPL>& T,
                                           const EwaldDeviceView& ev) {
  float p[CPL], fx[CPL], fy[CPL], fz[CPL];
#pragma unroll
  for (int c = 0; c < CPL; ++c) p[c] = fx[c] = fy[c] = fz[c] = 0.0f;
  const int m = Full ? 32 : count;
#pragma unroll 8
  for (int k = 0; k < m; ++k) {
    const float4 s = L.dPos[k];
    const float4 sl = Split || Soft ? L.dLo[k] : make_float4(0.f, 0.f, 0.f, 0.f);  // softened: sl.w = eps
    if constexpr (Paired) {  // as evalApprox
      static_assert(!Split && Ew != kEwaldPerCell && Soft == kUnsoftened, "paired: compact groups, plain kernels");
      const PlanarTerms<float> t = cellPlanarTerms(T.tx[0] - s.x, T.ty[0] - s.y);
#pragma unroll
      for (int c = 0; c < CPL; ++c) {
        if (Accel) cellCellForceZ(t, T.tz[c] - s.z, s.w, p[c], fx[c], fy[c], fz[c]);
        else cellCellPotentialZ(t, T.tz[c] - s.z, s.w, p[c]);
      }
    } else {
#pragma unroll
      for (int c = 0; c < CPL; ++c) {
        float dx = diff<Split>(T.tx[c], T.txl[c], s.x, sl.x), dy = diff<Split>(T.ty[c], T.tyl[c], s.y, sl.y),
              dz = diff<Split>(T.tz[c], T.tzl[c], s.z, sl.z);
        if (Soft) {
          const float eps = pairSoftening(T.eps[c], sl.w);
          if (Accel) softPairForce<float>(dx, dy, dz, s.w, eps, kernelOf(Soft), p[c], fx[c], fy[c], fz[c]);
          else softPairPotential<float>(dx, dy, dz, s.w, eps, kernelOf(Soft), p[c]);
          continue;
        }
        if (Ew == kEwaldPerCell) {
          dx = nearestImage(dx, float(ev.period[0]), float(ev.invPeriod[0]));
          dy = nearestImage(dy, float(ev.period[1]), float(ev.invPeriod[1]));
          dz = nearestImage(dz, float(ev.period[2]), float(ev.invPeriod[2]));
        }
        if (Accel) cellCellForce<float>(dx, dy, dz, s.w, p[c], fx[c], fy[c], fz[c]);
        else cellCellPotential<float>(dx, dy, dz, s.w, p[c]);
        if (Ew == kEwaldPerCell) ewaldCellCorrection<Accel>(ev, dx, dy, dz, s.w, p[c], fx[c], fy[c], fz[c]);
      }
    }
  }
#pragma unroll
  for (int c = 0; c < CPL; ++c) {
    T.phi[c] += double(p[c]);
    if (Accel) {
      T.gx[c] += double(fx[c]);
      T.gy[c] += double(fy[c]);
      T.gz[c] += double(fz[c]);
    }
  }
}

/// After a full flush: entries [32, count) move to [0, count - 32) (fewer than 32, one per lane).
template <int Order>
__device__ __forceinline__ void shiftApprox(WarpLists<Order>& L, float4* aDip, float* aEps, int rem, int lane) {
  float4 a = make_float4(0, 0, 0, 0), al = a, qa = a, dp = a;
  float2 qb = make_float2(0, 0);
  float ae = 0.f;
  if (lane < rem) {
    a = L.aPos[32 + lane];
    al = L.aLo[32 + lane];
    if (aDip) dp = aDip[32 + lane];
    if (aEps) ae = aEps[32 + lane];
    if (Order >= 2) {
      qa = L.aQa[32 + lane];
      qb = L.aQb[32 + lane];
    }
  }
  __syncwarp();
  if (lane < rem) {
    L.aPos[lane] = a;
    L.aLo[lane] = al;
    if (aDip) aDip[lane] = dp;
    if (aEps) aEps[lane] = ae;
    if (Order >= 2) {
      L.aQa[lane] = qa;
      L.aQb[lane] = qb;
    }
  }
  __syncwarp();
}

template <int Order>
__device__ __forceinline__ void shiftDirect(WarpLists<Order>& L, int rem, int lane) {
  float4 a = make_float4(0, 0, 0, 0), al = a;
  if (lane < rem) {
    a = L.dPos[32 + lane];
    al = L.dLo[32 + lane];
  }
  __syncwarp();
  if (lane < rem) {
    L.dPos[lane] = a;
    L.dLo[lane] = al;
  }
  __syncwarp();
}

/// Evaluates a full batch (Full) or the last entries of the accepted-node list with the group's precision and
/// pairing (both warp-uniform).
template <int Order, bool Accel, int CPL, int Ew, bool Dipole, int Soft, bool Full>
__device__ __forceinline__ void flushApprox(const WarpLists<Order>& L, const float4* aDip, const float* aEps,
                                            int count, Targets<CPL>& T, bool split, bool paired,
                                            const EwaldDeviceView& ev) {
  constexpr bool P = pairedKernel<CPL, Ew, Soft>();
  if (split) evalApprox<Order, Accel, CPL, true, Full, Ew, Dipole, Soft>(L, aDip, aEps, count, T, ev);
  else if (P && paired) evalApprox<Order, Accel, CPL, false, Full, Ew, Dipole, Soft, P>(L, aDip, aEps, count, T, ev);
  else evalApprox<Order, Accel, CPL, false, Full, Ew, Dipole, Soft>(L, aDip, aEps, count, T, ev);
}

/// As flushApprox for the direct list.
template <int Order, bool Accel, int CPL, int Ew, int Soft, bool Full>
__device__ __forceinline__ void flushDirect(const WarpLists<Order>& L, int count, Targets<CPL>& T, bool split,
                                            bool paired, const EwaldDeviceView& ev) {
  constexpr bool P = pairedKernel<CPL, Ew, Soft>();
  if (split) evalDirect<Order, Accel, CPL, true, Full, Ew, Soft>(L, count, T, ev);
  else if (P && paired) evalDirect<Order, Accel, CPL, false, Full, Ew, Soft, P>(L, count, T, ev);
  else evalDirect<Order, Accel, CPL, false, Full, Ew, Soft>(L, count, T, ev);
}

// Occupancy knob: -DAG_WALK_MIN_BLOCKS=N caps registers so that N blocks of 4 warps fit per multiprocessor.
#ifndef AG_WALK_MIN_BLOCKS
#define AG_WALK_MIN_BLOCKS 0
#endif
#if AG_WALK_MIN_BLOCKS > 0
#define AG_WALK_BOUNDS __launch_bounds__(kWalkThreads, AG_WALK_MIN_BLOCKS)
#else
#define AG_WALK_BOUNDS __launch_bounds__(kWalkThreads)  // not (.., 1): that lets ptxas take 101 registers, not 72
#endif
// The periodic image walk's registers, potential only: capped for -DAG_WALK_IMAGES_MIN_BLOCKS=N blocks per SM (7
// measured best: 90 -> 72 registers, 52.1 -> 49.4 ms at 256^3; with accelerations the cap cost time, so that kernel
// keeps ptxas's choice; bench/RESULTS.md).
#ifndef AG_WALK_IMAGES_MIN_BLOCKS
#define AG_WALK_IMAGES_MIN_BLOCKS 7
#endif
// The correction kernel's register cap (blocks per SM).
#ifndef AG_EWALD_CORRECTION_MIN_BLOCKS
#define AG_EWALD_CORRECTION_MIN_BLOCKS 4
#endif
// The periodic kernels' registers (the Ewald expansion's 20 coefficients and the table lookup) are capped so that
// this many blocks fit: -DAG_WALK_EWALD_MIN_BLOCKS=N (bench/RESULTS.md has the measurement behind the default).
#ifndef AG_WALK_EWALD_MIN_BLOCKS
#define AG_WALK_EWALD_MIN_BLOCKS 4
#endif

/// A group's cells (CPL per lane: lane + 32 c; tv: the lane holds a cell) and the bounding box of their centres
/// (tree/groups.cpp), the same on every lane.
template <int CPL>
__device__ __forceinline__ void loadGroup(const WalkParams& p, unsigned gb, int nt, int lane, double* px, double* py,
                                          double* pz, bool* tv, double* lo, double* hi) {
#pragma unroll
  for (int d = 0; d < 3; ++d) {
    lo[d] = CUDART_INF;
    hi[d] = -CUDART_INF;
  }
#pragma unroll
  for (int c = 0; c < CPL; ++c) {
    const int t = lane + 32 * c;
    tv[c] = t < nt;
    const D4 cell = p.cells[gb + (tv[c] ? t : 0)];
    px[c] = cell.x;
    py[c] = cell.y;
    pz[c] = cell.z;
    if (tv[c]) {
      lo[0] = stdMin(lo[0], px[c]); hi[0] = stdMax(hi[0], px[c]);
      lo[1] = stdMin(lo[1], py[c]); hi[1] = stdMax(hi[1], py[c]);
      lo[2] = stdMin(lo[2], pz[c]); hi[2] = stdMax(hi[2], pz[c]);
    }
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
#pragma unroll
    for (int d = 0; d < 3; ++d) {
      lo[d] = stdMin(lo[d], __shfl_xor_sync(kFull, lo[d], off));
      hi[d] = stdMax(hi[d], __shfl_xor_sync(kFull, hi[d], off));
    }
  }
}

/// The MAC for the group (warp-wide: every lane calls it, `candidate` per lane): the box test, then with Vote the
/// per-cell vote for the nodes the box rejects.
template <int CPL, bool Vote>
__device__ __forceinline__ bool nodeAccepted(bool candidate, const double* com, double macRadius, const double* lo,
                                             const double* hi, const double* px, const double* py, const double* pz,
                                             const bool* tv, int lane) {
  bool acc = candidate && macAccepts(com[0], com[1], com[2], macRadius, lo, hi);
  if (Vote) {
    // A node the box accepts, every cell of the box accepts: rounding is monotonic, so a point's computed
    // distance is never below the box's. Only the others go to the per-cell vote, one node at a time.
    unsigned todo = __ballot_sync(kFull, candidate && !acc);
    unsigned accMask = 0;
    while (todo) {
      const int k = __ffs(todo) - 1;
      todo &= todo - 1;
      const double cx = __shfl_sync(kFull, com[0], k), cy = __shfl_sync(kFull, com[1], k);
      const double cz = __shfl_sync(kFull, com[2], k), r = __shfl_sync(kFull, macRadius, k);
      bool ok = true;
#pragma unroll
      for (int c = 0; c < CPL; ++c) {
        const double pt[3] = {px[c], py[c], pz[c]};
        if (tv[c]) ok = ok && macAccepts(cx, cy, cz, r, pt, pt);
      }
      if (__all_sync(kFull, ok)) accMask |= 1u << k;
    }
    acc = acc || (candidate && ((accMask >> lane) & 1u));
  }
  return acc;
}

/// Ew: kNoEwald (isolated), or one of the two periodic kernels. A periodic walk is up to three launches:
/// kEwaldExpand walks the groups that take the expansion and counts the others (kSkippedGroups), kEwaldPerCell
/// walks those, and ewaldCorrectionKernel adds the expanding groups' corrections; one kernel for all would carry
/// the table code's registers into the common case.
template <int Order, bool Accel, int CPL, bool Vote, int Ew, bool Dipole, bool Ranges, int Soft = kUnsoftened>
__device__ __forceinline__ void walkBody(const WalkParams& p) {
  constexpr bool Periodic = Ew != kNoEwald;
  static_assert(Periodic || !Dipole, "dipoles only in periodic walks (signed sources)");
  static_assert(!Soft || (!Periodic && !Vote), "softened walks are isolated box walks");
  __shared__ WarpLists<Order> lists[kWalkWarpsPerBlock];
  // signed sources: the accepted nodes' dipoles beside the lists
  __shared__ float4 dipLists[kWalkWarpsPerBlock][Dipole ? kListCap : 1];
  // Plummer walks: the accepted nodes' softening beside the lists
  __shared__ float epsLists[kWalkWarpsPerBlock][Soft == kSoftPlummer ? kListCap : 1];
  const int lane = threadIdx.x & 31;
  WarpLists<Order>& L = lists[threadIdx.x >> 5];
  float4* const aDip = Dipole ? dipLists[threadIdx.x >> 5] : nullptr;
  float* const aEps = Soft == kSoftPlummer ? epsLists[threadIdx.x >> 5] : nullptr;
  const unsigned warpId = blockIdx.x * kWalkWarpsPerBlock + (threadIdx.x >> 5);
  unsigned* const queue = p.queue + std::size_t(warpId) * p.queueCap;
  // the expansion kernel's image tags, one per queue entry (ewald/expansion_k.h, hoisted corrections)
  unsigned char* const qtag = Ew == kEwaldExpand ? p.queueTag + std::size_t(warpId) * p.queueCap : nullptr;
  const unsigned qmask = p.queueCap - 1;
  volatile unsigned* const overflowFlag = p.counters + kOverflowNeed;

  unsigned long long approxSum = 0, directSum = 0;  // lane-uniform
  unsigned peak = 0;

  for (;;) {
    const unsigned g = claimGroup(p, overflowFlag, lane);
    if (g >= p.numGroups) break;
    unsigned gb;
    int nt;
    groupSpan<Ranges>(p, g, gb, nt);

    // ---- the group: targets, bounding box of the cell centres (tree/groups.cpp), centre
    double px[CPL], py[CPL], pz[CPL], lo[3], hi[3];
    bool tv[CPL];
    loadGroup<CPL>(p, gb, nt, lane, px, py, pz, tv, lo, hi);
    const double hmin = p.groupHmin[g];  // smallest cell of the group (scaled)
    double groupEpsMin = 0.0, groupEpsMax = 0.0;  // softened walks: the targets' softening range
    if (Soft && p.groupEps) {
      const double2 e = p.groupEps[g];
      groupEpsMin = e.x;
      groupEpsMax = e.y;
    }
    const double gcx = 0.5 * (lo[0] + hi[0]), gcy = 0.5 * (lo[1] + hi[1]), gcz = 0.5 * (lo[2] + hi[2]);
    const double ex = hi[0] - lo[0], ey = hi[1] - lo[1], ez = hi[2] - lo[2];
    // warp-uniform: every lane has the same box and hmin
    const bool split = 0.25 * (ex * ex + ey * ey + ez * ez) > (kCompact * hmin) * (kCompact * hmin);
    // periodic: small groups take the Ewald correction as one expansion about the centre (warp-uniform); each
    // group belongs to one of the two periodic kernels
    if (Periodic) {
      const bool expands = p.ewaldExpansion && ewaldGroupExpands(p.ewald, lo, hi);
      if (expands != (Ew == kEwaldExpand)) {
        if (lane == 0 && Ew == kEwaldExpand) atomicAdd(p.counters + kSkippedGroups, 1u);
        continue;
      }
    }
    constexpr bool expand = Ew == kEwaldExpand;
    Targets<CPL> T;
#pragma unroll
    for (int c = 0; c < CPL; ++c) {
      // the same conversion as a source cell's below: a cell meets itself at exactly zero distance
      splitRel(px[c], gcx, T.tx[c], T.txl[c]);
      splitRel(py[c], gcy, T.ty[c], T.tyl[c]);
      splitRel(pz[c], gcz, T.tz[c], T.tzl[c]);
      T.phi[c] = T.gx[c] = T.gy[c] = T.gz[c] = 0.0;
      T.eps[c] = Soft && p.targetEps && tv[c] ? float(p.targetEps[gb + unsigned(lane + 32 * c)]) : 0.f;
    }
    // warp-uniform: every lane's two cells share x and y (a 4^3 cube in Morton order: cell l + 32 lies two cells
    // above cell l in z), so the evaluators pair them (a lane without a second cell evaluates a copy it discards)
    const bool paired = pairedKernel<CPL, Ew, Soft>() && p.pairedCells && !split &&
                        __all_sync(kFull, !tv[CPL - 1] || (T.tx[0] == T.tx[CPL - 1] && T.ty[0] == T.ty[CPL - 1]));
    if (paired && lane == 0) atomicAdd(p.counters + kPairedGroups, 1u);

    // ---- breadth-first traversal (depth-first pops while the ring is more than half full)
    int aCount = 0, dCount = 0;        // entries waiting in the lists
    unsigned accepted = 0, cellsOpened = 0;
    unsigned head = 0, tail = 1;
    bool overflow = false;
    if (lane == 0) queue[0] = 0u;  // the root
    if (expand && lane == 0) qtag[0] = 0;
    __syncwarp();
    while (head < tail) {
      // the slots just read are reused no earlier than step 3 (after several __syncwarp), see `need`
      const RingBatch rb = popBatch(head, tail, p.queueCap, lane);
      const bool valid = rb.valid;
      const unsigned node = valid ? queue[rb.slot & qmask] : 0u;
      const unsigned tag = expand && valid ? unsigned(qtag[rb.slot & qmask]) : 0u;
      const unsigned keepFrom = rb.keepFrom;
      D4 mac;
      uint4 topo;
      float4 mq0, mq1, dip;
      loadNodeRecords<Order, Dipole>(p, node, valid, mac, topo, mq0, mq1, dip);
      // not empty: !nodeIsEmpty(mac.w) (physics/moments_k.h), written out as the comparison it is, mac.w >= 0:
      // through the inline call ptxas gave the isolated acceleration walk 74 registers instead of 72 (an occupancy
      // step) for the same instructions
      const bool live = valid && mac.w >= 0.0;
      // periodic: the node's image nearest the group; a node unusable there is opened (cpu/walk_lists.cpp
      // buildLists). Below a hoisted node: that node's image, no test. (physics/image_k.h; com shifted in place.)
      double com[3] = {mac.x, mac.y, mac.z};
      int image[3] = {0, 0, 0};
      bool usable = true, hoistable = false;
      if (expand && tag) {
#pragma unroll
        for (int d = 0; d < 3; ++d) com[d] = taggedImage(com[d], tag, d, p.ewald.period[d]);
      } else if (Periodic && live) {
        usable = periodicNodeImage(p.ewald, lo, hi, com, mac.w, com, image, &hoistable);
      }

      bool acc = nodeAccepted<CPL, Vote>(live && usable, com, mac.w, lo, hi, px, py, pz, tv, lane);
      double nodeEpsMax = 0.0;
      if (Soft && acc) {  // the node must also stand exactly for its softened pairs (the cells' tree: eps 0)
        double nodeEpsMin = 0.0;
        if (p.nodeEps) {
          const double2 e = p.nodeEps[node];
          nodeEpsMin = e.x;
          nodeEpsMax = e.y;
        }
        // the sources' extent about com: the particles' tree's own (physics/softening_k.h), else the MAC radius
        const double extent = p.nodeExtent ? p.nodeExtent[node] : mac.w;
        acc = softeningAccepts(kernelOf(Soft), distanceSquaredToBox(com[0], com[1], com[2], lo, hi), extent,
                               groupEpsMin, groupEpsMax, nodeEpsMin, nodeEpsMax);
      }
      const bool open = live && !acc;
      const bool leaf = open && topo.w == 0u;
      const bool inner = open && topo.w != 0u;
      // a hoisted node (its subtree's correction is ewaldCorrectionKernel's): its subtree inherits its image
      unsigned childTag = tag;
      if (expand && p.hoistCorrection && open && !tag && hoistable) childTag = hoistedImageTag(image);

      // 1. accepted nodes -> approximate list
      const unsigned am = __ballot_sync(kFull, acc);
      if (acc) {
        const int pos = aCount + __popc(am & laneMaskLt());
        float4 h, l;
        splitRel(com[0], gcx, h.x, l.x);
        splitRel(com[1], gcy, h.y, l.y);
        splitRel(com[2], gcz, h.z, l.z);
        h.w = mq0.x;
        // the node's S (times massScale) for the per-pair correction, or the Plummer expansion's trace term
        l.w = Ew == kEwaldPerCell || Soft == kSoftPlummer ? mq1.w : 0.f;
        L.aPos[pos] = h;
        L.aLo[pos] = l;
        if (Soft == kSoftPlummer) aEps[pos] = float(nodeEpsMax);
        if (Order >= 2) {
          // the potential-only kernel takes half-upper coefficients (physics/interact_k.h); halving is exact. The
          // Plummer expansion takes the plain quadrupole.
          const float d = Accel || Soft == kSoftPlummer ? 1.0f : 0.5f;
          L.aQa[pos] = make_float4(d * mq0.y, mq0.z, mq0.w, d * mq1.x);
          L.aQb[pos] = make_float2(mq1.y, d * mq1.z);
        }
        if (Dipole) aDip[pos] = dip;
      }
      aCount += __popc(am);
      accepted += __popc(am);
      __syncwarp();
      if (aCount >= 32) {
        flushApprox<Order, Accel, CPL, Ew, Dipole, Soft, true>(L, aDip, aEps, 32, T, split, paired, p.ewald);
        shiftApprox(L, aDip, aEps, aCount - 32, lane);
        aCount -= 32;
      }

      // 2. cells of opened leaves -> direct list, 32 at a time. Cell v of the batch's leaf cells belongs to the
      //    lane s with incl[s-1] <= v < incl[s] (binary search over the lanes' inclusive scan).
      const unsigned lc = leaf ? topo.y : 0u;
      const unsigned incl = warpInclusiveScan(lc, lane);
      const unsigned excl = incl - lc;
      const unsigned leafCells = __shfl_sync(kFull, incl, 31);
      cellsOpened += leafCells;
      for (unsigned t0 = 0; t0 < leafCells; t0 += 32) {
        const unsigned v = t0 + unsigned(lane);
        int s = 0;
#pragma unroll
        for (int k = 16; k >= 1; k >>= 1) {
          const unsigned val = __shfl_sync(kFull, incl, s + k - 1);
          if (val <= v) s += k;
        }
        const unsigned first = __shfl_sync(kFull, topo.x, s);
        const unsigned before = __shfl_sync(kFull, excl, s);
        const unsigned ctag = expand ? __shfl_sync(kFull, childTag, s) : 0u;
        const unsigned chunk = min(32u, leafCells - t0);
        if (unsigned(lane) < chunk) {
          const unsigned si = first + (v - before);
          D4 c = p.sources[si];  // the targets themselves, or a received LET's cells
          if (expand && ctag) {  // the hoisted node's image
            c.x = taggedImage(c.x, ctag, 0, p.ewald.period[0]);
            c.y = taggedImage(c.y, ctag, 1, p.ewald.period[1]);
            c.z = taggedImage(c.z, ctag, 2, p.ewald.period[2]);
          } else if (expand) {  // the image nearest the group's centre (ewald/expansion_k.h)
            c.x = imageNearCentre(c.x, gcx, p.ewald.period[0], p.ewald.invPeriod[0]);
            c.y = imageNearCentre(c.y, gcy, p.ewald.period[1], p.ewald.invPeriod[1]);
            c.z = imageNearCentre(c.z, gcz, p.ewald.period[2], p.ewald.invPeriod[2]);
          }
          float4 h, l;
          splitRel(c.x, gcx, h.x, l.x);
          splitRel(c.y, gcy, h.y, l.y);
          splitRel(c.z, gcz, h.z, l.z);
          h.w = float(c.w * p.massScale);
          l.w = Soft && p.sourceEps ? float(p.sourceEps[si]) : 0.f;  // softened walks: the source's softening
          L.dPos[dCount + lane] = h;
          L.dLo[dCount + lane] = l;
        }
        dCount += int(chunk);
        __syncwarp();
        if (dCount >= 32) {
          flushDirect<Order, Accel, CPL, Ew, Soft, true>(L, 32, T, split, paired, p.ewald);
          shiftDirect(L, dCount - 32, lane);
          dCount -= 32;
        }
      }

      // 3. opened internal nodes -> their children at the queue's tail
      const unsigned nc = inner ? topo.w : 0u;
      const unsigned cincl = warpInclusiveScan(nc, lane);
      const unsigned pushed = __shfl_sync(kFull, cincl, 31);
      const unsigned need = tail + pushed - keepFrom;
      if (need > p.queueCap) {
        if (lane == 0) atomicMax(p.counters + kOverflowNeed, need);
        overflow = true;
        break;
      }
      if (inner) {
        const unsigned base = tail + cincl - nc;
        for (unsigned k = 0; k < nc; ++k) {
          queue[(base + k) & qmask] = topo.z + k;
          if (expand) qtag[(base + k) & qmask] = static_cast<unsigned char>(childTag);
        }
      }
      tail += pushed;
      peak = max(peak, need);
      __syncwarp();  // queue writes visible to the lanes that read them next
    }
    if (overflow) break;  // the host reruns the whole walk with a larger queue

    // ---- the remaining entries, then the results
    if (aCount > 0)
      flushApprox<Order, Accel, CPL, Ew, Dipole, Soft, false>(L, aDip, aEps, aCount, T, split, paired, p.ewald);
    if (dCount > 0) flushDirect<Order, Accel, CPL, Ew, Soft, false>(L, dCount, T, split, paired, p.ewald);
    __syncwarp();  // the lists are rewritten by the next group
#pragma unroll
    for (int c = 0; c < CPL; ++c) {
      if (tv[c]) {
        const unsigned i = gb + unsigned(lane + 32 * c);
        p.phi[i] = foldSelfTerm(T.phi[c], p.invMassScale, p.selfTerm[i], p.selfPotential);  // phi == selfTerm
        if (Accel) {
          p.gx[i] = T.gx[c];
          p.gy[i] = T.gy[c];
          p.gz[i] = T.gz[c];
        }
      }
    }
    // as cpu_walk.cpp: every cell meets itself in the opened leaves of its own tree, and that pair is not an
    // interaction
    approxSum += (unsigned long long)nt * accepted;
    if (cellsOpened > 0) directSum += (unsigned long long)nt * (cellsOpened - p.selfPairs);
  }
  if (lane == 0) {
    if (approxSum) atomicAdd(p.interactions + 0, approxSum);
    if (directSum) atomicAdd(p.interactions + 1, directSum);
    atomicMax(p.counters + kQueuePeak, peak);
  }
}

/// The isolated box walks' resident blocks per SM as before issue #18 (0: ptxas's own choice). Reading each group's
/// range from groupBegin instead of computing g * groupSize made ptxas give these kernels one occupancy step less
/// (order 2 potential: 72 -> 80 registers, 7 -> 6 blocks); the bound keeps the old step (72 registers, a few more
/// bytes spilled; order 1: 64). -DAG_WALK_MIN_BLOCKS=N overrides it for every isolated walk.
template <int Order, bool Accel, int CPL, bool Vote, bool Rg>
constexpr int walkMinBlocks() {
  if (AG_WALK_MIN_BLOCKS > 0) return AG_WALK_MIN_BLOCKS;
  if (Vote || Rg) return 0;  // a system solve's kernels (groupRange): ptxas's own choice, as they were
  if (Order == 2 && !Accel) return 7;  // CPL 1 and 2: 72 registers
  if (Order == 1 && CPL == 1) return 8;  // 64 registers
  return 0;
}

/// The kernels: one body, two register budgets (isolated and the periodic walk that only places images: ptxas's
/// own choice; the per-pair periodic walk: capped, see above).
template <int Order, bool Accel, int CPL, bool Vote, bool Rg>
__global__ void __launch_bounds__(kWalkThreads, walkMinBlocks<Order, Accel, CPL, Vote, Rg>())
    walkKernel(const WalkParams p) {
  walkBody<Order, Accel, CPL, Vote, kNoEwald, false, Rg>(p);
}
/// Softened walks (particles, physics/softening_k.h): isolated, box MAC; ptxas's own register choice.
template <int Order, bool Accel, int CPL, int Soft, bool Rg>
__global__ void __launch_bounds__(kWalkThreads) walkKernelSoft(const WalkParams p) {
  walkBody<Order, Accel, CPL, false, kNoEwald, false, Rg, Soft>(p);
}
// Periodic kernels come with and without the dipole terms (Dip: signed sources, WalkConfig::dipole), so that sheets,
// lines and boxes of masses as given pay nothing for them.
template <int Order, bool Accel, int CPL, bool Vote, bool Dip, bool Rg>
__global__ void AG_WALK_BOUNDS walkKernelImagesAccel(const WalkParams p) {
  walkBody<Order, Accel, CPL, Vote, kEwaldExpand, Dip, Rg>(p);
}
template <int Order, bool Accel, int CPL, bool Vote, bool Dip, bool Rg>
__global__ void __launch_bounds__(kWalkThreads, AG_WALK_IMAGES_MIN_BLOCKS) walkKernelImagesPot(const WalkParams p) {
  walkBody<Order, Accel, CPL, Vote, kEwaldExpand, Dip, Rg>(p);
}
template <int Order, bool Accel, int CPL, bool Vote, int Ew, bool Dip, bool Rg>
__global__ void __launch_bounds__(kWalkThreads, AG_WALK_EWALD_MIN_BLOCKS) walkKernelEwald(const WalkParams p) {
  walkBody<Order, Accel, CPL, Vote, Ew, Dip, Rg>(p);
}

/// The Ewald correction of the groups that take the expansion (ewald/expansion_k.h), launched after the walk
/// (kEwaldExpand) has written their phi: the walk's traversal again, but only down to the nodes that carry a
/// correction (cpu_walk.cpp buildLists): accepted and hoisted nodes take theirs at their image and are not descended,
/// opened leaves that are neither give their cells' (each at its image nearest the centre). So it visits the top
/// of the tree only. Each lane sums its entries in registers; the warp's sum is evaluated at every cell and added.
template <int Order, bool Accel, int CPL, bool Vote, bool Ranges>
__global__ void __launch_bounds__(kWalkThreads, AG_EWALD_CORRECTION_MIN_BLOCKS)
    ewaldCorrectionKernel(const WalkParams p) {
  const int lane = threadIdx.x & 31;
  const unsigned warpId = blockIdx.x * kWalkWarpsPerBlock + (threadIdx.x >> 5);
  unsigned* const queue = p.queue + std::size_t(warpId) * p.queueCap;
  const unsigned qmask = p.queueCap - 1;
  volatile unsigned* const overflowFlag = p.counters + kOverflowNeed;
  const EwaldDeviceView& ev = p.ewald;
  unsigned peak = 0;
  for (;;) {
    const unsigned g = claimGroup(p, overflowFlag, lane);
    if (g >= p.numGroups) break;
    unsigned gb;
    int nt;
    groupSpan<Ranges>(p, g, gb, nt);
    double px[CPL], py[CPL], pz[CPL], lo[3], hi[3];
    bool tv[CPL];
    loadGroup<CPL>(p, gb, nt, lane, px, py, pz, tv, lo, hi);
    if (!(p.ewaldExpansion && ewaldGroupExpands(ev, lo, hi))) continue;  // the per-pair kernel's group
    const double gc[3] = {0.5 * (lo[0] + hi[0]), 0.5 * (lo[1] + hi[1]), 0.5 * (lo[2] + hi[2])};
    float a[kEwaldLocalCoefs];
#pragma unroll
    for (int k = 0; k < kEwaldLocalCoefs; ++k) a[k] = 0.0f;
    unsigned head = 0, tail = 1;
    bool overflow = false;
    if (lane == 0) queue[0] = 0u;  // the root
    __syncwarp();
    while (head < tail) {  // the walk's ring (walkBody)
      const RingBatch rb = popBatch(head, tail, p.queueCap, lane);
      const bool valid = rb.valid;
      const unsigned node = valid ? queue[rb.slot & qmask] : 0u;
      const unsigned keepFrom = rb.keepFrom;
      D4 mac;
      uint4 topo;
      float4 mq0, mq1, dip;
      loadNodeRecords<Order, true>(p, node, valid, mac, topo, mq0, mq1, dip);
      const bool live = valid && mac.w >= 0.0;  // !nodeIsEmpty(mac.w), as in walkBody
      double com[3] = {mac.x, mac.y, mac.z};
      int image[3] = {0, 0, 0};
      bool hoistable = false;
      const bool usable = live && periodicNodeImage(ev, lo, hi, com, mac.w, com, image, &hoistable);
      const bool acc = nodeAccepted<CPL, Vote>(usable, com, mac.w, lo, hi, px, py, pz, tv, lane);
      const bool open = live && !acc;
      const bool hoisted = open && p.hoistCorrection && hoistable && hoistedImageTag(image) != 0u;
      if (acc || hoisted) {
        const float q[6] = {mq0.y, mq0.z, mq0.w, mq1.x, mq1.y, mq1.z};
        const float pd[3] = {dip.x, dip.y, dip.z};
        ewaldLocalAddNode<Order>(ev, float(gc[0] - com[0]), float(gc[1] - com[1]), float(gc[2] - com[2]), mq0.x, q,
                                 mq1.w, a, pd);
      } else if (open && topo.w == 0u) {
        // a leaf with no usable ancestor (shallow trees only: hoisting stops the traversal above the leaves)
        for (unsigned j = 0; j < topo.y; ++j) {
          const D4 c = p.sources[topo.x + j];
          const double x = imageNearCentre(c.x, gc[0], ev.period[0], ev.invPeriod[0]);
          const double y = imageNearCentre(c.y, gc[1], ev.period[1], ev.invPeriod[1]);
          const double z = imageNearCentre(c.z, gc[2], ev.period[2], ev.invPeriod[2]);
          ewaldLocalAddCell(ev, float(gc[0] - x), float(gc[1] - y), float(gc[2] - z), float(c.w * p.massScale), a);
        }
      }
      const bool inner = open && !hoisted && topo.w != 0u;
      const unsigned nc = inner ? topo.w : 0u;
      const unsigned cincl = warpInclusiveScan(nc, lane);
      const unsigned pushed = __shfl_sync(kFull, cincl, 31);
      const unsigned need = tail + pushed - keepFrom;
      if (need > p.queueCap) {
        if (lane == 0) atomicMax(p.counters + kOverflowNeed, need);
        overflow = true;
        break;
      }
      if (inner) {
        const unsigned base = tail + cincl - nc;
        for (unsigned k = 0; k < nc; ++k) queue[(base + k) & qmask] = topo.z + k;
      }
      tail += pushed;
      peak = max(peak, need);
      __syncwarp();
    }
    if (overflow) break;  // the host reruns every pass with a larger queue
#pragma unroll
    for (int k = 0; k < kEwaldLocalCoefs; ++k) {
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) a[k] += __shfl_xor_sync(kFull, a[k], off);
    }
#pragma unroll
    for (int c = 0; c < CPL; ++c) {
      if (!tv[c]) continue;
      float ph = 0.f, ex = 0.f, ey = 0.f, ez = 0.f;
      ewaldLocalEval<Accel>(a, float(px[c] - gc[0]), float(py[c] - gc[1]), float(pz[c] - gc[2]), ph, ex, ey, ez);
      const unsigned i = gb + unsigned(lane + 32 * c);
      p.phi[i] += double(ph) * p.invMassScale;  // the walk wrote phi as foldSelfTerm: sums times invMassScale
      if (Accel) {
        p.gx[i] += double(ex);
        p.gy[i] += double(ey);
        p.gz[i] += double(ez);
      }
    }
  }
  if (lane == 0) atomicMax(p.counters + kQueuePeak, peak);
}

using WalkFn = void (*)(const WalkParams);

template <int Order, bool Accel, int CPL, int Ew, bool Dip, bool Rg>
WalkFn pickVote(const WalkConfig& c) {
  if constexpr (Ew == kEwaldExpand && Accel)
    return c.vote ? walkKernelImagesAccel<Order, Accel, CPL, true, Dip, Rg>
                  : walkKernelImagesAccel<Order, Accel, CPL, false, Dip, Rg>;
  else if constexpr (Ew == kEwaldExpand)
    return c.vote ? walkKernelImagesPot<Order, Accel, CPL, true, Dip, Rg>
                  : walkKernelImagesPot<Order, Accel, CPL, false, Dip, Rg>;
  else
    return c.vote ? walkKernelEwald<Order, Accel, CPL, true, Ew, Dip, Rg>
                  : walkKernelEwald<Order, Accel, CPL, false, Ew, Dip, Rg>;
}
template <int Order, bool Accel, int CPL, int Ew, bool Rg>
WalkFn pickDipole(const WalkConfig& c) {
  return c.dipole ? pickVote<Order, Accel, CPL, Ew, true, Rg>(c) : pickVote<Order, Accel, CPL, Ew, false, Rg>(c);
}
template <int Order, bool Accel, int CPL, bool Rg>
WalkFn pickEwald(const WalkConfig& c) {
  if (c.softening)
    return c.softening == 1 + int(SofteningKernel::Plummer) ? walkKernelSoft<Order, Accel, CPL, kSoftPlummer, Rg>
                                                           : walkKernelSoft<Order, Accel, CPL, kSoftSpline, Rg>;
  if (!c.periodic) return c.vote ? walkKernel<Order, Accel, CPL, true, Rg> : walkKernel<Order, Accel, CPL, false, Rg>;
  if (c.ewaldCorrection)
    return c.vote ? ewaldCorrectionKernel<Order, Accel, CPL, true, Rg>
                  : ewaldCorrectionKernel<Order, Accel, CPL, false, Rg>;
  return c.perCellEwald ? pickDipole<Order, Accel, CPL, kEwaldPerCell, Rg>(c)
                        : pickDipole<Order, Accel, CPL, kEwaldExpand, Rg>(c);
}
template <int Order, bool Accel, int CPL>
WalkFn pickRanges(const WalkConfig& c) {
  return c.ranges ? pickEwald<Order, Accel, CPL, true>(c) : pickEwald<Order, Accel, CPL, false>(c);
}
template <int Order, bool Accel>
WalkFn pickCpl(const WalkConfig& c) {
  return c.cellsPerLane == 2 ? pickRanges<Order, Accel, 2>(c) : pickRanges<Order, Accel, 1>(c);
}
template <int Order>
WalkFn pickAccel(const WalkConfig& c) {
  return c.accelerations ? pickCpl<Order, true>(c) : pickCpl<Order, false>(c);
}
WalkFn pick(const WalkConfig& c) { return c.order == 1 ? pickAccel<1>(c) : pickAccel<2>(c); }

}  // namespace

Status walkBlocksPerSm(const WalkConfig& c, int* blocks) {
  AG_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, pick(c), kWalkThreads, 0));
  if (*blocks < 1) *blocks = 1;
  return Status::success();
}

Status launchWalk(const WalkConfig& c, const WalkParams& p, int blocks, cudaStream_t s) {
  pick(c)<<<blocks, kWalkThreads, 0, s>>>(p);
  AG_CUDA_LAUNCHED("walkKernel");
  return Status::success();
}

}  // namespace cuda
}  // namespace amrgrav
