/// \file kernel_fmm.cu
/// \brief The FMM's evaluation kernels (kernels_fmm.h): the P2P of regular leaves by the CPU's unit tables
/// (fmm/p2p_tables.h) in tiles (fmm/p2p_tiles.h; potentials only on the FP64 tensor cores, fmm/p2p_mma_k.h) and of
/// the others computed, the generated fused M2L kernels (cuda/m2l_device.h, in double, one interaction per thread)
/// and the exact L2L and L2P in the CPU's term order (fmm/expansions.cpp; L2P unrolled over fmm/terms_k.h at compile
/// time). Every sum has a fixed order (no atomics): results are the same bits run to run; against the CPU (lanes of
/// 8, Newton reciprocal square roots, the near field's pairs added in list order, the tensor cores' groups of 4)
/// they differ by rounding only, except the computed near pairs of regular targets, which by default run in single
/// precision (fmmP2PComputedSingle, fmm/near_single_k.h: ~1e-7 of phi; fmmP2PComputed in double otherwise).
#include <cuda_pipeline.h>
#include <cuda_runtime.h>

#include <string>
#include <utility>

#include "cuda/check.h"
#include "cuda/dmma.h"
#include "cuda/kernels_fmm.h"
#include "cuda/m2l_device.h"
#include "fmm/interaction_lists.h"
#include "fmm/m2l_stage_k.h"
#include "fmm/near_single_k.h"
#include "fmm/p2p_mma_k.h"
#include "fmm/p2p_tiles.h"
#include "fmm/terms_k.h"

