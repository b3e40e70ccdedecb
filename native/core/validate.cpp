/// \file validate.cpp
/// \brief Input validation: NaN/Inf, negative masses, non-positive sizes, cells outside the box, bad options.
#include "core/validate.h"

#include <cmath>
#include <sstream>

namespace amrgrav {
namespace {

std::string fmt(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

Status badCell(std::size_t i, const char* what, double v) {
  return Status::error(ErrorCode::InvalidInput,
                       std::string("cell ") + std::to_string(i) + ": " + what + " (got " + fmt(v) + ")");
}

}  // namespace

Status validateOptions(const SolveOptions& o) {
  auto bad = [](const std::string& m) { return Status::error(ErrorCode::InvalidOption, m); };
  if (!(o.theta > 0.0 && o.theta <= 1.0))
    return bad("theta must be in (0, 1] (got " + fmt(o.theta) + "); above 1 a node could contain its own target");
  if (o.order != 1 && o.order != 2) return bad("order must be 1 (monopole) or 2 (quadrupole), got " + std::to_string(o.order));
  if (!(std::isfinite(o.G) && o.G > 0.0)) return bad("G must be finite and positive (got " + fmt(o.G) + ")");
  if (o.leafSize < 1 || o.leafSize > 256) return bad("leafSize must be in [1, 256], got " + std::to_string(o.leafSize));
  if (o.groupSize < 1 || o.groupSize > 256) return bad("groupSize must be in [1, 256], got " + std::to_string(o.groupSize));
  if (o.threads < 0 || o.threads > 4096) return bad("threads must be in [0, 4096], got " + std::to_string(o.threads));
  if (o.anyPeriodic() && !o.hasBox)
    return bad("periodic boundaries need the box (its sides are the periods): pass the box of the domain");
  if (o.ewaldResolution < 4 || o.ewaldResolution > 512)
    return bad("ewaldResolution must be in [4, 512], got " + std::to_string(o.ewaldResolution));
  if (o.hasBox) {
    for (int d = 0; d < 3; ++d) {
      if (!(std::isfinite(o.boxLo[d]) && std::isfinite(o.boxHi[d]) && o.boxHi[d] > o.boxLo[d]))
        return bad("box must have finite bounds with hi > lo on every axis (axis " + std::to_string(d) + ": [" +
                   fmt(o.boxLo[d]) + ", " + fmt(o.boxHi[d]) + "])");
    }
  }
  return Status::success();
}

Status validateCells(const CellsView& c, const SolveOptions& o) {
  static const char* axis[3] = {"x", "y", "z"};
  for (std::size_t i = 0; i < c.n; ++i) {
    const double p[3] = {c.x[i], c.y[i], c.z[i]};
    for (int d = 0; d < 3; ++d) {
      if (!std::isfinite(p[d])) return badCell(i, (std::string(axis[d]) + " is not finite").c_str(), p[d]);
      if (o.hasBox && (p[d] < o.boxLo[d] || p[d] > o.boxHi[d]))
        return badCell(i, (std::string(axis[d]) + " is outside the box [" + fmt(o.boxLo[d]) + ", " + fmt(o.boxHi[d]) +
                           "]").c_str(), p[d]);
    }
    if (!std::isfinite(c.mass[i])) return badCell(i, "mass is not finite", c.mass[i]);
    // signed masses are a density contrast, meaningful only where the mean density is removed (fully periodic)
    if (c.mass[i] < 0.0 && !o.signedSources()) {
      Status st = badCell(i, "mass is negative", c.mass[i]);
      return Status::error(ErrorCode::InvalidInput, st.message + "; signed masses (a density contrast) need a fully periodic box with densityContrast");
    }
    if (!(std::isfinite(c.size[i]) && c.size[i] > 0.0)) return badCell(i, "size must be finite and positive", c.size[i]);
  }
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
