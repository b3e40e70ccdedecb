/// \file interaction_lists.h
/// \brief The FMM's interaction lists from one symmetric dual tree walk (Dehnen 2002): a node's children interact
/// with each other and each child with itself; a pair accepted by the MAC (physics/fmm_mac_k.h) is one M2L each
/// way, a pair of leaves that is not is one P2P, otherwise the node with the larger radius is opened. Every pair is
/// mutual and its truncation symmetric, so the forces of A on B and of B on A cancel to rounding (momentum).
///
/// The lists are canonical, whatever order the walk found them in or how many threads walked: P2P pairs (A < B)
/// sorted, each node's M2L sources sorted, so a GPU walk that finds the same pairs gets the same lists.
///
/// Periodic boxes (far_images.h): the walk also pairs the root with its neighbouring images, each pair carrying an
/// image shift n (|n|_inf <= 1, n_d = 0 along isolated axes; the source seen at its position + n L): 26 images in a
/// fully periodic box, 8 in a sheet, 2 on a line. A mutual pair (A, B, n) gives A the field of B + n L and B that of
/// A - n L; the walk starts from the root with itself and with the images of one half-space, so every mutual pair
/// is found once. Shifts are numbered (n_x + 1) + 3 (n_y + 1) + 9 (n_z + 1):
/// kNoShift (13) is no shift and 26 - s is the opposite of s.
#pragma once
#include <cstdint>
#include <vector>

#include "fmm/fmm_tree.h"

namespace amrgrav {
namespace fmm {

constexpr std::uint8_t kNoShift = 13;

/// Shift s's vector (the source seen at its position + v) for a box of these periods (0 along isolated axes): the
/// one formula of both backends (FmmLists::shiftVector, the CUDA backend's periodic FMM), each component exactly
/// 0 or +-period.
#if defined(__CUDACC__)
__host__ __device__
#endif
inline void imageShiftVector(const double period[3], std::uint8_t s, double v[3]) {
  v[0] = (s % 3 - 1) * period[0];
  v[1] = (s / 3 % 3 - 1) * period[1];
  v[2] = (s / 9 - 1) * period[2];
}

struct FmmLists {
  /// M2L by target node (CSR): the sources of node A are m2lSource[m2lStart[A] .. m2lStart[A + 1]), ascending by
  /// (source, shift), each seen through its image shift m2lShift.
  std::vector<std::uint32_t> m2lStart, m2lSource;
  std::vector<std::uint8_t> m2lShift;
  /// Mutual leaf pairs (A, B, shift) with A < B, or A = B and a shift (a leaf and its own image), sorted; every leaf
  /// also meets itself unshifted (not listed).
  std::vector<std::uint32_t> p2pA, p2pB;
  std::vector<std::uint8_t> p2pShift;
  /// The box's sides in scaled lengths along periodic axes, else 0: shift s moves a source by shiftVector(s).
  double period[3] = {0, 0, 0};
  void shiftVector(std::uint8_t s, double v[3]) const { imageShiftVector(period, s, v); }
  std::uint64_t directedM2L = 0;   ///< = m2lSource.size()
  std::uint64_t directedP2P = 0;   ///< cell pairs, both directions, a cell with itself excluded
};

/// The dual walk from the root, split into a fixed set of tasks (independent of `threads`) that run in parallel.
/// `period`: null for an isolated box, else the box's sides in scaled lengths along the periodic axes and 0 along
/// the isolated ones (the near images are walked).
void buildInteractionLists(const FmmTree& tree, double tolerance, int threads, FmmLists& lists,
                           const double* period = nullptr);

}  // namespace fmm
}  // namespace amrgrav