namespace amrgrav {
namespace cuda {
namespace {

constexpr int kM2LThreads = 64;      // 2 target nodes (warps) per block: p 7 shares 56 KB, 4 blocks per SM
constexpr int kLeafThreads = 64;     // a leaf's cells (fmm/fmm_tree.h kFmmLeafSize), one per thread
constexpr int kL2LThreads = 32;      // 4 nodes x 8 child slots: p 7's monomials take 31 KB of shared memory
constexpr unsigned kFull = 0xffffffffu;

// P2P tiles: 128 threads, thread (tq, lq) = (tid % 16, tid / 16) takes cells 4 tq .. 4 tq + 3 of the tile's targets
// 4 lq .. 4 lq + 3 (a 4 x 4 block of the 64 x 32 product: 4 table entries and 4 masses feed 16 multiply-adds).
constexpr int kTileThreads = 128;
constexpr int kTileCells = fmm::kTableCells;     // 64
constexpr int kTileTargets = fmm::kTileTargets;  // 32
constexpr int kMassStride = fmm::kMassRowStride;  // a staged source cell's masses: 32-byte aligned, fewer conflicts
static_assert(kTileTargets == 32 && kTileCells == 64 && kTileThreads == (kTileCells / 4) * (kTileTargets / 4),
              "the tile kernel's thread layout");
static_assert(kMassStride == kTileTargets + 4 && fmm::kMmaTableCells == kTileCells &&
                  kTileThreads == 32 * fmm::kMmaWarps && 16 * fmm::kMmaWarps == kTileCells &&
                  8 * fmm::kMmaMTiles * fmm::kMmaWarps == kTileCells && 8 * fmm::kMmaNTiles == kTileTargets &&
                  4 * fmm::kMmaKSteps == kTileCells,
              "the tensor-core tile kernel's pieces (fmm/p2p_mma_k.h)");

// The table steps on the FP64 tensor cores (fmmP2PTilesMma; 1, the default; accelerations unless
// FmmDeviceView::accelTablesMma is off) or on FMAs in the CPU's order (fmmP2PTiles, s ascending: 0).
#ifndef AMRGRAV_FMM_P2P_DMMA
#define AMRGRAV_FMM_P2P_DMMA 1
#endif

__host__ __device__ constexpr int termsOf(int p) { return (p + 1) * (p + 2) * (p + 3) / 6; }

// MS: the stride of the source's terms (1 where they lie, fmm::kM2LStageStride staged); NR: the L terms in registers.
template <int P> struct FusedM2L;
#define AG_FUSED_M2L(P)                                                                                 \
  template <> struct FusedM2L<P> {                                                                      \
    static constexpr int kRegs = kM2LRegTerms##P, kShared = kM2LSharedTerms##P;                         \
    template <int MS = 1, int NR = kRegs>                                                               \
    static __device__ __forceinline__ void add(double x, double y, double z, const double* Mb, double* La, \
                                               volatile double* Ls) {                                   \
      m2lFused##P<MS, NR>(x, y, z, Mb, La, Ls);                                                         \
    }                                                                                                   \
    template <int MS = 1, int NR = kRegs>                                                               \
    static __device__ __forceinline__ void addDip(double x, double y, double z, const double* Mb,       \
                                                  double* La, volatile double* Ls) {                    \
      m2lFusedDip##P<MS, NR>(x, y, z, Mb, La, Ls);                                                      \
    }                                                                                                   \
    template <int MS, int NR, bool Dip, bool Direct>                                                    \
    static __device__ __forceinline__ void pair(double x, double y, double z, const double* Mb, double* La, \
                                                volatile double* Ls) {                                  \
      if constexpr (Direct && Dip) m2lDirectDip##P<MS, NR>(x, y, z, Mb, La, Ls);                        \
      else if constexpr (Direct) m2lDirect##P<MS, NR>(x, y, z, Mb, La, Ls);                             \
      else if constexpr (Dip) m2lFusedDip##P<MS, NR>(x, y, z, Mb, La, Ls);                              \
      else m2lFused##P<MS, NR>(x, y, z, Mb, La, Ls);                                                    \
    }                                                                                                   \
  };
AG_FUSED_M2L(3)
AG_FUSED_M2L(4)
AG_FUSED_M2L(5)
AG_FUSED_M2L(6)
AG_FUSED_M2L(7)
#undef AG_FUSED_M2L

/// Shared memory of one M2L block: a column per lane of each warp's shared L terms.
template <int P> constexpr std::size_t m2lSharedBytes() {
  return std::size_t(kM2LThreads) * FusedM2L<P>::kShared * sizeof(double);
}

/// An L term's 32 lane sums added by a fixed shuffle tree: lane 0's value is the total.
__device__ __forceinline__ double laneTotal(double s) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) s += __shfl_down_sync(kFull, s, off);
  return s;
}

/// Adds an L term's 32 lane sums into lane 0 by laneTotal's tree; lane 0 adds the total to *Lk.
__device__ __forceinline__ void addLaneSums(double s, unsigned lane, double* Lk) {
  s = laneTotal(s);
  if (lane == 0) *Lk += s;
}

/// The image shift's vector of `shifts[q]` (periodic boxes; fmm/interaction_lists.h imageShiftVector).
__device__ __forceinline__ void shiftOf(const FmmDeviceView& v, const std::uint8_t* shifts, std::size_t q,
                                        double s[3]) {
  fmm::imageShiftVector(v.period, shifts[q], s);
}

/// One warp per target node A: lane l takes A's sources l, l + 32, ... (the sources' multipoles read where they
/// lie) through m2l_device.h's fused kernel, its low-degree L terms in registers and the others in the lane's column
/// of shared memory (the p 7 kernel's 120 terms and 120 derivatives do not fit one thread's registers); then each
/// term's 32 lane sums are added by a fixed shuffle tree into lane 0, which adds them to L. Dip: the dipole terms
/// kept (periodic boxes), where a source may be an image (v.m2lShift: its centre moved first, as evaluate.cpp).
template <int P, bool Dip>
__global__ void __launch_bounds__(kM2LThreads) fmmM2L(FmmDeviceView v) {
  extern __shared__ double m2lShared[];
  using K = FusedM2L<P>;
  const unsigned A = (blockIdx.x * unsigned(kM2LThreads) + threadIdx.x) / 32u;
  const unsigned lane = threadIdx.x & 31u;
  if (A >= v.nodes) return;  // the whole warp
  const unsigned s0 = v.m2lStart[A], s1 = v.m2lStart[A + 1];
  if (s0 == s1) return;  // the whole warp
  double La[K::kRegs];
#pragma unroll
  for (int k = 0; k < K::kRegs; ++k) La[k] = 0.0;
  // this lane's column; volatile, so that the compiler does not keep its terms in registers across the loop (which
  // is what spilled)
  volatile double* Ls = m2lShared + (threadIdx.x / 32u) * (32u * K::kShared) + lane;
#pragma unroll
  for (int k = 0; k < K::kShared; ++k) Ls[32 * k] = 0.0;
  const double ax = v.centre[3 * std::size_t(A)], ay = v.centre[3 * std::size_t(A) + 1],
               az = v.centre[3 * std::size_t(A) + 2];
  for (unsigned q = s0 + lane; q < s1; q += 32u) {
    const std::size_t B = v.m2lSource[q];
    if constexpr (Dip) {
      double sh[3] = {0.0, 0.0, 0.0};
      if (v.m2lShift) shiftOf(v, v.m2lShift, q, sh);
      K::addDip(ax - (v.centre[3 * B] + sh[0]), ay - (v.centre[3 * B + 1] + sh[1]),
                az - (v.centre[3 * B + 2] + sh[2]), v.M + B * std::size_t(v.mStride), La, Ls);
    } else {
      K::add(ax - v.centre[3 * B], ay - v.centre[3 * B + 1], az - v.centre[3 * B + 2],
             v.M + B * std::size_t(v.mStride), La, Ls);
    }
  }
  // the terms in fmm/multi_index.h's order: those in registers are degrees 0..d, those in shared memory the rest
  double* Lt = v.L + std::size_t(A) * termsOf(P);
#pragma unroll
  for (int k = 0; k < K::kRegs; ++k) addLaneSums(La[k], lane, Lt + k);
#pragma unroll 4
  for (int k = 0; k < K::kShared; ++k) addLaneSums(Ls[32 * k], lane, Lt + K::kRegs + k);
}

/// A batch of nb sources' NT terms (source of lane i: `mine` there; its terms at src + B * stride) copied into the
/// warp's staging room Ms at fmm::m2lStageAt(term, i), each source's terms by consecutive lanes (cp.async); returns
/// once every lane's copies are in place. The warp's lanes all call it; the previous batch's readers are done first.
template <int NT>
__device__ __forceinline__ void stageM2LBatch(const double* src, unsigned stride, unsigned mine, unsigned nb,
                                              unsigned lane, double* Ms) {
  constexpr int MS = fmm::kM2LStageStride, Rows = (NT + 31) / 32;
  __syncwarp();  // every lane is done with the previous batch's multipoles
  for (unsigned i = 0; i < nb; ++i) {
    const unsigned B = __shfl_sync(kFull, mine, i);
    const double* g = src + std::size_t(B) * stride + lane;
    double* d = Ms + fmm::m2lStageAt(lane, i);
#pragma unroll
    for (int r = 0; r < Rows; ++r)
      if (32 * (r + 1) <= NT || lane + 32u * r < unsigned(NT))
        __pipeline_memcpy_async(d + 32 * r * MS, g + 32 * r, sizeof(double));
  }
  __pipeline_commit();
  __pipeline_wait_prior(0);
  __syncwarp();  // every lane's copies are in place
}

/// The staged kernels' lane sums zeroed: NR terms in registers, NS in the lane's shared column.
template <int NR, int NS> __device__ __forceinline__ void clearLaneTerms(double* La, volatile double* Ls) {
#pragma unroll
  for (int k = 0; k < NR; ++k) La[k] = 0.0;
#pragma unroll 4
  for (int k = 0; k < NS; ++k) Ls[32 * k] = 0.0;
}

/// The staged kernels' walk over target A's sources m2lSource[s0 .. s1) in batches of 32: each batch's NT terms (node
/// B's at src + B * stride) staged in Ms (stageM2LBatch), then lane i's source B through pair(x, y, z, Ms + lane),
/// (x, y, z) = A's centre minus B's (with Dip, B moved by its image shift first, as evaluate.cpp).
template <int NT, bool Dip, class Pair>
__device__ __forceinline__ void m2lSourceBatches(const FmmDeviceView& v, unsigned A, unsigned s0, unsigned s1,
                                                 unsigned lane, const double* src, unsigned stride, double* Ms,
                                                 Pair pair) {
  const double ax = v.centre[3 * std::size_t(A)], ay = v.centre[3 * std::size_t(A) + 1],
               az = v.centre[3 * std::size_t(A) + 2];
  for (unsigned b0 = s0; b0 < s1; b0 += 32u) {
    const unsigned nb = min(32u, s1 - b0);
    const unsigned mine = lane < nb ? v.m2lSource[b0 + lane] : 0u;
    stageM2LBatch<NT>(src, stride, mine, nb, lane, Ms);
    if (lane < nb) {
      const std::size_t B = mine;
      if constexpr (Dip) {
        double sh[3] = {0.0, 0.0, 0.0};
        if (v.m2lShift) shiftOf(v, v.m2lShift, b0 + lane, sh);
        pair(ax - (v.centre[3 * B] + sh[0]), ay - (v.centre[3 * B + 1] + sh[1]), az - (v.centre[3 * B + 2] + sh[2]),
             Ms + lane);
      } else {
        pair(ax - v.centre[3 * B], ay - v.centre[3 * B + 1], az - v.centre[3 * B + 2], Ms + lane);
      }
    }
  }
}

/// The staged M2L (kFmmM2LStaged, kFmmM2LStagedLowRegs, kFmmM2LDirect, kFmmM2LDirectLowRegs; fmm/m2l_stage_k.h):
/// one warp per target node A and block.
/// Its sources go in batches of 32: the warp copies the batch's multipoles into shared memory (cp.async, each
/// source's terms by consecutive lanes: whole sectors, each read once, where the plain kernel's lanes each read their
/// own source, 32 lines per load and ~4 times the bytes through L2 once its L1 is full), transposed so that lane i's
/// source is a column; then lane i adds its source's M2L through the same fused kernel as fmmM2L (the same sums in
/// the same order), its first NR L terms in registers and the others in its shared column, and the lanes' sums go
/// into L by the same shuffle tree. Per pair at p 7 (NR 20): 120 shared loads of M (conflict-free: consecutive
/// words across the lanes), ~150 shared read-modify-writes of L (191 at NR 10), 4 cp.async of 8 bytes per lane
/// and source copied; shared memory 120 x 33 + 100 x 32 doubles = 56 KB a block (4 blocks per SM; 58 KB, 3, at NR
/// 10). Partial batches leave lanes idle as fmmM2L does. Direct: m2l_device.h's m2lDirect instead (the derivatives'
/// recurrence on D itself: ~6% fewer FP64 operations, spills 408 bytes at NR 20 and 96 at NR 10 where m2lFused
/// spills 536 and 424; ptxas -v, sm_90), the same products and sums in the same order, the derivatives rounded
/// otherwise.
template <int P, bool Dip, bool LowRegs, bool Direct>
__global__ void __launch_bounds__(32) fmmM2LStaged(FmmDeviceView v) {
  extern __shared__ double m2lShared[];
  using K = FusedM2L<P>;
  constexpr int NT = termsOf(P), NR = fmm::m2lStagedRegTerms(P, LowRegs), NS = NT - NR;
  constexpr int MS = fmm::kM2LStageStride;
  static_assert(!LowRegs || NR == K::kRegs, "variant 2 keeps the plain kernel's register terms");
  const unsigned A = blockIdx.x, lane = threadIdx.x;
  if (A >= v.nodes) return;  // the whole warp
  const unsigned s0 = v.m2lStart[A], s1 = v.m2lStart[A + 1];
  if (s0 == s1) return;  // the whole warp
  double* Ms = m2lShared;
  volatile double* Ls = m2lShared + fmm::m2lStageDoubles(NT) + lane;  // this lane's column (as fmmM2L's)
  double La[NR];
  clearLaneTerms<NR, NS>(La, Ls);
  m2lSourceBatches<NT, Dip>(v, A, s0, s1, lane, v.M, unsigned(v.mStride), Ms,
                            [&](double x, double y, double z, const double* Mb) {
                              K::template pair<MS, NR, Dip, Direct>(x, y, z, Mb, La, Ls);
                            });
  double* Lt = v.L + std::size_t(A) * termsOf(P);
#pragma unroll
  for (int k = 0; k < NR; ++k) addLaneSums(La[k], lane, Lt + k);
#pragma unroll 4
  for (int k = 0; k < NS; ++k) addLaneSums(Ls[32 * k], lane, Lt + NR + k);
}

/// Shared memory of one staged M2L block: the batch's multipoles and the lane's columns of shared L terms.
template <int P, bool LowRegs> constexpr std::size_t m2lStagedBytes() {
  return (std::size_t(fmm::m2lStageDoubles(termsOf(P))) +
          32u * std::size_t(termsOf(P) - fmm::m2lStagedRegTerms(P, LowRegs))) *
         sizeof(double);
}

/// The harmonic M2L's generated pieces of order P (cuda/m2l_device.h): the pair, the fold, the unfold.
template <int P> struct HarmonicM2L;
#define AG_HARMONIC_M2L(P)                                                                                  \
  template <> struct HarmonicM2L<P> {                                                                       \
    static constexpr int kRegs = kM2LHarmonicRegTerms##P;                                                   \
    template <int MS, int NR, bool Dip>                                                                     \
    static __device__ __forceinline__ void pair(double x, double y, double z, const double* Mb, double* La, \
                                                volatile double* Ls) {                                      \
      if constexpr (Dip) m2lHarmonicDip##P<MS, NR>(x, y, z, Mb, La, Ls);                                    \
      else m2lHarmonic##P<MS, NR>(x, y, z, Mb, La, Ls);                                                     \
    }                                                                                                       \
    static __device__ __forceinline__ void fold(const double* M, double* Mh) { foldMultipoles##P(M, Mh); }  \
    static __device__ __forceinline__ void unfold(const double* Lh, double* L) { addUnfoldedLocal##P(Lh, L); } \
  };
AG_HARMONIC_M2L(3)
AG_HARMONIC_M2L(4)
AG_HARMONIC_M2L(5)
AG_HARMONIC_M2L(6)
AG_HARMONIC_M2L(7)
#undef AG_HARMONIC_M2L

/// Nodes of a fold block and its threads: the block's rows in and out through shared memory, coalesced (a thread
/// reading its own node's 1 KB row waited on memory: 2 ms for a 256^3 grid's 300k nodes).
constexpr unsigned kFoldNodes = 32, kFoldThreads = 128;

/// kFoldNodes nodes a block: their multipoles folded onto their harmonic terms (v.Mh; the padding zeroed), a thread
/// per node, the rows staged in shared memory at odd strides (a half-warp's rows in distinct banks).
template <int P> __global__ void __launch_bounds__(kFoldThreads) fmmFoldMultipoles(FmmDeviceView v) {
  constexpr unsigned NT = fmm::termsUpTo(P), NH = fmm::harmonicTermsOf(P), HS = fmm::harmonicStrideOf(P);
  constexpr unsigned MR = NT | 1u, HR = HS | 1u;
  __shared__ double Ms[kFoldNodes * MR], Hs[kFoldNodes * HR];
  const std::size_t A0 = std::size_t(blockIdx.x) * kFoldNodes;
  const unsigned count = v.nodes - A0 < kFoldNodes ? unsigned(v.nodes - A0) : kFoldNodes;
  for (unsigned q = threadIdx.x; q < count * NT; q += kFoldThreads)
    Ms[q / NT * MR + q % NT] = v.M[(A0 + q / NT) * v.mStride + q % NT];
  __syncthreads();
  if (threadIdx.x < count) {
    double* h = Hs + threadIdx.x * HR;
    HarmonicM2L<P>::fold(Ms + threadIdx.x * MR, h);
#pragma unroll
    for (unsigned k = NH; k < HS; ++k) h[k] = 0.0;
  }
  __syncthreads();
  for (unsigned q = threadIdx.x; q < count * HS; q += kFoldThreads) v.Mh[A0 * HS + q] = Hs[q / HS * HR + q % HS];
}

/// The harmonic M2L (kFmmM2LHarmonic, the default): fmmM2LStaged's warp per target node and batches of 32 sources,
/// the batch's folded multipoles (v.Mh, fmmFoldMultipoles) staged in shared memory, lane i's pair through
/// m2l_device.h's m2lHarmonic into the target's (p+1)^2 harmonic terms (the first NR in registers, the others in the
/// lane's shared column); then each term's 32 lane sums by the same shuffle tree into lane 0, which writes them to
/// the warp's staging room and adds the unfolded expansion (every term of L) to L.
template <int P, bool Dip>
__global__ void __launch_bounds__(32) fmmM2LHarmonic(FmmDeviceView v) {
  extern __shared__ double m2lShared[];
  using K = HarmonicM2L<P>;
  constexpr int NH = fmm::harmonicTermsOf(P), HS = fmm::harmonicStrideOf(P), NR = K::kRegs, NS = NH - NR;
  constexpr int MS = fmm::kM2LStageStride;
  const unsigned A = blockIdx.x, lane = threadIdx.x;
  if (A >= v.nodes) return;  // the whole warp
  const unsigned s0 = v.m2lStart[A], s1 = v.m2lStart[A + 1];
  if (s0 == s1) return;  // the whole warp
  double* Ms = m2lShared;
  volatile double* Ls = m2lShared + fmm::m2lStageDoubles(NH) + lane;  // this lane's column
  double La[NR];
  clearLaneTerms<NR, NS>(La, Ls);
  m2lSourceBatches<NH, Dip>(v, A, s0, s1, lane, v.Mh, unsigned(HS), Ms,
                            [&](double x, double y, double z, const double* Mb) {
                              K::template pair<MS, NR, Dip>(x, y, z, Mb, La, Ls);
                            });
  __syncwarp();  // the staging room is free: the harmonic sums go there
  double* Lh = Ms;
#pragma unroll
  for (int k = 0; k < NR; ++k) {
    const double s = laneTotal(La[k]);
    if (lane == 0) Lh[k] = s;
  }
#pragma unroll 4
  for (int k = 0; k < NS; ++k) {
    const double s = laneTotal(Ls[32 * k]);
    if (lane == 0) Lh[NR + k] = s;
  }
  if (lane == 0) K::unfold(Lh, v.L + std::size_t(A) * termsOf(P));
}

/// Shared memory of one harmonic M2L block: the batch's folded multipoles and the lane's columns of shared terms.
template <int P> constexpr std::size_t m2lHarmonicBytes() {
  return (std::size_t(fmm::m2lStageDoubles(fmm::harmonicTermsOf(P))) +
          32u * std::size_t(fmm::harmonicTermsOf(P) - HarmonicM2L<P>::kRegs)) *
         sizeof(double);
}

/// f(std::integral_constant<int, I>) for I = Is... in order: a loop unrolled at compile time, its index a constant.
template <class F, int... Is>
__device__ __forceinline__ void unrolled(F&& f, std::integer_sequence<int, Is...>) {
  (f(std::integral_constant<int, Is>{}), ...);
}

/// Term q of the child's L from the node's L (Li) and the shift's monomials (term j at mt[j * kL2LThreads]): the
/// CPU's entries (fmm/multi_index.cpp l2lK, l2lJ, l2lKJ) for q, by ascending j: every j of degree <= P - deg q (terms
/// are numbered by degree), each times Li[q + j]; the indices compile-time constants, so the 1,716 entries of p 7 are
/// shared-memory loads at fixed offsets with no index loads between them (read from tables they were latency: 120 us
/// for a level of one node).
template <int P, int q>
__device__ __forceinline__ double l2lTerm(const volatile double* Li, const volatile double* mt) {
  constexpr int NJ = fmm::termsUpTo(P - fmm::termDegree(q));
  double a = 0.0;
  unrolled(
      [&](auto jc) {
        constexpr int j = decltype(jc)::value;
        constexpr int kj = fmm::termIndex(fmm::termExponent(q, 0) + fmm::termExponent(j, 0),
                                          fmm::termExponent(q, 1) + fmm::termExponent(j, 1),
                                          fmm::termExponent(q, 2) + fmm::termExponent(j, 2));
        a += Li[kj] * mt[j * kL2LThreads];
      },
      std::make_integer_sequence<int, NJ>{});
  return a;
}

/// One thread per (node of [b, e), child slot), 4 nodes a block: the node's L (in shared memory) shifted to the
/// child's centre and added to the child's L, in the CPU's order (expansions.cpp localsOfNode: each term's entries
/// by ascending j, then added to the child's L; l2lTerm). The thread's monomials (the CPU's recurrence, unrolled) go
/// to its column of shared memory.
template <int P>
__global__ void __launch_bounds__(kL2LThreads) fmmL2L(FmmDeviceView v, unsigned b, unsigned e) {
  constexpr int NT = fmm::termsUpTo(P), nodes = kL2LThreads / 8;
  __shared__ double Ls[nodes * NT], mono[NT * kL2LThreads];
  const unsigned n0 = b + blockIdx.x * nodes;
  for (unsigned q = threadIdx.x; q < unsigned(nodes * NT); q += kL2LThreads)
    if (n0 + q / NT < e) Ls[q] = v.L[std::size_t(n0 + q / NT) * NT + q % NT];
  __syncthreads();
  const unsigned i = n0 + threadIdx.x / 8, k = threadIdx.x % 8;
  if (i >= e || k >= v.childCount[i]) return;
  const std::size_t c = v.childBegin[i] + k;
  const double h[3] = {v.centre[3 * c] - v.centre[3 * std::size_t(i)],
                       v.centre[3 * c + 1] - v.centre[3 * std::size_t(i) + 1],
                       v.centre[3 * c + 2] - v.centre[3 * std::size_t(i) + 2]};
  double* mt = mono + threadIdx.x;  // term t at mt[t * kL2LThreads]
  unrolled(
      [&](auto tc) {
        constexpr int t = decltype(tc)::value;
        if constexpr (t == 0) {
          mt[0] = 1.0;
        } else {
          constexpr int pr = fmm::monoPrevOf(t);
          mt[t * kL2LThreads] = fmm::monomialFrom<t>(mt[pr * kL2LThreads], h);
        }
      },
      std::make_integer_sequence<int, NT>{});
  // read where used (volatile): hoisting the 1,716 products' operands took 255 registers and spilled
  const volatile double* Li = Ls + (threadIdx.x / 8) * NT;
  double* Lc = v.L + c * NT;
  unrolled([&](auto qc) { Lc[decltype(qc)::value] += l2lTerm<P, decltype(qc)::value>(Li, mt); },
           std::make_integer_sequence<int, NT>{});
}

/// One block per leaf, a thread per cell: the leaf's L (in shared memory) at the cell, added to phi; minus its
/// gradient to g. The CPU's sums (expansions.cpp localsOfNode: phi over every term, each gradient component over
/// the terms of degree < p, in term order), unrolled over the terms at compile time, so every monomial has a fixed
/// register and only two degrees' worth are alive at once.
template <int P, bool Accel>
__global__ void __launch_bounds__(kLeafThreads) fmmL2P(FmmDeviceView v) {
  constexpr int NT = fmm::termsUpTo(P), NG = fmm::termsUpTo(P - 1);  // the gradient's terms: degree < p
  __shared__ double Ls[NT];
  const unsigned leaf = v.leaves[blockIdx.x];
  for (unsigned q = threadIdx.x; q < unsigned(NT); q += kLeafThreads) Ls[q] = v.L[std::size_t(leaf) * NT + q];
  __syncthreads();
  const double cx = v.centre[3 * std::size_t(leaf)], cy = v.centre[3 * std::size_t(leaf) + 1],
               cz = v.centre[3 * std::size_t(leaf) + 2];
  const unsigned b = v.cellBegin[leaf], e = b + v.cellCount[leaf];
  // read where used: hoisting all of L into registers is what spilled (p 7)
  const volatile double* Lv = Ls;
  for (unsigned j = b + threadIdx.x; j < e; j += kLeafThreads) {
    const double h[3] = {v.x[j] - cx, v.y[j] - cy, v.z[j] - cz};
    double mono[NT];
    double p = 0.0, f[3] = {0.0, 0.0, 0.0};
    unrolled(
        [&](auto tc) {
          constexpr int t = decltype(tc)::value;
          if constexpr (t == 0) {
            mono[0] = 1.0;
          } else {
            constexpr int pr = fmm::monoPrevOf(t);
            mono[t] = fmm::monomialFrom<t>(mono[pr], h);
          }
          p = fma(Lv[t], mono[t], p);
          if constexpr (Accel && t < NG) {
            constexpr int px = fmm::plusAxisOf(t, 0), py = fmm::plusAxisOf(t, 1), pz = fmm::plusAxisOf(t, 2);
            f[0] = fma(Lv[px], mono[t], f[0]);
            f[1] = fma(Lv[py], mono[t], f[1]);
            f[2] = fma(Lv[pz], mono[t], f[2]);
          }
        },
        std::make_integer_sequence<int, NT>{});
    v.phi[j] += p;
    if constexpr (Accel) {
      v.gx[j] -= f[0];
      v.gy[j] -= f[1];
      v.gz[j] -= f[2];
    }
  }
}

/// Slot r (0 .. 15) of thread tid in staging a table step's masses: cell stagedCell of target stagedTarget (4
/// consecutive cells of 8 sources per 32 threads: full 32-byte sectors).
constexpr int kStagedPerThread = kTileCells * kTileTargets / kTileThreads;
__device__ __forceinline__ unsigned stagedCell(int r, unsigned tid) {
  const unsigned q = unsigned(r) * kTileThreads + tid;
  return (q & 3u) | (q >> 5 & 15u) << 2;
}
__device__ __forceinline__ unsigned stagedTarget(int r, unsigned tid) {
  const unsigned q = unsigned(r) * kTileThreads + tid;
  return (q >> 2 & 7u) | (q >> 9) << 3;
}

/// A table step's masses into shared memory, ms[s * kMassStride + b] = source b's cell s (0 for none); the block's
/// threads all take part (barriers before, for the previous step's readers, and after).
__device__ __forceinline__ void stageMasses(const FmmDeviceView& v, const std::uint32_t* source, unsigned tid,
                                            double* ms) {
  __syncthreads();  // the previous table's masses are read by every thread
#pragma unroll 4
  for (int r = 0; r < kStagedPerThread; ++r) {
    const unsigned S = source[stagedTarget(r, tid)], sc = stagedCell(r, tid);
    ms[sc * kMassStride + stagedTarget(r, tid)] = S != fmm::kNoLeaf ? v.mass[v.cellBegin[S] + sc] : 0.0;
  }
  __syncthreads();
}

/// stageMasses without waiting: this thread's slots as asynchronous copies into ms (zeros stored directly), one
/// committed group; the caller waits (__pipeline_wait_prior(0), then a barrier) before reading ms and must not
/// start it while another thread may still read ms.
__device__ __forceinline__ void stageMassesAsync(const FmmDeviceView& v, const std::uint32_t* source, unsigned tid,
                                                 double* ms) {
#pragma unroll 4
  for (int r = 0; r < kStagedPerThread; ++r) {
    const unsigned S = source[stagedTarget(r, tid)], sc = stagedCell(r, tid);
    double* to = ms + sc * kMassStride + stagedTarget(r, tid);
    if (S != fmm::kNoLeaf) __pipeline_memcpy_async(to, v.mass + v.cellBegin[S] + sc, sizeof(double));
    else *to = 0.0;
  }
  __pipeline_commit();
}

/// One step of a tile that is a table: acc[a][b] = sum_s K[s][t_a] m_b[s] (s ascending, fused: the CPU's tableP2P
/// order) and with accelerations g[.][a][b] = sum_s d K^3 m_b[s] (w = K K K m, then d w added, d = p_t - p_s - delta
/// made exactly), the masses staged in ms ([s][target], kMassStride apart).
template <bool Accel>
__device__ __forceinline__ void tableStep(const double* __restrict__ K, const double* ms, int tq, int lq,
                                          const double e[4][3], double acc[4][4], double g[3][4][4]) {
#pragma unroll
  for (int a = 0; a < 4; ++a)
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      acc[a][b] = 0.0;
      if constexpr (Accel) g[0][a][b] = g[1][a][b] = g[2][a][b] = 0.0;
    }
#pragma unroll 1
  for (int hb = 0; hb < 8; ++hb) {  // sources 8 hb .. 8 hb + 7: lattice = hb's bits (high) + u's bits (low)
    double eh[4][3];
    if constexpr (Accel)
#pragma unroll
      for (int a = 0; a < 4; ++a)
#pragma unroll
        for (int d = 0; d < 3; ++d) eh[a][d] = e[a][d] - double(2 * (hb >> d & 1));  // exact: small integers
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const int s = 8 * hb + u;
      const double2 k01 = __ldg(reinterpret_cast<const double2*>(K + s * kTileCells + 4 * tq));
      const double2 k23 = __ldg(reinterpret_cast<const double2*>(K + s * kTileCells + 4 * tq + 2));
      const double2 m01 = *reinterpret_cast<const double2*>(ms + s * kMassStride + 4 * lq);
      const double2 m23 = *reinterpret_cast<const double2*>(ms + s * kMassStride + 4 * lq + 2);
      const double k[4] = {k01.x, k01.y, k23.x, k23.y}, m[4] = {m01.x, m01.y, m23.x, m23.y};
#pragma unroll
      for (int a = 0; a < 4; ++a)
#pragma unroll
        for (int b = 0; b < 4; ++b) acc[a][b] = fma(k[a], m[b], acc[a][b]);
      if constexpr (Accel) {
#pragma unroll
        for (int a = 0; a < 4; ++a) {
          const double k3 = k[a] * k[a] * k[a];
          const double d[3] = {eh[a][0] - double(u & 1), eh[a][1] - double(u >> 1 & 1), eh[a][2] - double(u >> 2 & 1)};
#pragma unroll
          for (int b = 0; b < 4; ++b) {
            const double w = k3 * m[b];
#pragma unroll
            for (int c = 0; c < 3; ++c) g[c][a][b] = fma(d[c], w, g[c][a][b]);
          }
        }
      }
    }
  }
}

/// One block per tile (fmm/p2p_tiles.h): each table step for all the tile's targets at once (their sources' masses
/// staged in shared memory); each step's sums are added to the cells' running totals (this thread's column of shared
/// memory) in the tile's step order, scaled by 1/h and 1/h^2 first (tableP2P's products; explicitly rounded, never
/// fused with the add, as the CPU's separate store and add), and stored. A target's missing steps add zeros: the same
/// bits. The computed steps (after the tables) are fmmP2PComputed's, which adds them to the stored totals.
template <bool Accel>
__global__ void __launch_bounds__(kTileThreads) fmmP2PTiles(FmmDeviceView v) {
  constexpr int NC = Accel ? 4 : 1;  // phi, then gx, gy, gz
  __shared__ __align__(16) double ms[kTileCells * kMassStride];
  extern __shared__ double tot[];  // entry (c, a, b) of this thread at ((c * 4 + a) * 4 + b) * kTileThreads + tid
  const unsigned tile = blockIdx.x, tid = threadIdx.x;
  const int tq = int(tid % 16), lq = int(tid / 16);
#pragma unroll
  for (int q = 0; q < NC * 16; ++q) tot[q * kTileThreads + tid] = 0.0;
  const std::uint32_t* target = v.tileTarget + std::size_t(tile) * kTileTargets + 4 * lq;
  const unsigned s0 = v.tileStepStart[tile], s1 = v.tileStepStart[tile + 1];
  for (unsigned st = s0; st < s1; ++st) {
    const int table = v.tileStepTable[st];  // the block's
    if (table < 0) continue;  // a computed step (last in a tile): fmmP2PComputed takes it
    const std::uint32_t* source = v.tileStepSource + std::size_t(st) * kTileTargets;
    stageMasses(v, source, tid, ms);
    const int slot = v.p2pSlot[table];
    int off[3];  // cells
    fmm::slotOffsetCells(slot, off);
    double e[4][3];
#pragma unroll
    for (int a = 0; a < 4; ++a)
#pragma unroll
      for (int d = 0; d < 3; ++d) e[a][d] = double(fmm::leafLatticeAxis(4 * tq + a, d) - off[d]);
    double acc[4][4], g[3][4][4];
    tableStep<Accel>(v.p2pK + std::size_t(table) * kTileCells * kTileCells, ms, tq, lq, e, acc, g);
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      const double ih = v.tileInvH[std::size_t(tile) * kTileTargets + 4 * lq + b], ih2 = __dmul_rn(ih, ih);
#pragma unroll
      for (int a = 0; a < 4; ++a) {
        double* t = tot + (a * 4 + b) * kTileThreads + tid;
        t[0] = __dadd_rn(t[0], __dmul_rn(acc[a][b], ih));
        if constexpr (Accel)
#pragma unroll
          for (int c = 0; c < 3; ++c)
            t[(c + 1) * 16 * kTileThreads] = __dadd_rn(t[(c + 1) * 16 * kTileThreads], __dmul_rn(g[c][a][b], ih2));
      }
    }
  }
#pragma unroll
  for (int b = 0; b < 4; ++b) {
    if (target[b] == fmm::kNoLeaf) continue;
    const unsigned tb = v.cellBegin[target[b]] + 4 * tq;
#pragma unroll
    for (int a = 0; a < 4; ++a) {
      const double* t = tot + (a * 4 + b) * kTileThreads + tid;
      v.phi[tb + a] = t[0];
      if constexpr (Accel) {
        v.gx[tb + a] = t[16 * kTileThreads];
        v.gy[tb + a] = t[32 * kTileThreads];
        v.gz[tb + a] = t[48 * kTileThreads];
      }
    }
  }
}

