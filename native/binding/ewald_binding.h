/// \file ewald_binding.h
/// \brief The addon's ewaldTable exports (see ewald_binding.cc).
#pragma once
#include <napi.h>

namespace amrgrav {

/// ewaldTable({L, periodic, resolution?, threads?, memoryCache?, at?: Float64Array (x y z per point), exact?,
/// gridCheck?}) -> {n, h, points, bytes, secondsBuild, secondsLoad, source, cachePath, cacheNote, lookup?: (C gx gy
/// gz) per point, exact?: 20 coefficients per point, gridMaxDiff?, gridMaxAbs?}. Synchronous: builds on the JS
/// thread (a table takes about a second at most to build); throws an Error with .code on bad input.
Napi::Value ewaldTable(const Napi::CallbackInfo& info);

/// ewaldTableAsync(request) -> Promise of ewaldTable's object: the same request and result, the table fetched or
/// built on a worker thread (the event loop goes on meanwhile); rejects with the Error ewaldTable would throw.
Napi::Value ewaldTableAsync(const Napi::CallbackInfo& info);

}  // namespace amrgrav
