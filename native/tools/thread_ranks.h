/// \file thread_ranks.h
/// \brief The ranks of a distributed FMM solve (cpu/fmm_ranks.h) as threads of one process, without MPI: the
/// collectives of core/rank_comm.h over shared memory and a barrier, the LETs handed over in memory. For the host
/// test (native/tests/fmm_ranks_threads.cpp) and the GPU check (parity subject fmm-ranks): N ranks against one
/// process, with the CPU's or a GPU's evaluation of each rank's own lists (fmm/rank_local.h), so that the host's part
/// of a GPU rank (the received LETs' sums and the far images added to the device's L and sums) is checked without
/// mpirun. A rank whose solve fails after the agreement releases the others (every collective then fails).
#pragma once
#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/rank_comm.h"
#include "cpu/fmm_ranks.h"
#include "fmm/rank_local.h"
#include "tools/host_cells.h"

namespace amrgrav::tools {

/// What the ranks' threads share: one slot per rank for what each posts, the LETs by (from, to), a barrier.
class ThreadWorld {
 public:
  explicit ThreadWorld(int ranks)
      : size(ranks), doubles(std::size_t(ranks)), words(std::size_t(ranks)), status(std::size_t(ranks)),
        mail(std::size_t(ranks), std::vector<PackedLet>(std::size_t(ranks))) {}
  const int size;
  std::vector<std::vector<double>> doubles;
  std::vector<std::vector<std::uint64_t>> words;
  std::vector<Status> status;
  std::vector<std::vector<PackedLet>> mail;  ///< mail[from][to]

  /// False once a rank has failed (then nobody waits any more).
  bool barrier() {
    std::unique_lock<std::mutex> lock(mu_);
    if (failed_) return false;
    const int gen = generation_;
    if (++arrived_ == size) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return generation_ != gen || failed_; });
    }
    return !failed_;
  }
  void fail() {
    std::lock_guard<std::mutex> lock(mu_);
    failed_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0, generation_ = 0;
  bool failed_ = false;
};

/// One rank's collectives over the world.
class ThreadRankComm final : public RankComm {
 public:
  ThreadRankComm(ThreadWorld& w, int rank) : w_(w), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return w_.size; }

  Status agree(const Status& local, double lo[3], double hi[3], const SolveOptions&) override {
    w_.status[std::size_t(rank_)] = local;
    w_.doubles[std::size_t(rank_)].assign(lo, lo + 3);
    w_.doubles[std::size_t(rank_)].insert(w_.doubles[std::size_t(rank_)].end(), hi, hi + 3);
    if (!w_.barrier()) return lost();
    Status first = Status::success();
    for (int r = 0; r < w_.size && first.ok(); ++r)
      if (!w_.status[std::size_t(r)].ok())
        first = Status::error(w_.status[std::size_t(r)].code, "rank " + std::to_string(r) + " of " +
                                                                   std::to_string(w_.size) + ": " +
                                                                   w_.status[std::size_t(r)].message);
    for (int d = 0; d < 3; ++d)
      for (int r = 0; r < w_.size; ++r) {
        lo[d] = std::min(lo[d], w_.doubles[std::size_t(r)][std::size_t(d)]);
        hi[d] = std::max(hi[d], w_.doubles[std::size_t(r)][std::size_t(3 + d)]);
      }
    if (!w_.barrier()) return lost();
    return first;
  }
  Status sum(double* v, std::size_t n) override {
    return reduce(v, n, [](double a, double b) { return a + b; });
  }
  Status max(double* v, std::size_t n) override {
    return reduce(v, n, [](double a, double b) { return std::max(a, b); });
  }
  Status min(double* v, std::size_t n) override {
    return reduce(v, n, [](double a, double b) { return std::min(a, b); });
  }
  Status allgather(const double* mine, std::size_t n, double* all) override {
    w_.doubles[std::size_t(rank_)].assign(mine, mine + n);
    if (!w_.barrier()) return lost();
    for (int r = 0; r < w_.size; ++r)
      std::copy(w_.doubles[std::size_t(r)].begin(), w_.doubles[std::size_t(r)].end(), all + std::size_t(r) * n);
    return w_.barrier() ? Status::success() : lost();
  }
  Status allgatherWords(const std::vector<std::uint64_t>& mine, std::vector<std::uint64_t>& all,
                        std::vector<std::size_t>& counts) override {
    w_.words[std::size_t(rank_)] = mine;
    if (!w_.barrier()) return lost();
    all.clear();
    counts.clear();
    for (const auto& p : w_.words) {
      all.insert(all.end(), p.begin(), p.end());
      counts.push_back(p.size());
    }
    return w_.barrier() ? Status::success() : lost();
  }
  /// Every LET packed and posted, the local work, then the LETs addressed here in rank order.
  Status exchange(const LetRound& round, DistributedStats& ds) override {
    for (std::size_t k = 0; k < round.dests.size(); ++k) {
      PackedLet let;
      std::size_t nodes = 0, cells = 0;
      if (Status st = round.pack(k, let, nodes, cells); !st.ok()) return st;
      ds.letNodesSent += nodes;
      ds.letCellsSent += cells;
      ds.letsSent += 1;
      ds.bytesSent += let.bytes();
      w_.mail[std::size_t(rank_)][std::size_t(round.dests[k])] = std::move(let);
    }
    if (!w_.barrier()) return lost();
    if (Status st = round.localWork([] { return Status::success(); }); !st.ok()) return st;
    for (int r = 0; r < w_.size; ++r) {
      if (!round.expect[std::size_t(r)]) continue;
      const PackedLet& let = w_.mail[std::size_t(r)][std::size_t(rank_)];
      ds.letsReceived += 1;
      ds.bytesReceived += let.bytes();
      if (Status st = round.received(r, let.words.data(), let.bytes()); !st.ok()) return st;
    }
    return w_.barrier() ? Status::success() : lost();  // before anyone posts the next round's LETs
  }

 private:
  static Status lost() { return Status::error(ErrorCode::Internal, "another rank's thread failed"); }
  template <class Op>
  Status reduce(double* v, std::size_t n, Op op) {
    w_.doubles[std::size_t(rank_)].assign(v, v + n);
    if (!w_.barrier()) return lost();
    for (std::size_t i = 0; i < n; ++i) {  // in rank order, the same on every rank
      double a = w_.doubles[0][i];
      for (int r = 1; r < w_.size; ++r) a = op(a, w_.doubles[std::size_t(r)][i]);
      v[i] = a;
    }
    return w_.barrier() ? Status::success() : lost();
  }
  ThreadWorld& w_;
  int rank_;
};

