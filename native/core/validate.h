/// \file validate.h
/// \brief Checks of cells and options before any work, with messages that name the offending cell and value.
#pragma once
#include <string>

#include "core/status.h"
#include "core/system.h"
#include "core/types.h"

namespace amrgrav {

/// A number as the checks' messages write it: 17 significant digits (the value exactly as the caller passed it).
std::string exactNumber(double v);

Status validateOptions(const SolveOptions& opt);
/// Direct summation (both backends) is for isolated boundaries.
Status validateDirectOptions(const SolveOptions& opt);
/// Also rejects masses whose potential would overflow (checkMassRange).
Status validateCells(const CellsView& cells, const SolveOptions& opt);

/// Probes (core/system.h): finite coordinates; along the isolated axes of a partly periodic box, inside the box.
Status validateProbes(const PointsView& probes, const SolveOptions& opt);
/// A subset of n cells: every index below n, none twice (the error names the position in the list and the index).
Status validateTargets(const std::uint32_t* targets, std::size_t count, std::size_t n);
/// validateCells, validateProbes and validateTargets of a system (core/system.h).
Status validateSystem(const SystemView& s, const SolveOptions& opt);

/// InvalidInput when the total mass over cells as small as `hmin` (in a domain of extent `side`) would overflow
/// the potential's sums or, with accelerations, theirs: masses >= ~1e300 in cm-sized cells.
Status checkMassRange(double total, double hmin, double side, const SolveOptions& opt);

/// How far back in its run of equal Morton keys each sorted cell looks for one at the same centre (both backends,
/// so that they report the same pair). Distinct centres share a key only within 2^-21 of the root cube's side;
/// a coincident pair further apart than this inside one such run goes unreported (the README says so).
constexpr std::size_t kCoincidentLookBack = 256;

/// The error for cell `b` (caller's index), which shares its centre with an earlier cell: names the first of
/// those and b. InvalidInput (Internal if no earlier cell has b's centre: the caller's bug).
Status coincidentCellsError(const CellsView& cells, std::size_t b);

/// After the key sort (sortedKeys[i], order[i] = caller's index): the first sorted cell i that has an earlier cell
/// at the same centre within its run of equal keys (at most kCoincidentLookBack back): coincidentCellsError.
Status checkCoincidentCells(const CellsView& cells, const std::uint64_t* sortedKeys, const std::uint32_t* order);

}  // namespace amrgrav
