/// \file ewald_phase.h
/// \brief The CUDA backend's Ewald phase: a periodic solve's table (ewald/walk_setup.h: memory, disk cache or build,
/// as the CPU backend gets it) and its float copy on the device.
#pragma once
#include "core/status.h"
#include "core/types.h"

namespace amrgrav {
namespace cuda {

struct DeviceState;

/// The Ewald table for this box (ewald/walk_setup.h: memory, disk cache or build) and its float copy on the
/// device, uploaded once per table; fills the state's ewaldView in the walk's scaled lengths. The table's
/// provenance and time into `st`.
Status prepareEwald(DeviceState& ds, const SolveOptions& opt, double scale, SolveStats& st);

}  // namespace cuda
}  // namespace amrgrav
