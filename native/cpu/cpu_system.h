/// \file cpu_system.h
/// \brief The CPU backend's system solve (core/system.h): the cell solve's steps (cpu_backend.cpp), the walk of
/// only the groups that hold targets when a subset is given, and the probes' own groups walked against the cells'
/// tree with the same MAC and kernels.
#pragma once
#include "core/status.h"
#include "core/system.h"
#include "core/types.h"

namespace amrgrav {

/// direct: O(N^2) sums over the cells at every target (isolated boxes), the reference for the tree.
Status cpuSolveSystem(const SystemView& system, const SolveOptions& opt, bool direct, SystemResult& out);

}  // namespace amrgrav
