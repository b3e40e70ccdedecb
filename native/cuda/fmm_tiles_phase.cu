/// \file fmm_tiles_phase.cu
/// \brief The device's FMM near lists and P2P tiles (fmm_tiles_phase.h): fmm/p2p_tiles_k.h's rules in grid-stride
/// kernels (one functor each, one item per thread), CUB between them, in p2p_tiles_emulate.cpp's order. Built with
/// -fmad=false (cmake/cuda.cmake): the regular leaves' and slots' tests then round as the host's.
#include "cuda/fmm_tiles_phase.h"

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>

#include "cuda/check.h"
#include "cuda/grid_stride.h"

namespace amrgrav {
namespace cuda {

void FmmTileBuffers::release() {
  size.release();
  for (auto* v : {&leafAt, &leaves, &aStart, &bStart, &nearStart, &nearSource, &ntab, &computed, &regularAt,
                  &sorted, &flags, &runAt, &runStart, &runOrder, &pos, &placeStart, &ordered, &target, &stepStart,
                  &stepSource, &irregular, &irrLeaf, &irrStart, &irrSource, &usedBits, &tileBits, &orderAlt})
    v->release();
  for (auto* v : {&byB, &hash, &orderKey}) v->release();
  for (auto* v : {&slot, &tab, &indexOf, &slots, &stepTable}) v->release();
  regular.release();
  for (auto* v : {&nearShift, &stepShift, &irrShift}) v->release();
  events.release();
  for (auto* v : {&origin, &h, &invH}) v->release();
  counts.release();
  at.release();
  temp.release();
}

void TileStepEvents::release() {
  for (cudaEvent_t& e : at) {
    if (e) (void)cudaEventDestroy(e);  // at process exit the runtime may be gone already: nothing to report then
    e = nullptr;
  }
  recorded = false;
}

std::size_t FmmTileBuffers::bytes() const {
  std::size_t s = size.bytes() + regular.bytes() + counts.bytes() + at.bytes() + temp.bytes() + nearShift.bytes() +
                  stepShift.bytes() + irrShift.bytes();
  for (auto* v : {&leafAt, &leaves, &aStart, &bStart, &nearStart, &nearSource, &ntab, &computed, &regularAt,
                  &sorted, &flags, &runAt, &runStart, &runOrder, &pos, &placeStart, &ordered, &target, &stepStart,
                  &stepSource, &irregular, &irrLeaf, &irrStart, &irrSource, &usedBits, &tileBits, &orderAlt})
    s += v->bytes();
  for (auto* v : {&byB, &hash, &orderKey}) s += v->bytes();
  for (auto* v : {&slot, &tab, &indexOf, &slots, &stepTable}) s += v->bytes();
  for (auto* v : {&origin, &h, &invH}) s += v->bytes();
  return s;
}

namespace {

using fmm::TileBuildView;

/// AG_CUDA_LAUNCHED for a name that is not a literal.
Status launched(const char* name) {
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? Status::success() : cudaFailure(e, name, __FILE__, __LINE__);
}

template <class F>
__global__ void eachKernel(std::size_t n, F f) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    f(std::uint32_t(i));
}

/// f(i) for i < n on stream s (nothing for n == 0).
template <class F>
Status each(std::size_t n, F f, cudaStream_t s, const char* name) {
  if (n == 0) return Status::success();
  eachKernel<<<gridFor(n), kGridThreads, 0, s>>>(n, f);
  return launched(name);
}

// The rules as functors (each holds the view by value: its pointers are the device's).
struct LeafFlagF {
  TileBuildView v;
  std::uint32_t* flag;
  __device__ void operator()(std::uint32_t i) const { flag[i] = i < v.nodes ? fmm::leafFlag(v, i) : 0; }
};
struct LeafScatterF {
  TileBuildView v;
  const std::uint32_t* at;
  __device__ void operator()(std::uint32_t i) const {
    if (fmm::leafFlag(v, i)) v.leaves[at[i]] = i;
  }
};
struct CsrStartsF {
  TileBuildView v;
  std::size_t pairs;
  __device__ void operator()(std::uint32_t i) const {
    fmm::csrStartsAtBy(v.byA, pairs, i, v.nodes, v.bits, false, v.aStart, v.sbits);
    fmm::csrStartsAtBy(v.byB, pairs, i, v.nodes, v.bits, true, v.bStart, v.sbits);
  }
};
struct NearStartF {
  TileBuildView v;
  __device__ void operator()(std::uint32_t k) const { v.nearStart[k] = fmm::nearStartAt(v, k); }
};
struct TargetHashF {
  TileBuildView v;
  __device__ void operator()(std::uint32_t k) const { v.hash[k] = fmm::targetHash(v, k); }
};
struct RegularFlagF {
  TileBuildView v;
  std::uint32_t* flag;
  __device__ void operator()(std::uint32_t k) const { flag[k] = k < v.nl ? fmm::regularFlag(v, k) : 0; }
};
struct ScatterLeafF {
  TileBuildView v;
  std::uint32_t *regularList, *irregular;
  __device__ void operator()(std::uint32_t k) const { fmm::scatterLeaf(v, k, regularList, irregular); }
};
struct RunHeadF {
  TileBuildView v;
  std::uint32_t* flag;
  __device__ void operator()(std::uint32_t r) const { flag[r] = r < v.nreg ? fmm::runHead(v, r) : 0; }
};
struct RunStartF {
  TileBuildView v;
  __device__ void operator()(std::uint32_t r) const { fmm::runStartAt(v, r); }
};
struct IotaF {
  std::uint32_t* out;
  __device__ void operator()(std::uint32_t j) const { out[j] = j; }
};
// The orders' keys (fmm::TargetOrder, fmm::RunOrder) of a target leaf k or a run j, for their radix passes.
struct TargetHashOf {
  const std::uint64_t* hash;
  __device__ std::uint64_t operator()(std::uint32_t k) const { return hash[k]; }
};
struct TargetComputedOf {
  const std::uint32_t* computed;
  __device__ std::uint64_t operator()(std::uint32_t k) const { return computed[k]; }
};
struct RunFirstLeafOf {
  TileBuildView v;
  __device__ std::uint64_t operator()(std::uint32_t j) const { return v.sorted[v.runStart[j]]; }
};
struct RunComputedOf {
  TileBuildView v;
  __device__ std::uint64_t operator()(std::uint32_t j) const { return v.computed[v.sorted[v.runStart[j]]]; }
};
struct RunKeyOf {
  TileBuildView v;
  int w;
  __device__ std::uint64_t operator()(std::uint32_t j) const { return fmm::runKey(v, v.sorted[v.runStart[j]], w); }
};
template <class Of>
struct KeyAtF {
  const std::uint32_t* values;
  std::uint64_t* key;
  Of of;
  __device__ void operator()(std::uint32_t r) const { key[r] = of(values[r]); }
};
struct RunLengthF {
  TileBuildView v;
  const std::uint32_t* runOrder;
  std::uint32_t runs;
  std::uint32_t* flag;
  __device__ void operator()(std::uint32_t j) const { flag[j] = j < runs ? fmm::runLength(v, runOrder[j]) : 0; }
};
struct PlaceRunF {
  TileBuildView v;
  const std::uint32_t *runOrder, *pos;
  __device__ void operator()(std::uint32_t j) const { fmm::placeRun(v, j, runOrder, pos); }
};
struct PlaceMemberF {
  TileBuildView v;
  __device__ void operator()(std::uint32_t r) const { fmm::placeMember(v, r); }
};
struct StepStartF {
  TileBuildView v;
  const fmm::TileCounts* at;
  __device__ void operator()(std::uint32_t t) const { v.stepStart[t] = at[t].tableSteps + at[t].computedSteps; }
};
struct IrregularSizeF {
  TileBuildView v;
  const std::uint32_t* irregular;
  std::uint32_t ni;
  std::uint32_t* flag;
  __device__ void operator()(std::uint32_t j) const { flag[j] = j < ni ? fmm::irregularSize(v, irregular, j) : 0; }
};
struct AddTileCounts {
  __host__ __device__ fmm::TileCounts operator()(const fmm::TileCounts& a, const fmm::TileCounts& b) const {
    return a + b;
  }
};

// ---- A warp per item: the lanes split an item's entries (coalesced), warp scans and ballots order their parts.

constexpr int kWarps = kGridThreads / 32;  ///< warps per block
constexpr unsigned kAll = 0xffffffffu;

/// Launch size for n items of a warp each (grid-stride over the warps): at most 8,192 blocks (65,536 warps, several
/// times what an H100 holds at once), so a block's once-per-block work (entrySlotsKernel's or into usedBits) stays
/// small.
unsigned warpGridFor(std::size_t n) { return std::min(gridFor(n * 32), 8192u); }

/// The warp's exclusive prefix sum of x over its lanes; total: the sum over all lanes.
__device__ std::uint32_t warpExclusiveSum(std::uint32_t x, std::uint32_t& total) {
  const int lane = threadIdx.x & 31;
  std::uint32_t inc = x;
  for (int d = 1; d < 32; d <<= 1) {
    const std::uint32_t y = __shfl_up_sync(kAll, inc, d);
    if (lane >= d) inc += y;
  }
  total = __shfl_sync(kAll, inc, 31);
  return inc - x;
}

/// The warp's combination of its lanes' counts (fmm::maxSum; every lane gets it).
__device__ fmm::TileCounts warpMaxSum(fmm::TileCounts c) {
  for (int d = 16; d > 0; d >>= 1) {
    fmm::TileCounts o;
    o.tableSteps = __shfl_xor_sync(kAll, c.tableSteps, d);
    o.computedSteps = __shfl_xor_sync(kAll, c.computedSteps, d);
    o.tableEntries = __shfl_xor_sync(kAll, c.tableEntries, d);
    o.computedEntries = __shfl_xor_sync(kAll, c.computedEntries, d);
    c = fmm::maxSum(c, o);
  }
  return c;
}

#define AG_WARP_ITEMS(i, n)                                                                         \
  const int lane = threadIdx.x & 31;                                                                \
  const std::size_t warpsInGrid = std::size_t(gridDim.x) * (blockDim.x / 32);                      \
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x / 32) + threadIdx.x / 32; i < (n); i += warpsInGrid)

