/// \file table.h
/// \brief The tabulated Ewald correction of one box shape: build (threaded), cache on disk, hand out a view.
/// A table is made for a normalised box (longest side 1), so one table serves every box of the same shape and
/// periodic axes; the view rescales to the caller's lengths.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "ewald/lookup_k.h"
#include "ewald/sums.h"
#include "core/status.h"

namespace amrgrav {

/// Default points per half period along the shortest periodic side (see bench/RESULTS.md for the error).
constexpr int kEwaldDefaultResolution = 28;
/// Reach of the table along a periodic axis, in periods.
constexpr double kEwaldReach = 0.5625;
/// Largest table accepted, in grid points (x kEwaldCoefs doubles each).
constexpr std::size_t kEwaldMaxPoints = std::size_t(1) << 21;

struct EwaldTableSpec {
  EwaldGeometry box;  ///< normalised: longest side exactly 1
  int resolution = kEwaldDefaultResolution;
};

/// The spec of a box with sides L and the given periodic axes (sides normalised by the longest).
EwaldTableSpec ewaldSpecFor(const double L[3], const bool periodic[3], int resolution);

/// Stable text key of a spec (file name of the cache): periodic axes, resolution and the exact side ratios.
std::string ewaldSpecKey(const EwaldTableSpec& spec);

struct EwaldTable {
  EwaldTableSpec spec;
  int n[3] = {0, 0, 0};    ///< intervals per axis (points = n + 1)
  double h[3] = {0, 0, 0};
  std::vector<double> coef;  ///< kEwaldCoefs per point, x fastest
  // how it was obtained
  double secondsBuild = 0;   ///< 0 when loaded
  double secondsLoad = 0;    ///< disk read and checks (0 when built)
  bool fromCache = false;    ///< read from the disk cache
  std::string cachePath;     ///< the cache file ('' when no cache directory is usable)
  std::string cacheNote;     ///< why the cache was not used or not written, if so
  std::string cacheWriteError;  ///< why a built table could not be cached on disk ('' when it was, or was read)

  std::size_t points() const { return std::size_t(n[0] + 1) * (n[1] + 1) * (n[2] + 1); }
  /// A view for a caller whose box has longest side `unitLength` and periods `period` (0 = isolated).
  EwaldTableView view(double unitLength, const double period[3]) const;
};

/// Grid of a spec: the spacing is (shortest periodic side)/(2 resolution); periodic axes span [0, kEwaldReach L]
/// (beyond the half period: see physics/image_k.h periodicNodeImage), isolated axes [0, L] (separations along
/// them reach the full side).
Status ewaldGrid(const EwaldTableSpec& spec, int n[3], double h[3]);

/// Computes every point's coefficients from the exact sums on `threads` threads.
Status buildEwaldTable(const EwaldTableSpec& spec, int threads, EwaldTable& out);

/// The table for a spec: from this process's memory (if useMemory), else the disk cache (checked: header,
/// size, checksum), else built and written to the cache. Never fails because of the cache. `source` (optional)
/// receives 1 (memory), 2 (disk) or 3 (built).
Status acquireEwaldTable(const EwaldTableSpec& spec, int threads, bool useMemory,
                         std::shared_ptr<const EwaldTable>& out, int* source = nullptr);

/// The cache directory: $AMRGRAV_CACHE_DIR, else $XDG_CACHE_HOME/amrgrav, else $HOME/.cache/amrgrav ('' if none).
std::string ewaldCacheDir();

/// Reads a cached table; false (with the reason) when missing, truncated, of another spec, or corrupt.
bool readEwaldTableFile(const std::string& path, const EwaldTableSpec& spec, EwaldTable& out, std::string& why);
/// Writes atomically (temporary file, then rename); false with the reason on failure.
bool writeEwaldTableFile(const std::string& path, const EwaldTable& t, std::string& why);

}  // namespace amrgrav