/// One table step's products of this lane (fmm/p2p_mma_k.h) added to sum: the table K times the staged masses mb
/// (component 0) and, with accelerations, the same with A = d K^3 per axis (components 1-3, mmaAccelElement; off:
/// the table's leaf offset in cells), the sources in 16 steps of 4.
template <bool Accel, int NC>
__device__ __forceinline__ void mmaTableProducts(const double* __restrict__ K, const double* mb, int w, int lane,
                                                 const int* off,
                                                 double (&sum)[NC][fmm::kMmaMTiles][fmm::kMmaNTiles][2]) {
#pragma unroll(Accel ? 2 : 4)
  for (int k = 0; k < fmm::kMmaKSteps; ++k) {
    const double2 a = __ldg(reinterpret_cast<const double2*>(K + fmm::mmaAOffset(w, lane, k)));  // m = 0, 1
    double ag[3][fmm::kMmaMTiles];
    if constexpr (Accel)
#pragma unroll
      for (int d = 0; d < 3; ++d) {
        ag[d][0] = fmm::mmaAccelElement(a.x, w, lane, k, 0, d, off);
        ag[d][1] = fmm::mmaAccelElement(a.y, w, lane, k, 1, d, off);
      }
    double b[fmm::kMmaNTiles];
#pragma unroll
    for (int j = 0; j < fmm::kMmaNTiles; ++j) b[j] = mb[fmm::mmaBOffset(lane, k, j)];
#pragma unroll
    for (int j = 0; j < fmm::kMmaNTiles; ++j) {
      dmma(sum[0][0][j][0], sum[0][0][j][1], a.x, b[j]);
      dmma(sum[0][1][j][0], sum[0][1][j][1], a.y, b[j]);
      if constexpr (Accel)
#pragma unroll
        for (int d = 0; d < 3; ++d) {
          dmma(sum[1 + d][0][j][0], sum[1 + d][0][j][1], ag[d][0], b[j]);
          dmma(sum[1 + d][1][j][0], sum[1 + d][1][j][1], ag[d][1], b[j]);
        }
    }
  }
}

