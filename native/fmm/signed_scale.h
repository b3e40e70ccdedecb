/// \file signed_scale.h
/// \brief The host's side of the signed sources' scale found from the device's sorted cells (fmm/signed_scale_k.h;
/// the CUDA backend's cuda/fmm_scale_phase.h): the candidate leaves from the leaves' estimates and margins, the
/// host's leafNearOf over the candidates' cells, and a host emulation of the device's part (its rules, its order of
/// work) for native/tests/fmm_signed_scale.cpp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fmm/fmm_tree.h"
#include "tree/tree.h"

namespace amrgrav {
namespace fmm {

/// The leaves that may hold the host's largest leaf near max (leafNearCandidate), in node order: those whose cells
/// come down (leaves, with where their cells go in the gathered arrays: offset, count; total cells), and the tied
/// ones that another stands for once the device has found their masses equal to its (member, rep: regular leaves of
/// one h whose masses hash alike; rep the group's first, which comes down).
struct ScaleCandidates {
  std::vector<std::uint32_t> leaves, offset, count;
  std::size_t total = 0;
  std::vector<std::uint32_t> member, rep;
  void add(const FmmTree& tree, std::uint32_t leaf);
};

/// From each node's estimate, margin and h (perNode: three arrays of nodes; h the cell size of a regular leaf, 0
/// for the others and for internal nodes), each regular leaf's leafMassHash and the tree's topology.
ScaleCandidates leafNearCandidates(const FmmTree& tree, const double* perNode, const std::uint64_t* hash);

/// The members whose masses are not their rep's (same[k] 0 for pair k) come down themselves.
void addUnverified(const FmmTree& tree, const std::vector<std::uint8_t>& same, ScaleCandidates& c);

/// The host's leaf near max over the candidates (cells: x, y, z, size, mass of c.total cells each, the candidates'
/// cells at their offsets): each leaf regular or not by regularLeaf's rule over its own cells (findRegularLeaves'
/// rule), a regular one by the self table (leafNearMax's P2pTables::find), leafNearOf; their maximum, at least 0 (as
/// leafNearMax). Equal to leafNearMax's value when the candidates include every leaf that reaches it.
double candidatesNearMax(const std::vector<double>& cells, const ScaleCandidates& c, int threads);

/// The device's part emulated on the host (fmm/signed_scale_k.h's rules, the kernels' order of work: the leaves'
/// estimates and margins, the level's net masses a warp at a time, the candidates gathered) and the host's part
/// (candidatesNearMax, coarseFieldOfNets, signedScaleOf). perNode, net, candidates: what the device would have made
/// (for the test's checks), when not null.
double emulateDeviceSignedScale(const SortedCells& cells, const FmmTree& tree, int threads,
                                std::vector<double>* perNode = nullptr, std::vector<double>* net = nullptr,
                                ScaleCandidates* candidates = nullptr);

/// The levelNetKernel's chain of one node emulated (cuda/kernel_fmm_scale.cu: a warp loads 4 x 32 masses, every lane
/// then adds them in cell order from the shuffles), for the test to compare with netMassOf.
double emulateWarpNetMass(const double* mass, std::uint32_t begin, std::uint32_t count);

}  // namespace fmm
}  // namespace amrgrav