/// `cells` solved by `ranks` threads as ranks (solveFmmRanks), cell i on rank owner[i], each rank's own lists
/// evaluated by makeLocal(rank): the potential (and accelerations) back in the cells' order in `out`, each rank's
/// statistics in stats[rank]. The first failing rank's error, if any.
inline Status solveOnThreadRanks(const HostCells& cells, const std::vector<int>& owner, int ranks,
                                 const SolveOptions& opt,
                                 const std::function<std::unique_ptr<fmm::RankLocal>(int rank)>& makeLocal,
                                 SolveResult& out, std::vector<SolveStats>& stats) {
  ThreadWorld world(ranks);
  std::vector<std::vector<std::size_t>> index(static_cast<std::size_t>(ranks));
  for (std::size_t i = 0; i < cells.size(); ++i) index[std::size_t(owner[i])].push_back(i);
  std::vector<SolveResult> part(static_cast<std::size_t>(ranks));
  std::vector<Status> status(static_cast<std::size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      HostCells mine;
      for (std::size_t i : index[std::size_t(r)]) mine.push(cells.x[i], cells.y[i], cells.z[i], cells.m[i], cells.h[i]);
      ThreadRankComm comm(world, r);
      std::unique_ptr<fmm::RankLocal> local = makeLocal(r);
      status[std::size_t(r)] = solveFmmRanks(comm, *local, mine.view(), opt, part[std::size_t(r)]);
      if (!status[std::size_t(r)].ok()) world.fail();
    });
  for (auto& t : threads) t.join();
  stats.assign(static_cast<std::size_t>(ranks), SolveStats{});
  out = SolveResult{};
  const std::size_t n = cells.size();
  out.potential.assign(n, NAN);
  if (opt.accelerations)
    for (auto* v : {&out.ax, &out.ay, &out.az}) v->assign(n, NAN);
  for (int r = 0; r < ranks; ++r) {
    if (!status[std::size_t(r)].ok()) return status[std::size_t(r)];
    const SolveResult& p = part[std::size_t(r)];
    stats[std::size_t(r)] = p.stats;
    const auto& idx = index[std::size_t(r)];
    for (std::size_t k = 0; k < idx.size(); ++k) {
      out.potential[idx[k]] = p.potential[k];
      if (opt.accelerations) {
        out.ax[idx[k]] = p.ax[k];
        out.ay[idx[k]] = p.ay[k];
        out.az[idx[k]] = p.az[k];
      }
    }
  }
  return Status::success();
}

}  // namespace amrgrav::tools
