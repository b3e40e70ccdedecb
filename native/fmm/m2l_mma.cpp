/// \file m2l_mma.cpp
/// \brief The tensor-core M2L's pieces and tiles on the host (m2l_mma.h).
#include "fmm/m2l_mma.h"

#include <algorithm>
#include <unordered_map>

#include "fmm/m2l_mma_k.h"
#include "fmm/multi_index.h"

namespace amrgrav {
namespace fmm {

std::vector<std::uint8_t> m2lMmaIndexOf(int p) {
  const MultiIndex& mi = MultiIndex::of(p);
  const int T = m2lMmaTerms(p);
  std::vector<std::uint8_t> out(std::size_t(m2lMmaPieces(p)) * 32);
  int piece = 0;
  for (int s = 0; s < m2lMmaStepCount(p); ++s)
    for (int r = 0; r < m2lMmaRows(p, s); ++r, ++piece)
      for (int lane = 0; lane < 32; ++lane) {
        const int sign = m2lMmaSign(p, s, r, lane);
        int at = 2 * T;  // the zero
        if (sign != 0) {
          const auto& k = mi.n[m2lMmaRow(r, lane)];
          const auto& n = mi.n[m2lMmaCol(s, lane)];
          at = mi.at(k[0] + n[0], k[1] + n[1], k[2] + n[2]) + (sign < 0 ? T : 0);
        }
        out[std::size_t(piece) * 32 + lane] = std::uint8_t(at);
      }
  return out;
}

std::vector<double> m2lMmaPiecesOf(int p, const double* D, std::size_t offsets) {
  // each element gathered through the index table from the offset's D, -D and 0 (as the gathering kernel does)
  const std::vector<std::uint8_t> index = m2lMmaIndexOf(p);
  const int T = m2lMmaTerms(p);
  const std::size_t per = index.size();
  std::vector<double> out(offsets * per), stage(2 * std::size_t(T) + 1, 0.0);
  for (std::size_t o = 0; o < offsets; ++o) {
    for (int i = 0; i < T; ++i) {
      stage[i] = D[o * T + i];
      stage[T + i] = -D[o * T + i];
    }
    for (std::size_t e = 0; e < per; ++e) out[o * per + e] = stage[index[e]];
  }
  return out;
}

M2lMmaTiles buildM2lMmaTiles(const std::uint32_t* targets, std::size_t count, const std::uint32_t* m2lStart,
                             const std::uint32_t* m2lSource, const int* lattice, int columnTiles) {
  const std::size_t nodes = count;
  M2lMmaTiles t;
  t.columnTiles = columnTiles;
  const std::size_t width = std::size_t(8 * columnTiles), tiles = (nodes + width - 1) / width;
  std::unordered_map<std::uint64_t, std::uint32_t> ids;  // by the offset's packed components
  t.start.assign(tiles + 1, 0);
  t.target.assign(tiles * width, -1);
  struct Entry {
    std::uint32_t id, column, source;
  };
  std::vector<Entry> entries;
  for (std::size_t tile = 0; tile < tiles; ++tile) {
    entries.clear();
    for (std::size_t c = 0; c < width && tile * width + c < nodes; ++c) {
      const std::size_t A = targets[tile * width + c];
      t.target[tile * width + c] = std::int32_t(A);
      for (std::uint32_t q = m2lStart[A]; q < m2lStart[A + 1]; ++q) {
        const std::uint32_t B = m2lSource[q];
        const std::array<int, 3> o = {lattice[3 * B] - lattice[3 * A], lattice[3 * B + 1] - lattice[3 * A + 1],
                                      lattice[3 * B + 2] - lattice[3 * A + 2]};
        const std::uint64_t key = std::uint64_t(std::uint32_t(o[0]) & 0x1fffffu) |
                                  std::uint64_t(std::uint32_t(o[1]) & 0x1fffffu) << 21 |
                                  std::uint64_t(std::uint32_t(o[2]) & 0x1fffffu) << 42;
        const auto it = ids.emplace(key, std::uint32_t(t.offsets.size())).first;
        if (it->second == t.offsets.size()) t.offsets.push_back(o);
        entries.push_back({it->second, std::uint32_t(c), B});
        ++t.pairs;
      }
    }
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
      return a.id != b.id ? a.id < b.id : a.column < b.column;
    });
    for (std::size_t e = 0; e < entries.size();) {
      const std::uint32_t id = entries[e].id;
      const std::size_t row = t.source.size();
      t.offset.push_back(id);
      t.source.resize(row + width, -1);
      for (; e < entries.size() && entries[e].id == id; ++e)
        t.source[row + entries[e].column] = std::int32_t(entries[e].source);
    }
    t.start[tile + 1] = std::uint32_t(t.offset.size());
  }
  return t;
}

std::vector<std::uint32_t> m2lMmaChildOrder(std::size_t begin, std::size_t end) {
  std::vector<std::uint32_t> out;
  out.reserve(end - begin);
  for (std::size_t k = 0; k < 8; ++k)
    for (std::size_t i = begin + k; i < end; i += 8) out.push_back(std::uint32_t(i));
  return out;
}

}  // namespace fmm
}  // namespace amrgrav
