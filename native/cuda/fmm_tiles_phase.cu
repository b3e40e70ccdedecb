/// \file fmm_tiles_phase.cu
/// \brief The device's FMM near lists and P2P tiles (fmm_tiles_phase.h): fmm/p2p_tiles_k.h's rules in grid-stride
/// kernels (one functor each, one item per thread), CUB between them, in p2p_tiles_emulate.cpp's order. Built with
/// -fmad=false (cmake/cuda.cmake): the regular leaves' and slots' tests then round as the host's.
#include "cuda/fmm_tiles_phase.h"

#include <cub/device/device_merge_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>

#include "cuda/check.h"
#include "cuda/grid_stride.h"
#include "cuda/kernels_fmm_lists.h"

namespace amrgrav {
namespace cuda {

void FmmTileBuffers::release() {
  size.release();
  for (auto* v : {&leafAt, &leaves, &nodeStart, &nodeSource, &nearStart, &nearSource, &ntab, &computed, &regularAt,
                  &sorted, &flags, &runAt, &runStart, &runOrder, &pos, &placeStart, &ordered, &target, &stepStart,
                  &stepSource, &irregular, &irrLeaf, &irrStart, &irrSource})
    v->release();
  for (auto* v : {&keys[0], &keys[1], &hash}) v->release();
  for (auto* v : {&slot, &tab, &indexOf, &slots, &stepTable}) v->release();
  regular.release();
  used.release();
  for (auto* v : {&origin, &h, &invH}) v->release();
  counts.release();
  at.release();
  temp.release();
}

std::size_t FmmTileBuffers::bytes() const {
  std::size_t s = size.bytes() + regular.bytes() + used.bytes() + counts.bytes() + at.bytes() + temp.bytes();
  for (auto* v : {&leafAt, &leaves, &nodeStart, &nodeSource, &nearStart, &nearSource, &ntab, &computed, &regularAt,
                  &sorted, &flags, &runAt, &runStart, &runOrder, &pos, &placeStart, &ordered, &target, &stepStart,
                  &stepSource, &irregular, &irrLeaf, &irrStart, &irrSource})
    s += v->bytes();
  for (auto* v : {&keys[0], &keys[1], &hash}) s += v->bytes();
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
struct DirectedF {
  const std::uint64_t* p2p;
  int bits;
  std::uint64_t* keys;
  __device__ void operator()(std::uint32_t q) const { fmm::directedP2P(p2p, q, bits, keys); }
};
struct NearStartF {
  TileBuildView v;
  __device__ void operator()(std::uint32_t k) const { v.nearStart[k] = fmm::nearStartAt(v, k); }
};
struct NearRowF {
  TileBuildView v;
  __device__ void operator()(std::uint32_t k) const { fmm::nearRow(v, k); }
};
struct RegularF {
  TileBuildView v;
  __device__ void operator()(std::uint32_t i) const { fmm::regularLeaf(v, i); }
};
struct EntrySlotsF {
  TileBuildView v;
  __device__ void operator()(std::uint32_t k) const { fmm::leafEntrySlots(v, k); }
};
struct SlotIndexesF {
  TileBuildView v;
  std::int32_t* slots;
  std::uint32_t* count;  ///< written after the slots
  __device__ void operator()(std::uint32_t) const { *count = std::uint32_t(fmm::slotIndexes(v.used, v.indexOf, slots)); }
};
struct TargetTablesF {
  TileBuildView v;
  __device__ void operator()(std::uint32_t k) const { fmm::targetTables(v, k); }
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
struct TileCountsF {
  TileBuildView v;
  std::uint32_t tiles;
  fmm::TileCounts* counts;
  __device__ void operator()(std::uint32_t t) const {
    counts[t] = t < tiles ? fmm::tileCountsOf(v, t) : fmm::TileCounts{};
  }
};
struct StepStartF {
  TileBuildView v;
  const fmm::TileCounts* at;
  __device__ void operator()(std::uint32_t t) const { v.stepStart[t] = at[t].tableSteps + at[t].computedSteps; }
};
struct TileStepsF {
  TileBuildView v;
  const fmm::TileCounts* counts;
  __device__ void operator()(std::uint32_t t) const { fmm::tileSteps(v, t, counts[t]); }
};
struct TileColumnF {
  TileBuildView v;
  const fmm::TileCounts* counts;
  __device__ void operator()(std::uint32_t c) const {
    const std::uint32_t t = c / fmm::kTileWidthK;
    fmm::tileColumn(v, t, c % fmm::kTileWidthK, counts[t].tableSteps);
  }
};
struct IrregularSizeF {
  TileBuildView v;
  const std::uint32_t* irregular;
  std::uint32_t ni;
  std::uint32_t* flag;
  __device__ void operator()(std::uint32_t j) const { flag[j] = j < ni ? fmm::irregularSize(v, irregular, j) : 0; }
};
struct IrregularRowF {
  TileBuildView v;
  const std::uint32_t *irregular, *start;
  std::uint32_t *leaf, *source;
  __device__ void operator()(std::uint32_t j) const { fmm::irregularRow(v, irregular, j, start, leaf, source); }
};

struct AddTileCounts {
  __host__ __device__ fmm::TileCounts operator()(const fmm::TileCounts& a, const fmm::TileCounts& b) const {
    return a + b;
  }
};

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

}  // namespace

Status buildFmmTilesOnDevice(const FmmTileInputs& in, const DeviceFmmLists& lists, FmmTileBuffers& b, cudaStream_t s,
                             DeviceFmmTiles& out) {
  out = DeviceFmmTiles{};
  const std::uint32_t nodes = in.nodes;
  const std::size_t pairs = lists.p2pPairs;
  const int bits = lists.bits;
  const char* what = "the FMM's P2P tiles";
  TileBuildView v;
  v.nodes = nodes;
  v.childCount = in.childCount;
  v.cellBegin = in.cellBegin;
  v.cellCount = in.cellCount;
  v.x = in.x;
  v.y = in.y;
  v.z = in.z;
  if (in.deviceSize) {  // the device sort's sizes, already there
    v.size = in.deviceSize;
  } else {
    AG_TRY(grow(b.size, in.cells, what));
    if (in.cells > 0)
      AG_CUDA_TRY(cudaMemcpyAsync(b.size.get(), in.size, in.cells * sizeof(double), cudaMemcpyHostToDevice, s));
    v.size = b.size.get();
  }

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
  const std::size_t directed = 2 * pairs;
  for (auto* k : {&b.keys[0], &b.keys[1]}) AG_TRY(grow(*k, directed, what));
  AG_TRY(grow(b.nodeStart, std::size_t(nodes) + 1, what));
  AG_TRY(grow(b.nodeSource, directed, what));
  AG_TRY(each(pairs, DirectedF{lists.p2p, bits, b.keys[0].get()}, s, "directedP2P"));
  std::uint64_t* sortedKeys = b.keys[0].get();
  if (directed > 0) {
    std::size_t bytes = 0;
    AG_TRY(sortListKeys(nullptr, bytes, b.keys[0].get(), b.keys[1].get(), directed, bits, nullptr, s));
    AG_TRY(b.temp.reserve(std::max<std::size_t>(bytes, 1), "the FMM tiles' scratch"));
    bytes = b.temp.capacity();
    AG_TRY(sortListKeys(b.temp.get(), bytes, b.keys[0].get(), b.keys[1].get(), directed, bits, &sortedKeys, s));
  }
  AG_TRY(launchCsrFromKeys(sortedKeys, directed, nodes, bits, b.nodeStart.get(), b.nodeSource.get(), s));
  v.nodeStart = b.nodeStart.get();
  v.nodeSource = b.nodeSource.get();
  const std::size_t entries = std::size_t(nl) + directed;
  AG_TRY(grow(b.nearStart, std::size_t(nl) + 1, what));
  AG_TRY(grow(b.nearSource, entries, what));
  v.nearStart = b.nearStart.get();
  v.nearSource = b.nearSource.get();
  AG_TRY(each(std::size_t(nl) + 1, NearStartF{v}, s, "nearStartAt"));
  AG_TRY(each(nl, NearRowF{v}, s, "nearRow"));

  // 2: the regular leaves
  AG_TRY(grow(b.regular, nodes, what));
  AG_TRY(grow(b.origin, 3 * std::size_t(nodes), what));
  AG_TRY(grow(b.h, nodes, what));
  v.regular = b.regular.get();
  v.origin = b.origin.get();
  v.h = b.h.get();
  AG_TRY(each(nodes, RegularF{v}, s, "regularLeaf"));

  // 3: the entries' slots, the slots used and their indices (down for the host's tables)
  AG_TRY(grow(b.slot, entries, what));
  AG_TRY(grow(b.tab, entries, what));
  AG_TRY(grow(b.used, fmm::kSlotsK, what));
  AG_TRY(grow(b.indexOf, fmm::kSlotsK, what));
  AG_TRY(grow(b.slots, fmm::kSlotsK + 1, what));
  v.slot = b.slot.get();
  v.tab = b.tab.get();
  v.used = b.used.get();
  v.indexOf = b.indexOf.get();
  AG_CUDA_TRY(cudaMemsetAsync(b.used.get(), 0, fmm::kSlotsK, s));
  AG_TRY(each(nl, EntrySlotsF{v}, s, "leafEntrySlots"));
  // the count after the slots, in the same buffer: one copy down
  AG_TRY(each(1, SlotIndexesF{v, b.slots.get(), reinterpret_cast<std::uint32_t*>(b.slots.get() + fmm::kSlotsK)}, s,
              "slotIndexes"));
  std::vector<std::int32_t> slots(fmm::kSlotsK + 1);
  AG_CUDA_TRY(cudaMemcpyAsync(slots.data(), b.slots.get(), slots.size() * sizeof(std::int32_t),
                              cudaMemcpyDeviceToHost, s));

  // 4: each regular target's tables
  AG_TRY(grow(b.ntab, nl, what));
  AG_TRY(grow(b.computed, nl, what));
  AG_TRY(grow(b.hash, nl, what));
  v.ntab = b.ntab.get();
  v.computed = b.computed.get();
  v.hash = b.hash.get();
  AG_TRY(each(nl, TargetTablesF{v}, s, "targetTables"));

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
  if (nreg > 1) {
    const fmm::TargetOrder order{b.computed.get(), b.hash.get()};
    std::uint32_t* keys = b.sorted.get();
    AG_TRY(withTemp(
        b,
        [&](void* t, std::size_t& bytes) {
          return cub::DeviceMergeSort::SortKeys(t, bytes, keys, std::int64_t(nreg), order, s);
        },
        "cub::DeviceMergeSort::SortKeys (the targets)"));
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
  if (runs > 1) {
    const fmm::RunOrder order{b.sorted.get(), b.runStart.get(), b.computed.get(),
                              b.ntab.get(),   b.nearStart.get(), b.tab.get()};
    std::uint32_t* keys = b.runOrder.get();
    AG_TRY(withTemp(
        b,
        [&](void* t, std::size_t& bytes) {
          return cub::DeviceMergeSort::SortKeys(t, bytes, keys, std::int64_t(runs), order, s);
        },
        "cub::DeviceMergeSort::SortKeys (the runs)"));
  }
  AG_TRY(grow(b.flags, std::size_t(runs) + 1, what));
  AG_TRY(each(std::size_t(runs) + 1, RunLengthF{v, b.runOrder.get(), runs, b.flags.get()}, s, "runLength"));
  std::uint32_t placed = 0;
  AG_TRY(scanCount(b, b.flags.get(), b.pos.get(), runs, s, placed));
  if (placed != nreg) return Status::error(ErrorCode::Internal, "CUDA backend: the FMM tiles' runs lost targets");
  AG_TRY(each(runs, PlaceRunF{v, b.runOrder.get(), b.pos.get()}, s, "placeRun"));
  AG_TRY(each(nreg, PlaceMemberF{v}, s, "placeMember"));

  // 6: the tiles
  const std::uint32_t tiles = (nreg + fmm::kTileWidthK - 1) / fmm::kTileWidthK;
  AG_TRY(grow(b.counts, std::size_t(tiles) + 1, what));
  AG_TRY(grow(b.at, std::size_t(tiles) + 1, what));
  AG_TRY(each(std::size_t(tiles) + 1, TileCountsF{v, tiles, b.counts.get()}, s, "tileCountsOf"));
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
  v.target = b.target.get();
  v.invH = b.invH.get();
  AG_TRY(each(std::size_t(tiles) + 1, StepStartF{v, b.at.get()}, s, "stepStart"));
  AG_TRY(each(tiles, TileStepsF{v, b.counts.get()}, s, "tileSteps"));
  AG_TRY(each(std::size_t(tiles) * fmm::kTileWidthK, TileColumnF{v, b.counts.get()}, s, "tileColumn"));

  // the irregular leaves' lists
  AG_TRY(grow(b.flags, std::size_t(ni) + 1, what));
  AG_TRY(grow(b.irrStart, std::size_t(ni) + 1, what));
  AG_TRY(each(std::size_t(ni) + 1, IrregularSizeF{v, b.irregular.get(), ni, b.flags.get()}, s, "irregularSize"));
  std::uint32_t irrEntries = 0;
  AG_TRY(scanCount(b, b.flags.get(), b.irrStart.get(), ni, s, irrEntries));
  AG_TRY(grow(b.irrLeaf, ni, what));
  AG_TRY(grow(b.irrSource, irrEntries, what));
  AG_TRY(each(ni, IrregularRowF{v, b.irregular.get(), b.irrStart.get(), b.irrLeaf.get(), b.irrSource.get()}, s,
              "irregularRow"));

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
  return Status::success();
}

}  // namespace cuda
}  // namespace amrgrav