/// fmmP2PTiles with each table step a product on the FP64 tensor cores (fmm/p2p_mma_k.h: warp w takes target cells
/// 16 w .. 16 w + 15 for all 32 targets, 2 x 4 pieces of 8 x 8, the sources in 16 steps of 4). The same tiles,
/// steps and step order; each table step's sums are the table's products in groups of 4 sources (the hardware's
/// rounding within a group, the groups ascending) instead of the CPU's one fused sum, so they differ from the CPU's
/// by rounding only (deterministic: no atomics, a fixed order). A table step's masses are copied asynchronously into
/// shared memory while the step before computes (two buffers). The computed steps are fmmP2PComputed's.
/// Potentials: each step's sums scaled by the target's 1/h and added to running totals (16 per lane in registers).
/// With accelerations the three more products take as A the table's entries times their cells' offset, d K^3
/// (d = p_t - p_s - delta, small integers: exact; tableStep's w = K^3 m with d multiplied after), from the same K
/// loads and the same staged masses; the four sums (64 per lane) run over every table step of a target, all of one h
/// (a table pairs leaves of one size), and are scaled by 1/h and 1/h^2 once at the end.
template <bool Accel>
__global__ void __launch_bounds__(kTileThreads) fmmP2PTilesMma(FmmDeviceView v) {
  constexpr int NC = Accel ? 4 : 1;  // phi, then gx, gy, gz
  constexpr int kMassBuffer = kTileCells * kMassStride;
  __shared__ __align__(16) double ms[2 * kMassBuffer];  // two steps' masses: one read, the next one arriving
  const unsigned tile = blockIdx.x, tid = threadIdx.x;
  const int lane = int(tid & 31u), w = int(tid >> 5), row = fmm::dmmaCRow(lane);
  const std::uint32_t* target = v.tileTarget + std::size_t(tile) * kTileTargets;
  const double* invH = v.tileInvH + std::size_t(tile) * kTileTargets;
  // (c, m, j, i): component c of cell mmaCell(w, row, m), target mmaTarget(j, col i)
  double tot[NC][fmm::kMmaMTiles][fmm::kMmaNTiles][2];
#pragma unroll
  for (int c = 0; c < NC; ++c)
#pragma unroll
    for (int m = 0; m < fmm::kMmaMTiles; ++m)
#pragma unroll
      for (int j = 0; j < fmm::kMmaNTiles; ++j) tot[c][m][j][0] = tot[c][m][j][1] = 0.0;
  const unsigned s0 = v.tileStepStart[tile], s1 = v.tileStepStart[tile + 1];
  // The table steps' masses alternate between the two buffers: a step's are written (copies issued) only once every
  // thread has passed the barrier of the table step before, so no thread still reads the table step before that.
  int buf = 0;              // this table step's buffer: ms + buf * kMassBuffer
  bool prefetched = false;  // its masses already on their way (issued during the step before, a table step too)
  for (unsigned st = s0; st < s1; ++st) {
    const int table = v.tileStepTable[st];  // the block's
    if (table < 0) continue;  // a computed step (last in a tile): fmmP2PComputed takes it
    const std::uint32_t* source = v.tileStepSource + std::size_t(st) * kTileTargets;
    double* mb = ms + buf * kMassBuffer;
    buf ^= 1;  // the next table step's
    if (!prefetched) stageMassesAsync(v, source, tid, mb);
    __pipeline_wait_prior(0);
    __syncthreads();  // mb complete and visible to all; every thread done with the table step before
    prefetched = st + 1 < s1 && v.tileStepTable[st + 1] >= 0;  // the block's
    if (prefetched) stageMassesAsync(v, source + kTileTargets, tid, ms + buf * kMassBuffer);  // during the products
    const double* K = v.p2pK + std::size_t(table) * kTileCells * kTileCells;
    if constexpr (!Accel) {
      double acc[1][fmm::kMmaMTiles][fmm::kMmaNTiles][2];
#pragma unroll
      for (int m = 0; m < fmm::kMmaMTiles; ++m)
#pragma unroll
        for (int j = 0; j < fmm::kMmaNTiles; ++j) acc[0][m][j][0] = acc[0][m][j][1] = 0.0;
      mmaTableProducts<false>(K, mb, w, lane, nullptr, acc);
#pragma unroll
      for (int j = 0; j < fmm::kMmaNTiles; ++j)
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          const double ih = invH[fmm::mmaTarget(j, fmm::dmmaCCol(lane, i))];
#pragma unroll
          for (int m = 0; m < fmm::kMmaMTiles; ++m)
            tot[0][m][j][i] = __dadd_rn(tot[0][m][j][i], __dmul_rn(acc[0][m][j][i], ih));
        }
    } else {
      int off[3];  // the table's leaf offset, in cells (as fmmP2PTiles's)
      fmm::slotOffsetCells(v.p2pSlot[table], off);
      mmaTableProducts<true>(K, mb, w, lane, off, tot);
    }
  }
