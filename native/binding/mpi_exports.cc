/// \file mpi_exports.cc
/// \brief Node-API wrappers of the MPI world (api/world.h over native/mpi/; see mpi_exports.h). Collective calls
/// (gather, failure agreement) run in AsyncWorkers, as solves do, so a rank waiting for the others never blocks its
/// event loop.
#include "binding/mpi_exports.h"

#include <string>
#include <vector>

#include "api/world.h"
#include "binding/convert.h"

namespace amrgrav {
namespace {

Napi::Object worldToJs(Napi::Env env) {
  const api::World w = api::world();
  Napi::Object o = Napi::Object::New(env);
  o.Set("built", w.built);
  o.Set("active", w.active);
  o.Set("rank", w.rank);
  o.Set("size", w.size);
  o.Set("localRank", api::nodeLocalRank());
  o.Set("reason", w.reason);
  return o;
}

/// mpiInit(force: boolean) -> world; initialises only under an MPI launcher unless forced.
Napi::Value mpiInit(const Napi::CallbackInfo& info) {
  const bool force = info.Length() > 0 && info[0].ToBoolean().Value();
  const Status st = api::initWorld(force);
  if (!st.ok()) throw makeError(info.Env(), st);
  return worldToJs(info.Env());
}

Napi::Value mpiWorldJs(const Napi::CallbackInfo& info) { return worldToJs(info.Env()); }

Napi::Value mpiFinalize(const Napi::CallbackInfo& info) {
  api::finalizeWorld();
  return info.Env().Undefined();
}

/// mpiAbort(message, code): ends every rank of the job.
Napi::Value mpiAbort(const Napi::CallbackInfo& info) {
  const std::string msg = info.Length() > 0 && info[0].IsString() ? info[0].As<Napi::String>().Utf8Value() : "aborted";
  const int code = info.Length() > 1 && info[1].IsNumber() ? info[1].As<Napi::Number>().Int32Value() : 1;
  api::abortWorld(msg, code);
}

/// A collective run off the JS thread; resolves with `result` or rejects with the status.
class CollectiveWorker final : public Napi::AsyncWorker {
 public:
  enum class Kind { Gather, FailSolve };
  CollectiveWorker(Napi::Env env, Kind kind) : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)), kind_(kind) {}
  Napi::Reference<Napi::Float64Array> inputRef;  ///< keeps the gathered values alive off the JS thread
  const double* inputData = nullptr;
  std::size_t inputLength = 0;
  Status failure;
  Napi::Promise promise() { return deferred_.Promise(); }

  void Execute() override {
    if (kind_ == Kind::Gather) status_ = api::gatherToRoot(inputData, inputLength, result_);
    else status_ = api::failDistributedSolve(failure);
  }
  void OnOK() override {
    Napi::Env env = Env();
    if (!status_.ok()) return deferred_.Reject(makeError(env, status_).Value());
    Napi::Float64Array a = Napi::Float64Array::New(env, result_.size());
    std::copy(result_.begin(), result_.end(), a.Data());
    deferred_.Resolve(a);
  }
  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  Kind kind_;
  Status status_;
  std::vector<double> result_;
};

/// mpiGather(values: Float64Array) -> Promise<Float64Array>: every rank's values in rank order on rank 0, an
/// empty array elsewhere (the values themselves in a single process).
Napi::Value mpiGather(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array)
    throw Napi::TypeError::New(env, "mpiGather expects a Float64Array");
  auto* w = new CollectiveWorker(env, CollectiveWorker::Kind::Gather);
  Napi::Float64Array a = info[0].As<Napi::Float64Array>();
  w->inputRef = Napi::Persistent(a);
  w->inputData = a.Data();
  w->inputLength = a.ElementLength();
  Napi::Promise p = w->promise();
  w->Queue();
  return p;
}

