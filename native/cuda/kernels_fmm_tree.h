/// \file kernels_fmm_tree.h
/// \brief The FMM's tree and upward pass on the device (kernel_fmm_tree.cu; driven by cuda/fmm_tree_phase.h): method
/// 'tree''s device topology (kernel_build.cu, fmm::kFmmLeafSize leaves: tree/build.cpp's node order) into the FMM's
/// layout with each node's cube centre; then, a level at a time from the deepest, a warp per node: its sums (a leaf
/// its cells in sorted order, else its children's in child order) and centre, then its multipoles from monomial
/// rows in shared memory (P2M or M2M in the host's lane order); then a thread per cell descending from the root, its
/// squared distance to each ancestor's centre maximised per node (exact, so atomically in any order); then a thread
/// per node, its radius and MAC quantities. Every rule is fmm/upward_k.h's, as the host's buildFmmTree and its emulation run them.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "core/status.h"
#include "fmm/upward_k.h"

namespace amrgrav {
namespace cuda {

/// The most levels of a tree (tree/keys.h's 21 key levels under the root).
constexpr int kFmmTreeMaxLevels = 24;

/// What the kernels read and write (device pointers).
struct FmmTreeView {
  unsigned nodes = 0, cells = 0;
  int levels = 0;                                   ///< levelStart[0 .. levels] (the last: nodes)
  unsigned levelStart[kFmmTreeMaxLevels + 1] = {};
  std::uint32_t *cellBegin = nullptr, *cellCount = nullptr, *childBegin = nullptr;
  std::uint8_t* childCount = nullptr;
  double* cube = nullptr;                           ///< the nodes' cube centres, 3 per node
  const double *x = nullptr, *y = nullptr, *z = nullptr, *mass = nullptr;  ///< sorted, scaled cells
  double* sums = nullptr;                           ///< 5 per node: fmm::FmmSums' m, am, s
  double* centre = nullptr;                         ///< 3 per node
  double* M = nullptr;                              ///< mStride per node (zeroed by the caller)
  int terms = 0, mStride = 0;
  const int *m2mStart = nullptr, *m2mJ = nullptr, *m2mNJ = nullptr;
  unsigned long long* r2 = nullptr;                 ///< per node: the bits of its largest squared distance (zeroed)
  double* mac = nullptr;                            ///< radius, critical, absMass, lowBound (nodes each)
  double theta = 0, rootLo[3] = {0, 0, 0}, rootSide = 0;
  /// Periodic boxes (fmm::FmmTree::dipoles): expansions about the cube centres (fmm::fmmCentreOf); the lower bounds
  /// written here are then replaced by the caller (the signed sources' scale).
  bool dipoles = false;
};

/// The topology of method 'tree''s build (topo: begin, count, first child, children) and the nodes' first keys into
/// v's cellBegin, cellCount, childBegin, childCount and cube centres.
Status launchFmmTopology(const FmmTreeView& v, const uint4* topo, const std::uint64_t* nodeKeys, cudaStream_t s);
/// The nodes of level `level`: sums, centres and multipoles (their children's are done).
Status launchFmmUpwardLevel(const FmmTreeView& v, int level, cudaStream_t s);
/// The radii's squared maxima (v.r2), every level's centres done.
Status launchFmmRadius(const FmmTreeView& v, cudaStream_t s);
/// radius, critical, absMass, lowBound into v.mac.
Status launchFmmMac(const FmmTreeView& v, cudaStream_t s);

}  // namespace cuda
}  // namespace amrgrav