/// Leaf k's near list (nearEntry), a lane per entry.
__global__ void nearRowsKernel(TileBuildView v) {
  AG_WARP_ITEMS(k, v.nl) {
    const std::uint32_t len = v.nearStart[k + 1] - v.nearStart[k];
    for (std::uint32_t j = lane; j < len; j += 32) fmm::nearEntry(v, std::uint32_t(k), j);
  }
}

/// Node i's regularity: two cells a lane, the lanes' answers anded.
__global__ void regularKernel(TileBuildView v) {
  AG_WARP_ITEMS(i, v.nodes) {
    bool ok = fmm::regularCandidate(v, std::uint32_t(i));  // the same for every lane
    if (ok) {
      const std::uint32_t c0 = v.cellBegin[i];
      ok = fmm::regularCell(v, c0, lane) && fmm::regularCell(v, c0, lane + 32);
      ok = __all_sync(kAll, ok);
    }
    if (lane == 0) fmm::regularWrite(v, std::uint32_t(i), ok);
  }
}
static_assert(fmm::kTileCellsK == 64, "two cells a lane");

/// Leaf k's entries' slots, a lane per entry; the slots used set in the block's bits, then ored into usedBits.
__global__ void entrySlotsKernel(TileBuildView v) {
  __shared__ std::uint32_t used[32];
  if (threadIdx.x < 32) used[threadIdx.x] = 0;
  __syncthreads();
  AG_WARP_ITEMS(k, v.nl) {
    const std::uint32_t q1 = v.nearStart[k + 1];
    for (std::uint32_t q = v.nearStart[k] + lane; q < q1; q += 32) {
      const int sl = fmm::entrySlotAt(v, std::uint32_t(k), q);
      if (sl >= 0) atomicOr(&used[sl >> 5], 1u << (sl & 31));
    }
  }
  __syncthreads();
  if (threadIdx.x < fmm::kSlotWordsK && used[threadIdx.x]) atomicOr(&v.usedBits[threadIdx.x], used[threadIdx.x]);
}

