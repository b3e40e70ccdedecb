/// \file fmm_periodic_phase.h
/// \brief Method 'fmm' on the CUDA backend in periodic boxes (fully periodic, sheets, lines; docs/fmm-design.md,
/// "Periodic boxes on the GPU"): the CPU backend's host steps for such boxes (the key sort, the density contrast, the
/// tree with its dipole terms about geometric centres, the interaction lists with their image shifts, the near lists
/// and tiles with the shifts, and the far images' pass, fmm/far_images.h, whose local coefficients of the frontier
/// cubes are uploaded as L's start), the device's evaluation of those lists with the shifts (cuda/kernels_fmm.h: the
/// shifted P2P and M2L, M2L with the dipole terms, L2L, L2P), the sums down and finished by the CPU backend's finish
/// (tree/finish.h finishSolve: G, the periodic self term, the mean potential). With CudaOptions::fmmDevicePeriodic
/// the sort (with fmmDeviceSort; the density contrast then applied to the device's sorted masses too) and the lists
/// with their image shifts (with fmmDeviceLists; cuda/fmm_lists_phase.h, the M2L CSR and its shifts kept there, the
/// P2P pairs with shifts down) are the device's, and with fmmDeviceTree too the tree with its upward pass
/// (periodicTreeOnDevice; the signed scale the host's); with fmmDevicePeriodicTiles too the near lists and tiles
/// with their shifts (cuda/fmm_tiles_phase.h from the device's pairs with their shifts: the host's arrays, so the
/// same bits; the pairs stay there); the far images stay the host's. With fmmDevicePeriodicFinish too (the default)
/// the host never holds the sorted cells: the sort gathers nothing, the density contrast is the device's alone, the
/// signed scale is found from the device's cells (fmm_scale_phase.h, the host's bits) and the finish is the isolated
/// path's on the device (kernel_finish.cu; the mean potential from the results), unless the tree has leaves above the
/// far images' frontier (their cells binned by the far pass on the host: the gathering path then). Internal to
/// native/cuda.
#pragma once
#include <cstdint>

#include "core/status.h"
#include "core/types.h"
#include "cuda/device_buffers.h"
#include "cuda/fmm_scale_phase.h"
#include "cuda/fmm_tree_phase.h"
#include "fmm/fmm_tree.h"

namespace amrgrav {
namespace cuda {

struct DeviceState;

/// The periodic FMM's own device arrays (grow-only, kept between solves; the rest are FmmBuffers'): the image
/// shifts of the M2L sources, of the tiles' steps and of the irregular leaves' near sources, in one buffer.
struct FmmPeriodicBuffers {
  DeviceBuffer<std::uint8_t> shifts;
  SignedScaleBuffers scale;  ///< the signed scale from the device's cells (fmm_scale_phase.h)
  std::size_t bytes() const { return shifts.bytes() + scale.bytes(); }
  void release() {
    shifts.release();
    scale.release();
  }
};

/// The density contrast of a fully periodic box (with opt.densityContrast; else nothing): the total of the caller's
/// masses (core/fixed_sum.h, in the caller's order) taken off the host's sorted cells when it has them
/// (applyDensityContrast) and, after the device's sort (deviceSort), off its sorted masses by the same rule; st's
/// meanDensity (contrastDensity's, the same value either way) and densityContrast.
Status periodicContrast(DeviceState& ds, const CellsView& cells, const SolveOptions& opt, int threads,
                        bool deviceSort, SortedCells& sorted, SolveStats& st);

/// After the device sort with its topology (and periodicContrast): the tree and upward pass on the device with
/// dipole terms (fmm_tree_phase.h), its topology, centres and MAC quantities down into `tree` (L zeroed, no M), the
/// signed scale into every lowBound, up too, and the multipole norms made on the device (ds.fmm.lists.norms), as
/// buildFmmTree makes them. Synchronous. The scale: fmm::signedSourceScale over the host's sorted cells where
/// `sorted` holds them (the sort's gather), else from the device's cells (fmm_scale_phase.h: the same bits); but a
/// tree with leaves shallower than the far images' frontier (whose cells the far pass reads) gets the host's sorted
/// cells here first (the device sort's order down, gathered and contrasted as the gathering sort does), so `sorted`
/// then holds them. topOnly (the path without host cells, fmmDevicePeriodicFinish): the nodes below the far
/// frontier's level come down with their levels, child and cell counts alone (downloadFmmTree's topNodes), all of
/// them after all where leaves lie above the frontier.
Status periodicTreeOnDevice(DeviceState& ds, const CellsView& cells, const SolveOptions& opt, SortedCells& sorted,
                            int threads, DeviceFmmTree& dtree, fmm::FmmTree& tree, bool topOnly = false);

/// The solve of cells.n > 0 cells with opt.method == SolveMethod::Fmm and a periodic axis, called by
/// solveFmmOnDevice: results into out.targets(), the phases' times into out.stats and ds.stats as the isolated
/// path's (keys: the sort, host's or device's, and the density contrast; moments: the tree; build: the lists, the
/// near field's tiles and the far images' pass; upload; walk: the device's evaluation; download: the sums down and
/// finished, or without a host copy of the sorted cells finished on the device and the results down).
Status solvePeriodicFmmOnDevice(DeviceState& ds, const CellsView& cells, const SolveOptions& opt, SolveResult& out);

}  // namespace cuda
}  // namespace amrgrav
