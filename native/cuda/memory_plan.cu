/// \file memory_plan.cu
/// \brief The memory plan (memory_plan.h): the block's layout, the tail a tree solve asks for, the staged copies,
/// and the release of every buffer, event and stream.
#include <algorithm>
#include <vector>

#include "core/thread_pool.h"
#include "cuda/device_state.h"
#include "cuda/memory_plan.h"
#include "cuda/walk_phase.h"

namespace amrgrav {
namespace cuda {

BlockLayout layoutFor(unsigned n, std::size_t tailBytes, bool compact) {
  BlockLayout L;
  L.compact = compact;
  std::size_t off = 0;
  for (int h = 0; h < 2; ++h) {
    L.idx[h] = off;
    off = alignUp(off + std::size_t(n) * sizeof(std::uint32_t));
  }
  static const int all[6] = {0, 1, 2, 3, 4, 5}, compactSlots[3] = {3, 2, 4};
  const int* slots = compact ? compactSlots : all;
  for (int j = 0; j < (compact ? 3 : 6); ++j) {
    const int k = slots[j];
    L.slot[k] = off;
    off = alignUp(off + std::size_t(n) * sizeof(double));
  }
  if (compact) {
    L.slot[0] = L.slot[1] = kNoSlot;
    L.slot[5] = L.slot[2];
    L.tail = L.slot[4];
  } else {
    L.tail = L.slot[5];
  }
  L.extra = off;
  L.total = L.tail + std::max(off - L.tail, alignUp(tailBytes));
  return L;
}

Status tailForTree(DeviceState& ds, unsigned n, const SolveOptions& opt, std::size_t* bytes) {
  WalkConfig cfg;
  int blocks = 1;
  AG_TRY(walkShape(ds, n, opt, &cfg, &blocks));
  const std::size_t nodes = n / 7 + n / 128 + 64, stored = n / 56 + n / 1024 + 64;
  const std::size_t queue = std::size_t(blocks) * kWalkWarpsPerBlock * ds.queueCap * sizeof(unsigned);
  const std::size_t nodeArrays = alignUp(nodes * sizeof(D4)) + alignUp(2 * nodes * sizeof(float4));
  const std::size_t walkOrMoments = nodeArrays + std::max(alignUp(stored * sizeof(NodeMoments)), alignUp(queue));
  const std::size_t build = alignUp(std::size_t(n) * sizeof(double)) + 2 * alignUp((n / 8 + 64) * sizeof(unsigned));
  *bytes = std::max(walkOrMoments, build);
  return Status::success();
}

Status reserveCubTemp(DeviceState& ds, std::size_t bytes) {
  return ds.cubTemp.reserve(std::max<std::size_t>(bytes, 1), "CUB scratch");
}

void releaseAll(DeviceState& ds) {
  for (auto& p : ds.particleState) p.reset();
  if (!ds.ready) return;
  (void)cudaSetDevice(ds.device);
  (void)cudaStreamSynchronize(ds.stream);
  for (auto* b : {&ds.block, &ds.accSum[0], &ds.accSum[1], &ds.accSum[2], &ds.finishedAside[0], &ds.finishedAside[1],
                  &ds.bounds})
    b->release();
  ds.cubTemp.release(); ds.topo.release(); ds.levelCount.release(); ds.levelOffset.release(); ds.nodeKeys.release();
  ds.groupHmin.release(); ds.groupMask.release(); ds.groupBegin.release(); ds.groupTiles.release();
  std::vector<uint4>().swap(ds.hostTopo);
  std::vector<D4>().swap(ds.hostMac);
  std::vector<float4>().swap(ds.hostMQ);
  ds.moments.release(); ds.nodeMac.release(); ds.nodeMQ.release(); ds.queue.release(); ds.queueTag.release();
  ds.walkCounters.release();
  ds.tally.release();
  ds.ewaldCoef.release();
  ds.ewaldTable.reset();
  ds.staging = std::make_unique<StagingRing>();
  ds.small.release();
  for (auto& e : ds.events) {
    if (e) (void)cudaEventDestroy(e);
    e = nullptr;
  }
  ds.letTopo.release(); ds.letMac.release(); ds.letMQ.release(); ds.letDip.release(); ds.letSums.release();
  ds.letRaw.release();
  ds.nodeDip.release();
  for (auto& b : ds.letCells) b.release();
  ds.massAside.release();
  ds.blk.geo.release(); ds.blk.slots.release(); ds.blk.chunkSums.release();
  ds.fmm.release();
  ds.blk.key.valid = false;
  if (ds.blk.callerEvent) (void)cudaEventDestroy(ds.blk.callerEvent);
  ds.blk.callerEvent = nullptr;
  for (auto& e : ds.blk.chunkDone) {
    if (e) (void)cudaEventDestroy(e);
    e = nullptr;
  }
  std::vector<std::uint32_t>().swap(ds.blk.hostOrder);
  ds.blk.hostOrderValid = false;
  std::vector<std::uint32_t>().swap(ds.blk.hostElement);
  ds.blk.hostElementValid = false;
  ds.letState.release(); ds.letCount.release(); ds.letOffset.release(); ds.letTotals.release();
  ds.letPacks.clear();
  ds.letPackBytes.clear();
  if (ds.letsReady) (void)cudaEventDestroy(ds.letsReady);
  ds.letsReady = nullptr;
  ds.lentCount = 0;
  if (ds.copyStream) (void)cudaStreamDestroy(ds.copyStream);
  ds.copyStream = nullptr;
  if (ds.stream) (void)cudaStreamDestroy(ds.stream);
  ds.stream = nullptr;
  ds.ready = false;
}

DeviceState::~DeviceState() { releaseAll(*this); }

std::size_t deviceBytes(DeviceState& ds) {
  std::size_t b = 0;
  b += ds.block.bytes();
  for (int k = 0; k < 3; ++k) b += ds.accSum[k].bytes();
  for (int k = 0; k < 2; ++k) b += ds.finishedAside[k].bytes();
  b += ds.bounds.bytes() + ds.nodeKeys.bytes() + ds.groupHmin.bytes() + ds.groupBegin.bytes() + ds.groupTiles.bytes() +
       ds.groupMask.bytes();
  b += ds.cubTemp.bytes() + ds.topo.bytes() + ds.levelCount.bytes() + ds.levelOffset.bytes();
  b += ds.moments.bytes() + ds.nodeMac.bytes() + ds.nodeMQ.bytes() + ds.queue.bytes() + ds.queueTag.bytes() +
       ds.walkCounters.bytes() +
       ds.tally.bytes() + ds.ewaldCoef.bytes();
  b += ds.letTopo.bytes() + ds.letMac.bytes() + ds.letMQ.bytes() + ds.letDip.bytes() + ds.letSums.bytes() +
       ds.nodeDip.bytes();
  for (const auto& c : ds.letCells) b += c.bytes();
  b += ds.blk.geo.bytes() + ds.blk.slots.bytes() + ds.blk.chunkSums.bytes();
  b += ds.fmm.bytes();
  return b;
}

int copyThreads(DeviceState& ds) {
  if (ds.copt.copyThreads > 0) return std::min(ds.copt.copyThreads, 64);
  return std::max(1, std::min(8, resolveThreadCount(0) / 2));
}

Status copyIn(DeviceState& ds, const Transfer* t, int count, cudaStream_t stream, const StagingRing::Fill* fill) {
  if (!stream) stream = ds.stream;
  if (ds.copt.pinnedStaging) {
    AG_TRY(ds.staging->prepare(ds.copt.stagingChunkBytes, copyThreads(ds), ds.device));
    return ds.staging->upload(t, count, stream, fill);
  }
  for (int k = 0; k < count; ++k) {
    if (t[k].bytes == 0) continue;  // as the staging ring, which makes no chunk of it
    if (fill) {  // pageable: made on the host, then copied (synchronously: the vector dies here)
      std::vector<char> made(t[k].bytes);
      (*fill)(made.data(), k, 0, t[k].bytes);
      AG_CUDA_TRY(cudaMemcpyAsync(t[k].device, made.data(), t[k].bytes, cudaMemcpyHostToDevice, stream));
      AG_CUDA_TRY(cudaStreamSynchronize(stream));
    } else {
      AG_CUDA_TRY(cudaMemcpyAsync(t[k].device, t[k].host, t[k].bytes, cudaMemcpyHostToDevice, stream));
    }
  }
  return Status::success();
}

Status copyOut(DeviceState& ds, const Transfer* t, int count, cudaStream_t stream, const StagingRing::Drain* drain,
               const StagingRing::Gate* gate, std::size_t chunkBytes) {
  if (ds.copt.pinnedStaging) {
    const std::size_t chunk = chunkBytes ? std::min(chunkBytes, ds.copt.stagingChunkBytes) : ds.copt.stagingChunkBytes;
    AG_TRY(ds.staging->prepare(chunk, copyThreads(ds), ds.device));
    return ds.staging->download(t, count, stream, drain, gate);
  }
  if (gate)
    return Status::error(ErrorCode::Internal, "CUDA backend: a gated download needs the pinned staging");
  for (int k = 0; k < count; ++k) {
    if (t[k].bytes == 0) continue;  // as the staging ring, which makes no chunk of it
    if (drain) {
      std::vector<char> got(t[k].bytes);
      AG_CUDA_TRY(cudaMemcpyAsync(got.data(), t[k].device, t[k].bytes, cudaMemcpyDeviceToHost, stream));
      AG_CUDA_TRY(cudaStreamSynchronize(stream));
      (*drain)(got.data(), k, 0, t[k].bytes);
    } else {
      AG_CUDA_TRY(cudaMemcpyAsync(t[k].host, t[k].device, t[k].bytes, cudaMemcpyDeviceToHost, stream));
    }
  }
  AG_CUDA_TRY(cudaStreamSynchronize(stream));
  return Status::success();
}

}  // namespace cuda
}  // namespace amrgrav