#pragma unroll
  for (int j = 0; j < fmm::kMmaNTiles; ++j)
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int col = fmm::mmaTarget(j, fmm::dmmaCCol(lane, i));
      const unsigned T = target[col];
      if (T == fmm::kNoLeaf) continue;
#pragma unroll
      for (int m = 0; m < fmm::kMmaMTiles; ++m) {
        const unsigned cell = v.cellBegin[T] + fmm::mmaCell(w, row, m);
        if constexpr (!Accel) {
          v.phi[cell] = tot[0][m][j][i];
        } else {
          const double ih = invH[col], ih2 = __dmul_rn(ih, ih);
          v.phi[cell] = __dmul_rn(tot[0][m][j][i], ih);
          v.gx[cell] = __dmul_rn(tot[1][m][j][i], ih2);
          v.gy[cell] = __dmul_rn(tot[2][m][j][i], ih2);
          v.gz[cell] = __dmul_rn(tot[3][m][j][i], ih2);
        }
      }
    }
}

/// Cells j0 .. j0 + 63 of a source leaf (its cells sb .. sb + sn - 1) into shared memory, a thread each: x and y as
/// one 16-byte word, z and m as another; an image's moved by its shift sh as they are staged (evaluate.cpp's
/// Lanes::load: the shifted position first). Barriers before (the previous cells' readers) and after.
__device__ __forceinline__ void stageSourceCells(const FmmDeviceView& v, unsigned sb, unsigned sn, unsigned j0,
                                                 bool image, const double sh[3], double2* sxy, double2* szm) {
  __syncthreads();
  if (j0 + threadIdx.x < sn) {
    const unsigned j = sb + j0 + threadIdx.x;
    if (image) {
      sxy[threadIdx.x] = make_double2(v.x[j] + sh[0], v.y[j] + sh[1]);
      szm[threadIdx.x] = make_double2(v.z[j] + sh[2], v.mass[j]);
    } else {
      sxy[threadIdx.x] = make_double2(v.x[j], v.y[j]);
      szm[threadIdx.x] = make_double2(v.z[j], v.mass[j]);
    }
  }
  __syncthreads();
}

