/// \file kernel_fmm_lists.cu
/// \brief The device's FMM interaction lists (kernels_fmm_lists.h): fmm/dual_walk_k.h's per-pair rules in grid-stride
/// kernels, CUB's scan and radix sort between them. The MAC rounds as on the host (physics/rounding.h's
/// RoundNearest is the _rn intrinsics here: never fused), so the walk decides every pair as the CPU does.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include "cuda/check.h"
#include "cuda/grid_stride.h"
#include "cuda/kernels_fmm_lists.h"
#include "fmm/norms_k.h"

namespace amrgrav {
namespace cuda {
namespace {

__global__ void walkDecideKernel(fmm::DualWalkTree t, const std::uint64_t* frontier, const std::uint8_t* shift,
                                 std::size_t n, fmm::PairStep* steps, fmm::PairCounts* counts) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i <= n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    if (i == n) {
      counts[n] = fmm::PairCounts{};
      continue;
    }
    const fmm::PairStep st = fmm::decidePair(t, frontier[i], shift ? shift[i] : fmm::kNoShift);
    steps[i] = st;
    counts[i] = fmm::pairCounts(st);
  }
}

__global__ void walkEmitKernel(const fmm::PairStep* steps, const std::uint64_t* frontier, const fmm::PairCounts* at,
                               std::size_t n, int bits, std::uint64_t* next, std::uint64_t* m2l, std::uint64_t* p2p,
                               int sbits, std::uint8_t* nextShift, std::uint8_t* m2lShift) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    fmm::emitPair(steps[i], frontier[i], at[i], bits, next, m2l, p2p, sbits, nextShift, m2lShift);
}

__global__ void directedEntriesKernel(const std::uint64_t* m2l, std::size_t pairs, int bits, std::uint64_t* keys,
                                      int sbits, const std::uint8_t* m2lShift) {
  for (std::size_t q = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; q < pairs;
       q += std::size_t(gridDim.x) * blockDim.x)
    fmm::directedEntries(m2l, q, bits, keys, sbits, m2lShift);
}

__global__ void csrFromKeysKernel(const std::uint64_t* keys, std::size_t count, std::uint32_t nodes, int bits,
                                  std::uint32_t* start, std::uint32_t* source, int sbits, std::uint8_t* shift) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i <= count;
       i += std::size_t(gridDim.x) * blockDim.x) {
    fmm::csrStartsAt(keys, count, i, nodes, bits, start, sbits);
    if (i < count) {
      source[i] = fmm::keySecond(fmm::keyPairPart(keys[i], sbits), bits);
      if (shift) shift[i] = fmm::keyShift(keys[i], sbits);
    }
  }
}

__global__ void undirectedKeysKernel(std::uint64_t* m2l, std::size_t pairs, int bits) {
  for (std::size_t q = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; q < pairs;
       q += std::size_t(gridDim.x) * blockDim.x)
    m2l[q] = fmm::undirectedKey(m2l[q], bits);
}

__global__ void pairStartsKernel(const std::uint64_t* byA, const std::uint64_t* byB, std::size_t count,
                                 std::uint32_t nodes, int bits, std::uint32_t* aStart, std::uint32_t* bStart) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i <= count;
       i += std::size_t(gridDim.x) * blockDim.x) {
    fmm::csrStartsAtBy(byA, count, i, nodes, bits, false, aStart);
    fmm::csrStartsAtBy(byB, count, i, nodes, bits, true, bStart);
  }
}

__global__ void m2lStartsKernel(const std::uint32_t* aStart, const std::uint32_t* bStart, std::uint32_t nodes,
                                std::uint32_t* start) {
  for (std::size_t t = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; t <= nodes;
       t += std::size_t(gridDim.x) * blockDim.x)
    start[t] = fmm::m2lStartAt(aStart, bStart, std::uint32_t(t));
}

