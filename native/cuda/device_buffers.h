/// \file device_buffers.h
/// \brief Grow-only device buffers and pinned host staging, held by the backend object across solves (a hydro
/// code calls every step: after the first step nothing is allocated unless the problem grows).
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "cuda/check.h"
#include "cuda/copy_workers.h"

namespace amrgrav {
namespace cuda {

/// OutOfMemory with the size asked for and the device's free/total memory at that moment.
inline Status outOfMemory(const char* what, std::size_t bytes, cudaError_t e) {
  (void)cudaGetLastError();  // an allocation failure is not sticky: clear it
  std::size_t freeB = 0, totalB = 0;
  const bool haveInfo = cudaMemGetInfo(&freeB, &totalB) == cudaSuccess;
  (void)cudaGetLastError();
  std::string msg = std::string("CUDA backend: cannot allocate ") + std::to_string(bytes) + " bytes of device memory for " +
                    what + " (" + cudaGetErrorName(e) + ")";
  if (haveInfo) msg += "; device has " + std::to_string(freeB) + " bytes free of " + std::to_string(totalB);
  return Status::error(ErrorCode::OutOfMemory, msg);
}

/// A device array that only grows. reserve() keeps no contents; reservePreserve() copies the used prefix.
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { release(); }

  T* get() const { return ptr_; }
  std::size_t capacity() const { return cap_; }
  std::size_t bytes() const { return cap_ * sizeof(T); }

  /// Room for at least n elements. The first allocation is exact; a growing one allocates n + n/16 (so a slowly
  /// growing mesh does not reallocate every step), falling back to exactly n when that does not fit.
  Status reserve(std::size_t n, const char* what) {
    if (n <= cap_) return Status::success();
    const bool growing = ptr_ != nullptr;
    if (growing) AG_CUDA_TRY(cudaDeviceSynchronize());  // queued work may still use the old block
    release();
    return allocate(n, growing, what);
  }

  /// As reserve(), keeping the first `used` elements (copied on `stream`, which is synchronised before the old
  /// block is freed).
  Status reservePreserve(std::size_t n, std::size_t used, cudaStream_t stream, const char* what) {
    if (n <= cap_) return Status::success();
    T* old = ptr_;
    const std::size_t oldCap = cap_;
    ptr_ = nullptr;
    cap_ = 0;
    Status st = allocate(n, old != nullptr, what);
    if (!st.ok()) {
      ptr_ = old;
      cap_ = oldCap;
      return st;
    }
    if (old) {
      if (used > 0) AG_CUDA_TRY(cudaMemcpyAsync(ptr_, old, used * sizeof(T), cudaMemcpyDeviceToDevice, stream));
      AG_CUDA_TRY(cudaStreamSynchronize(stream));
      AG_CUDA_TRY(cudaFree(old));
    }
    return Status::success();
  }

  void release() {
    if (ptr_) (void)cudaFree(ptr_);  // at process exit the runtime may be gone already: nothing to report then
    ptr_ = nullptr;
    cap_ = 0;
  }

 private:
  Status allocate(std::size_t n, bool growing, const char* what) {
    std::size_t want = growing ? n + n / 16 : n;
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, want * sizeof(T));
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      want = n;
      e = cudaMalloc(&p, want * sizeof(T));
    }
    if (e == cudaErrorMemoryAllocation) return outOfMemory(what, n * sizeof(T), e);
    if (e != cudaSuccess) return cudaFailure(e, "cudaMalloc", __FILE__, __LINE__);
    ptr_ = static_cast<T*>(p);
    cap_ = want;
    return Status::success();
  }

  T* ptr_ = nullptr;
  std::size_t cap_ = 0;
};