/// The used slots' indices (one warp, a lane per word); their count after the slots, at slots[kSlotsK].
__global__ void slotIndexesKernel(TileBuildView v, std::int32_t* slots) {
  const int lane = threadIdx.x & 31;
  std::uint32_t total = 0;
  const std::uint32_t at = warpExclusiveSum(fmm::laneSlotCount(v.usedBits, lane), total);
  fmm::laneSlotIndexes(v.usedBits, lane, at, v.indexOf, slots);
  if (lane == 0) slots[fmm::kSlotsK] = std::int32_t(total);
}

/// Regular leaf k's tables sorted by counting: the entries' tables counted in the warp's shared counts (a lane per
/// entry), each lane's range of tables written at its offset (the lanes' counts' exclusive scan).
__global__ void targetTablesKernel(TileBuildView v) {
  __shared__ std::uint32_t counts[kWarps][fmm::kLanesK * fmm::kLaneSlotsK];
  std::uint32_t* c = counts[threadIdx.x / 32];
  AG_WARP_ITEMS(k, v.nl) {
    if (!v.regular[v.leaves[k]]) {  // the same for every lane
      if (lane == 0) fmm::targetTablesDone(v, std::uint32_t(k), 0);
      continue;
    }
    for (int j = 0; j < fmm::kLaneSlotsK; ++j) c[lane * fmm::kLaneSlotsK + j] = 0;
    __syncwarp();
    const std::uint32_t q0 = v.nearStart[k], q1 = v.nearStart[k + 1];
    for (std::uint32_t q = q0 + lane; q < q1; q += 32) {
      const std::int32_t t = fmm::entryTable(v, q);
      if (t >= 0) atomicAdd(&c[t], 1u);
    }
    __syncwarp();
    std::uint32_t n = 0;
    const std::uint32_t at = warpExclusiveSum(fmm::laneTableCount(c, lane), n);
    fmm::laneTableWrite(c, lane, v.tab + q0 + at);
    if (lane == 0) fmm::targetTablesDone(v, std::uint32_t(k), n);
    __syncwarp();  // the counts are read before the next target clears them
  }
}

/// Tile t's union of its targets' tables (tileBits; the warp reads each target's tables coalesced) and its counts
/// (a lane per target); counts[tiles] = zeros for the scan.
__global__ void tileCountsKernel(TileBuildView v, std::uint32_t tiles, fmm::TileCounts* counts) {
  __shared__ std::uint32_t bitsOf[kWarps][32];
  std::uint32_t* bits = bitsOf[threadIdx.x / 32];
  AG_WARP_ITEMS(t, std::size_t(tiles) + 1) {
    if (t == tiles) {
      if (lane == 0) counts[t] = fmm::TileCounts{};
      continue;
    }
    bits[lane] = 0;
    __syncwarp();
    const std::uint32_t k = fmm::tileTargetLeaf(v, std::uint32_t(t), lane);
    const std::uint32_t q0 = k == fmm::kNoLeafK ? 0 : v.nearStart[k], n = k == fmm::kNoLeafK ? 0 : v.ntab[k];
    for (int i = 0; i < fmm::kTileWidthK; ++i) {
      const std::uint32_t qi = __shfl_sync(kAll, q0, i), ni = __shfl_sync(kAll, n, i);
      for (std::uint32_t j = lane; j < ni; j += 32) {
        const std::int32_t tb = v.tab[qi + j];
        atomicOr(&bits[tb >> 5], 1u << (tb & 31));
      }
    }
    __syncwarp();
    const std::uint32_t word = lane < fmm::kSlotWordsK ? bits[lane] : 0;
    if (lane < fmm::kSlotWordsK) v.tileBits[std::size_t(t) * fmm::kSlotWordsK + lane] = word;
    fmm::TileCounts c = fmm::tileTarget(v, std::uint32_t(t), lane);
    c.tableSteps = std::uint32_t(fmm::popc32(word));
    c = warpMaxSum(c);
    if (lane == 0) counts[t] = c;
    __syncwarp();  // bits read before the next tile clears them
  }
}

