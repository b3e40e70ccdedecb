/// \file addon.cc
/// \brief Node-API entry points. Each export reads its arguments into plain structs, queues an AsyncWorker whose
/// Execute() touches no JS value, and resolves or rejects a Promise. No physics and no backend choice lives here:
/// both are api/'s (api/session.h), which this file and its siblings reach native code through.
#include <napi.h>

#include <memory>
#include <string>

#include "api/session.h"
#include "api/world.h"
#include "binding/convert.h"
#include "binding/ewald_binding.h"
#include "binding/mpi_exports.h"

namespace amrgrav {
namespace {

/// The process's session: its backends (the GPU's keeps its device buffers between solves, as a hydro code calls
/// every step; concurrent workers take turns on it).
api::Session& session() {
  static api::Session s;
  return s;
}

/// Settles a solve's promise: its error, or its result with what ran (stats.backend), why (stats.backendReason)
/// and 'auto''s warning when it had to leave the GPU.
void settleSolve(Napi::Env env, Napi::Promise::Deferred& deferred, const Status& status, const SolveResult& result,
                 const api::SolveReport& report, const OutputArrays& outputs) {
  if (!status.ok()) {
    deferred.Reject(makeError(env, status).Value());
    return;
  }
  Napi::Object r = resultToJs(env, result, api::backendName(report.ran), outputs);
  r.Get("stats").As<Napi::Object>().Set("backendReason", report.reason);
  if (!report.warning.empty()) r.Set("warning", report.warning);
  deferred.Resolve(r);
}

/// api/'s choice for a call whose options (already read by readOptions, which accepted `backendName`) are `opts`.
/// `collective`: the call may be a distributed solve (options.distributed over several ranks), whose backend is
/// checked inside the collective (a rank without a GPU must not leave the others waiting): the policy rejects
/// nothing then.
Status chooseForCall(const Napi::Value& opts, const std::string& backendName, bool collective,
                     api::BackendChoice& choice) {
  bool distributed = false;
  if (collective) {
    const Status st = readDistributed(opts, distributed);
    if (!st.ok()) return st;
  }
  distributed = distributed && api::world().size > 1;
  api::BackendRequest request = api::BackendRequest::Cpu;
  (void)api::parseBackendRequest(backendName, request);  // readOptions accepted it
  return api::chooseBackend(request, distributed, "'cuda'", choice);
}

/// Queues the worker and returns its promise, or, when reading the call failed, drops it and returns a promise
/// rejected with `st`.
template <class Worker>
Napi::Value queueOrReject(Napi::Env env, Worker* w, const Status& st) {
  if (!st.ok()) {
    delete w;
    Napi::Promise::Deferred d = Napi::Promise::Deferred::New(env);
    d.Reject(makeError(env, st).Value());
    return d.Promise();
  }
  Napi::Promise p = w->promise();
  w->Queue();
  return p;
}

class SolveWorker final : public Napi::AsyncWorker {
 public:
  SolveWorker(Napi::Env env, api::Method method)
      : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)), method_(method) {}

  CellArrays cells;
  OutputArrays outputs;
  SolveOptions options;
  api::BackendChoice choice;  ///< the policy's, for this call's request
  Napi::Promise promise() { return deferred_.Promise(); }

  void Execute() override {
    result_.into = outputs.targets;
    status_ = session().solve(method_, choice, cells.view, options, result_, report_);
  }
  void OnOK() override { settleSolve(Env(), deferred_, status_, result_, report_, outputs); }
  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  api::Method method_;
  Status status_;
  SolveResult result_;
  api::SolveReport report_;
};

/// solve(cells, options, out?) / direct(cells, options, out?) -> Promise<result>. `out`: optional caller arrays
/// {potential, ax?, ay?, az?} (Float64Array, one element per cell) that receive the results; new ones otherwise.
/// options.backend 'auto' | 'cpu' | 'cuda' goes through api/'s policy; stats.backend and stats.backendReason say
/// what ran and why, and `warning` is set when 'auto' had to leave the GPU (too little device memory).
Napi::Value startSolve(const Napi::CallbackInfo& info, api::Method method) {
  Napi::Env env = info.Env();
  auto* w = new SolveWorker(env, method);
  Status st;
  std::string backendName;
  const Napi::Value opts = info.Length() > 1 ? info[1] : env.Undefined();
  if (info.Length() < 1 || !info[0].IsObject())
    st = Status::error(ErrorCode::InvalidInput, "cells must be an object {x, y, z, mass, size}");
  if (st.ok()) st = readCells(info[0].As<Napi::Object>(), w->cells);
  if (st.ok()) st = readOptions(opts, w->options, backendName);
  if (st.ok())
    st = prepareOutputs(env, info.Length() > 2 ? info[2] : env.Undefined(), w->cells.view.n, w->options.accelerations,
                        w->outputs);
  if (st.ok()) st = chooseForCall(opts, backendName, method == api::Method::Tree, w->choice);
  return queueOrReject(env, w, st);
}

