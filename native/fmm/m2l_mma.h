/// \file m2l_mma.h
/// \brief The host's side of the tensor-core M2L of lattice nodes (fmm/m2l_mma_k.h, cuda/kernels_m2l_mma.h): each
/// offset's matrix pieces, and the tiles that group a level's targets by 8 with their sources offset by offset.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace amrgrav {
namespace fmm {

/// Order p's index table (m2lMmaPieces(p) x 32 bytes, lane order): where each piece's element lies among an
/// offset's staged values D[0 .. T), -D[0 .. T) and a zero at 2T (T = termCount(p)): so that the kernel gathers a
/// piece from the offset's T derivatives instead of reading it whole.
std::vector<std::uint8_t> m2lMmaIndexOf(int p);

/// The pieces of `offsets` offsets (fmm::m2lMmaPieces(p) x 32 doubles each, lane order), from each offset's order p
/// derivatives D (termCount(p) doubles, at R = target - source), through the index table.
std::vector<double> m2lMmaPiecesOf(int p, const double* D, std::size_t offsets);

/// Targets in tiles of 8 x columnTiles (cuda/kernels_m2l_mma.h M2lMmaView's arrays), and the offsets they use.
struct M2lMmaTiles {
  int columnTiles = 1;
  std::vector<std::uint32_t> start, offset;
  std::vector<std::int32_t> source, target;
  std::vector<std::array<int, 3>> offsets;  ///< offset id -> lattice vector (source - target)
  std::size_t pairs = 0;                    ///< the lists' pairs (each tile slot with a source)
  std::size_t slots() const { return offset.size() * std::size_t(8 * columnTiles); }
};

/// The tiles of `count` targets taken in the order given (targets[0 .. count)), 8 x columnTiles a tile, from M2L
/// lists in CSR form (target A's sources m2lSource[m2lStart[A] .. m2lStart[A + 1]]) between nodes on one lattice
/// (node i at integer coordinates lattice[3 i ..]: one level's nodes). A tile's offsets ascend by id; ids are given
/// in the order the tiles first use them. A tile pays for the union of its targets' offsets, so targets whose lists
/// are translates of each other belong together: m2lMmaChildOrder.
M2lMmaTiles buildM2lMmaTiles(const std::uint32_t* targets, std::size_t count, const std::uint32_t* m2lStart,
                             const std::uint32_t* m2lSource, const int* lattice, int columnTiles);

/// Nodes begin .. end - 1 (one level of 8-child families, in the tree's order) by their place among their siblings,
/// then by family: on a uniform level each tile then holds one child position of 8 x columnTiles neighbouring
/// families, whose lists differ only where the box or the masses make them (siblings' lists differ by construction
/// of the dual walk: each sibling takes other children of the same source families).
std::vector<std::uint32_t> m2lMmaChildOrder(std::size_t begin, std::size_t end);

}  // namespace fmm
}  // namespace amrgrav
