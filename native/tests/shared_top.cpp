/// \file shared_top.cpp
/// \brief amrgrav_shared_top: the shared top of a distributed FMM's tree (fmm/shared_top.h), ranks simulated by
/// threads whose gather meets at a barrier. Against the one-process octree of all the keys (tree/build.cpp, leaves of
/// 64): the shared nodes are exactly its nodes with keys of two or more ranks, with their counts and ranks, and each
/// rank's tree built with the shared counts (SplitCount) holds exactly the one-process nodes that hold its keys, leaf
/// where they are leaves. Splits: contiguous runs cut anywhere, keys scattered at random, one rank without keys, and
/// clustered keys (deep trees). CTest (label cpu).
#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fmm/shared_top.h"
#include "tests/check_report.h"
#include "tests/test_random.h"
#include "tree/tree.h"

using namespace amrgrav;
using namespace amrgrav::tests;

namespace {

/// The ranks' allgather: each posts its words, all meet, each copies every rank's, all meet again.
class Board {
 public:
  explicit Board(int ranks) : ranks_(ranks), posted_(static_cast<std::size_t>(ranks)) {}
  Status gather(int rank, const std::vector<std::uint64_t>& mine, std::vector<std::uint64_t>& all,
                std::vector<std::size_t>& counts) {
    posted_[std::size_t(rank)] = mine;
    barrier();
    all.clear();
    counts.clear();
    for (const auto& p : posted_) {
      all.insert(all.end(), p.begin(), p.end());
      counts.push_back(p.size());
    }
    barrier();
    return Status::success();
  }

 private:
  void barrier() {
    std::unique_lock<std::mutex> lock(mu_);
    const int gen = generation_;
    if (++arrived_ == ranks_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return generation_ != gen; });
    }
  }
  int ranks_;
  std::vector<std::vector<std::uint64_t>> posted_;
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0, generation_ = 0;
};

std::uint64_t codeOf(const Octree& t, const std::vector<std::uint64_t>& keys, std::size_t i) {
  return fmm::nodeCode(keys[t.cellBegin[i]], t.level[i]);
}

