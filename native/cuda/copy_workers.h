/// \file copy_workers.h
/// \brief The staged copies' host threads (device_buffers.h StagingRing), kept between copies: a thread made for each
/// copy (std::thread and its first CUDA call) cost a few hundred microseconds before the first DMA of every upload.
/// Each kept thread is bound to the device once; run(used, fn) calls fn(w) for w < used, w = 0 on the caller's
/// thread, and returns when all have returned. One run at a time (a mutex); the threads end with the object.
#pragma once
#include <cuda_runtime.h>

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace amrgrav {
namespace cuda {

class CopyWorkers {
 public:
  CopyWorkers() = default;
  CopyWorkers(const CopyWorkers&) = delete;
  CopyWorkers& operator=(const CopyWorkers&) = delete;
  ~CopyWorkers() { stop(); }

  /// fn(w) for w in [0, used) (used <= the count given to run's first call with this device, else more threads
  /// are made), w = 0 here; fn must not throw (the ring's work returns a Status).
  void run(int used, int device, const std::function<void(int)>& fn) {
    std::lock_guard<std::mutex> one(runLock_);
    if (used < 1) return;
    if (device != device_ || int(threads_.size()) + 1 < used) start(used, device);
    {
      std::lock_guard<std::mutex> lk(m_);
      job_ = &fn;
      used_ = used;
      pending_ = int(threads_.size());
      ++generation_;
    }
    wake_.notify_all();
    fn(0);
    std::unique_lock<std::mutex> lk(m_);
    done_.wait(lk, [&] { return pending_ == 0; });
    job_ = nullptr;
  }

 private:
  void start(int count, int device) {
    stop();
    std::lock_guard<std::mutex> lk(m_);
    stopping_ = false;
    device_ = device;
    const std::uint64_t now = generation_;  // runs before this one are not theirs
    for (int w = 1; w < count; ++w) threads_.emplace_back([this, w, now] { loop(w, now); });
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lk(m_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

  void loop(int w, std::uint64_t seen) {
    (void)cudaSetDevice(device_);  // a new thread starts on device 0; a failure shows in the copies' own calls
    for (;;) {
      const std::function<void(int)>* job = nullptr;
      int used = 0;
      {
        std::unique_lock<std::mutex> lk(m_);
        wake_.wait(lk, [&] { return stopping_ || generation_ != seen; });
        if (stopping_) return;
        seen = generation_;
        job = job_;
        used = used_;
      }
      if (w < used) (*job)(w);
      {
        std::lock_guard<std::mutex> lk(m_);
        if (--pending_ == 0) done_.notify_one();
      }
    }
  }

  std::mutex runLock_;  // one run at a time
  std::mutex m_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> threads_;
  const std::function<void(int)>* job_ = nullptr;
  std::uint64_t generation_ = 0;
  int used_ = 0, pending_ = 0, device_ = -1;
  bool stopping_ = false;
};

}  // namespace cuda
}  // namespace amrgrav