__global__ void m2lEntriesKernel(const std::uint64_t* byA, const std::uint64_t* byB, std::size_t count, int bits,
                                 const std::uint32_t* aStart, const std::uint32_t* bStart, const std::uint32_t* start,
                                 std::uint32_t* source) {
  for (std::size_t j = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; j < count;
       j += std::size_t(gridDim.x) * blockDim.x)
    fmm::m2lPairEntries(byA, byB, j, bits, aStart, bStart, start, source);
}

/// Integer sums: the atomics' order cannot change the total.
__global__ void cellPairsKernel(const std::uint64_t* p2p, std::size_t pairs, int bits, int sbits,
                                const std::uint32_t* cellCount, const std::uint8_t* childCount, std::uint32_t nodes,
                                unsigned long long* sum) {
  unsigned long long mine = 0;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < pairs + nodes;
       i += std::size_t(gridDim.x) * blockDim.x)
    mine += i < pairs ? fmm::p2pCellPairs(cellCount, p2p[i], bits, sbits)
                      : fmm::leafSelfCellPairs(cellCount, childCount, std::uint32_t(i - pairs));
  for (int o = 16; o > 0; o /= 2) mine += __shfl_down_sync(0xffffffffu, mine, o);
  if ((threadIdx.x & 31) == 0 && mine != 0) atomicAdd(sum, mine);
}

__global__ void normsKernel(const double* M, std::size_t nodes, int mStride, int terms, int order, const double* w,
                            const int* degree, double* norms) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < nodes;
       i += std::size_t(gridDim.x) * blockDim.x)
    fmm::fmmMultipoleNorms(M + i * std::size_t(mStride), terms, w, degree, order, norms + i * std::size_t(order + 1));
}

struct AddCounts {
  __host__ __device__ fmm::PairCounts operator()(const fmm::PairCounts& a, const fmm::PairCounts& b) const {
    return a + b;
  }
};

}  // namespace

Status launchWalkDecide(const fmm::DualWalkTree& t, const std::uint64_t* frontier, const std::uint8_t* shift,
                        std::size_t n, fmm::PairStep* steps, fmm::PairCounts* counts, cudaStream_t s) {
  walkDecideKernel<<<gridFor(n + 1), kGridThreads, 0, s>>>(t, frontier, shift, n, steps, counts);
  AG_CUDA_LAUNCHED("walkDecideKernel");
  return Status::success();
}

Status scanWalkCounts(void* temp, std::size_t& tempBytes, const fmm::PairCounts* counts, fmm::PairCounts* at,
                      std::size_t n, cudaStream_t s) {
  AG_CUDA_TRY(cub::DeviceScan::ExclusiveScan(temp, tempBytes, counts, at, AddCounts{}, fmm::PairCounts{}, n + 1, s));
  if (temp) AG_CUDA_LAUNCHED("cub::DeviceScan::ExclusiveScan (the walk's counts)");
  return Status::success();
}

Status launchWalkEmit(const fmm::PairStep* steps, const std::uint64_t* frontier, const fmm::PairCounts* at,
                      std::size_t n, int bits, std::uint64_t* next, std::uint64_t* m2l, std::uint64_t* p2p,
                      int sbits, std::uint8_t* nextShift, std::uint8_t* m2lShift, cudaStream_t s) {
  if (n == 0) return Status::success();
  walkEmitKernel<<<gridFor(n), kGridThreads, 0, s>>>(steps, frontier, at, n, bits, next, m2l, p2p, sbits, nextShift,
                                                      m2lShift);
  AG_CUDA_LAUNCHED("walkEmitKernel");
  return Status::success();
}

Status launchDirectedEntries(const std::uint64_t* m2l, std::size_t pairs, int bits, std::uint64_t* keys, int sbits,
                             const std::uint8_t* m2lShift, cudaStream_t s) {
  if (pairs == 0) return Status::success();
  directedEntriesKernel<<<gridFor(pairs), kGridThreads, 0, s>>>(m2l, pairs, bits, keys, sbits, m2lShift);
  AG_CUDA_LAUNCHED("directedEntriesKernel");
  return Status::success();
}

