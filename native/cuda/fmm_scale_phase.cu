/// \file fmm_scale_phase.cu
/// \brief The signed sources' scale from the device's sorted cells (fmm_scale_phase.h).
#include <algorithm>
#include <vector>

#include "cuda/check.h"
#include "cuda/device_state.h"
#include "cuda/fmm_phase.h"
#include "cuda/fmm_phase_parts.h"
#include "cuda/fmm_scale_phase.h"
#include "cuda/kernels_fmm_scale.h"
#include "cuda/memory_plan.h"
#include "fmm/signed_scale.h"

namespace amrgrav {
namespace cuda {

Status signedScaleOnDevice(DeviceState& ds, const fmm::FmmTree& tree, int threads, double& scale,
                           SignedScaleCounts* counts) {
  FmmBuffers& b = ds.fmm;
  SignedScaleBuffers& sb = b.periodic.scale;
  const Octree& o = tree.topo;
  const std::size_t nodes = o.nodeCount();
  if (nodes == 0) return Status::error(ErrorCode::Internal, "CUDA backend: the signed scale of an empty tree");
  ScaleTreeView v;
  v.nodes = unsigned(nodes);
  v.cellBegin = b.topo.get();
  v.cellCount = b.topo.get() + nodes;
  v.childCount = b.childCount.get();
  v.x = ds.sortedCells.x;
  v.y = ds.sortedCells.y;
  v.z = ds.sortedCells.z;
  v.size = ds.sortedSize;
  v.mass = ds.sortedCells.mass;
  // the leaves' estimates, margins, h and mass hashes; the level's net masses
  AG_TRY(sb.perNode.reserve(3 * nodes, "the signed scale's leaf estimates"));
  AG_TRY(sb.hash.reserve(nodes, "the signed scale's leaf estimates"));
  AG_TRY(launchLeafNearEstimates(v, sb.perNode.get(), sb.hash.get(), ds.stream));
  const int lev = fmm::signedScaleLevel(tree);
  if (lev != 2)  // the caller takes this path without leaves above the far frontier (level 2 or deeper)
    return Status::error(ErrorCode::Internal, "CUDA backend: the device's signed scale needs a tree of level-2 nodes");
  const std::size_t first = lev >= 0 ? tree.levelBegin[lev] : 0;
  const std::size_t count = lev >= 0 ? tree.levelBegin[lev + 1] - first : 0;
  AG_TRY(sb.net.reserve(std::max<std::size_t>(count, 1), "the signed scale's net masses"));
  AG_TRY(launchLevelNetMasses(v, unsigned(first), unsigned(count), sb.net.get(), ds.stream));
  // down in one batch through the pinned staging (after the kernels: the same stream), as the tree's download
  std::vector<double> per(3 * nodes), net(count);
  std::vector<std::uint64_t> hash(nodes);
  std::vector<Transfer> t = {{per.data(), sb.perNode.get(), per.size() * sizeof(double)},
                             {hash.data(), sb.hash.get(), hash.size() * sizeof(std::uint64_t)},
                             {net.data(), sb.net.get(), net.size() * sizeof(double)}};
  AG_TRY(copyOut(ds, t.data(), int(t.size()), ds.stream));

  // the candidates (every leaf whose estimate may reach the host's maximum); the tied ones compared with the leaf
  // that is to stand for them, those that differ added; their cells gathered there and down, the host's own
  // leafNearOf over them; the coarse field of the net masses
  fmm::ScaleCandidates c = fmm::leafNearCandidates(tree, per.data(), hash.data());
  const std::size_t pairs = c.member.size(), before = c.leaves.size();
  if (pairs > 0) {
    std::vector<std::uint32_t> up(c.member);
    up.insert(up.end(), c.rep.begin(), c.rep.end());
    AG_TRY(fmmparts::put(ds, sb.pairs, up, "the signed scale's tied leaves"));
    AG_TRY(sb.same.reserve(pairs, "the signed scale's tied leaves"));
    AG_TRY(launchSameLeafMasses(v, sb.pairs.get(), sb.pairs.get() + pairs, unsigned(pairs), sb.same.get(),
                                ds.stream));
    AG_CUDA_TRY(cudaStreamSynchronize(ds.stream));  // `up` dies here
    std::vector<std::uint8_t> same;
    AG_TRY(fmmparts::down(static_cast<const std::uint8_t*>(sb.same.get()), pairs, same));
    fmm::addUnverified(tree, same, c);
  }
  const std::size_t nc = c.leaves.size(), total = c.total;
  std::vector<double> cells;
  if (nc > 0) {
    std::vector<std::uint32_t> up(c.leaves);
    up.insert(up.end(), c.offset.begin(), c.offset.end());
    AG_TRY(fmmparts::put(ds, sb.leaves, up, "the signed scale's candidate leaves"));
    AG_TRY(sb.cells.reserve(5 * total, "the signed scale's candidate cells"));
    AG_TRY(launchGatherLeafCells(v, sb.leaves.get(), sb.leaves.get() + nc, unsigned(nc), total, sb.cells.get(),
                                 ds.stream));
    AG_CUDA_TRY(cudaStreamSynchronize(ds.stream));  // `up` dies here
    AG_TRY(fmmparts::down(static_cast<const double*>(sb.cells.get()), 5 * total, cells));
  }
  scale = fmm::signedScaleOf(fmm::candidatesNearMax(cells, c, threads), fmm::coarseFieldOfNets(tree, net));
  if (counts) {
    counts->candidates = nc;
    counts->candidateCells = total;
    counts->tied = pairs - (nc - before);  // the members found equal to their rep
  }
  return Status::success();
}

}  // namespace cuda
}  // namespace amrgrav
