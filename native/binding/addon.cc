/// \file addon.cc
/// \brief Node-API entry points. Each export reads its arguments into plain structs, queues an AsyncWorker whose
/// Execute() touches no JS value, and resolves or rejects a Promise. No physics lives here.
#include <napi.h>

#include <memory>
#include <mutex>
#include <string>

#include "binding/convert.h"
#include "binding/mpi_exports.h"
#include "binding/ewald_binding.h"
#include "core/backend.h"
#include "mpi/distributed_solve.h"
#include "mpi/mpi_world.h"
#if defined(AMRGRAV_HAVE_CUDA)
#include "cuda/cuda_backend.h"
#endif

namespace amrgrav {
namespace {

enum class Mode { Tree, Direct };

/// A backend and the lock that serialises its use. The CUDA backend is one per process: it keeps its device
/// buffers between solves (a hydro code calls every step), so concurrent workers take turns on it.
struct BackendSlot {
  Backend* backend;
  std::mutex* lock;  ///< null: the backend keeps no state between calls and needs no lock
};

BackendSlot cpuSlot() {
  static std::unique_ptr<Backend> cpu = makeCpuBackend();
  return {cpu.get(), nullptr};
}

#if defined(AMRGRAV_HAVE_CUDA)
BackendSlot cudaSlot() {
  static std::unique_ptr<Backend> gpu = makeCudaBackend();
  static std::mutex m;
  return {gpu.get(), &m};
}
#endif

/// The backend named by the options ('cpu' or 'cuda'); an error status if this build or machine lacks it.
Status pickBackend(const std::string& name, BackendSlot& slot) {
  if (name == "cpu") {
    slot = cpuSlot();
    return Status::success();
  }
#if defined(AMRGRAV_HAVE_CUDA)
  std::string why;
  if (!cudaDeviceAvailable(&why)) return Status::error(ErrorCode::NoDevice, "no usable CUDA device: " + why);
  slot = cudaSlot();
  return Status::success();
#else
  return Status::error(ErrorCode::NoDevice, "this build of amrgrav has no CUDA backend (nvcc was not found at build time)");
#endif
}

class SolveWorker final : public Napi::AsyncWorker {
 public:
  SolveWorker(Napi::Env env, Mode mode) : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)), mode_(mode) {}

  CellArrays cells;
  OutputArrays outputs;
  SolveOptions options;
  bool distributed = false;  ///< a collective tree solve over the MPI world (several ranks)
  bool distributedGpu = false;  ///< ... with backend 'cuda': each rank's share on its GPU
  BackendSlot slot{nullptr, nullptr};
  Napi::Promise promise() { return deferred_.Promise(); }

  void Execute() override {
    std::unique_lock<std::mutex> guard;
    if (slot.lock) guard = std::unique_lock<std::mutex>(*slot.lock);
    result_.into = outputs.targets;
    if (distributed)
      status_ = distributedGpu ? solveDistributedCuda(cells.view, options, result_)
                               : solveDistributedCpu(cells.view, options, result_);
    else status_ = mode_ == Mode::Tree ? slot.backend->solve(cells.view, options, result_)
                                       : slot.backend->direct(cells.view, options, result_);
  }
  void OnOK() override {
    Napi::Env env = Env();
    if (!status_.ok()) {
      deferred_.Reject(makeError(env, status_).Value());
      return;
    }
    deferred_.Resolve(
        resultToJs(env, result_, distributed ? result_.stats.distributed.backend : slot.backend->name(), outputs));
  }
  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  Mode mode_;
  Status status_;
  SolveResult result_;
};

/// solve(cells, options, out?) / direct(cells, options, out?) -> Promise<result>. `out`: optional caller arrays
/// {potential, ax?, ay?, az?} (Float64Array, one element per cell) that receive the results; new ones otherwise.
Napi::Value startSolve(const Napi::CallbackInfo& info, Mode mode) {
  Napi::Env env = info.Env();
  auto* w = new SolveWorker(env, mode);
  Napi::Promise p = w->promise();
  Status st;
  std::string backendName;
  if (info.Length() < 1 || !info[0].IsObject())
    st = Status::error(ErrorCode::InvalidInput, "cells must be an object {x, y, z, mass, size}");
  if (st.ok()) st = readCells(info[0].As<Napi::Object>(), w->cells);
  if (st.ok()) st = readOptions(info.Length() > 1 ? info[1] : env.Undefined(), w->options, backendName);
  if (st.ok())
    st = prepareOutputs(env, info.Length() > 2 ? info[2] : env.Undefined(), w->cells.view.n, w->options.accelerations,
                        w->outputs);
  if (st.ok() && mode == Mode::Tree) st = readDistributed(info.Length() > 1 ? info[1] : env.Undefined(), w->distributed);
  w->distributed = w->distributed && mpiWorld().size > 1;
  // a distributed solve checks its backend inside the collective (a rank without a GPU must not leave the others
  // waiting): no backend slot here
  if (st.ok() && w->distributed) w->distributedGpu = backendName == "cuda";
  else if (st.ok()) st = pickBackend(backendName, w->slot);
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
#if defined(AMRGRAV_HAVE_CUDA)
  std::string why;
  const bool gpu = cudaDeviceAvailable(&why);
  o.Set("cudaBuilt", true);
  o.Set("cuda", gpu);
  o.Set("cudaReason", gpu ? std::string("CUDA device present") : why);
#else
  o.Set("cudaBuilt", false);
  o.Set("cuda", false);
  o.Set("cudaReason", "this build has no CUDA backend (nvcc was not found at build time)");
#endif
  const MpiWorld world = mpiWorld();
  o.Set("mpi", world.built);
  o.Set("mpiReason", world.reason);
  return o;
}

}  // namespace
}  // namespace amrgrav

static Napi::Object InitAddon(Napi::Env env, Napi::Object exports) {
  using namespace amrgrav;
  exports.Set("solve", Napi::Function::New(env, solve, "solve"));
  exports.Set("direct", Napi::Function::New(env, direct, "direct"));
  exports.Set("features", Napi::Function::New(env, features, "features"));
  registerMpiExports(env, exports);
  exports.Set("ewaldTable", Napi::Function::New(env, ewaldTable, "ewaldTable"));
  return exports;
}

NODE_API_MODULE(amrgrav, InitAddon)
