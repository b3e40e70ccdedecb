/// \file validate.cpp
/// \brief Input validation: NaN/Inf, negative masses, non-positive sizes, cells outside the box, bad options.
#include "core/validate.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

namespace amrgrav {

std::string exactNumber(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

namespace {

Status badCell(std::size_t i, const char* what, double v) {
  return Status::error(ErrorCode::InvalidInput,
                       std::string("cell ") + std::to_string(i) + ": " + what + " (got " + exactNumber(v) + ")");
}

}  // namespace

Status validateOptions(const SolveOptions& o) {
  auto bad = [](const std::string& m) { return Status::error(ErrorCode::InvalidOption, m); };
  if (!(o.theta > 0.0 && o.theta <= 1.0))
    return bad("theta must be in (0, 1] (got " + exactNumber(o.theta) + "); above 1 a node could contain its own target");
  if (o.order != 1 && o.order != 2) return bad("order must be 1 (monopole) or 2 (quadrupole), got " + std::to_string(o.order));
  if (!(std::isfinite(o.G) && o.G > 0.0)) return bad("G must be finite and positive (got " + exactNumber(o.G) + ")");
  if (o.leafSize < 1 || o.leafSize > 256) return bad("leafSize must be in [1, 256], got " + std::to_string(o.leafSize));
  if (o.groupSize < 0 || o.groupSize > 256) return bad("groupSize must be in [1, 256] (or 0: automatic), got " + std::to_string(o.groupSize));
  if (o.threads < 0 || o.threads > 4096) return bad("threads must be in [0, 4096], got " + std::to_string(o.threads));
  if (o.anyPeriodic() && !o.hasBox)
    return bad("periodic boundaries need the box (its sides are the periods): pass the box of the domain");
  if (o.ewaldResolution < 4 || o.ewaldResolution > 512)
    return bad("ewaldResolution must be in [4, 512], got " + std::to_string(o.ewaldResolution));
  if (o.method != SolveMethod::Tree && o.method != SolveMethod::Fmm)
    return bad("method must be 'tree' or 'fmm', got " + std::to_string(int(o.method)));
  if (o.fmmOrder < 3 || o.fmmOrder > 7) return bad("fmmOrder must be in [3, 7], got " + std::to_string(o.fmmOrder));
  if (!(o.fmmTheta > 0.0 && o.fmmTheta < 1.0))
    return bad("fmmTheta must be in (0, 1) (got " + exactNumber(o.fmmTheta) + ")");
  if (!(o.fmmTolerance >= 0.0 && o.fmmTolerance < 1.0))
    return bad("fmmTolerance must be in [0, 1) (got " + exactNumber(o.fmmTolerance) + "); 0 = the opening angle alone");
  if (!(o.fmmAccelTolerance >= 0.0 && o.fmmAccelTolerance < 1.0))
    return bad("fmmAccelTolerance must be in [0, 1) (got " + exactNumber(o.fmmAccelTolerance) +
               "); 0 = the potential's rules alone");
  if (o.hasBox) {
    for (int d = 0; d < 3; ++d) {
      if (!(std::isfinite(o.boxLo[d]) && std::isfinite(o.boxHi[d]) && o.boxHi[d] > o.boxLo[d]))
        return bad("box must have finite bounds with hi > lo on every axis (axis " + std::to_string(d) + ": [" +
                   exactNumber(o.boxLo[d]) + ", " + exactNumber(o.boxHi[d]) + "])");
    }
  }
  return Status::success();
}

Status validateCells(const CellsView& c, const SolveOptions& o) {
  static const char* axis[3] = {"x", "y", "z"};
  double total = 0, hmin = INFINITY, lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (std::size_t i = 0; i < c.n; ++i) {
    const double p[3] = {c.x[i], c.y[i], c.z[i]};
    for (int d = 0; d < 3; ++d) {
      if (!std::isfinite(p[d])) return badCell(i, (std::string(axis[d]) + " is not finite").c_str(), p[d]);
      if (o.hasBox && (p[d] < o.boxLo[d] || p[d] > o.boxHi[d]))
        return badCell(i, (std::string(axis[d]) + " is outside the box [" + exactNumber(o.boxLo[d]) + ", " + exactNumber(o.boxHi[d]) +
                           "]").c_str(), p[d]);
    }
    if (!std::isfinite(c.mass[i])) return badCell(i, "mass is not finite", c.mass[i]);
    // signed masses are a density contrast, meaningful only where the mean density is removed (fully periodic)
    if (c.mass[i] < 0.0 && !o.signedSources()) {
      Status st = badCell(i, "mass is negative", c.mass[i]);
      return Status::error(ErrorCode::InvalidInput, st.message + "; signed masses (a density contrast) need a fully periodic box with densityContrast");
    }
    if (!(std::isfinite(c.size[i]) && c.size[i] > 0.0)) return badCell(i, "size must be finite and positive", c.size[i]);
    total += c.mass[i];
    hmin = std::min(hmin, c.size[i]);
    for (int d = 0; d < 3; ++d) {
      lo[d] = std::min(lo[d], p[d] - 0.5 * c.size[i]);
      hi[d] = std::max(hi[d], p[d] + 0.5 * c.size[i]);
    }
  }
  if (c.n == 0) return Status::success();
  double side = 0;
  for (int d = 0; d < 3; ++d) side = std::max(side, o.hasBox ? o.boxHi[d] - o.boxLo[d] : hi[d] - lo[d]);
  return checkMassRange(total, hmin, side, o);
}

Status checkMassRange(double total, double hmin, double side, const SolveOptions& o) {
  // The walk sums m/r (m/r^2 for accelerations) in lengths scaled so that the root cube's side is near 1 (within a
  // factor sqrt 2), and neighbours' centres are at least about one smallest cell apart; the result is then times
  // G / scale. Both must stay finite with a margin (16) for the self term and multipole terms, or the potential
  // would come out -Inf with no error.
  const double margin = 16.0 * (1.0 + kLatticeSelf);
  const double hs = hmin / (side > 0 ? 2.0 * side : 1.0);  // the smallest cell in scaled lengths, at least
  const double sums = margin * total / hs, phi = margin * o.G * total / hmin;
  const bool accOk = !o.accelerations || (std::isfinite(sums / hs) && std::isfinite(phi / hmin));
  if (std::isfinite(total) && std::isfinite(sums) && std::isfinite(phi) && accOk) return Status::success();
  return Status::error(ErrorCode::InvalidInput,
                       "the masses are too large for double precision: total mass " + exactNumber(total) + " g over cells as "
                       "small as " + exactNumber(hmin) + " cm (G M / h = " + exactNumber(o.G * total / hmin) + ") would overflow the " +
                       (accOk ? "potential" : "accelerations") + "; use units with smaller masses (any unit system "
                       "works if G matches it)");
}

Status coincidentCellsError(const CellsView& c, std::size_t b) {
  for (std::size_t a = 0; a < b; ++a)
    if (c.x[a] == c.x[b] && c.y[a] == c.y[b] && c.z[a] == c.z[b])
      return Status::error(ErrorCode::InvalidInput,
                           "cells " + std::to_string(a) + " and " + std::to_string(b) + " have the same centre (" +
                               exactNumber(c.x[b]) + ", " + exactNumber(c.y[b]) + ", " + exactNumber(c.z[b]) +
                               "): coincident cells would ignore each other's mass; merge them into one cell");
  return Status::error(ErrorCode::Internal, "cell " + std::to_string(b) + " was flagged as coincident, but no earlier "
                                            "cell has its centre");
}

Status checkCoincidentCells(const CellsView& c, const std::uint64_t* k, const std::uint32_t* order) {
  for (std::size_t i = 1; i < c.n; ++i) {
    if (k[i] != k[i - 1]) continue;  // the common case: one cell per key
    const std::uint32_t b = order[i];
    for (std::size_t j = i, back = 0; j-- > 0 && back < kCoincidentLookBack && k[j] == k[i]; ++back) {
      const std::uint32_t a = order[j];
      if (c.x[a] == c.x[b] && c.y[a] == c.y[b] && c.z[a] == c.z[b]) return coincidentCellsError(c, b);
    }
  }
  return Status::success();
}

Status validateProbes(const PointsView& p, const SolveOptions& o) {
  static const char* axis[3] = {"x", "y", "z"};
  if (p.n > 0 && (!p.x || !p.y || !p.z)) return Status::error(ErrorCode::InvalidInput, "probes: x, y and z are needed");
  const bool periodic = o.anyPeriodic();
  for (std::size_t i = 0; i < p.n; ++i) {
    const double v[3] = {p.x[i], p.y[i], p.z[i]};
    for (int d = 0; d < 3; ++d) {
      if (!std::isfinite(v[d]))
        return Status::error(ErrorCode::InvalidInput, "probe " + std::to_string(i) + ": " + axis[d] +
                                                          " is not finite (got " + exactNumber(v[d]) + ")");
      // periodic axes wrap; the isolated axes of a periodic box stay in it (the Ewald table's range)
      if (periodic && !o.periodic[d] && (v[d] < o.boxLo[d] || v[d] > o.boxHi[d]))
        return Status::error(ErrorCode::InvalidInput,
                             "probe " + std::to_string(i) + ": " + axis[d] + " is outside the box [" + exactNumber(o.boxLo[d]) +
                                 ", " + exactNumber(o.boxHi[d]) + "] along an isolated axis of a periodic box (got " +
                                 exactNumber(v[d]) + "); the Ewald correction covers separations within the box only");
    }
  }
  return Status::success();
}

Status validateTargets(const std::uint32_t* t, std::size_t count, std::size_t n) {
  if (count > 0 && !t) return Status::error(ErrorCode::InvalidInput, "targets: the index array is NULL");
  std::vector<std::uint32_t> firstAt(n, 0xffffffffu);  // each cell's position in the list (all ones: not yet)
  for (std::size_t k = 0; k < count; ++k) {
    if (t[k] >= n)
      return Status::error(ErrorCode::InvalidInput, "targets[" + std::to_string(k) + "] = " + std::to_string(t[k]) +
                                                        " is not a cell index (there are " + std::to_string(n) +
                                                        " cells)");
    if (firstAt[t[k]] != 0xffffffffu)
      return Status::error(ErrorCode::InvalidInput, "targets[" + std::to_string(k) + "] = " + std::to_string(t[k]) +
                                                        " repeats targets[" + std::to_string(firstAt[t[k]]) +
                                                        "]: each cell at most once");
    firstAt[t[k]] = std::uint32_t(k);
  }
  return Status::success();
}

Status validateSystem(const SystemView& s, const SolveOptions& opt) {
  AG_TRY(validateCells(s.cells, opt));
  AG_TRY(validateProbes(s.probes, opt));
  if (s.hasTargets()) AG_TRY(validateTargets(s.targets, s.targetCount, s.cells.n));
  return Status::success();
}

Status validateDirectOptions(const SolveOptions& opt) {
  if (opt.anyPeriodic())
    return Status::error(ErrorCode::InvalidOption,
                         "direct summation is for isolated boundaries; for periodic ones use the tree at small theta "
                         "(validation/ewaldReference.ts holds an independent Ewald sum)");
  return Status::success();
}

}  // namespace amrgrav