/// Tile t's steps (stepStart written): its step tables (a lane per word of its union, then -1 per computed step),
/// its targets and 1 / h (a lane per target), its columns kNoLeafK everywhere (tileEntriesKernel then writes its
/// targets' entries).
__global__ void tileWriteKernel(TileBuildView v, std::uint32_t tiles) {
  AG_WARP_ITEMS(t, tiles) {
    const std::uint32_t word = lane < fmm::kSlotWordsK ? v.tileBits[std::size_t(t) * fmm::kSlotWordsK + lane] : 0;
    std::uint32_t tableSteps = 0;
    const std::uint32_t p = warpExclusiveSum(std::uint32_t(fmm::popc32(word)), tableSteps);
    const std::uint32_t s0 = v.stepStart[t], ns = v.stepStart[t + 1] - s0;
    fmm::laneStepTables(v, lane, word, s0, p);
    for (std::uint32_t j = tableSteps + lane; j < ns; j += 32) v.stepTable[s0 + j] = -1;
    for (std::uint32_t st = 0; st < ns; ++st) fmm::emptyStep(v, (std::size_t(s0) + st) * fmm::kTileWidthK + lane);
    fmm::tileTargetWrite(v, std::uint32_t(t), lane);
  }
}

/// Target i of tile t (item t * kTileWidthK + i; after tileWriteKernel): its entries into its column, a lane per
/// entry: a table entry at its table's rank in the tile's union, a computed one at the tables' end plus its rank
/// among the target's computed entries, from a ballot. A warp per target, not per tile: a tile's 32 targets one
/// after another took 2 ms on a random AMR mesh's lists of ~90 entries.
__global__ void tileEntriesKernel(TileBuildView v, std::uint32_t tiles) {
  __shared__ std::uint32_t bitsOf[kWarps][32], prefixOf[kWarps][32];
  std::uint32_t *bits = bitsOf[threadIdx.x / 32], *prefix = prefixOf[threadIdx.x / 32];
  AG_WARP_ITEMS(item, std::size_t(tiles) * fmm::kTileWidthK) {
    const std::uint32_t t = std::uint32_t(item / fmm::kTileWidthK), i = std::uint32_t(item % fmm::kTileWidthK);
    const std::uint32_t k = fmm::tileTargetLeaf(v, t, int(i));
    if (k == fmm::kNoLeafK) continue;  // the whole warp
    const std::uint32_t word = lane < fmm::kSlotWordsK ? v.tileBits[std::size_t(t) * fmm::kSlotWordsK + lane] : 0;
    std::uint32_t tableSteps = 0;
    const std::uint32_t p = warpExclusiveSum(std::uint32_t(fmm::popc32(word)), tableSteps);
    __syncwarp();  // the last item's bits and prefix read
    bits[lane] = word;
    prefix[lane] = p;
    __syncwarp();
    const std::uint32_t s0 = v.stepStart[t], b = v.nearStart[k], e = v.nearStart[k + 1];
    std::uint32_t c = 0;
    for (std::uint32_t base = b; base < e; base += 32) {  // uniform over the warp
      const std::uint32_t q = base + lane;
      const bool valid = q < e;
      const bool computed = valid && v.slot[q] < 0;
      const std::uint32_t ballot = __ballot_sync(kAll, computed);
      if (valid) {
        const std::uint32_t before = std::uint32_t(__popc(ballot & ((1u << lane) - 1u)));
        const std::uint32_t st = fmm::entryStep(v, q, bits, prefix, tableSteps, c + before);
        fmm::entryWrite(v, q, (std::size_t(s0) + st) * fmm::kTileWidthK + i);
      }
      c += std::uint32_t(__popc(ballot));
    }
  }
}

/// Irregular leaf j's node and list (periodic: with the shifts), a lane per entry.
__global__ void irregularRowsKernel(TileBuildView v, const std::uint32_t* irregular, std::uint32_t ni,
                                    const std::uint32_t* start, std::uint32_t* leaf, std::uint32_t* source,
                                    std::uint8_t* shift) {
  AG_WARP_ITEMS(j, ni) {
    if (lane == 0) leaf[j] = fmm::irregularLeaf(v, irregular, std::uint32_t(j));
    const std::uint32_t len = start[j + 1] - start[j];
    for (std::uint32_t i = lane; i < len; i += 32)
      fmm::irregularEntry(v, irregular, std::uint32_t(j), i, start, source, shift);
  }
}

#undef AG_WARP_ITEMS

/// kernel<<<warps for n items>>>(args...) on stream s (nothing for n == 0).
template <class... K, class... A>
Status eachWarp(std::size_t n, void (*kernel)(K...), cudaStream_t s, const char* name, A... args) {
  if (n == 0) return Status::success();
  kernel<<<warpGridFor(n), kGridThreads, 0, s>>>(args...);
  return launched(name);
}

