/// \file ewald_binding.cc
/// \brief ewaldTable(spec) and ewaldTableAsync(spec): the Ewald table of a box shape, its provenance, and
/// (optionally) the table's and the exact sums' values at given points (api/ewald.h): what the tests, the
/// validation and the benchmark measure the table with. Conversion only: the request is read on the JS thread, the
/// table work (api::ewaldTable) runs there (sync) or on a worker (async), and the report becomes a JS object.
#include "binding/ewald_binding.h"

#include <cstring>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "api/ewald.h"
#include "binding/convert.h"

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

/// The request object into plain values (on the JS thread; the points are copied, so a worker may read them).
Status readRequest(const Napi::CallbackInfo& info, api::EwaldTableRequest& q) {
  if (info.Length() < 1 || !info[0].IsObject())
    return Status::error(ErrorCode::InvalidOption, "ewaldTable: expected {L, periodic, ...}");
  Napi::Object o = info[0].As<Napi::Object>();
  double dummy[3];
  Status st = readTriple(o, "L", q.L, nullptr);
  if (st.ok()) st = readTriple(o, "periodic", dummy, q.periodic);
  if (!st.ok()) return st;
  if (o.Has("resolution") && o.Get("resolution").IsNumber()) q.resolution = o.Get("resolution").As<Napi::Number>().Int32Value();
  if (o.Has("threads") && o.Get("threads").IsNumber()) q.threads = o.Get("threads").As<Napi::Number>().Int32Value();
  q.memoryCache = !(o.Has("memoryCache") && o.Get("memoryCache").IsBoolean() && !o.Get("memoryCache").As<Napi::Boolean>().Value());
  if (o.Has("gridCheck") && o.Get("gridCheck").IsNumber()) {
    q.gridCheck = true;
    q.gridPoints = o.Get("gridCheck").As<Napi::Number>().DoubleValue();
  }
  Napi::Value pv = o.Get("at");
  if (pv.IsTypedArray() && pv.As<Napi::TypedArray>().TypedArrayType() == napi_float64_array) {
    Napi::Float64Array pts = pv.As<Napi::Float64Array>();
    q.hasPoints = true;
    q.points.assign(pts.Data(), pts.Data() + pts.ElementLength());
    q.exact = o.Has("exact") && o.Get("exact").IsBoolean() && o.Get("exact").As<Napi::Boolean>().Value();
  }
  return Status::success();
}

Napi::Float64Array copyOut(Napi::Env env, const std::vector<double>& v) {
  Napi::Float64Array a = Napi::Float64Array::New(env, v.size());
  if (!v.empty()) std::memcpy(a.Data(), v.data(), v.size() * sizeof(double));
  return a;
}

Napi::Object reportToJs(Napi::Env env, const api::EwaldTableReport& t) {
  Napi::Object r = Napi::Object::New(env);
  Napi::Array n = Napi::Array::New(env, 3), h = Napi::Array::New(env, 3);
  for (uint32_t d = 0; d < 3; ++d) { n.Set(d, t.n[d]); h.Set(d, t.h[d]); }
  r.Set("n", n);
  r.Set("h", h);
  r.Set("points", t.points);
  r.Set("bytes", t.bytes);
  r.Set("secondsBuild", t.secondsBuild);
  r.Set("secondsLoad", t.secondsLoad);
  r.Set("source", t.source);
  r.Set("cachePath", t.cachePath);
  r.Set("cacheNote", t.cacheNote);
  if (t.hasGrid) {
    r.Set("gridMaxDiff", copyOut(env, t.gridMaxDiff));
    r.Set("gridMaxAbs", copyOut(env, t.gridMaxAbs));
  }
  if (t.hasLookup) r.Set("lookup", copyOut(env, t.lookup));
  if (t.hasExact) r.Set("exact", copyOut(env, t.exact));
  return r;
}

/// ewaldTableAsync's worker: api::ewaldTable off the JS thread.
class EwaldTableWorker final : public Napi::AsyncWorker {
 public:
  EwaldTableWorker(Napi::Env env, api::EwaldTableRequest request)
      : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)), request_(std::move(request)) {}
  Napi::Promise promise() { return deferred_.Promise(); }

  void Execute() override {
    try {
      status_ = api::ewaldTable(request_, report_);
    } catch (const std::bad_alloc&) {
      status_ = Status::error(ErrorCode::OutOfMemory, "ewaldTable: host memory exhausted");
    }
  }
  void OnOK() override {
    Napi::Env env = Env();
    if (!status_.ok()) return deferred_.Reject(makeError(env, status_).Value());
    deferred_.Resolve(reportToJs(env, report_));
  }
  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  api::EwaldTableRequest request_;
  api::EwaldTableReport report_;
  Status status_;
};

}  // namespace

Napi::Value ewaldTable(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  api::EwaldTableRequest q;
  api::EwaldTableReport t;
  Status st = readRequest(info, q);
  if (st.ok()) st = api::ewaldTable(q, t);
  if (!st.ok()) {
    makeError(env, st).ThrowAsJavaScriptException();
    return env.Undefined();
  }
  return reportToJs(env, t);
}

Napi::Value ewaldTableAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  api::EwaldTableRequest q;
  const Status st = readRequest(info, q);
  if (!st.ok()) {
    Napi::Promise::Deferred d = Napi::Promise::Deferred::New(env);
    d.Reject(makeError(env, st).Value());
    return d.Promise();
  }
  auto* w = new EwaldTableWorker(env, std::move(q));
  Napi::Promise p = w->promise();
  w->Queue();
  return p;
}

}  // namespace amrgrav