/// The tiles' computed steps (fmm/p2p_tiles.h: each target against its own source leaf, of another size, irregular
/// or too far for a table), after the tile kernel stored the table steps' totals: one block per (tile, target), a
/// thread per target cell, each source's cells staged through shared memory (an image's moved by its shift as they
/// are staged), each pair's sum over them j ascending (1/r by rsqrt) added to the cell's total in the tile's step
/// order. These are the sums the tile kernels made when the steps were theirs (there each lane read 8 targets'
/// sources from global memory, one cell at a time: 10-40x slower on AMR meshes).
template <bool Accel>
__global__ void __launch_bounds__(kLeafThreads) fmmP2PComputed(FmmDeviceView v) {
  __shared__ double2 sxy[kLeafThreads], szm[kLeafThreads];
  const unsigned tile = blockIdx.x / kTileTargets, b = blockIdx.x % kTileTargets;
  const unsigned T = v.tileTarget[std::size_t(tile) * kTileTargets + b];
  const unsigned s0 = v.tileStepStart[tile], s1 = v.tileStepStart[tile + 1];
  if (T == fmm::kNoLeaf) return;  // the block's
  const unsigned i = v.cellBegin[T] + threadIdx.x;  // a regular target: kTileCells cells, a thread each
  const double xi = v.x[i], yi = v.y[i], zi = v.z[i];
  double p = 0.0, f[3] = {0.0, 0.0, 0.0};
  bool any = false;  // the block's
  for (unsigned st = s0; st < s1; ++st) {
    if (v.tileStepTable[st] >= 0) continue;  // a table step: the tile kernel's
    const std::size_t e = std::size_t(st) * kTileTargets + b;
    const unsigned S = v.tileStepSource[e];
    if (S == fmm::kNoLeaf) continue;
    if (!any) {  // the table steps' totals, stored by the tile kernel
      any = true;
      p = v.phi[i];
      if constexpr (Accel) {
        f[0] = v.gx[i];
        f[1] = v.gy[i];
        f[2] = v.gz[i];
      }
    }
    const bool image = v.tileStepShift && v.tileStepShift[e] != fmm::kNoShift;
    double sh[3] = {0.0, 0.0, 0.0};
    if (image) shiftOf(v, v.tileStepShift, e, sh);
    const unsigned sb = v.cellBegin[S], sn = v.cellCount[S];
    double q = 0.0, g[3] = {0.0, 0.0, 0.0};
    for (unsigned j0 = 0; j0 < sn; j0 += kLeafThreads) {
      stageSourceCells(v, sb, sn, j0, image, sh, sxy, szm);
      const unsigned m = min(unsigned(kLeafThreads), sn - j0);
#pragma unroll 8  // the reciprocal square roots of 8 sources in flight; q's additions stay in order
      for (unsigned k = 0; k < m; ++k) {
        const double2 a = sxy[k], c = szm[k];
        const double dx = xi - a.x, dy = yi - a.y, dz = zi - c.x;
        fmm::addNearPair<Accel>(dx, dy, dz, c.y, rsqrt(dx * dx + dy * dy + dz * dz), q, g);
      }
    }
    p += q;
    if constexpr (Accel)
      for (int d = 0; d < 3; ++d) f[d] += g[d];
  }
  if (!any) return;
  v.phi[i] = p;
  if constexpr (Accel) {
    v.gx[i] = f[0];
    v.gy[i] = f[1];
    v.gz[i] = f[2];
  }
}

/// A source cell of the single-precision pairs in a thread's registers, read ahead of its staging.
struct NearCell {
  double x = 0, y = 0, z = 0, m = 0;
  bool in = false;
};

/// Cell sb + j of a source leaf of sn cells (none past sn).
__device__ __forceinline__ NearCell loadNearCell(const FmmDeviceView& v, unsigned sb, unsigned sn, unsigned j) {
  NearCell c;
  c.in = j < sn;
  if (c.in) {
    c.x = v.x[sb + j];
    c.y = v.y[sb + j];
    c.z = v.z[sb + j];
    c.m = v.mass[sb + j];
  }
  return c;
}

/// A thread's cell staged for the single-precision pairs (fmm/near_single_k.h) relative to `origin` (the target's
/// centre less the image shift), its mass scaled by its warp's largest exponent (into e[warp]). Barriers before (the
/// previous batch's readers) and after.
__device__ __forceinline__ void stageNearCell(const NearCell& c, const double origin[3], fmm::NearSourceF* s, int* e) {
  __syncthreads();
  const int we = __reduce_max_sync(kFull, fmm::massExponentOf(c.m));
  if (c.in) s[threadIdx.x] = fmm::nearSource(c.x, c.y, c.z, c.m, origin, fmm::massScaleDown(we));
  if (threadIdx.x % 32 == 0) e[threadIdx.x / 32] = we;
  __syncthreads();
}