Status sortKeyBits(void* temp, std::size_t& tempBytes, std::uint64_t* in, std::uint64_t* alt, std::size_t count,
                   int beginBit, int endBit, std::uint64_t** sorted, cudaStream_t s) {
  cub::DoubleBuffer<std::uint64_t> k(in, alt);
  AG_CUDA_TRY(cub::DeviceRadixSort::SortKeys(temp, tempBytes, k, count, beginBit, endBit, s));
  if (temp) AG_CUDA_LAUNCHED("cub::DeviceRadixSort::SortKeys (the lists' keys)");
  if (sorted) *sorted = k.Current();
  return Status::success();
}

Status sortListKeys(void* temp, std::size_t& tempBytes, std::uint64_t* in, std::uint64_t* alt, std::size_t count,
                    int bits, std::uint64_t** sorted, cudaStream_t s, int sbits) {
  return sortKeyBits(temp, tempBytes, in, alt, count, 0, 2 * bits + sbits, sorted, s);
}

Status launchUndirectedKeys(std::uint64_t* m2l, std::size_t pairs, int bits, cudaStream_t s) {
  if (pairs == 0) return Status::success();
  undirectedKeysKernel<<<gridFor(pairs), kGridThreads, 0, s>>>(m2l, pairs, bits);
  AG_CUDA_LAUNCHED("undirectedKeysKernel");
  return Status::success();
}

Status launchM2LFromPairs(const std::uint64_t* byA, const std::uint64_t* byB, std::size_t count, std::uint32_t nodes,
                          int bits, std::uint32_t* aStart, std::uint32_t* bStart, std::uint32_t* start,
                          std::uint32_t* source, cudaStream_t s) {
  pairStartsKernel<<<gridFor(count + 1), kGridThreads, 0, s>>>(byA, byB, count, nodes, bits, aStart, bStart);
  AG_CUDA_LAUNCHED("pairStartsKernel");
  m2lStartsKernel<<<gridFor(std::size_t(nodes) + 1), kGridThreads, 0, s>>>(aStart, bStart, nodes, start);
  AG_CUDA_LAUNCHED("m2lStartsKernel");
  if (count == 0) return Status::success();
  m2lEntriesKernel<<<gridFor(count), kGridThreads, 0, s>>>(byA, byB, count, bits, aStart, bStart, start, source);
  AG_CUDA_LAUNCHED("m2lEntriesKernel");
  return Status::success();
}

Status launchCsrFromKeys(const std::uint64_t* keys, std::size_t count, std::uint32_t nodes, int bits,
                         std::uint32_t* start, std::uint32_t* source, int sbits, std::uint8_t* shift,
                         cudaStream_t s) {
  csrFromKeysKernel<<<gridFor(count + 1), kGridThreads, 0, s>>>(keys, count, nodes, bits, start, source, sbits,
                                                                 shift);
  AG_CUDA_LAUNCHED("csrFromKeysKernel");
  return Status::success();
}

Status launchFmmNorms(const double* M, std::size_t nodes, int mStride, int terms, int order, const double* w,
                      const int* degree, double* norms, cudaStream_t s) {
  if (nodes == 0) return Status::success();
  normsKernel<<<gridFor(nodes), kGridThreads, 0, s>>>(M, nodes, mStride, terms, order, w, degree, norms);
  AG_CUDA_LAUNCHED("normsKernel");
  return Status::success();
}

Status launchDirectedCellPairs(const std::uint64_t* p2p, std::size_t pairs, int bits, int sbits,
                               const std::uint32_t* cellCount, const std::uint8_t* childCount, std::uint32_t nodes,
                               unsigned long long* sum, cudaStream_t s) {
  AG_CUDA_TRY(cudaMemsetAsync(sum, 0, sizeof(unsigned long long), s));
  cellPairsKernel<<<gridFor(pairs + nodes), kGridThreads, 0, s>>>(p2p, pairs, bits, sbits, cellCount, childCount,
                                                                   nodes, sum);
  AG_CUDA_LAUNCHED("cellPairsKernel");
  return Status::success();
}

}  // namespace cuda
}  // namespace amrgrav
