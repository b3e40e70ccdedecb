/// \file ewald_binding.cc
/// \brief ewaldTable(spec): the Ewald table of a box shape, its provenance, and (optionally) the table's and the
/// exact sums' values at given points: what the tests, the validation and the benchmark measure the table with.
#include "binding/ewald_binding.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <thread>

#include "binding/convert.h"
#include "ewald/sums.h"
#include "ewald/table.h"

namespace amrgrav {
namespace {

Status readTriple(const Napi::Object& o, const char* key, double out[3], bool* flags) {
  Napi::Value v = o.Get(key);
  if (!v.IsArray() || v.As<Napi::Array>().Length() != 3)
    return Status::error(ErrorCode::InvalidOption, std::string("ewaldTable: '") + key + "' must be an array of 3");
  for (uint32_t d = 0; d < 3; ++d) {
    Napi::Value e = v.As<Napi::Array>().Get(d);
    if (flags) {
      if (!e.IsBoolean()) return Status::error(ErrorCode::InvalidOption, std::string("ewaldTable: '") + key + "' must hold booleans");
      flags[d] = e.As<Napi::Boolean>().Value();
    } else {
      if (!e.IsNumber()) return Status::error(ErrorCode::InvalidOption, std::string("ewaldTable: '") + key + "' must hold numbers");
      out[d] = e.As<Napi::Number>().DoubleValue();
    }
  }
  return Status::success();
}

Napi::Float64Array copyOut(Napi::Env env, const std::vector<double>& v) {
  Napi::Float64Array a = Napi::Float64Array::New(env, v.size());
  if (!v.empty()) std::memcpy(a.Data(), v.data(), v.size() * sizeof(double));
  return a;
}

}  // namespace

Napi::Value ewaldTable(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto fail = [&](const Status& st) -> Napi::Value {
    makeError(env, st).ThrowAsJavaScriptException();
    return env.Undefined();
  };
  if (info.Length() < 1 || !info[0].IsObject())
    return fail(Status::error(ErrorCode::InvalidOption, "ewaldTable: expected {L, periodic, ...}"));
  Napi::Object o = info[0].As<Napi::Object>();
  double L[3], dummy[3];
  bool periodic[3];
  Status st = readTriple(o, "L", L, nullptr);
  if (st.ok()) st = readTriple(o, "periodic", dummy, periodic);
  if (!st.ok()) return fail(st);
  int resolution = kEwaldDefaultResolution, threads = 0;
  if (o.Has("resolution") && o.Get("resolution").IsNumber()) resolution = o.Get("resolution").As<Napi::Number>().Int32Value();
  if (o.Has("threads") && o.Get("threads").IsNumber()) threads = o.Get("threads").As<Napi::Number>().Int32Value();
  const bool memory = !(o.Has("memoryCache") && o.Get("memoryCache").IsBoolean() && !o.Get("memoryCache").As<Napi::Boolean>().Value());
  EwaldGeometry geo;
  for (int d = 0; d < 3; ++d) { geo.L[d] = L[d]; geo.periodic[d] = periodic[d]; }
  if (!(st = validateEwaldGeometry(geo)).ok()) return fail(st);
  std::shared_ptr<const EwaldTable> t;
  int source = 0;
  st = acquireEwaldTable(ewaldSpecFor(L, periodic, resolution), std::max(1, threads == 0 ? int(std::thread::hardware_concurrency()) : threads),
                         memory, t, &source);
  if (!st.ok()) return fail(st);

  Napi::Object r = Napi::Object::New(env);
  Napi::Array n = Napi::Array::New(env, 3), h = Napi::Array::New(env, 3);
  for (uint32_t d = 0; d < 3; ++d) { n.Set(d, t->n[d]); h.Set(d, t->h[d]); }
  r.Set("n", n);
  r.Set("h", h);
  r.Set("points", double(t->points()));
  r.Set("bytes", double(t->coef.size() * sizeof(double)));
  r.Set("secondsBuild", t->secondsBuild);
  r.Set("secondsLoad", t->secondsLoad);
  r.Set("source", source == 1 ? "memory" : source == 2 ? "disk" : "built");
  r.Set("cachePath", t->cachePath);
  r.Set("cacheNote", t->cacheNote);

  // gridCheck: N: the stored coefficients at N grid points spread over the table (every point when N >= points)
  // against the exact sums at the same points: the largest difference and the largest |exact| of each
  // coefficient (tests: the fast fully periodic build equals the point-by-point sums)
  if (o.Has("gridCheck") && o.Get("gridCheck").IsNumber()) {
    const std::size_t want = std::size_t(std::max(1.0, o.Get("gridCheck").As<Napi::Number>().DoubleValue()));
    const std::size_t total = t->points(), step = std::max<std::size_t>(1, total / want);
    std::vector<double> diff(kEwaldCoefs, 0.0), scale(kEwaldCoefs, 0.0);
    for (std::size_t p = 0; p < total; p += step) {
      const int i = int(p % (t->n[0] + 1)), j = int((p / (t->n[0] + 1)) % (t->n[1] + 1)),
                k = int(p / (std::size_t(t->n[0] + 1) * (t->n[1] + 1)));
      const double r[3] = {i * t->h[0], j * t->h[1], k * t->h[2]};
      double ex[kEwaldCoefs];
      ewaldCorrectionExact(t->spec.box, r, ex);
      for (int e = 0; e < kEwaldCoefs; ++e) {
        diff[e] = std::max(diff[e], std::fabs(t->coef[p * kEwaldCoefs + e] - ex[e]));
        scale[e] = std::max(scale[e], std::fabs(ex[e]));
      }
    }
    r.Set("gridMaxDiff", copyOut(env, diff));
    r.Set("gridMaxAbs", copyOut(env, scale));
  }

  Napi::Value pv = o.Get("at");
  if (pv.IsTypedArray() && pv.As<Napi::TypedArray>().TypedArrayType() == napi_float64_array) {
    Napi::Float64Array pts = pv.As<Napi::Float64Array>();
    const std::size_t np = pts.ElementLength() / 3;
    double period[3];
    for (int d = 0; d < 3; ++d) period[d] = periodic[d] ? L[d] : 0.0;
    const EwaldTableView v = t->view(std::max({L[0], L[1], L[2]}), period);
    std::vector<double> look(4 * np);
    for (std::size_t i = 0; i < np; ++i) {
      double dd[3];
      for (int d = 0; d < 3; ++d) dd[d] = nearestImage(pts[3 * i + d], v.period[d], v.invPeriod[d]);
      double* none = nullptr;
      ewaldLookup<1>(v, dd[0], dd[1], dd[2], &look[4 * i], &look[4 * i + 1], none, none);
    }
    r.Set("lookup", copyOut(env, look));
    if (o.Has("exact") && o.Get("exact").IsBoolean() && o.Get("exact").As<Napi::Boolean>().Value()) {
      std::vector<double> ex(kEwaldCoefs * np);
      for (std::size_t i = 0; i < np; ++i) {
        double dd[3];
        for (int d = 0; d < 3; ++d) dd[d] = nearestImage(pts[3 * i + d], v.period[d], v.invPeriod[d]);
        ewaldCorrectionExact(geo, dd, &ex[kEwaldCoefs * i]);
      }
      r.Set("exact", copyOut(env, ex));
    }
  }
  return r;
}

}  // namespace amrgrav
