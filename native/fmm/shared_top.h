/// \file shared_top.h
/// \brief The top of a distributed FMM's tree (docs/fmm-design.md section 8): the one-process octree's nodes whose
/// cells lie on more than one rank ("shared" nodes), with their global cell counts, found top-down a level at a time
/// (every rank's candidate nodes and counts gathered, the shared ones that one process would split give the next
/// level's candidates). Every rank then splits a shared node exactly where one process would (its global count, not
/// its own), so every rank's tree holds the one-process tree's nodes, restricted to its cells; a node that is not
/// shared is whole on its one rank, its subtree the one-process subtree. No MPI here (the gather is a hook).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/status.h"
#include "tree/keys.h"
#include "tree/tree.h"

namespace amrgrav {
namespace fmm {

/// A node's identity on every rank: a sentinel bit above its key prefix (level l: the top 3l bits of its cells' keys).
inline std::uint64_t nodeCode(std::uint64_t key, int level) {
  return (std::uint64_t(1) << (3 * level)) | (level == 0 ? 0 : key >> (3 * (kKeyBits - level)));
}

/// Collective: every rank's words, in rank order, into `all`, with each rank's count.
using GatherWords = std::function<Status(const std::vector<std::uint64_t>& mine, std::vector<std::uint64_t>& all,
                                         std::vector<std::size_t>& counts)>;

struct SharedTop {
  std::vector<std::uint64_t> code;         ///< the shared nodes' codes, ascending
  std::vector<std::uint32_t> count;        ///< their cells on all ranks
  std::vector<std::uint32_t> sharerBegin;  ///< CSR into sharers (code.size() + 1)
  std::vector<std::int32_t> sharers;       ///< the ranks with cells in each, ascending
  std::size_t size() const { return code.size(); }
  /// The shared node's index, or -1 when the node is not shared.
  std::int64_t find(std::uint64_t c) const;
  bool sharedWith(std::size_t k, int rank) const;
  /// The lowest rank with cells in it: the one that adds its (global) multipoles where they are summed over ranks.
  int owner(std::size_t k) const { return sharers[sharerBegin[k]]; }
};

/// Collective (every rank, cells or none): the shared nodes of the one-process tree over every rank's key-sorted
/// cells (`sortedKeys`, this rank's) with leaves of `leafSize`.
Status findSharedTop(const std::vector<std::uint64_t>& sortedKeys, int leafSize, const GatherWords& gather,
                     SharedTop& out);

/// Collective: the largest near field (sum of m / r, no G) of one shared leaf (a shared node one process does not
/// split) at its own cells from all its cells, every rank's: the periodic MAC's scale of |phi| reads the largest near
/// field of one leaf (fmm_tree.cpp), which no rank of a shared leaf has alone. The shared leaves' cells are gathered
/// and every rank computes every shared leaf (its cells in key order, as one process sums them); 0 without any.
Status sharedLeafNearMax(const std::vector<std::uint64_t>& sortedKeys, const SortedCells& cells, const SharedTop& top,
                         int leafSize, const GatherWords& gather, double& out);

}  // namespace fmm
}  // namespace amrgrav