/// A system solve (core/system.h) off the JS thread: the result arrays are made on the JS thread, the backend writes
/// into them.
class SystemWorker final : public Napi::AsyncWorker {
 public:
  SystemWorker(Napi::Env env, api::Method method)
      : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)), method_(method) {}

  CellArrays cells;
  SystemArrays parts;
  OutputArrays cellOut, particleOut, probeOut;
  SolveOptions options;
  api::BackendChoice choice;
  Napi::Promise promise() { return deferred_.Promise(); }

  void Execute() override {
    SystemView v;
    v.cells = cells.view;
    v.particles = parts.particles;
    v.probes = parts.probes;
    v.targets = parts.targets;
    v.targetCount = parts.targetCount;
    result_.cells.into = cellOut.targets;
    result_.particles.into = particleOut.targets;
    result_.probes.into = probeOut.targets;
    status_ = session().solveSystem(method_, choice, v, options, result_, report_);
  }
  void OnOK() override {
    Napi::Env env = Env();
    if (!status_.ok()) {
      deferred_.Reject(makeError(env, status_).Value());
      return;
    }
    Napi::Object r = Napi::Object::New(env);
    Napi::Object s = statsToJs(env, result_.stats, api::backendName(report_.ran));
    s.Set("backendReason", report_.reason);
    const SystemStats& y = result_.system;
    Napi::Object sys = Napi::Object::New(env);
    sys.Set("targets", double(y.targets));
    sys.Set("targetGroups", double(y.targetGroups));
    sys.Set("probes", double(y.probes));
    sys.Set("probeGroups", double(y.probeGroups));
    sys.Set("probeApproxInteractions", double(y.probeApprox));
    sys.Set("probeDirectInteractions", double(y.probeDirect));
    sys.Set("secondsProbes", y.secondsProbes);
    sys.Set("particles", double(y.particles));
    sys.Set("particleGroups", double(y.particleGroups));
    sys.Set("particleNodes", double(y.particleNodes));
    sys.Set("particleApproxInteractions", double(y.particleApprox));
    sys.Set("particleDirectInteractions", double(y.particleDirect));
    sys.Set("secondsParticles", y.secondsParticles);
    s.Set("system", sys);
    r.Set("cells", arraysToJs(env, cellOut));
    r.Set("particles", arraysToJs(env, particleOut));
    r.Set("probes", arraysToJs(env, probeOut));
    r.Set("stats", s);
    if (!report_.warning.empty()) r.Set("warning", report_.warning);
    deferred_.Resolve(r);
  }
  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  api::Method method_;
  Status status_;
  SystemResult result_;
  api::SolveReport report_;
};

/// solveSystem({cells, particles?, probes?, targets?}, options, method) -> Promise<{cells, particles, probes, stats,
/// warning?}>: cells as solve()'s (Float64Arrays), particles {x, y, z, mass, softening} (Float64Arrays; softening
/// also one number), probes {x, y, z} (Float64Arrays), targets a Uint32Array of cell indices; method 'tree'
/// (default) or 'direct'. cells, particles and probes of the result: {potential, ax?, ay?, az?}, one per target (or
/// cell), per particle and per probe, in their orders; stats as solve()'s plus stats.system.
Napi::Value solveSystem(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const bool direct = info.Length() > 2 && info[2].IsString() && info[2].As<Napi::String>().Utf8Value() == "direct";
  auto* w = new SystemWorker(env, direct ? api::Method::Direct : api::Method::Tree);
  Status st;
  std::string backendName;
  const Napi::Value opts = info.Length() > 1 ? info[1] : env.Undefined();
  if (info.Length() < 1 || !info[0].IsObject())
    st = Status::error(ErrorCode::InvalidInput, "system must be an object {cells, particles?, probes?, targets?}");
  Napi::Object sys = st.ok() ? info[0].As<Napi::Object>() : Napi::Object::New(env);
  if (st.ok() && !sys.Get("cells").IsObject())
    st = Status::error(ErrorCode::InvalidInput, "system.cells must be an object {x, y, z, mass, size}");
  if (st.ok()) st = readCells(sys.Get("cells").As<Napi::Object>(), w->cells);
  if (st.ok()) st = readSystemParts(sys, w->parts);
  if (st.ok()) st = readOptions(opts, w->options, backendName);
  if (st.ok()) {
    const std::size_t nc = w->parts.targets ? w->parts.targetCount : w->cells.view.n;
    st = prepareOutputs(env, env.Undefined(), nc, w->options.accelerations, w->cellOut);
  }
  if (st.ok())
    st = prepareOutputs(env, env.Undefined(), w->parts.particles.n, w->options.accelerations, w->particleOut);
  if (st.ok()) st = prepareOutputs(env, env.Undefined(), w->parts.probes.n, w->options.accelerations, w->probeOut);
  if (st.ok()) st = chooseForCall(opts, backendName, !direct, w->choice);
  return queueOrReject(env, w, st);
}

