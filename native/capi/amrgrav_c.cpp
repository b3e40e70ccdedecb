/// \file amrgrav_c.cpp
/// \brief The C API (native/include/amrgrav.h) over the same session, backends and backend policy as the Node
/// binding (api/session.h). Thin: options and arrays in, Status out as a code plus a message; no exception crosses
/// the C boundary.
#include "amrgrav.h"

#include <cstddef>
#include <exception>
#include <memory>
#include <new>
#include <string>

#include "api/session.h"
#include "api/world.h"
#include "core/validate.h"

using namespace amrgrav;

struct amrgrav_solver {
  SolveOptions options;
  api::BackendChoice choice;  ///< the policy's (distributed: a collective over the caller's MPI world)
  api::Session session;       ///< this solver's backends (the GPU's keeps its device buffers between steps)
  int ran = AMRGRAV_BACKEND_CPU;
  SolveStats stats;
  std::size_t cells = 0;  ///< of the last successful computation
  std::string error;
};

namespace {

/// The message of the last failure on this thread that had no solver to keep it: amrgrav_create, or any call
/// given a NULL solver (amrgrav_last_error(NULL)).
thread_local std::string threadError;

amrgrav_status toC(ErrorCode c) {
  switch (c) {
    case ErrorCode::Ok: return AMRGRAV_OK;
    case ErrorCode::InvalidInput: return AMRGRAV_INVALID_INPUT;
    case ErrorCode::InvalidOption: return AMRGRAV_INVALID_OPTION;
    case ErrorCode::OutOfMemory: return AMRGRAV_OUT_OF_MEMORY;
    case ErrorCode::NoDevice: return AMRGRAV_NO_DEVICE;
    case ErrorCode::Internal: return AMRGRAV_INTERNAL;
  }
  return AMRGRAV_INTERNAL;
}

/// The first version's options end at box_hi; later fields are read only when the caller's struct has them.
constexpr std::size_t kOptionsV1 = offsetof(amrgrav_options, periodic);

Status readOptions(const amrgrav_options& o, SolveOptions& s) {
  if (o.struct_size < kOptionsV1 || o.struct_size > sizeof(amrgrav_options))
    return Status::error(ErrorCode::InvalidOption, "amrgrav_options.struct_size is " + std::to_string(o.struct_size) +
                                                       ", expected " + std::to_string(sizeof(amrgrav_options)) +
                                                       " (fill the struct with amrgrav_default_options)");
  if (o.mac != 0 && o.mac != 1)
    return Status::error(ErrorCode::InvalidOption, "option mac must be 0 (Barnes) or 1 (Bonsai), got " + std::to_string(o.mac));
  if (o.backend < AMRGRAV_BACKEND_AUTO || o.backend > AMRGRAV_BACKEND_CUDA)
    return Status::error(ErrorCode::InvalidOption, "option backend must be 0 (auto), 1 (cpu) or 2 (cuda), got " +
                                                       std::to_string(o.backend));
  if (o.self_potential < 0 || o.self_potential > 2)
    return Status::error(ErrorCode::InvalidOption, "option self_potential must be 0 (none), 1 (cube) or 2 (lattice), got " +
                                                       std::to_string(o.self_potential));
  s.theta = o.theta;
  s.order = o.order;
  s.mac = o.mac == 1 ? MacKind::Bonsai : MacKind::Barnes;
  s.G = o.G;
  s.accelerations = o.accelerations != 0;
  s.selfPotential = static_cast<SelfPotential>(o.self_potential);
  s.leafSize = o.leaf_size;
  s.groupSize = o.group_size;
  s.threads = o.threads;
  s.hasBox = o.has_box != 0;
  for (int d = 0; d < 3; ++d) {
    s.boxLo[d] = o.box_lo[d];
    s.boxHi[d] = o.box_hi[d];
  }
  if (o.struct_size >= offsetof(amrgrav_options, ewald_resolution) + sizeof(int)) {
    for (int d = 0; d < 3; ++d) s.periodic[d] = o.periodic[d] != 0;
    s.ewaldResolution = o.ewald_resolution;
  }
  if (o.struct_size >= offsetof(amrgrav_options, density_contrast) + sizeof(int))
    s.densityContrast = o.density_contrast != 0;
  return validateOptions(s);
}

template <class F>
amrgrav_status guarded(std::string& error, F&& f) {
  try {
    const Status st = f();
    error = st.ok() ? std::string() : st.message;
    return toC(st.code);
  } catch (const std::bad_alloc&) {
    error = "host memory exhausted";
    return AMRGRAV_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    error = std::string("internal error: ") + e.what();
    return AMRGRAV_INTERNAL;
  }
}

}  // namespace