/// mpiFailSolve(code, message) -> Promise that rejects on every rank with the lowest failing rank's error.
Napi::Value mpiFailSolve(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* w = new CollectiveWorker(env, CollectiveWorker::Kind::FailSolve);
  const std::string code = info.Length() > 0 && info[0].IsString() ? info[0].As<Napi::String>().Utf8Value() : "";
  const std::string msg = info.Length() > 1 && info[1].IsString() ? info[1].As<Napi::String>().Utf8Value() : "failed";
  ErrorCode c = ErrorCode::InvalidInput;
  for (ErrorCode k : {ErrorCode::InvalidInput, ErrorCode::InvalidOption, ErrorCode::OutOfMemory, ErrorCode::NoDevice,
                      ErrorCode::Internal})
    if (code == errorCodeName(k)) c = k;
  w->failure = Status::error(c, msg);
  Napi::Promise p = w->promise();
  w->Queue();
  return p;
}

/// mpiDeviceFor(localRank, deviceCount) -> the GPU a rank with that node-local rank uses (deviceForLocalRank).
Napi::Value mpiDeviceFor(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsNumber() || !info[1].IsNumber())
    throw Napi::TypeError::New(env, "mpiDeviceFor expects (localRank, deviceCount)");
  return Napi::Number::New(env, api::deviceForLocalRank(info[0].As<Napi::Number>().Int32Value(),
                                                   info[1].As<Napi::Number>().Int32Value()));
}

void finalizeAtTeardown(void*) { api::finalizeWorld(); }

}  // namespace

void registerMpiExports(Napi::Env env, Napi::Object exports) {
  exports.Set("mpiInit", Napi::Function::New(env, mpiInit, "mpiInit"));
  exports.Set("mpiWorld", Napi::Function::New(env, mpiWorldJs, "mpiWorld"));
  exports.Set("mpiFinalize", Napi::Function::New(env, mpiFinalize, "mpiFinalize"));
  exports.Set("mpiAbort", Napi::Function::New(env, mpiAbort, "mpiAbort"));
  exports.Set("mpiGather", Napi::Function::New(env, mpiGather, "mpiGather"));
  exports.Set("mpiFailSolve", Napi::Function::New(env, mpiFailSolve, "mpiFailSolve"));
  exports.Set("mpiDeviceFor", Napi::Function::New(env, mpiDeviceFor, "mpiDeviceFor"));
  napi_add_env_cleanup_hook(env, finalizeAtTeardown, nullptr);
}

Napi::Object distributedStatsToJs(Napi::Env env, const DistributedStats& d) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("ranks", d.ranks);
  o.Set("rank", d.rank);
  o.Set("backend", d.backend);
  o.Set("device", d.device);
  o.Set("bytesSent", double(d.bytesSent));
  o.Set("bytesReceived", double(d.bytesReceived));
  o.Set("letNodesSent", double(d.letNodesSent));
  o.Set("letCellsSent", double(d.letCellsSent));
  o.Set("letsSent", double(d.letsSent));
  o.Set("letsReceived", double(d.letsReceived));
  o.Set("particleBytesSent", double(d.particleBytesSent));
  o.Set("particleBytesReceived", double(d.particleBytesReceived));
  o.Set("particleLetNodesSent", double(d.particleLetNodesSent));
  o.Set("particleLetParticlesSent", double(d.particleLetParticlesSent));
  o.Set("particleLetsSent", double(d.particleLetsSent));
  o.Set("particleLetsReceived", double(d.particleLetsReceived));
  o.Set("secondsAgree", d.secondsAgree);
  o.Set("secondsLetSelect", d.secondsLetSelect);
  o.Set("secondsLocalWalk", d.secondsLocalWalk);
  o.Set("secondsExchange", d.secondsExchange);
  o.Set("secondsExchangeWait", d.secondsExchangeWait);
  o.Set("secondsOverlap", d.secondsOverlap);
  o.Set("secondsRemoteWalk", d.secondsRemoteWalk);
  return o;
}

}  // namespace amrgrav
