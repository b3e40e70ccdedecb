/// \file ewald.h
/// \brief An Ewald table for the front ends (binding/ewald_binding.cc): the table of a box shape (from memory, the
/// disk cache or built), its provenance, and optionally the table's and the exact sums' values at given points,
/// what the tests, the validation and the benchmark measure the table with. Plain C++; the work may run on any
/// thread (building a table takes about a second at most).
#pragma once
#include <string>
#include <vector>

#include "core/status.h"
#include "core/types.h"

namespace amrgrav {
namespace api {

/// The default table resolution (ewald/table.h kEwaldDefaultResolution).
int ewaldDefaultResolution();

struct EwaldTableRequest {
  double L[3] = {0, 0, 0};                ///< the box's sides
  bool periodic[3] = {false, false, false};
  int resolution = ewaldDefaultResolution();
  int threads = 0;                        ///< 0: every hardware thread
  bool memoryCache = true;                ///< false: not from (nor into) the process's table cache
  bool gridCheck = false;                 ///< compare the stored coefficients at about gridPoints grid points ...
  double gridPoints = 0;                  ///< ... with the exact sums (gridMaxDiff, gridMaxAbs)
  bool hasPoints = false;                 ///< look the table up at `points` (x y z per point): lookup
  std::vector<double> points;
  bool exact = false;                     ///< ... and the exact sums there: exact
};

struct EwaldTableReport {
  int n[3] = {0, 0, 0};
  double h[3] = {0, 0, 0};
  double points = 0;
  double bytes = 0;
  double secondsBuild = 0, secondsLoad = 0;
  std::string source;                     ///< "memory", "disk" or "built"
  std::string cachePath, cacheNote;
  bool hasGrid = false;
  std::vector<double> gridMaxDiff, gridMaxAbs;  ///< per coefficient
  bool hasLookup = false;
  std::vector<double> lookup;             ///< per point: C, dC/dx, dC/dy, dC/dz from the table
  bool hasExact = false;
  std::vector<double> exact;              ///< per point: the 20 exact coefficients
};

/// Checks the box (InvalidOption), gets the table and fills the report.
Status ewaldTable(const EwaldTableRequest& request, EwaldTableReport& report);

/// The periodic box's shape as the options give it (aspect ratio, the table's size: ewald/table.h ewaldGrid),
/// checked without building anything: InvalidOption naming the problem. Success for boxes with no periodic axis.
Status checkPeriodicBox(const SolveOptions& opt);

}  // namespace api
}  // namespace amrgrav