extern "C" {

void amrgrav_default_options(amrgrav_options* o) {
  if (!o) return;
  const SolveOptions d;
  *o = amrgrav_options{};
  o->struct_size = sizeof(amrgrav_options);
  o->theta = d.theta;
  o->order = d.order;
  o->mac = 0;
  o->G = d.G;
  o->backend = AMRGRAV_BACKEND_AUTO;
  o->accelerations = 0;
  o->self_potential = static_cast<int>(d.selfPotential);
  o->leaf_size = d.leafSize;
  o->group_size = d.groupSize;
  o->threads = 0;
  o->has_box = 0;
  for (int d = 0; d < 3; ++d) o->periodic[d] = 0;
  o->ewald_resolution = d.ewaldResolution;
  o->distributed = 0;
  o->density_contrast = d.densityContrast ? 1 : 0;
}

amrgrav_status amrgrav_create(const amrgrav_options* options, amrgrav_solver** out) {
  if (out) *out = nullptr;
  return guarded(threadError, [&]() -> Status {
    if (!options || !out) return Status::error(ErrorCode::InvalidInput, "amrgrav_create: options and solver must not be NULL");
    auto s = std::make_unique<amrgrav_solver>();
    Status st = readOptions(*options, s->options);
    if (!st.ok()) return st;
    bool distributed = false;
    if (options->struct_size >= offsetof(amrgrav_options, distributed) + sizeof(int) && options->distributed) {
      st = api::initWorld(true);  // uses the caller's MPI (MPI_COMM_WORLD) when it initialised MPI already
      if (!st.ok()) return st;
      distributed = api::world().size > 1;
    }
    // api/'s policy: AUTO is CUDA when usable; distributed, each rank's share on its GPU (CUDA, or AUTO where this
    // rank has one), and a rank without a usable GPU fails in the solve's agreement, with every other rank
    const api::BackendRequest request = options->backend == AMRGRAV_BACKEND_CUDA  ? api::BackendRequest::Cuda
                                        : options->backend == AMRGRAV_BACKEND_CPU ? api::BackendRequest::Cpu
                                                                                  : api::BackendRequest::Auto;
    st = api::chooseBackend(request, distributed, "CUDA", s->choice);
    if (!st.ok()) return st;
    const bool gpu = !distributed && s->choice.backend == api::BackendKind::Cuda;
    if (gpu && s->options.groupSize > 64)
      return Status::error(ErrorCode::InvalidOption, "group_size must be at most 64 on the CUDA backend, got " +
                                                         std::to_string(s->options.groupSize));
    s->ran = gpu ? AMRGRAV_BACKEND_CUDA : AMRGRAV_BACKEND_CPU;
    *out = s.release();
    return Status::success();
  });
}

amrgrav_status amrgrav_compute_potential(amrgrav_solver* s, size_t n, const double* x, const double* y,
                                         const double* z, const double* mass, const double* size, double* potential,
                                         double* ax, double* ay, double* az) {
  if (!s) {
    threadError = "amrgrav_compute_potential: the solver is NULL (did amrgrav_create fail?)";
    return AMRGRAV_INVALID_INPUT;
  }
  return guarded(s->error, [&]() -> Status {
    if (n > 0 && (!x || !y || !z || !mass || !size || !potential))
      return Status::error(ErrorCode::InvalidInput, "x, y, z, mass, size and potential must not be NULL");
    if (n > 0 && s->options.accelerations && (!ax || !ay || !az))
      return Status::error(ErrorCode::InvalidInput, "ax, ay and az must not be NULL when accelerations are computed");
    const CellsView cells{x, y, z, mass, size, n};
    SolveResult r;
    r.into = ResultTargets{potential, s->options.accelerations ? ax : nullptr, s->options.accelerations ? ay : nullptr,
                           s->options.accelerations ? az : nullptr};
    // collective when distributed: a rank with no cells still takes part
    if (!s->choice.distributed && n == 0) {
      s->stats = SolveStats{};
      s->cells = 0;
      return Status::success();
    }
    // AUTO: too little GPU memory for this input, and the CPU solves it (the GPU is tried again next call)
    api::SolveReport report;
    const Status st = s->session.solve(api::Method::Tree, s->choice, cells, s->options, r, report);
    if (st.ok()) {
      s->stats = r.stats;
      s->cells = n;
      s->ran = report.ran == api::BackendKind::Cuda ? AMRGRAV_BACKEND_CUDA : AMRGRAV_BACKEND_CPU;
    }
    return st;
  });
}

const char* amrgrav_last_error(const amrgrav_solver* s) { return s ? s->error.c_str() : threadError.c_str(); }

amrgrav_status amrgrav_get_stats(const amrgrav_solver* s, amrgrav_stats* out) {
  if (!s || !out) {
    (s ? const_cast<amrgrav_solver*>(s)->error : threadError) =
        s ? "amrgrav_get_stats: stats is NULL" : "amrgrav_get_stats: the solver is NULL (did amrgrav_create fail?)";
    return AMRGRAV_INVALID_INPUT;
  }
  const SolveStats& t = s->stats;
  *out = amrgrav_stats{};
  if (s->cells > 0) out->interactions_per_cell = double(t.approxInteractions + t.directInteractions) / double(s->cells);
  out->seconds_total = t.secondsTotal;
  out->seconds_upload = t.secondsUpload;
  out->seconds_keys = t.secondsKeys;
  out->seconds_build = t.secondsBuild;
  out->seconds_moments = t.secondsMoments;
  out->seconds_walk = t.secondsWalk;
  out->seconds_download = t.secondsDownload;
  out->device_bytes_per_cell = t.deviceBytesPerCell;
  out->backend = s->ran;
  return AMRGRAV_OK;
}

int amrgrav_features(void) {
  const api::Features f = api::features();
  int bits = 1;
  if (f.cudaBuilt) bits |= 2;
  if (f.cudaUsable) bits |= 4;
  if (f.mpiBuilt) bits |= 8;
  return bits;
}

void amrgrav_destroy(amrgrav_solver* s) { delete s; }

}  // extern "C"
