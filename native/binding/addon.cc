/// \file addon.cc
/// \brief Node-API entry points. Each export reads its arguments into plain structs, queues an AsyncWorker whose
/// Execute() touches no JS value, and resolves or rejects a Promise. No physics lives here.
#include <napi.h>

#include <memory>

#include "binding/convert.h"
#include "core/backend.h"

namespace amrgrav {
namespace {

enum class Mode { Tree, Direct };

class SolveWorker final : public Napi::AsyncWorker {
 public:
  SolveWorker(Napi::Env env, Mode mode, std::unique_ptr<Backend> backend)
      : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)), mode_(mode),
        backend_(std::move(backend)) {}

  CellArrays cells;
  SolveOptions options;
  Napi::Promise promise() { return deferred_.Promise(); }

  void Execute() override {
    status_ = mode_ == Mode::Tree ? backend_->solve(cells.view, options, result_)
                                  : backend_->direct(cells.view, options, result_);
  }
  void OnOK() override {
    Napi::Env env = Env();
    if (!status_.ok()) {
      deferred_.Reject(makeError(env, status_).Value());
      return;
    }
    deferred_.Resolve(resultToJs(env, result_, backend_->name()));
  }
  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  Mode mode_;
  std::unique_ptr<Backend> backend_;
  Status status_;
  SolveResult result_;
};

/// solve(cells, options) / direct(cells, options) -> Promise<result>
Napi::Value startSolve(const Napi::CallbackInfo& info, Mode mode) {
  Napi::Env env = info.Env();
  auto* w = new SolveWorker(env, mode, makeCpuBackend());
  Napi::Promise p = w->promise();
  Status st;
  if (info.Length() < 1 || !info[0].IsObject())
    st = Status::error(ErrorCode::InvalidInput, "cells must be an object {x, y, z, mass, size}");
  if (st.ok()) st = readCells(info[0].As<Napi::Object>(), w->cells);
  if (st.ok()) st = readOptions(info.Length() > 1 ? info[1] : env.Undefined(), w->options);
  if (!st.ok()) {
    Napi::Promise::Deferred d = Napi::Promise::Deferred::New(env);
    d.Reject(makeError(env, st).Value());
    delete w;
    return d.Promise();
  }
  w->Queue();
  return p;
}

Napi::Value solve(const Napi::CallbackInfo& info) { return startSolve(info, Mode::Tree); }
Napi::Value direct(const Napi::CallbackInfo& info) { return startSolve(info, Mode::Direct); }

/// What this build contains, so TS can choose backends and explain a missing one.
Napi::Value features(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object o = Napi::Object::New(env);
  o.Set("cpu", true);
  o.Set("cuda", false);
  o.Set("mpi", false);
  return o;
}

}  // namespace
}  // namespace amrgrav

static Napi::Object InitAddon(Napi::Env env, Napi::Object exports) {
  using namespace amrgrav;
  exports.Set("solve", Napi::Function::New(env, solve, "solve"));
  exports.Set("direct", Napi::Function::New(env, direct, "direct"));
  exports.Set("features", Napi::Function::New(env, features, "features"));
  return exports;
}

NODE_API_MODULE(amrgrav, InitAddon)
