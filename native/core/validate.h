/// \file validate.h
/// \brief Checks of cells and options before any work, with messages that name the offending cell and value.
#pragma once
#include "core/status.h"
#include "core/types.h"

namespace amrgrav {

Status validateOptions(const SolveOptions& opt);
/// Direct summation (both backends) is for isolated boundaries.
Status validateDirectOptions(const SolveOptions& opt);
Status validateCells(const CellsView& cells, const SolveOptions& opt);

}  // namespace amrgrav