/// CUB's scratch grown to fit a call (asked with temp null first, then run).
template <class Call>
Status withTemp(FmmTileBuffers& b, Call call, const char* name) {
  std::size_t bytes = 0;
  AG_CUDA_TRY(call(static_cast<void*>(nullptr), bytes));
  AG_TRY(b.temp.reserve(std::max<std::size_t>(bytes, 1), "the FMM tiles' scratch"));
  bytes = b.temp.capacity();
  AG_CUDA_TRY(call(static_cast<void*>(b.temp.get()), bytes));
  return launched(name);
}

/// out[0 .. n] = exclusive sums of in[0 .. n] (in[n] written 0 by its rule); returns out[n] (synchronises s).
Status scanCount(FmmTileBuffers& b, const std::uint32_t* in, std::uint32_t* out, std::size_t n, cudaStream_t s,
                 std::uint32_t& total) {
  AG_TRY(withTemp(
      b, [&](void* t, std::size_t& bytes) { return cub::DeviceScan::ExclusiveSum(t, bytes, in, out, n + 1, s); },
      "cub::DeviceScan::ExclusiveSum (the FMM tiles)"));
  AG_CUDA_TRY(cudaMemcpyAsync(&total, out + n, sizeof total, cudaMemcpyDeviceToHost, s));
  AG_CUDA_TRY(cudaStreamSynchronize(s));
  return Status::success();
}

template <class T>
Status grow(DeviceBuffer<T>& b, std::size_t n, const char* what) {
  return b.reserve(std::max<std::size_t>(n, 1), what);
}

/// A sort by integer keys as stable radix passes, least significant key first: each pass orders values[0 .. n) by
/// of(value)'s low `bits` bits, keeping the order of equal keys (b.orderKey: 2 n keys, b.orderAlt: n values).
class StableRadixSort {
 public:
  StableRadixSort(FmmTileBuffers& b, std::uint32_t* values, std::size_t n, cudaStream_t s)
      : b_(b), values_(values), n_(n), s_(s) {}
  template <class Of>
  Status pass(Of of, int bits) {
    if (n_ < 2) return Status::success();
    AG_TRY(grow(b_.orderKey, 2 * n_, "the FMM tiles' orders"));
    AG_TRY(grow(b_.orderAlt, n_, "the FMM tiles' orders"));
    std::uint64_t* key = b_.orderKey.get();
    AG_TRY(each(n_, KeyAtF<Of>{current(), key, of}, s_, "the FMM tiles' order keys"));
    cub::DoubleBuffer<std::uint64_t> k(key, key + n_);
    cub::DoubleBuffer<std::uint32_t> v(current(), other());
    AG_TRY(withTemp(
        b_,
        [&](void* t, std::size_t& bytes) {
          return cub::DeviceRadixSort::SortPairs(t, bytes, k, v, n_, 0, bits, s_);
        },
        "cub::DeviceRadixSort::SortPairs (the FMM tiles' orders)"));
    inAlt_ = v.Current() != values_;
    return Status::success();
  }
  /// The order into `values` (where the passes left it in the other half).
  Status finish() {
    if (inAlt_)
      AG_CUDA_TRY(cudaMemcpyAsync(values_, b_.orderAlt.get(), n_ * sizeof(std::uint32_t), cudaMemcpyDeviceToDevice,
                                  s_));
    inAlt_ = false;
    return Status::success();
  }

 private:
  std::uint32_t* current() { return inAlt_ ? b_.orderAlt.get() : values_; }
  std::uint32_t* other() { return inAlt_ ? values_ : b_.orderAlt.get(); }
  FmmTileBuffers& b_;
  std::uint32_t* values_;
  std::size_t n_;
  cudaStream_t s_;
  bool inAlt_ = false;
};

}  // namespace

