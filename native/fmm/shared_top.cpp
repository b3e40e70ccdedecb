/// \file shared_top.cpp
/// \brief The shared nodes of a distributed FMM's tree (see shared_top.h).
#include "fmm/shared_top.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>

#include "physics/rounding.h"

namespace amrgrav {
namespace fmm {

std::int64_t SharedTop::find(std::uint64_t c) const {
  const auto it = std::lower_bound(code.begin(), code.end(), c);
  return it != code.end() && *it == c ? std::int64_t(it - code.begin()) : -1;
}

bool SharedTop::sharedWith(std::size_t k, int rank) const {
  return std::binary_search(sharers.begin() + sharerBegin[k], sharers.begin() + sharerBegin[k + 1], rank);
}

Status findSharedTop(const std::vector<std::uint64_t>& keys, int leafSize, const GatherWords& gather,
                     SharedTop& out) {
  out = SharedTop{};
  struct Candidate {
    std::uint64_t code;
    std::uint32_t b, e;  ///< this rank's cells of the node: sorted positions [b, e)
  };
  std::vector<Candidate> mine;
  if (!keys.empty()) mine.push_back({nodeCode(0, 0), 0, std::uint32_t(keys.size())});
  std::vector<std::tuple<std::uint64_t, std::uint32_t, std::vector<std::int32_t>>> found;
  for (int level = 0;; ++level) {
    std::vector<std::uint64_t> words, all;
    std::vector<std::size_t> counts;
    for (const Candidate& c : mine) {
      words.push_back(c.code);
      words.push_back(c.e - c.b);
    }
    AG_TRY(gather(words, all, counts));
    std::vector<std::tuple<std::uint64_t, std::int32_t, std::uint64_t>> items;  // (code, rank, cells)
    std::size_t off = 0;
    for (std::size_t r = 0; r < counts.size(); ++r) {
      for (std::size_t q = 0; q + 1 < counts[r]; q += 2) items.emplace_back(all[off + q], std::int32_t(r), all[off + q + 1]);
      off += counts[r];
    }
    std::sort(items.begin(), items.end());
    // a node on two or more ranks is shared; one process splits it by its count over all of them
    std::vector<std::uint64_t> splitting;
    for (std::size_t a = 0; a < items.size();) {
      std::size_t b = a;
      std::uint64_t cells = 0;
      std::vector<std::int32_t> ranks;
      for (; b < items.size() && std::get<0>(items[b]) == std::get<0>(items[a]); ++b) {
        cells += std::get<2>(items[b]);
        ranks.push_back(std::get<1>(items[b]));
      }
      if (ranks.size() > 1) {
        if (cells > UINT32_MAX) return Status::error(ErrorCode::InvalidInput, "more than 2^32 cells in one solve");
        found.emplace_back(std::get<0>(items[a]), std::uint32_t(cells), std::move(ranks));
        if (nodeSplits(std::uint32_t(cells), level, leafSize)) splitting.push_back(std::get<0>(items[a]));
      }
      a = b;
    }
    if (splitting.empty()) break;  // the same on every rank: every rank merged the same items
    // the next level's candidates: this rank's octants of the shared nodes that split
    std::vector<Candidate> next;
    for (const Candidate& c : mine) {
      if (!std::binary_search(splitting.begin(), splitting.end(), c.code)) continue;
      for (std::uint32_t s = c.b; s < c.e;) {
        const unsigned oct = octantAt(keys[s], level + 1);
        std::uint32_t f = s + 1;
        while (f < c.e && octantAt(keys[f], level + 1) == oct) ++f;
        next.push_back({nodeCode(keys[s], level + 1), s, f});
        s = f;
      }
    }
    mine.swap(next);
  }
  std::sort(found.begin(), found.end());
  out.sharerBegin.push_back(0);
  for (auto& f : found) {
    out.code.push_back(std::get<0>(f));
    out.count.push_back(std::get<1>(f));
    out.sharers.insert(out.sharers.end(), std::get<2>(f).begin(), std::get<2>(f).end());
    out.sharerBegin.push_back(std::uint32_t(out.sharers.size()));
  }
  return Status::success();
}

Status sharedLeafNearMax(const std::vector<std::uint64_t>& keys, const SortedCells& c, const SharedTop& top,
                         int leafSize, const GatherWords& gather, double& out) {
  out = 0;
  // this rank's cells of each shared leaf: the run of keys under the leaf's prefix
  std::vector<std::uint64_t> mine, all;
  std::vector<std::size_t> counts;
  auto bits = [](double v) {
    std::uint64_t w;
    std::memcpy(&w, &v, 8);
    return w;
  };
  for (std::size_t k = 0; k < top.size(); ++k) {
    const int level = (63 - __builtin_clzll(top.code[k])) / 3;
    if (nodeSplits(top.count[k], level, leafSize)) continue;
    const int shift = 3 * (kKeyBits - level);
    const std::uint64_t prefix = top.code[k] ^ (std::uint64_t(1) << (3 * level));
    const std::uint64_t lo = level == 0 ? 0 : prefix << shift, hi = level == 0 ? ~0ull : ((prefix + 1) << shift) - 1;
    const auto b = std::lower_bound(keys.begin(), keys.end(), lo), e = std::upper_bound(keys.begin(), keys.end(), hi);
    for (auto it = b; it != e; ++it) {
      const std::size_t j = std::size_t(it - keys.begin());
      const std::uint64_t rec[6] = {k, *it, bits(c.x[j]), bits(c.y[j]), bits(c.z[j]), bits(c.mass[j])};
      mine.insert(mine.end(), rec, rec + 6);
    }
  }
  AG_TRY(gather(mine, all, counts));
  struct Cell {
    std::uint64_t leaf, key;
    std::size_t at;  ///< gathered position: rank order breaks ties of equal keys
    double x, y, z, m;
  };
  std::vector<Cell> cells;
  auto value = [](std::uint64_t w) {
    double v;
    std::memcpy(&v, &w, 8);
    return v;
  };
  for (std::size_t q = 0; q + 5 < all.size(); q += 6)
    cells.push_back({all[q], all[q + 1], q, value(all[q + 2]), value(all[q + 3]), value(all[q + 4]), value(all[q + 5])});
  std::sort(cells.begin(), cells.end(), [](const Cell& a, const Cell& b) {
    return std::tie(a.leaf, a.key, a.at) < std::tie(b.leaf, b.key, b.at);
  });
  for (std::size_t b = 0; b < cells.size();) {
    std::size_t e = b;
    while (e < cells.size() && cells[e].leaf == cells[b].leaf) ++e;
    for (std::size_t a = b; a < e; ++a) {
      double q = 0;
      for (std::size_t j = b; j < e; ++j)
        if (j != a)
          q += cells[j].m / std::sqrt(squaredNorm(cells[a].x - cells[j].x, cells[a].y - cells[j].y, cells[a].z - cells[j].z));
      out = std::max(out, std::fabs(q));
    }
    b = e;
  }
  return Status::success();
}

}  // namespace fmm
}  // namespace amrgrav