/// A block solve (core/blocks.h) off the JS thread: the results land in the caller's arrays.
class BlocksWorker final : public Napi::AsyncWorker {
 public:
  explicit BlocksWorker(Napi::Env env) : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)) {}

  BlockArrays blocks;
  SolveOptions options;
  api::BackendChoice choice;
  Napi::Promise promise() { return deferred_.Promise(); }

  void Execute() override { status_ = session().solveBlocks(choice, blocks.view, blocks.out, options, result_, report_); }
  void OnOK() override { settleSolve(Env(), deferred_, status_, result_, report_, OutputArrays{}); }
  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  Status status_;
  SolveResult result_;
  api::SolveReport report_;
};

/// solveBlocks(blocks, options, out) -> Promise<{stats, warning?}>: the potential (and accelerations) of the blocks'
/// cells written into out.potential (out.ax, ay, az) in the density's layout and type (binding/convert.h readBlocks).
/// options as solve()'s, distributed included (a collective: each rank passes its own blocks).
Napi::Value solveBlocks(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* w = new BlocksWorker(env);
  std::string backendName;
  const Napi::Value opts = info.Length() > 1 ? info[1] : env.Undefined();
  Status st = readOptions(opts, w->options, backendName);
  if (st.ok()) st = readBlocks(info.Length() > 0 ? info[0] : env.Undefined(), info.Length() > 2 ? info[2] : env.Undefined(),
                               w->options, w->blocks);
  if (st.ok()) st = chooseForCall(opts, backendName, true, w->choice);
  return queueOrReject(env, w, st);
}

Napi::Value solve(const Napi::CallbackInfo& info) { return startSolve(info, api::Method::Tree); }
Napi::Value direct(const Napi::CallbackInfo& info) { return startSolve(info, api::Method::Direct); }

/// What this build contains, so TS can explain a missing backend.
Napi::Value features(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const api::Features f = api::features();
  Napi::Object o = Napi::Object::New(env);
  o.Set("cpu", f.cpu);
  o.Set("cudaBuilt", f.cudaBuilt);
  o.Set("cuda", f.cudaUsable);
  o.Set("cudaReason", f.cudaReason);
  o.Set("cudaDevices", f.cudaDevices);
  o.Set("mpi", f.mpiBuilt);
  o.Set("mpiReason", f.mpiReason);
  return o;
}

/// backendPolicy(backend: 'auto' | 'cpu' | 'cuda', distributed: boolean) -> {backend: 'cpu' | 'cuda', reason,
/// notice?, error?}: api/'s backend policy for a solver (error: the NoDevice message of backend 'cuda' without a
/// usable GPU; notice: the line to print once when 'auto' falls back to the CPU though CUDA was built).
Napi::Value backendPolicy(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::string name = info.Length() > 0 && info[0].IsString() ? info[0].As<Napi::String>().Utf8Value() : "";
  api::BackendRequest request;
  if (!api::parseBackendRequest(name, request))
    throw makeError(env, Status::error(ErrorCode::InvalidOption, "option 'backend' must be 'auto', 'cpu' or 'cuda'"));
  const bool distributed = info.Length() > 1 && info[1].ToBoolean().Value();
  api::BackendChoice c;
  const Status st = api::chooseBackend(request, distributed, "'cuda'", c);
  Napi::Object o = Napi::Object::New(env);
  o.Set("backend", api::backendName(c.backend));
  o.Set("reason", c.reason);
  if (!c.notice.empty()) o.Set("notice", c.notice);
  if (!st.ok()) o.Set("error", st.message);
  return o;
}

/// gpuReasonInWords(cudaReason) -> the CUDA probe's reason in a user's words ("no GPU driver found", ...).
Napi::Value gpuReasonInWords(const Napi::CallbackInfo& info) {
  const std::string why = info.Length() > 0 && info[0].IsString() ? info[0].As<Napi::String>().Utf8Value() : "";
  return Napi::String::New(info.Env(), api::gpuReasonInWords(why));
}

}  // namespace
}  // namespace amrgrav

static Napi::Object InitAddon(Napi::Env env, Napi::Object exports) {
  using namespace amrgrav;
  exports.Set("solve", Napi::Function::New(env, solve, "solve"));
  exports.Set("direct", Napi::Function::New(env, direct, "direct"));
  exports.Set("solveBlocks", Napi::Function::New(env, solveBlocks, "solveBlocks"));
  exports.Set("solveSystem", Napi::Function::New(env, solveSystem, "solveSystem"));
  exports.Set("features", Napi::Function::New(env, features, "features"));
  exports.Set("backendPolicy", Napi::Function::New(env, backendPolicy, "backendPolicy"));
  exports.Set("gpuReasonInWords", Napi::Function::New(env, gpuReasonInWords, "gpuReasonInWords"));
  registerMpiExports(env, exports);
  exports.Set("ewaldTable", Napi::Function::New(env, ewaldTable, "ewaldTable"));
  exports.Set("ewaldTableAsync", Napi::Function::New(env, ewaldTableAsync, "ewaldTableAsync"));
  return exports;
}

NODE_API_MODULE(amrgrav, InitAddon)