/// Page-locked host memory, grow-only.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() { release(); }

  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

  Status reserve(std::size_t bytes, const char* what) {
    if (bytes <= bytes_) return Status::success();
    if (ptr_) AG_CUDA_TRY(cudaDeviceSynchronize());  // queued copies may still use the old block
    release();
    void* p = nullptr;
    const cudaError_t e = cudaHostAlloc(&p, bytes, cudaHostAllocDefault);
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      return Status::error(ErrorCode::OutOfMemory, std::string("CUDA backend: cannot allocate ") + std::to_string(bytes) +
                                                       " bytes of pinned host memory for " + what);
    }
    if (e != cudaSuccess) return cudaFailure(e, "cudaHostAlloc", __FILE__, __LINE__);
    ptr_ = p;
    bytes_ = bytes;
    return Status::success();
  }

  void release() {
    if (ptr_) (void)cudaFreeHost(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
  }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

/// One host<->device transfer of a staged copy.
struct Transfer {
  void* host;     ///< caller's (pageable) memory
  void* device;
  std::size_t bytes;
};

/// Copies pageable host arrays to and from the device through pinned chunks, on several host threads: each worker
/// owns two pinned slots and alternates between them, so its host memcpy of one chunk overlaps the DMA of the
/// other, and the workers' memcpys run in parallel (a single thread's memcpy, about 9 GB/s, was the limit). The
/// workers are kept between copies (copy_workers.h).
/// The pinned footprint is workers x 2 x chunk bytes whatever the problem size. All copies go on one stream.
class StagingRing {
 public:
  static constexpr int kSlotsPerWorker = 2;

  StagingRing() = default;
  StagingRing(const StagingRing&) = delete;
  StagingRing& operator=(const StagingRing&) = delete;
  ~StagingRing() {
    for (auto& e : events_)
      if (e) (void)cudaEventDestroy(e);
  }

  std::size_t pinnedBytes() const { return pinned_.bytes(); }

  Status prepare(std::size_t chunkBytes, int workers, int device) {
    chunkBytes = (chunkBytes + 4095) / 4096 * 4096;
    if (chunkBytes < 4096) chunkBytes = 4096;
    if (workers < 1) workers = 1;
    const int slots = workers * kSlotsPerWorker;
    // no DMA may still read or write the old block, nor the old slots where a new chunk size moves them (a slot's
    // event guards that slot's bytes only)
    if (chunkBytes * slots > pinned_.bytes() || chunkBytes != chunk_)
      for (auto& e : events_)
        if (e) AG_CUDA_TRY(cudaEventSynchronize(e));
    if (chunkBytes * slots > pinned_.bytes()) AG_TRY(pinned_.reserve(chunkBytes * slots, "the staging buffers"));
    for (int k = int(events_.size()); k < slots; ++k) {
      cudaEvent_t e = nullptr;
      AG_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      events_.push_back(e);
    }
    chunk_ = chunkBytes;
    workers_ = workers;
    device_ = device;
    return Status::success();
  }

  /// fill(pinned, transfer, byteOffset, bytes): writes the bytes [byteOffset, byteOffset + bytes) of transfer
  /// `transfer`'s data into pinned memory (a packing copy in place of memcpy from Transfer::host).
  using Fill = std::function<void(void*, int, std::size_t, std::size_t)>;
  /// drain(pinned, transfer, byteOffset, bytes): takes those bytes from pinned memory (an unpacking copy).
  using Drain = std::function<void(const void*, int, std::size_t, std::size_t)>;
  /// gate(transfer, byteOffset, bytes): the event after which those device bytes are final (null: they are now).
  /// A download with a gate takes each chunk as soon as its event completes (the block solve's results, chunk by
  /// chunk of the walk): the chunks go offset first (every transfer's first bytes before any transfer's later ones),
  /// and a worker drains what it holds before it waits for an event, so nothing ready waits behind it.
  using Gate = std::function<cudaEvent_t(int, std::size_t, std::size_t)>;

  /// Host -> device: returns once every chunk is queued on `stream` (the last DMAs may still be running). With
  /// `fill`, the chunks are made by it (Transfer::host unused), on the copy threads.
  Status upload(const Transfer* t, int count, cudaStream_t stream, const Fill* fill = nullptr) {
    return run(t, count, false, true, [&](const std::vector<Chunk>& chunks, int w) -> Status {
      int k = 0;
      for (std::size_t c = std::size_t(w); c < chunks.size(); c += std::size_t(workers_), ++k) {
        const int slot = w * kSlotsPerWorker + (k & 1);
        // the slot's previous DMA (this call's or an earlier solve's) must be done; a fresh event counts as done
        AG_CUDA_TRY(cudaEventSynchronize(events_[slot]));
        if (fill) (*fill)(pin(slot), chunks[c].transfer, chunks[c].off, chunks[c].len);
        else std::memcpy(pin(slot), chunks[c].host, chunks[c].len);
        AG_CUDA_TRY(cudaMemcpyAsync(chunks[c].dev, pin(slot), chunks[c].len, cudaMemcpyHostToDevice, stream));
        AG_CUDA_TRY(cudaEventRecord(events_[slot], stream));
      }
      return Status::success();
    });
  }

  /// Device -> host, after the work queued on `stream`; returns when the data is in the caller's memory. With
  /// `drain`, the chunks go to it (Transfer::host unused), on the copy threads; with `gate`, each chunk's copy also
  /// waits for its event (Gate).
  Status download(const Transfer* t, int count, cudaStream_t stream, const Drain* drain = nullptr,
                  const Gate* gate = nullptr) {
    return run(t, count, gate != nullptr, false, [&](const std::vector<Chunk>& chunks, int w) -> Status {
      std::size_t mine[kSlotsPerWorker] = {0, 0};  // chunk index waiting in each slot
      bool busy[kSlotsPerWorker] = {false, false};
      auto finish = [&](int k) -> Status {
        const int slot = w * kSlotsPerWorker + k;
        AG_CUDA_TRY(cudaEventSynchronize(events_[slot]));
        const Chunk& ch = chunks[mine[k]];
        if (drain) (*drain)(pin(slot), ch.transfer, ch.off, ch.len);
        else std::memcpy(ch.host, pin(slot), ch.len);
        busy[k] = false;
        return Status::success();
      };
      int k = 0;
      for (std::size_t c = std::size_t(w); c < chunks.size(); c += std::size_t(workers_), k ^= 1) {
        if (gate) {
          const cudaEvent_t ready = (*gate)(chunks[c].transfer, chunks[c].off, chunks[c].len);
          if (ready) {
            const cudaError_t q = cudaEventQuery(ready);
            if (q == cudaErrorNotReady) {  // not final yet: first drain what this worker holds (oldest first)
              (void)cudaGetLastError();     // "not ready" is not an error (this thread's last error)
              for (int j = 0; j < kSlotsPerWorker; ++j)
                if (busy[k ^ j]) AG_TRY(finish(k ^ j));
              AG_CUDA_TRY(cudaEventSynchronize(ready));
            } else if (q != cudaSuccess) {
              AG_CUDA_TRY(q);
            }
          }
        }
        if (busy[k]) AG_TRY(finish(k));
        const int slot = w * kSlotsPerWorker + k;
        AG_CUDA_TRY(cudaMemcpyAsync(pin(slot), chunks[c].dev, chunks[c].len, cudaMemcpyDeviceToHost, stream));
        AG_CUDA_TRY(cudaEventRecord(events_[slot], stream));
        mine[k] = c;
        busy[k] = true;
      }
      for (int j = 0; j < kSlotsPerWorker; ++j, k ^= 1)  // oldest first
        if (busy[k]) AG_TRY(finish(k));
      return Status::success();
    });
  }

 private:
  struct Chunk {
    char* host;
    char* dev;
    std::size_t len;
    int transfer;     ///< which of the call's transfers
    std::size_t off;  ///< byte offset in it
  };

  char* pin(int slot) const { return static_cast<char*>(pinned_.get()) + std::size_t(slot) * chunk_; }

  using Work = std::function<Status(const std::vector<Chunk>&, int)>;

  /// Bytes of an upload's first chunk per worker when ramping (then doubling per round up to the chunk size).
  static constexpr std::size_t kRampBytes = std::size_t(256) << 10;

  /// Splits the transfers into chunks and runs work(chunks, w) for w < workers on that many threads; chunk c is
  /// handled by worker c % workers. offsetFirst: the chunks ordered by offset, then transfer (else transfer first).
  /// ramp: the first round of chunks (one per worker) kRampBytes long, each round twice the last up to the chunk
  /// size, so that the first DMA starts after a small pack rather than a whole chunk's (an upload is DMA-bound once
  /// running: the workers pack faster than PCIe carries).
  Status run(const Transfer* t, int count, bool offsetFirst, bool ramp, const Work& work) {
    std::vector<Chunk> chunks;
    std::size_t longest = 0;
    for (int a = 0; a < count; ++a) longest = t[a].bytes > longest ? t[a].bytes : longest;
    auto lengthAt = [&](std::size_t c) {  // the c-th chunk's length before clipping to its transfer's end
      if (!ramp) return chunk_;
      const std::size_t round = c / std::size_t(workers_ > 0 ? workers_ : 1);
      return round >= 16 ? chunk_ : std::min(chunk_, kRampBytes << round);
    };
    auto add = [&](int a, std::size_t off, std::size_t len) {
      chunks.push_back(Chunk{t[a].host ? static_cast<char*>(t[a].host) + off : nullptr,
                             static_cast<char*>(t[a].device) + off, std::min(len, t[a].bytes - off), a, off});
    };
    if (offsetFirst) {
      for (std::size_t off = 0; off < longest; off += chunk_)
        for (int a = 0; a < count; ++a)
          if (off < t[a].bytes) add(a, off, chunk_);
    } else {
      for (int a = 0; a < count; ++a)
        for (std::size_t off = 0; off < t[a].bytes;) {
          const std::size_t len = lengthAt(chunks.size());
          add(a, off, len);
          off += len;
        }
    }
    const int used = int(chunks.size() < std::size_t(workers_) ? chunks.size() : std::size_t(workers_));
    if (used == 0) return Status::success();
    std::vector<Status> status(static_cast<std::size_t>(used));
    const int savedWorkers = workers_;
    workers_ = used;  // the stride the work functions use
    pool_.run(used, device_, [&](int w) {
      // the caller's thread (w = 0) may be on another device; the pool's are bound to device_
      const cudaError_t err = w == 0 ? cudaSetDevice(device_) : cudaSuccess;
      if (err != cudaSuccess) status[std::size_t(w)] = cudaFailure(err, "cudaSetDevice", __FILE__, __LINE__);
      else status[std::size_t(w)] = work(chunks, w);
    });
    workers_ = savedWorkers;
    for (const Status& st : status)
      if (!st.ok()) return st;
    return Status::success();
  }

  PinnedBuffer pinned_;
  CopyWorkers pool_;  // the copy threads, kept between copies
  std::size_t chunk_ = 0;
  int workers_ = 1, device_ = 0;
  std::vector<cudaEvent_t> events_;
};

}  // namespace cuda
}  // namespace amrgrav