/// fmmP2PComputed's pairs in single precision (CudaOptions::fmmNearSingle, the default; fmm/near_single_k.h): the
/// same blocks, steps and sources, each source's cells staged as floats relative to the target's centre, each batch
/// of 32 summed in float and added to the cell's double total with its scale undone (the double kernel's rsqrt and
/// its FMAs cost several times the float unit's reciprocal square root and FMAs a pair). The tile's computed steps
/// follow its table steps (fmm/p2p_tiles.h), so the target's sources are tileStepSource's entries from there on;
/// they are read two steps ahead and the next source's cells one step ahead (loads in flight while the pairs of this
/// one are summed), so a step waits on no chain of dependent loads.
template <bool Accel>
__global__ void __launch_bounds__(kLeafThreads) fmmP2PComputedSingle(FmmDeviceView v) {
  __shared__ fmm::NearSourceF ss[kLeafThreads];
  __shared__ int se[kLeafThreads / fmm::kNearBatch];
  const unsigned tile = blockIdx.x / kTileTargets, b = blockIdx.x % kTileTargets;
  const unsigned T = v.tileTarget[std::size_t(tile) * kTileTargets + b];
  const unsigned s0 = v.tileStepStart[tile], s1 = v.tileStepStart[tile + 1];
  if (T == fmm::kNoLeaf) return;  // the block's
  unsigned c0 = s0;               // the first computed step: the table steps counted
  for (unsigned k = s0; k < s1; k += kLeafThreads)
    c0 += unsigned(__syncthreads_count(k + threadIdx.x < s1 && v.tileStepTable[k + threadIdx.x] >= 0));
  if (c0 == s1) return;
  const auto sourceAt = [&](unsigned st) {
    return st < s1 ? v.tileStepSource[std::size_t(st) * kTileTargets + b] : fmm::kNoLeaf;
  };
  const auto cellsOf = [&](unsigned S, unsigned& begin, unsigned& count) {  // none for kNoLeaf
    begin = S == fmm::kNoLeaf ? 0 : v.cellBegin[S];
    count = S == fmm::kNoLeaf ? 0 : v.cellCount[S];
  };
  const unsigned i = v.cellBegin[T] + threadIdx.x;  // a regular target: kTileCells cells, a thread each
  const double* o = v.centre + 3 * std::size_t(T);
  const float xi = float(v.x[i] - o[0]), yi = float(v.y[i] - o[1]), zi = float(v.z[i] - o[2]);
  // this step's source S (its first cells read), the next one's (its cells' range known) and the one after
  unsigned S = sourceAt(c0);
  unsigned sb, sn;
  cellsOf(S, sb, sn);
  NearCell cell = loadNearCell(v, sb, sn, threadIdx.x);
  unsigned S1 = sourceAt(c0 + 1);
  unsigned sb1, sn1;
  cellsOf(S1, sb1, sn1);
  double p = v.phi[i], f[3] = {0.0, 0.0, 0.0};  // the table steps' totals, stored by the tile kernel
  if constexpr (Accel) {
    f[0] = v.gx[i];
    f[1] = v.gy[i];
    f[2] = v.gz[i];
  }
  for (unsigned st = c0; st < s1; ++st) {
    const std::size_t e = std::size_t(st) * kTileTargets + b;
    double sh[3] = {0.0, 0.0, 0.0};
    if (S != fmm::kNoLeaf && v.tileStepShift && v.tileStepShift[e] != fmm::kNoShift) shiftOf(v, v.tileStepShift, e, sh);
    const double origin[3] = {o[0] - sh[0], o[1] - sh[1], o[2] - sh[2]};
    for (unsigned j0 = 0; j0 < sn || j0 == 0; j0 += kLeafThreads) {  // block-uniform; a step without a source once
      if (j0 > 0) cell = loadNearCell(v, sb, sn, j0 + threadIdx.x);  // a leaf past 64 cells (not read ahead)
      if (sn > 0) stageNearCell(cell, origin, ss, se);
      const bool last = j0 + kLeafThreads >= sn;
      if (last) cell = loadNearCell(v, sb1, sn1, threadIdx.x);  // the next step's first cells, in flight
      const unsigned m = sn > j0 ? min(unsigned(kLeafThreads), sn - j0) : 0;
      for (unsigned w = 0; w * fmm::kNearBatch < m; ++w) {
        float q = 0.0f, g[3] = {0.0f, 0.0f, 0.0f};
        fmm::nearBatchSums<Accel>(ss + w * fmm::kNearBatch, min(unsigned(fmm::kNearBatch), m - w * fmm::kNearBatch),
                                  xi, yi, zi, q, g);
        const double up = fmm::massScaleUp(se[w]);
        p += double(q) * up;
        if constexpr (Accel)
          for (int d = 0; d < 3; ++d) f[d] += double(g[d]) * up;
      }
      if (last) break;
    }
    S = S1;
    sb = sb1;
    sn = sn1;
    S1 = sourceAt(st + 2);  // after the sums: its loads wait while other warps compute
    cellsOf(S1, sb1, sn1);
  }
  v.phi[i] = p;
  if constexpr (Accel) {
    v.gx[i] = f[0];
    v.gy[i] = f[1];
    v.gz[i] = f[2];
  }
}

/// One block per irregular target leaf: its cells (a thread each; more than a block's in rounds) against the cells of
/// its near leaves in the list's order, a block's worth of source cells at a time through shared memory (x, y and z,
/// m as two 16-byte loads; periodic boxes: an image's cells moved by its shift as they are staged). A leaf's own
/// cell pairs (r = 0) are left out, as evaluate.cpp's p2pSelf does. 1/r is
/// rsqrt (within 1 ulp, as a division by the rounded sqrt is; one multi-function estimate and Newton steps instead of
/// a sqrt and a division).
template <bool Accel>
__global__ void __launch_bounds__(kLeafThreads) fmmP2P(FmmDeviceView v) {
  __shared__ double2 sxy[kLeafThreads], szm[kLeafThreads];
  const unsigned li = blockIdx.x;
  const unsigned T = v.irregularLeaf[li];
  const unsigned tb = v.cellBegin[T], tn = v.cellCount[T];
  const unsigned n0 = v.nearStart[li], n1 = v.nearStart[li + 1];
  for (unsigned t0 = 0; t0 < tn; t0 += kLeafThreads) {  // block-uniform
    const bool active = t0 + threadIdx.x < tn;
    const unsigned i = tb + t0 + threadIdx.x;
    const double xi = active ? v.x[i] : 0.0, yi = active ? v.y[i] : 0.0, zi = active ? v.z[i] : 0.0;
    double p = 0.0, fx = 0.0, fy = 0.0, fz = 0.0;
    for (unsigned k = n0; k < n1; ++k) {
      const unsigned S = v.nearSource[k];
      const bool image = v.nearShift && v.nearShift[k] != fmm::kNoShift;  // the block's
      const bool same = S == T && !image;
      double sh[3] = {0.0, 0.0, 0.0};
      if (image) shiftOf(v, v.nearShift, k, sh);
      const unsigned sb = v.cellBegin[S], sn = v.cellCount[S];
      for (unsigned j0 = 0; j0 < sn; j0 += kLeafThreads) {
        stageSourceCells(v, sb, sn, j0, image, sh, sxy, szm);
        const unsigned m = min(unsigned(kLeafThreads), sn - j0);
        if (!active) continue;
        for (unsigned j = 0; j < m; ++j) {
          const double2 a = sxy[j], b = szm[j];
          const double dx = xi - a.x, dy = yi - a.y, dz = zi - b.x;
          const double r2 = dx * dx + dy * dy + dz * dz;
          if (same && !(r2 > 0.0)) continue;
          const double rinv = rsqrt(r2);
          p += b.y * rinv;
          if constexpr (Accel) {
            const double t = b.y * (rinv * rinv * rinv);
            fx += t * dx;
            fy += t * dy;
            fz += t * dz;
          }
        }
      }
    }
    if (active) {
      v.phi[i] = p;
      if constexpr (Accel) {
        v.gx[i] = fx;
        v.gy[i] = fy;
        v.gz[i] = fz;
      }
    }
  }
}

}  // namespace

