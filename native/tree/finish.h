/// \file finish.h
/// \brief The last step of a solve whose sums are on the host in sorted order: the CPU backend's (one process and
/// distributed) and the CUDA backend's FMM (cuda/fmm_phase.cu).
#pragma once
#include <vector>

#include "core/system.h"
#include "tree/tree.h"
#include "core/types.h"

namespace amrgrav {

/// Scales the walk's sums (in scaled lengths) by G and the length scale, adds the cube self term, and scatters
/// from sorted to the caller's order, into out.targets() (the caller's arrays when out.into is set). `g` is null
/// or three arrays of acceleration sums. Sets stats.meanPotential (fully periodic boxes; this process's cells).
void finishSolve(const SortedCells& c, const SolveOptions& opt, const std::vector<double>& phi,
                 const std::vector<double>* g, SolveResult& out, int threads = 1);

/// finishSolve at a subset of the cells: target k (caller's index targets[k], at sorted position
/// sortedOf[targets[k]]) gets exactly finishSolve's value, written at k of out.targets(count). Returns the
/// volume-weighted mean potential over these cells (fully periodic boxes; 0 otherwise).
double finishTargets(const SortedCells& c, const SolveOptions& opt, const std::vector<double>& phi,
                     const std::vector<double>* g, const std::uint32_t* targets, std::size_t count,
                     const std::vector<std::uint32_t>& sortedOf, PointResults& out);

/// Target-only points (probes, sorted by tree/system_points.h): scaled as finishSolve scales the cells', no self
/// term, scattered to the points' order.
void finishPoints(const SortedCells& p, const SolveOptions& opt, const std::vector<double>& phi,
                  const std::vector<double>* g, PointResults& out);

}  // namespace amrgrav
