/// \file device_buffers.h
/// \brief Grow-only device buffers and pinned host staging, held by the backend object across solves (a hydro
/// code calls every step: after the first step nothing is allocated unless the problem grows).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstring>
#include <string>

#include "cuda/check.h"

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

  /// Room for at least n elements. Allocates n + n/8 (so a slowly growing mesh does not reallocate every step),
  /// falling back to exactly n when that does not fit.
  Status reserve(std::size_t n, const char* what) {
    if (n <= cap_) return Status::success();
    release();
    return allocate(n, what);
  }

  /// As reserve(), keeping the first `used` elements (copied on `stream`, which is synchronised before the old
  /// block is freed).
  Status reservePreserve(std::size_t n, std::size_t used, cudaStream_t stream, const char* what) {
    if (n <= cap_) return Status::success();
    T* old = ptr_;
    const std::size_t oldCap = cap_;
    ptr_ = nullptr;
    cap_ = 0;
    Status st = allocate(n, what);
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
  Status allocate(std::size_t n, const char* what) {
    std::size_t want = n + n / 8;
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

/// A ring of pinned slots through which pageable host arrays are copied in chunks: the host memcpy of chunk k+1
/// overlaps the DMA of chunk k, and the pinned footprint stays at slots x chunk bytes whatever the problem size.
class StagingRing {
 public:
  static constexpr int kSlots = 4;

  StagingRing() = default;
  StagingRing(const StagingRing&) = delete;
  StagingRing& operator=(const StagingRing&) = delete;
  ~StagingRing() {
    for (auto& e : events_)
      if (e) (void)cudaEventDestroy(e);
  }

  std::size_t pinnedBytes() const { return pinned_.bytes(); }

  Status prepare(std::size_t chunkBytes) {
    chunkBytes = (chunkBytes + 255) / 256 * 256;
    if (chunkBytes < 256) chunkBytes = 256;
    if (chunkBytes * kSlots > pinned_.bytes()) {
      for (auto& e : events_)  // no DMA may still read or write the old block
        if (e) AG_CUDA_TRY(cudaEventSynchronize(e));
      AG_TRY(pinned_.reserve(chunkBytes * kSlots, "the staging ring"));
    }
    chunk_ = pinned_.bytes() / kSlots;
    for (auto& e : events_)
      if (!e) AG_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    return Status::success();
  }

  /// Host -> device: returns once every chunk is queued; the last DMAs may still be running on `stream`.
  Status upload(const Transfer* t, int count, cudaStream_t stream) {
    int slot = 0;
    for (int a = 0; a < count; ++a) {
      for (std::size_t off = 0; off < t[a].bytes; off += chunk_) {
        const std::size_t len = t[a].bytes - off < chunk_ ? t[a].bytes - off : chunk_;
        // The slot's previous DMA (this call's or an earlier solve's) must be done before it is overwritten; an
        // event never recorded counts as complete.
        AG_CUDA_TRY(cudaEventSynchronize(events_[slot]));
        char* pin = static_cast<char*>(pinned_.get()) + std::size_t(slot) * chunk_;
        std::memcpy(pin, static_cast<const char*>(t[a].host) + off, len);
        AG_CUDA_TRY(cudaMemcpyAsync(static_cast<char*>(t[a].device) + off, pin, len, cudaMemcpyHostToDevice, stream));
        AG_CUDA_TRY(cudaEventRecord(events_[slot], stream));
        slot = (slot + 1) % kSlots;
      }
    }
    return Status::success();
  }

  /// Device -> host, after the work queued on `stream`; returns when the data is in the caller's memory.
  Status download(const Transfer* t, int count, cudaStream_t stream) {
    struct Pending { char* host; std::size_t len; int slot; };
    Pending ring[kSlots];
    int inFlight = 0, head = 0, slot = 0;
    auto drainOne = [&]() -> Status {
      Pending& p = ring[head];
      AG_CUDA_TRY(cudaEventSynchronize(events_[p.slot]));
      std::memcpy(p.host, static_cast<char*>(pinned_.get()) + std::size_t(p.slot) * chunk_, p.len);
      head = (head + 1) % kSlots;
      --inFlight;
      return Status::success();
    };
    for (int a = 0; a < count; ++a) {
      for (std::size_t off = 0; off < t[a].bytes; off += chunk_) {
        const std::size_t len = t[a].bytes - off < chunk_ ? t[a].bytes - off : chunk_;
        if (inFlight == kSlots) AG_TRY(drainOne());
        char* pin = static_cast<char*>(pinned_.get()) + std::size_t(slot) * chunk_;
        AG_CUDA_TRY(cudaMemcpyAsync(pin, static_cast<const char*>(t[a].device) + off, len, cudaMemcpyDeviceToHost, stream));
        AG_CUDA_TRY(cudaEventRecord(events_[slot], stream));
        ring[(head + inFlight) % kSlots] = Pending{static_cast<char*>(t[a].host) + off, len, slot};
        ++inFlight;
        slot = (slot + 1) % kSlots;
      }
    }
    while (inFlight > 0) AG_TRY(drainOne());
    return Status::success();
  }

 private:
  PinnedBuffer pinned_;
  std::size_t chunk_ = 0;
  cudaEvent_t events_[kSlots] = {};
};

}  // namespace cuda
}  // namespace amrgrav