/// `keys` sorted, `owner` the rank of each.
void splitCase(const std::string& name, const std::vector<std::uint64_t>& keys, const std::vector<int>& owner,
               int ranks) {
  const int leaf = 64;
  RootCube root;
  Octree one;
  buildOctree(keys, root, leaf, one);
  // the reference: each one-process node's ranks
  std::map<std::uint64_t, std::set<int>> ranksOf;
  std::map<std::uint64_t, std::pair<std::uint32_t, bool>> countLeaf;
  for (std::size_t i = 0; i < one.nodeCount(); ++i) {
    std::set<int>& r = ranksOf[codeOf(one, keys, i)];
    for (std::uint32_t j = one.cellBegin[i]; j < one.cellBegin[i] + one.cellCount[i]; ++j) r.insert(owner[j]);
    countLeaf[codeOf(one, keys, i)] = {one.cellCount[i], one.isLeaf(i)};
  }
  std::vector<std::vector<std::uint64_t>> mine(static_cast<std::size_t>(ranks));
  for (std::size_t j = 0; j < keys.size(); ++j) mine[std::size_t(owner[j])].push_back(keys[j]);
  Board board(ranks);
  std::vector<fmm::SharedTop> tops(static_cast<std::size_t>(ranks));
  std::vector<Status> st(static_cast<std::size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      st[std::size_t(r)] = fmm::findSharedTop(
          mine[std::size_t(r)], leaf,
          [&](const std::vector<std::uint64_t>& w, std::vector<std::uint64_t>& all, std::vector<std::size_t>& c) {
            return board.gather(r, w, all, c);
          },
          tops[std::size_t(r)]);
    });
  for (auto& t : threads) t.join();
  bool ok = true;
  for (const Status& s : st) ok = ok && s.ok();
  check(name + "-runs", ok, "findSharedTop succeeds on every rank");
  // the shared nodes: the one-process nodes with keys of two or more ranks, their counts and ranks
  std::size_t expected = 0, wrong = 0;
  for (const auto& [code, r] : ranksOf) {
    if (r.size() < 2) continue;
    ++expected;
    const std::int64_t k = tops[0].find(code);
    if (k < 0) { ++wrong; continue; }
    const std::vector<int> want(r.begin(), r.end());
    const std::vector<int> got(tops[0].sharers.begin() + tops[0].sharerBegin[std::size_t(k)],
                               tops[0].sharers.begin() + tops[0].sharerBegin[std::size_t(k) + 1]);
    if (got != want || tops[0].count[std::size_t(k)] != countLeaf[code].first) ++wrong;
  }
  bool same = true;
  for (const auto& t : tops) same = same && t.code == tops[0].code && t.count == tops[0].count && t.sharers == tops[0].sharers;
  check(name + "-shared", expected == tops[0].size() && wrong == 0 && same,
        std::to_string(tops[0].size()) + " shared nodes (expected " + std::to_string(expected) + ", " +
            std::to_string(wrong) + " wrong), the same on every rank");
  // each rank's tree with the shared counts: the one-process nodes holding its keys, leaves where they are leaves
  std::size_t bad = 0, nodes = 0;
  for (int r = 0; r < ranks; ++r) {
    const auto& k = mine[std::size_t(r)];
    const fmm::SharedTop& top = tops[std::size_t(r)];
    Octree t;
    buildOctree(k, root, leaf, t, [&](int level, std::uint64_t key, std::uint32_t count) {
      const std::int64_t s = top.find(fmm::nodeCode(key, level));
      return s < 0 ? count : top.count[std::size_t(s)];
    });
    std::set<std::uint64_t> got;
    for (std::size_t i = 0; i < t.nodeCount(); ++i) {
      const std::uint64_t c = codeOf(t, k, i);
      got.insert(c);
      const auto it = countLeaf.find(c);
      if (it == countLeaf.end() || it->second.second != t.isLeaf(i)) ++bad;
    }
    std::size_t want = 0;
    for (const auto& [code, rs] : ranksOf) want += rs.count(r);
    if (got.size() != want) ++bad;
    nodes += got.size();
  }
  check(name + "-trees", bad == 0, std::to_string(nodes) + " nodes over " + std::to_string(ranks) +
                                       " ranks: the one-process nodes of each rank's keys (" + std::to_string(bad) +
                                       " wrong)");
}

}  // namespace

int main() {
  std::uint64_t s = 2026;
  const std::size_t n = 40000;
  std::vector<std::uint64_t> uniform(n), clustered(n);
  for (std::size_t i = 0; i < n; ++i) {
    uniform[i] = nextRandom(s);
    // a quarter of the keys in one small cube (13 levels below the root: a deep shared region), the rest anywhere
    clustered[i] = i % 4 == 0 ? (nextRandom(s) & ((1ull << 24) - 1)) | (0x5ull << 60) : nextRandom(s);
  }
  for (auto* k : {&uniform, &clustered}) {
    std::sort(k->begin(), k->end());
    k->erase(std::unique(k->begin(), k->end()), k->end());
  }
  for (int ranks : {2, 3, 5}) {
    const std::string r = std::to_string(ranks);
    for (const auto& [kind, keys] : {std::pair<std::string, const std::vector<std::uint64_t>*>{"uniform", &uniform},
                                     {"clustered", &clustered}}) {
      const std::size_t m = keys->size();
      std::vector<int> runs(m), scattered(m), empty(m);
      for (std::size_t j = 0; j < m; ++j) {
        runs[j] = int(j * std::size_t(ranks) / m);  // contiguous, cut at arbitrary keys
        scattered[j] = int(nextRandom(s) % std::uint64_t(ranks));
        empty[j] = ranks > 2 && j % 2 == 0 ? 0 : ranks - 1;  // ranks 1 .. ranks-2 without keys
      }
      splitCase(kind + "-runs-" + r, *keys, runs, ranks);
      splitCase(kind + "-scattered-" + r, *keys, scattered, ranks);
      splitCase(kind + "-empty-ranks-" + r, *keys, empty, ranks);
    }
  }
  std::printf("== shared top: %d checks, %d failed ==\n", gChecks, gFailed);
  return gFailed == 0 ? 0 : 1;
}
