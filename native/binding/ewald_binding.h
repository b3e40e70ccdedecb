/// \file ewald_binding.h
/// \brief The addon's ewaldTable export (see ewald_binding.cc).
#pragma once
#include <napi.h>

namespace amrgrav {

/// ewaldTable({L, periodic, resolution?, threads?, memoryCache?, at?: Float64Array (x y z per point), exact?})
/// -> {n, h, points, bytes, secondsBuild, secondsLoad, source, cachePath, cacheNote, lookup?: (C gx gy gz) per
/// point, exact?: 20 coefficients per point}. Synchronous (a table takes about a second at most to build).
Napi::Value ewaldTable(const Napi::CallbackInfo& info);

}  // namespace amrgrav
