/// \file finish.h
/// \brief The last step of a CPU solve, shared by the single-process and the distributed solve.
#pragma once
#include <vector>

#include "tree/tree.h"
#include "core/types.h"

namespace amrgrav {

/// Scales the walk's sums (in scaled lengths) by G and the length scale, adds the cube self term, and scatters
/// from sorted to the caller's order, into out.targets() (the caller's arrays when out.into is set). `g` is null
/// or three arrays of acceleration sums. Sets stats.meanPotential (fully periodic boxes; this process's cells).
void finishSolve(const SortedCells& c, const SolveOptions& opt, const std::vector<double>& phi,
                 const std::vector<double>* g, SolveResult& out);

}  // namespace amrgrav