Status buildFmmTilesOnDevice(const FmmTileInputs& in, const DeviceFmmLists& lists, FmmTileBuffers& b, cudaStream_t s,
                             DeviceFmmTiles& out) {
  out = DeviceFmmTiles{};
  const bool periodic = in.period != nullptr;  // the pairs' keys then carry their image shifts
  if (periodic != (lists.sbits != 0))
    return Status::error(ErrorCode::Internal, "CUDA backend: the FMM tiles' box and its lists' keys disagree");
  const std::uint32_t nodes = in.nodes;
  const std::size_t pairs = lists.p2pPairs;
  const int bits = lists.bits;
  const char* what = "the FMM's P2P tiles";
  TileStepEvents& ev = b.events;
  ev.recorded = false;
  if (!ev.at[0])
    for (cudaEvent_t& e : ev.at) AG_CUDA_TRY(cudaEventCreate(&e));
  int step = 0;  // the events: at[0] before the first step, at[i + 1] after step i
  auto stepDone = [&]() -> Status {
    AG_CUDA_TRY(cudaEventRecord(ev.at[++step], s));
    return Status::success();
  };
  AG_CUDA_TRY(cudaEventRecord(ev.at[0], s));
  TileBuildView v;
  v.nodes = nodes;
  v.childCount = in.childCount;
  v.cellBegin = in.cellBegin;
  v.cellCount = in.cellCount;
  v.x = in.x;
  v.y = in.y;
  v.z = in.z;
  v.sbits = lists.sbits;
  if (periodic)
    for (int d = 0; d < 3; ++d) v.period[d] = in.period[d];
  if (in.deviceSize) {  // the device sort's sizes, already there
    v.size = in.deviceSize;
  } else {
    AG_TRY(grow(b.size, in.cells, what));
    if (in.cells > 0)
      AG_CUDA_TRY(cudaMemcpyAsync(b.size.get(), in.size, in.cells * sizeof(double), cudaMemcpyHostToDevice, s));
    v.size = b.size.get();
  }
  AG_TRY(stepDone());  // size_up

  // 1: the leaves, the directed P2P CSR, the near lists
  AG_TRY(grow(b.flags, std::size_t(nodes) + 1, what));
  AG_TRY(grow(b.leafAt, std::size_t(nodes) + 1, what));
  AG_TRY(each(std::size_t(nodes) + 1, LeafFlagF{v, b.flags.get()}, s, "leafFlag"));
  std::uint32_t nl = 0;
  AG_TRY(scanCount(b, b.flags.get(), b.leafAt.get(), nodes, s, nl));
  AG_TRY(grow(b.leaves, nl, what));
  v.nl = nl;
  v.leaves = b.leaves.get();
  AG_TRY(each(nodes, LeafScatterF{v, b.leafAt.get()}, s, "leafScatter"));
  AG_TRY(stepDone());  // leaves
  // the pairs by A as the lists leave them; a copy stably radix-sorted over B's bits alone (3 passes of pairs keys,
  // not the 2 x pairs directed keys over both nodes' bits; above the shift's bits in periodic boxes)
  AG_TRY(grow(b.byB, pairs, what));
  AG_TRY(grow(b.aStart, std::size_t(nodes) + 1, what));
  AG_TRY(grow(b.bStart, std::size_t(nodes) + 1, what));
  if (pairs > 0) {
    const std::uint64_t* in = lists.p2p;
    std::uint64_t* sortedB = b.byB.get();
    AG_TRY(withTemp(
        b,
        [&](void* t, std::size_t& bytes) {
          return cub::DeviceRadixSort::SortKeys(t, bytes, in, sortedB, pairs, v.sbits, v.sbits + bits, s);
        },
        "cub::DeviceRadixSort::SortKeys (the P2P pairs by B)"));
  }
  v.bits = bits;
  v.byA = lists.p2p;
  v.byB = b.byB.get();
  v.aStart = b.aStart.get();
  v.bStart = b.bStart.get();
  AG_TRY(each(pairs + 1, CsrStartsF{v, pairs}, s, "csrStartsAtBy"));
  const std::size_t directed = 2 * pairs;
  const std::size_t entries = std::size_t(nl) + directed;
  AG_TRY(grow(b.nearStart, std::size_t(nl) + 1, what));
  AG_TRY(grow(b.nearSource, entries, what));
  v.nearStart = b.nearStart.get();
  v.nearSource = b.nearSource.get();
  if (periodic) {
    AG_TRY(grow(b.nearShift, entries, what));
    v.nearShift = b.nearShift.get();
  }
  AG_TRY(each(std::size_t(nl) + 1, NearStartF{v}, s, "nearStartAt"));
  AG_TRY(eachWarp(nl, nearRowsKernel, s, "nearRowsKernel", v));
  AG_TRY(stepDone());  // near_lists

  // 2: the regular leaves
  AG_TRY(grow(b.regular, nodes, what));
  AG_TRY(grow(b.origin, 3 * std::size_t(nodes), what));
  AG_TRY(grow(b.h, nodes, what));
  v.regular = b.regular.get();
  v.origin = b.origin.get();
  v.h = b.h.get();
  AG_TRY(eachWarp(nodes, regularKernel, s, "regularKernel", v));
  AG_TRY(stepDone());  // regular

  // 3: the entries' slots, the slots used and their indices (down for the host's tables)
  AG_TRY(grow(b.slot, entries, what));
  AG_TRY(grow(b.tab, entries, what));
  AG_TRY(grow(b.usedBits, fmm::kSlotWordsK, what));
  AG_TRY(grow(b.indexOf, fmm::kSlotsK, what));
  AG_TRY(grow(b.slots, fmm::kSlotsK + 1, what));
  v.slot = b.slot.get();
  v.tab = b.tab.get();
  v.usedBits = b.usedBits.get();
  v.indexOf = b.indexOf.get();
  AG_CUDA_TRY(cudaMemsetAsync(b.usedBits.get(), 0, fmm::kSlotWordsK * sizeof(std::uint32_t), s));
  AG_TRY(eachWarp(nl, entrySlotsKernel, s, "entrySlotsKernel", v));
  // the count after the slots, in the same buffer: one copy down
  slotIndexesKernel<<<1, 32, 0, s>>>(v, b.slots.get());
  AG_TRY(launched("slotIndexesKernel"));
  std::vector<std::int32_t> slots(fmm::kSlotsK + 1);
  AG_CUDA_TRY(cudaMemcpyAsync(slots.data(), b.slots.get(), slots.size() * sizeof(std::int32_t),
                              cudaMemcpyDeviceToHost, s));
  AG_TRY(stepDone());  // slots

  // 4: each regular target's tables (sorted by counting), then its hash
  AG_TRY(grow(b.ntab, nl, what));
  AG_TRY(grow(b.computed, nl, what));
  AG_TRY(grow(b.hash, nl, what));
  v.ntab = b.ntab.get();
  v.computed = b.computed.get();
  v.hash = b.hash.get();
  AG_TRY(eachWarp(nl, targetTablesKernel, s, "targetTablesKernel", v));
  AG_TRY(each(nl, TargetHashF{v}, s, "targetHash"));
  AG_TRY(stepDone());  // tables

  // 5: the regular targets' order
  AG_TRY(grow(b.flags, std::size_t(nl) + 1, what));
  AG_TRY(grow(b.regularAt, std::size_t(nl) + 1, what));
  AG_TRY(each(std::size_t(nl) + 1, RegularFlagF{v, b.flags.get()}, s, "regularFlag"));
  std::uint32_t nreg = 0;
  AG_TRY(scanCount(b, b.flags.get(), b.regularAt.get(), nl, s, nreg));  // synchronises: slots are down
  const std::uint32_t nslots = std::uint32_t(slots[fmm::kSlotsK]);
  out.slots.assign(slots.begin(), slots.begin() + nslots);
  v.nreg = nreg;
  v.regularAt = b.regularAt.get();
  const std::uint32_t ni = nl - nreg;
  AG_TRY(grow(b.sorted, nreg, what));
  AG_TRY(grow(b.irregular, ni, what));
  AG_TRY(each(nl, ScatterLeafF{v, b.sorted.get(), b.irregular.get()}, s, "scatterLeaf"));
  v.sorted = b.sorted.get();
  {  // fmm::TargetOrder: the regular leaves come ascending; by hash, then by computed pairs (a comparison merge sort
     // took 0.1-0.4 ms)
    StableRadixSort sort(b, b.sorted.get(), nreg, s);
    AG_TRY(sort.pass(TargetHashOf{b.hash.get()}, 64));
    AG_TRY(sort.pass(TargetComputedOf{b.computed.get()}, 32));
    AG_TRY(sort.finish());
  }
  AG_TRY(grow(b.flags, std::size_t(nreg) + 1, what));
  AG_TRY(grow(b.runAt, std::size_t(nreg) + 1, what));
  AG_TRY(each(std::size_t(nreg) + 1, RunHeadF{v, b.flags.get()}, s, "runHead"));
  std::uint32_t runs = 0;
  AG_TRY(scanCount(b, b.flags.get(), b.runAt.get(), nreg, s, runs));
  v.runAt = b.runAt.get();
  AG_TRY(grow(b.runStart, std::size_t(runs) + 1, what));
  AG_TRY(grow(b.runOrder, runs, what));
  AG_TRY(grow(b.pos, std::size_t(runs) + 1, what));
  AG_TRY(grow(b.placeStart, runs, what));
  AG_TRY(grow(b.ordered, nreg, what));
  v.runStart = b.runStart.get();
  v.placeStart = b.placeStart.get();
  v.ordered = b.ordered.get();
  AG_TRY(each(std::size_t(nreg) + 1, RunStartF{v}, s, "runStartAt"));
  AG_TRY(each(runs, IotaF{b.runOrder.get()}, s, "runOrder"));
  {  // fmm::RunOrder: by first leaf, then the prefix keys' words from the last, then computed pairs (a merge sort
     // comparing whole table lists took 1.3 ms on MacLaurin levels 7)
    StableRadixSort sort(b, b.runOrder.get(), runs, s);
    AG_TRY(sort.pass(RunFirstLeafOf{v}, 32));
    for (int w = fmm::kRunKeyWords - 1; w >= 0; --w) AG_TRY(sort.pass(RunKeyOf{v, w}, fmm::kRunKeyBits));
    AG_TRY(sort.pass(RunComputedOf{v}, 32));
    AG_TRY(sort.finish());
  }
  AG_TRY(grow(b.flags, std::size_t(runs) + 1, what));
  AG_TRY(each(std::size_t(runs) + 1, RunLengthF{v, b.runOrder.get(), runs, b.flags.get()}, s, "runLength"));
  std::uint32_t placed = 0;
  AG_TRY(scanCount(b, b.flags.get(), b.pos.get(), runs, s, placed));
  if (placed != nreg) return Status::error(ErrorCode::Internal, "CUDA backend: the FMM tiles' runs lost targets");
  AG_TRY(each(runs, PlaceRunF{v, b.runOrder.get(), b.pos.get()}, s, "placeRun"));
  AG_TRY(each(nreg, PlaceMemberF{v}, s, "placeMember"));
  AG_TRY(stepDone());  // order

  // 6: the tiles: a warp per tile for its union and counts, their scan, a warp per tile for its steps and columns
  const std::uint32_t tiles = (nreg + fmm::kTileWidthK - 1) / fmm::kTileWidthK;
  AG_TRY(grow(b.counts, std::size_t(tiles) + 1, what));
  AG_TRY(grow(b.at, std::size_t(tiles) + 1, what));
  AG_TRY(grow(b.tileBits, std::size_t(tiles) * fmm::kSlotWordsK, what));
  v.tileBits = b.tileBits.get();
  AG_TRY(eachWarp(std::size_t(tiles) + 1, tileCountsKernel, s, "tileCountsKernel", v, tiles, b.counts.get()));
  {
    const fmm::TileCounts* cin = b.counts.get();
    fmm::TileCounts* cout = b.at.get();
    AG_TRY(withTemp(
        b,
        [&](void* t, std::size_t& bytes) {
          return cub::DeviceScan::ExclusiveScan(t, bytes, cin, cout, AddTileCounts{}, fmm::TileCounts{}, tiles + 1,
                                                s);
        },
        "cub::DeviceScan::ExclusiveScan (the tiles' counts)"));
  }
  AG_CUDA_TRY(cudaMemcpyAsync(&out.total, b.at.get() + tiles, sizeof out.total, cudaMemcpyDeviceToHost, s));
  AG_CUDA_TRY(cudaStreamSynchronize(s));
  const std::size_t steps = std::size_t(out.total.tableSteps) + out.total.computedSteps;
  AG_TRY(grow(b.stepStart, std::size_t(tiles) + 1, what));
  AG_TRY(grow(b.stepTable, steps, what));
  AG_TRY(grow(b.stepSource, steps * fmm::kTileWidthK, what));
  AG_TRY(grow(b.target, std::size_t(tiles) * fmm::kTileWidthK, what));
  AG_TRY(grow(b.invH, std::size_t(tiles) * fmm::kTileWidthK, what));
  v.stepStart = b.stepStart.get();
  v.stepTable = b.stepTable.get();
  v.stepSource = b.stepSource.get();
  if (periodic) {
    AG_TRY(grow(b.stepShift, steps * fmm::kTileWidthK, what));
    v.stepShift = b.stepShift.get();
  }
  v.target = b.target.get();
  v.invH = b.invH.get();
  AG_TRY(each(std::size_t(tiles) + 1, StepStartF{v, b.at.get()}, s, "stepStart"));
  AG_TRY(eachWarp(tiles, tileWriteKernel, s, "tileWriteKernel", v, tiles));
  AG_TRY(eachWarp(std::size_t(tiles) * fmm::kTileWidthK, tileEntriesKernel, s, "tileEntriesKernel", v, tiles));
  AG_TRY(stepDone());  // tiles

  // the irregular leaves' lists
  AG_TRY(grow(b.flags, std::size_t(ni) + 1, what));
  AG_TRY(grow(b.irrStart, std::size_t(ni) + 1, what));
  AG_TRY(each(std::size_t(ni) + 1, IrregularSizeF{v, b.irregular.get(), ni, b.flags.get()}, s, "irregularSize"));
  std::uint32_t irrEntries = 0;
  AG_TRY(scanCount(b, b.flags.get(), b.irrStart.get(), ni, s, irrEntries));
  AG_TRY(grow(b.irrLeaf, ni, what));
  AG_TRY(grow(b.irrSource, irrEntries, what));
  if (periodic) AG_TRY(grow(b.irrShift, irrEntries, what));
  std::uint8_t* irrShift = periodic ? b.irrShift.get() : nullptr;
  const std::uint32_t *irregular = b.irregular.get(), *irrStart = b.irrStart.get();
  AG_TRY(eachWarp(ni, irregularRowsKernel, s, "irregularRowsKernel", v, irregular, ni, irrStart, b.irrLeaf.get(),
                  b.irrSource.get(), irrShift));
  AG_TRY(stepDone());  // irregular
  if (step != kFmmTileSteps)
    return Status::error(ErrorCode::Internal, "CUDA backend: the FMM tiles' steps miscounted");
  ev.recorded = true;

  out.leafCount = nl;
  out.tiles = tiles;
  out.irregularCount = ni;
  out.steps = steps;
  out.irregularEntries = irrEntries;
  out.leaves = b.leaves.get();
  out.target = b.target.get();
  out.stepStart = b.stepStart.get();
  out.stepSource = b.stepSource.get();
  out.stepTable = b.stepTable.get();
  out.invH = b.invH.get();
  out.irrLeaf = b.irrLeaf.get();
  out.irrStart = b.irrStart.get();
  out.irrSource = b.irrSource.get();
  out.irregular = b.irregular.get();
  out.nearStart = b.nearStart.get();
  out.nearSource = b.nearSource.get();
  out.regular = b.regular.get();
  out.nearShift = v.nearShift;
  out.stepShift = v.stepShift;
  out.irrShift = irrShift;
  return Status::success();
}

Status fmmTileStepSeconds(FmmTileBuffers& b, double seconds[kFmmTileSteps]) {
  for (int i = 0; i < kFmmTileSteps; ++i) seconds[i] = 0;
  TileStepEvents& ev = b.events;
  if (!ev.recorded) return Status::success();
  ev.recorded = false;
  AG_CUDA_TRY(cudaEventSynchronize(ev.at[kFmmTileSteps]));
  for (int i = 0; i < kFmmTileSteps; ++i) {
    float ms = 0;
    AG_CUDA_TRY(cudaEventElapsedTime(&ms, ev.at[i], ev.at[i + 1]));
    seconds[i] = 1e-3 * double(ms);
  }
  return Status::success();
}

static_assert(sizeof(CudaStats::fmmTileStepSeconds) == kFmmTileSteps * sizeof(double) &&
                  sizeof(kFmmTileStepNames) == kFmmTileSteps * sizeof(const char*),
              "CudaStats' tile steps are the build's");

}  // namespace cuda
}  // namespace amrgrav