namespace {

template <bool Accel> Status launchTiles(const FmmDeviceView& v, cudaStream_t s) {
  if (AMRGRAV_FMM_P2P_DMMA && (!Accel || v.accelTablesMma)) {
    fmmP2PTilesMma<Accel><<<v.tileCount, kTileThreads, 0, s>>>(v);
    AG_CUDA_LAUNCHED("fmmP2PTilesMma");
  } else {
    constexpr std::size_t bytes = std::size_t(Accel ? 4 : 1) * 16 * kTileThreads * sizeof(double);
    if constexpr (bytes > 48 * 1024)
      AG_CUDA_TRY(cudaFuncSetAttribute(fmmP2PTiles<Accel>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
    fmmP2PTiles<Accel><<<v.tileCount, kTileThreads, bytes, s>>>(v);
    AG_CUDA_LAUNCHED("fmmP2PTiles");
  }
  return Status::success();
}

}  // namespace

Status launchFmmP2P(const FmmDeviceView& v, cudaStream_t s) {
  if (v.tileCount > 0) AG_TRY(v.gx ? launchTiles<true>(v, s) : launchTiles<false>(v, s));
  if (v.tileCount > 0 && v.tileComputedSteps) {  // after the tiles' table sums (the same stream)
    const unsigned blocks = v.tileCount * unsigned(kTileTargets);
    if (v.nearSingle) {
      if (v.gx) fmmP2PComputedSingle<true><<<blocks, kLeafThreads, 0, s>>>(v);
      else fmmP2PComputedSingle<false><<<blocks, kLeafThreads, 0, s>>>(v);
      AG_CUDA_LAUNCHED("fmmP2PComputedSingle");
    } else {
      if (v.gx) fmmP2PComputed<true><<<blocks, kLeafThreads, 0, s>>>(v);
      else fmmP2PComputed<false><<<blocks, kLeafThreads, 0, s>>>(v);
      AG_CUDA_LAUNCHED("fmmP2PComputed");
    }
  }
  if (v.irregularCount > 0) {
    if (v.gx) fmmP2P<true><<<v.irregularCount, kLeafThreads, 0, s>>>(v);
    else fmmP2P<false><<<v.irregularCount, kLeafThreads, 0, s>>>(v);
    AG_CUDA_LAUNCHED("fmmP2P");
  }
  return Status::success();
}

namespace {

template <int P, bool Dip> Status launchM2LOf(const FmmDeviceView& v, unsigned blocks, cudaStream_t s) {
  constexpr std::size_t bytes = m2lSharedBytes<P>();
  if constexpr (bytes > 48 * 1024)  // above the default: asked for (once per process and device is enough; cheap)
    AG_CUDA_TRY(cudaFuncSetAttribute(fmmM2L<P, Dip>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
  fmmM2L<P, Dip><<<blocks, kM2LThreads, bytes, s>>>(v);
  AG_CUDA_LAUNCHED("fmmM2L");
  return Status::success();
}

template <int P, bool Dip, bool LowRegs, bool Direct>
Status launchM2LStagedOf(const FmmDeviceView& v, cudaStream_t s) {
  constexpr std::size_t bytes = m2lStagedBytes<P, LowRegs>();
  if constexpr (bytes > 48 * 1024)
    AG_CUDA_TRY(cudaFuncSetAttribute(fmmM2LStaged<P, Dip, LowRegs, Direct>,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
  fmmM2LStaged<P, Dip, LowRegs, Direct><<<v.nodes, 32, bytes, s>>>(v);
  AG_CUDA_LAUNCHED("fmmM2LStaged");
  return Status::success();
}

template <int P, bool LowRegs, bool Direct> Status launchM2LStaged(const FmmDeviceView& v, cudaStream_t s) {
  return v.dipoles ? launchM2LStagedOf<P, true, LowRegs, Direct>(v, s)
                   : launchM2LStagedOf<P, false, LowRegs, Direct>(v, s);
}

template <int P, bool Dip> Status launchM2LHarmonicOf(const FmmDeviceView& v, cudaStream_t s) {
  constexpr std::size_t bytes = m2lHarmonicBytes<P>();
  if constexpr (bytes > 48 * 1024)
    AG_CUDA_TRY(cudaFuncSetAttribute(fmmM2LHarmonic<P, Dip>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
  fmmM2LHarmonic<P, Dip><<<v.nodes, 32, bytes, s>>>(v);
  AG_CUDA_LAUNCHED("fmmM2LHarmonic");
  return Status::success();
}

template <int P> Status launchM2LHarmonic(const FmmDeviceView& v, cudaStream_t s) {
  if (!v.Mh) return Status::error(ErrorCode::Internal, "CUDA backend: the harmonic M2L was given no room to fold into");
  fmmFoldMultipoles<P><<<(v.nodes + kFoldNodes - 1) / kFoldNodes, kFoldThreads, 0, s>>>(v);
  AG_CUDA_LAUNCHED("fmmFoldMultipoles");
  return v.dipoles ? launchM2LHarmonicOf<P, true>(v, s) : launchM2LHarmonicOf<P, false>(v, s);
}

template <int P> Status launchM2L(const FmmDeviceView& v, unsigned blocks, cudaStream_t s) {
  switch (v.m2lVariant) {
    case kFmmM2LHarmonic: return launchM2LHarmonic<P>(v, s);
    case kFmmM2LStaged: return launchM2LStaged<P, false, false>(v, s);
    case kFmmM2LStagedLowRegs: return launchM2LStaged<P, true, false>(v, s);
    case kFmmM2LDirect: return launchM2LStaged<P, false, true>(v, s);
    case kFmmM2LDirectLowRegs: return launchM2LStaged<P, true, true>(v, s);
    default:
      return v.dipoles ? launchM2LOf<P, true>(v, blocks, s) : launchM2LOf<P, false>(v, blocks, s);
  }
}

}  // namespace

Status launchFmmM2L(const FmmDeviceView& v, cudaStream_t s) {
  if (v.nodes == 0) return Status::success();
  if (v.m2lVariant < 0 || v.m2lVariant >= kFmmM2LVariants)
    return Status::error(ErrorCode::InvalidOption,
                         "CUDA backend: FMM M2L variant " + std::to_string(v.m2lVariant) + " does not exist");
  constexpr unsigned perBlock = kM2LThreads / 32;
  const unsigned blocks = (v.nodes + perBlock - 1) / perBlock;
  switch (v.order) {
    case 3: return launchM2L<3>(v, blocks, s);
    case 4: return launchM2L<4>(v, blocks, s);
    case 5: return launchM2L<5>(v, blocks, s);
    case 6: return launchM2L<6>(v, blocks, s);
    case 7: return launchM2L<7>(v, blocks, s);
    default:
      return Status::error(ErrorCode::Internal,
                           "CUDA backend: FMM order " + std::to_string(v.order) + " has no M2L kernel");
  }
}

namespace {

template <int P> void launchL2L(const FmmDeviceView& v, unsigned b, unsigned e, cudaStream_t s) {
  constexpr unsigned nodes = kL2LThreads / 8;
  fmmL2L<P><<<(e - b + nodes - 1) / nodes, kL2LThreads, 0, s>>>(v, b, e);
}

template <int P> void launchL2P(const FmmDeviceView& v, cudaStream_t s) {
  if (v.gx) fmmL2P<P, true><<<v.leafCount, kLeafThreads, 0, s>>>(v);
  else fmmL2P<P, false><<<v.leafCount, kLeafThreads, 0, s>>>(v);
}

Status noKernel(int order) {
  return Status::error(ErrorCode::Internal, "CUDA backend: FMM order " + std::to_string(order) + " has no kernels");
}

}  // namespace

Status launchFmmL2L(const FmmDeviceView& v, unsigned b, unsigned e, cudaStream_t s) {
  if (e <= b) return Status::success();
  switch (v.order) {
    case 3: launchL2L<3>(v, b, e, s); break;
    case 4: launchL2L<4>(v, b, e, s); break;
    case 5: launchL2L<5>(v, b, e, s); break;
    case 6: launchL2L<6>(v, b, e, s); break;
    case 7: launchL2L<7>(v, b, e, s); break;
    default: return noKernel(v.order);
  }
  AG_CUDA_LAUNCHED("fmmL2L");
  return Status::success();
}

Status launchFmmL2P(const FmmDeviceView& v, cudaStream_t s) {
  if (v.leafCount == 0) return Status::success();
  switch (v.order) {
    case 3: launchL2P<3>(v, s); break;
    case 4: launchL2P<4>(v, s); break;
    case 5: launchL2P<5>(v, s); break;
    case 6: launchL2P<6>(v, s); break;
    case 7: launchL2P<7>(v, s); break;
    default: return noKernel(v.order);
  }
  AG_CUDA_LAUNCHED("fmmL2P");
  return Status::success();
}

}  // namespace cuda
}  // namespace amrgrav
