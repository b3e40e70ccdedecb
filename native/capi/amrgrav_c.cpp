/// \file amrgrav_c.cpp
/// \brief The C API (native/include/amrgrav.h) over the same session, backends and backend policy as the Node
/// binding (api/session.h). Thin: options and arrays in, Status out as a code plus a message; no exception crosses
/// the C boundary.
#include "amrgrav.h"

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>

#include "api/ewald.h"
#include "api/session.h"
#include "api/world.h"
#include "core/thread_pool.h"
#include "core/validate.h"

using namespace amrgrav;

struct amrgrav_solver {
  SolveOptions options;
  api::BackendRequest requested = api::BackendRequest::Auto;
  api::BackendChoice choice;  ///< the policy's (distributed: a collective over the caller's MPI world)
  api::Session session;       ///< this solver's backends (the GPU's keeps its device buffers between steps)
  int ran = AMRGRAV_BACKEND_CPU;
  SolveStats stats;
  std::size_t cells = 0;  ///< of the last successful computation
  std::string error;
  std::string warning;                ///< of the last call that succeeded (amrgrav_last_warning)
  bool requestedDistributed = false;  ///< options.distributed was set (whatever the world's size)
  bool hasComm = false;               ///< amrgrav_set_communicator gave a communicator (its duplicate's Fortran handle)
  int comm = 0;
};

namespace {

/// The message of the last failure on this thread that had no solver to keep it: amrgrav_create, or any call
/// given a NULL solver (amrgrav_last_error(NULL)).
thread_local std::string threadError;
/// The warnings of the last amrgrav_create on this thread (amrgrav_last_warning(NULL)).
thread_local std::string threadWarning;

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
  if (o.struct_size >= offsetof(amrgrav_options, walk) + sizeof(int) && o.walk != 0 && o.walk != 1)
    return Status::error(ErrorCode::InvalidOption, "option walk must be 0 (box) or 1 (vote), got " + std::to_string(o.walk));
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
  if (o.struct_size >= offsetof(amrgrav_options, ewald_expansion) + sizeof(int))
    s.ewaldExpansion = o.ewald_expansion != 0;
  if (o.struct_size >= offsetof(amrgrav_options, walk) + sizeof(int))
    s.walk = o.walk == 1 ? WalkKind::Vote : WalkKind::Box;
  if (o.struct_size >= offsetof(amrgrav_options, fmm_tolerance) + sizeof(double)) {
    if (o.method != 0 && o.method != 1)
      return Status::error(ErrorCode::InvalidOption, "option method must be 0 (tree) or 1 (fmm), got " +
                                                         std::to_string(o.method));
    s.method = o.method == 1 ? SolveMethod::Fmm : SolveMethod::Tree;
    s.fmmOrder = o.fmm_order;
    s.fmmTheta = o.fmm_theta;
    s.fmmTolerance = o.fmm_tolerance;
  }
  if (o.struct_size >= offsetof(amrgrav_options, softening) + sizeof(int)) {
    if (o.softening != 0 && o.softening != 1)
      return Status::error(ErrorCode::InvalidOption, "option softening must be 0 (spline) or 1 (plummer), got " +
                                                         std::to_string(o.softening));
    s.softening = o.softening == 1 ? SofteningKernel::Plummer : SofteningKernel::Spline;
  }
  if (o.struct_size >= offsetof(amrgrav_options, fmm_accel_tolerance) + sizeof(double))
    s.fmmAccelTolerance = o.fmm_accel_tolerance;
  return validateOptions(s);
}

/// What threads = 0 means: $OMP_NUM_THREADS's first number when set (a host code's OpenMP setting: amrgrav's
/// threads then do not outnumber the cores the host gave its own), else the hardware threads. A malformed value is
/// ignored with a warning.
int defaultThreads(std::string* warning) {
  const char* env = std::getenv("OMP_NUM_THREADS");
  if (env && *env) {
    char* end = nullptr;
    const long v = std::strtol(env, &end, 10);
    while (end && (*end == ' ' || *end == '\t')) ++end;
    if (end != env && v >= 1 && v <= 4096 && (*end == '\0' || *end == ',')) return int(v);
    if (warning)
      *warning = std::string("OMP_NUM_THREADS='") + env + "' is not a positive integer (at most 4096): threads = 0 "
                 "uses all " + std::to_string(resolveThreadCount(0)) + " hardware threads";
  }
  return resolveThreadCount(0);
}

/// The checks amrgrav_create makes beyond the options' ranges, so that nothing the options decide fails first at a
/// computation: the periodic box's shape (aspect ratio, Ewald table size: api/ewald.h). Also resolves threads = 0.
Status checkAtCreate(SolveOptions& s, std::string& warning) {
  if (s.threads == 0) s.threads = defaultThreads(&warning);
  return api::checkPeriodicBox(s);
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
  o->ewald_expansion = d.ewaldExpansion ? 1 : 0;
  o->walk = static_cast<int>(d.walk);
  o->method = static_cast<int>(d.method);
  o->fmm_order = d.fmmOrder;
  o->fmm_theta = d.fmmTheta;
  o->fmm_tolerance = d.fmmTolerance;
  o->softening = static_cast<int>(d.softening);
  o->fmm_accel_tolerance = d.fmmAccelTolerance;
}

amrgrav_status amrgrav_create(const amrgrav_options* options, amrgrav_solver** out) {
  if (out) *out = nullptr;
  return guarded(threadError, [&]() -> Status {
    if (!options || !out) return Status::error(ErrorCode::InvalidInput, "amrgrav_create: options and solver must not be NULL");
    auto s = std::make_unique<amrgrav_solver>();
    threadWarning.clear();
    Status st = readOptions(*options, s->options);
    if (!st.ok()) return st;
    if (!(st = checkAtCreate(s->options, s->warning)).ok()) return st;
    threadWarning = s->warning;
    bool distributed = false;
    if (options->struct_size >= offsetof(amrgrav_options, distributed) + sizeof(int) && options->distributed) {
      st = api::initWorld(true);  // uses the caller's MPI (MPI_COMM_WORLD) when it initialised MPI already
      if (!st.ok()) return st;
      s->requestedDistributed = true;
      distributed = api::world().size > 1;
    }
    // api/'s policy: AUTO is CUDA when usable; distributed, each rank's share on its GPU (CUDA, or AUTO where this
    // rank has one), and a rank without a usable GPU fails in the solve's agreement, with every other rank
    const api::BackendRequest request = options->backend == AMRGRAV_BACKEND_CUDA  ? api::BackendRequest::Cuda
                                        : options->backend == AMRGRAV_BACKEND_CPU ? api::BackendRequest::Cpu
                                                                                  : api::BackendRequest::Auto;
    s->requested = request;
    st = api::chooseBackend(request, distributed, "CUDA", s->choice);
    if (!st.ok()) return st;
    if (!(st = api::fitMethod(s->options, s->choice)).ok()) return st;  // method 'fmm': the reason over ranks
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
    s->warning.clear();
    // collective when distributed: a rank with no cells still takes part
    if (!s->choice.distributed && n == 0) {
      s->stats = SolveStats{};
      s->cells = 0;
      return Status::success();
    }
    // AUTO: too little GPU memory for this input, and the CPU solves it (the GPU is tried again next call)
    api::SolveReport report;
    std::unique_ptr<api::CommunicatorScope> scope;  // amrgrav_set_communicator's communicator, else the world
    if (s->choice.distributed && s->hasComm) scope = std::make_unique<api::CommunicatorScope>(s->comm);
    const Status st = s->session.solve(api::Method::Tree, s->choice, cells, s->options, r, report);
    if (st.ok()) {
      s->stats = r.stats;
      s->cells = n;
      s->ran = report.ran == api::BackendKind::Cuda ? AMRGRAV_BACKEND_CUDA : AMRGRAV_BACKEND_CPU;
      s->warning = r.stats.ewaldCacheWarning;
      if (!report.warning.empty()) s->warning += (s->warning.empty() ? "" : "\n") + report.warning;
    }
    return st;
  });
}

void amrgrav_default_blocks(amrgrav_blocks* b) {
  if (!b) return;
  *b = amrgrav_blocks{};
  b->struct_size = sizeof(amrgrav_blocks);
  b->nxb = b->nyb = b->nzb = 8;
  b->dtype = AMRGRAV_FLOAT64;
  b->var_stride = 1;
}

namespace {

/// The C struct as core/blocks.h's view (the first version's struct is the whole struct).
Status readBlocks(const amrgrav_blocks* b, bool device, void* stream, BlocksView& v) {
  if (!b) return Status::error(ErrorCode::InvalidInput, "blocks must not be NULL");
  if (b->struct_size != sizeof(amrgrav_blocks))
    return Status::error(ErrorCode::InvalidOption, "amrgrav_blocks.struct_size is " + std::to_string(b->struct_size) +
                                                       ", expected " + std::to_string(sizeof(amrgrav_blocks)) +
                                                       " (fill the struct with amrgrav_default_blocks)");
  if (b->dtype != AMRGRAV_FLOAT64 && b->dtype != AMRGRAV_FLOAT32)
    return Status::error(ErrorCode::InvalidOption, "amrgrav_blocks.dtype must be 0 (AMRGRAV_FLOAT64) or 1 "
                                                   "(AMRGRAV_FLOAT32), got " + std::to_string(b->dtype));
  v = BlocksView{};
  v.nBlocks = b->n_blocks;
  v.nxb = b->nxb;
  v.nyb = b->nyb;
  v.nzb = b->nzb;
  for (int d = 0; d < 3; ++d) v.guard[d] = b->guard[d];
  v.lo = b->lo;
  v.dx = b->dx;
  static_assert(sizeof(int) == sizeof(std::int32_t), "block_index is read as int32");
  v.blockIndex = reinterpret_cast<const std::int32_t*>(b->block_index);
  v.density = b->density;
  v.dtype = b->dtype == AMRGRAV_FLOAT32 ? DType::Float32 : DType::Float64;
  v.varStride = b->var_stride;
  v.blockStride = b->block_stride;
  v.deviceData = device;
  v.stream = stream;
  v.meshChanged = b->mesh_changed != 0;
  return Status::success();
}

amrgrav_status computeBlocks(amrgrav_solver* s, const char* what, const amrgrav_blocks* blocks, void* potential,
                             void* ax, void* ay, void* az, bool device, void* stream) {
  if (!s) {
    threadError = std::string(what) + ": the solver is NULL (did amrgrav_create fail?)";
    return AMRGRAV_INVALID_INPUT;
  }
  return guarded(s->error, [&]() -> Status {
    BlocksView v;
    AG_TRY(readBlocks(blocks, device, stream, v));
    const BlockOutputs out{potential, s->options.accelerations ? ax : nullptr, s->options.accelerations ? ay : nullptr,
                           s->options.accelerations ? az : nullptr};
    s->warning.clear();
    if (!s->choice.distributed && v.cells() == 0) {
      s->stats = SolveStats{};
      s->cells = 0;
      return Status::success();
    }
    api::SolveReport report;
    std::unique_ptr<api::CommunicatorScope> scope;
    if (s->choice.distributed && s->hasComm) scope = std::make_unique<api::CommunicatorScope>(s->comm);
    SolveResult r;
    const Status st = s->session.solveBlocks(s->choice, v, out, s->options, r, report);
    if (st.ok()) {
      s->stats = r.stats;
      s->cells = v.cells();
      s->ran = report.ran == api::BackendKind::Cuda ? AMRGRAV_BACKEND_CUDA : AMRGRAV_BACKEND_CPU;
      s->warning = r.stats.ewaldCacheWarning;
      if (!report.warning.empty()) s->warning += (s->warning.empty() ? "" : "\n") + report.warning;
    }
    return st;
  });
}

}  // namespace

amrgrav_status amrgrav_compute_blocks(amrgrav_solver* s, const amrgrav_blocks* blocks, void* potential, void* ax,
                                      void* ay, void* az) {
  return computeBlocks(s, "amrgrav_compute_blocks", blocks, potential, ax, ay, az, false, nullptr);
}

amrgrav_status amrgrav_compute_blocks_device(amrgrav_solver* s, const amrgrav_blocks* blocks, void* potential,
                                             void* ax, void* ay, void* az, void* cuda_stream) {
  return computeBlocks(s, "amrgrav_compute_blocks_device", blocks, potential, ax, ay, az, true, cuda_stream);
}

namespace {
/// The system structs as the header before particles had them (their fields end where the particles' begin).
constexpr std::size_t kSystemV1 = offsetof(amrgrav_system, n_particles);
constexpr std::size_t kSystemResultsV1 = offsetof(amrgrav_system_results, particle_potential);
}  // namespace

void amrgrav_default_system(amrgrav_system* sys) {
  if (!sys) return;
  *sys = amrgrav_system{};
  sys->struct_size = sizeof(amrgrav_system);
}

void amrgrav_default_system_results(amrgrav_system_results* r) {
  if (!r) return;
  *r = amrgrav_system_results{};
  r->struct_size = sizeof(amrgrav_system_results);
}

amrgrav_status amrgrav_solve_system(amrgrav_solver* s, const amrgrav_system* sys, const amrgrav_system_results* res) {
  if (!s) {
    threadError = "amrgrav_solve_system: the solver is NULL (did amrgrav_create fail?)";
    return AMRGRAV_INVALID_INPUT;
  }
  return guarded(s->error, [&]() -> Status {
    if (!sys || !res)
      return Status::error(ErrorCode::InvalidInput, "amrgrav_solve_system: system and results must not be NULL");
    // the structs before particles end where the particles' fields begin: such callers have no particles
    const bool sysHasParticles = sys->struct_size == sizeof(amrgrav_system);
    if (!sysHasParticles && sys->struct_size != kSystemV1)
      return Status::error(ErrorCode::InvalidOption, "amrgrav_system.struct_size is " +
                                                         std::to_string(sys->struct_size) + ", expected " +
                                                         std::to_string(sizeof(amrgrav_system)) +
                                                         " (fill the struct with amrgrav_default_system)");
    const bool resHasParticles = res->struct_size == sizeof(amrgrav_system_results);
    if (!resHasParticles && res->struct_size != kSystemResultsV1)
      return Status::error(ErrorCode::InvalidOption, "amrgrav_system_results.struct_size is " +
                                                         std::to_string(res->struct_size) + ", expected " +
                                                         std::to_string(sizeof(amrgrav_system_results)) +
                                                         " (fill the struct with amrgrav_default_system_results)");
    const std::size_t np = sysHasParticles ? sys->n_particles : 0;
    if (np > 0 && !resHasParticles)
      return Status::error(ErrorCode::InvalidOption, "amrgrav_system has " + std::to_string(np) + " particles but "
                                                     "amrgrav_system_results is the older struct without the "
                                                     "particles' results (fill it with amrgrav_default_system_results)");
    const bool accel = s->options.accelerations;
    const std::size_t nc = sys->targets ? sys->n_targets : sys->n_cells;
    if (sys->n_cells > 0 && (!sys->x || !sys->y || !sys->z || !sys->mass || !sys->size))
      return Status::error(ErrorCode::InvalidInput, "system: x, y, z, mass and size must not be NULL");
    if (sys->n_probes > 0 && (!sys->probe_x || !sys->probe_y || !sys->probe_z))
      return Status::error(ErrorCode::InvalidInput, "system: probe_x, probe_y and probe_z must not be NULL");
    if (np > 0 && (!sys->particle_x || !sys->particle_y || !sys->particle_z || !sys->particle_mass))
      return Status::error(ErrorCode::InvalidInput, "system: particle_x, particle_y, particle_z and particle_mass must "
                                                    "not be NULL");
    if (np > 0 && (!res->particle_potential || (accel && (!res->particle_ax || !res->particle_ay || !res->particle_az))))
      return Status::error(ErrorCode::InvalidInput, accel ? "results: particle_potential, particle_ax, particle_ay and "
                                                            "particle_az must not be NULL"
                                                          : "results: particle_potential must not be NULL");
    if (nc > 0 && (!res->potential || (accel && (!res->ax || !res->ay || !res->az))))
      return Status::error(ErrorCode::InvalidInput, accel ? "results: potential, ax, ay and az must not be NULL"
                                                          : "results: potential must not be NULL");
    if (sys->n_probes > 0 && (!res->probe_potential || (accel && (!res->probe_ax || !res->probe_ay || !res->probe_az))))
      return Status::error(ErrorCode::InvalidInput, accel ? "results: probe_potential, probe_ax, probe_ay and probe_az "
                                                            "must not be NULL"
                                                          : "results: probe_potential must not be NULL");
    static_assert(sizeof(unsigned int) == sizeof(std::uint32_t), "targets are read as uint32");
    SystemView v;
    v.cells = CellsView{sys->x, sys->y, sys->z, sys->mass, sys->size, sys->n_cells};
    v.probes = PointsView{sys->probe_x, sys->probe_y, sys->probe_z, sys->n_probes};
    if (np > 0) {
      v.particles.x = sys->particle_x;
      v.particles.y = sys->particle_y;
      v.particles.z = sys->particle_z;
      v.particles.mass = sys->particle_mass;
      v.particles.softening = sys->particle_softening;
      v.particles.softeningValue = sys->softening;
      v.particles.n = np;
    }
    if (sys->targets) {
      v.targets = reinterpret_cast<const std::uint32_t*>(sys->targets);
      v.targetCount = sys->n_targets;
    } else if (sys->n_targets > 0) {
      return Status::error(ErrorCode::InvalidInput, "system: n_targets is " + std::to_string(sys->n_targets) +
                                                        " but targets is NULL");
    }
    SystemResult r;
    r.cells.into = ResultTargets{nc > 0 ? res->potential : nullptr, accel ? res->ax : nullptr,
                                 accel ? res->ay : nullptr, accel ? res->az : nullptr};
    r.probes.into = ResultTargets{sys->n_probes > 0 ? res->probe_potential : nullptr, accel ? res->probe_ax : nullptr,
                                  accel ? res->probe_ay : nullptr, accel ? res->probe_az : nullptr};
    if (np > 0)
      r.particles.into = ResultTargets{res->particle_potential, accel ? res->particle_ax : nullptr,
                                       accel ? res->particle_ay : nullptr, accel ? res->particle_az : nullptr};
    s->warning.clear();
    if (!s->choice.distributed && sys->n_cells == 0 && sys->n_probes == 0 && np == 0) {
      s->stats = SolveStats{};
      s->cells = 0;
      return Status::success();
    }
    api::SolveReport report;
    std::unique_ptr<api::CommunicatorScope> scope;
    if (s->choice.distributed && s->hasComm) scope = std::make_unique<api::CommunicatorScope>(s->comm);
    const Status st = s->session.solveSystem(sys->direct ? api::Method::Direct : api::Method::Tree, s->choice, v,
                                             s->options, r, report);
    if (st.ok()) {
      s->stats = r.stats;
      s->cells = r.system.targets;
      s->ran = report.ran == api::BackendKind::Cuda ? AMRGRAV_BACKEND_CUDA : AMRGRAV_BACKEND_CPU;
      s->warning = r.stats.ewaldCacheWarning;
      if (!report.warning.empty()) s->warning += (s->warning.empty() ? "" : "\n") + report.warning;
    }
    return st;
  });
}

int amrgrav_tree_reused(const amrgrav_solver* s) { return s ? (s->stats.treeReused ? 1 : 0) : -1; }

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

void amrgrav_destroy(amrgrav_solver* s) {
  if (s && s->hasComm) api::freeCommunicator(s->comm);
  delete s;
}

// ---- version, build, warnings and the caller's communicator (issue #19) ----

#ifndef AMRGRAV_VERSION_STRING
#error "AMRGRAV_VERSION_STRING comes from package.json's version through CMakeLists.txt"
#endif

const char* amrgrav_version(void) { return AMRGRAV_VERSION_STRING; }

amrgrav_status amrgrav_get_build_info(amrgrav_build_info* info) {
  if (!info || info->struct_size < sizeof(size_t)) {
    threadError = "amrgrav_get_build_info: info is NULL or its struct_size is not set (sizeof(amrgrav_build_info))";
    return AMRGRAV_INVALID_INPUT;
  }
  amrgrav_build_info b{};
  b.struct_size = info->struct_size;
  const api::Features f = api::features();
  b.cuda_built = f.cudaBuilt ? 1 : 0;
  b.cuda_devices = f.cudaDevices;
  b.cuda_usable = f.cudaUsable ? 1 : 0;
  b.mpi_built = f.mpiBuilt ? 1 : 0;
  b.default_threads = defaultThreads(nullptr);
  std::memcpy(info, &b, std::min(info->struct_size, sizeof b));  // an older caller's smaller struct: its fields only
  return AMRGRAV_OK;
}

const char* amrgrav_last_warning(const amrgrav_solver* s) { return s ? s->warning.c_str() : threadWarning.c_str(); }

amrgrav_status amrgrav_set_communicator(amrgrav_solver* s, int fortran_comm) {
  if (!s) {
    threadError = "amrgrav_set_communicator: the solver is NULL (did amrgrav_create fail?)";
    return AMRGRAV_INVALID_INPUT;
  }
  return guarded(s->error, [&]() -> Status {
    if (!s->requestedDistributed)
      return Status::error(ErrorCode::InvalidOption, "amrgrav_set_communicator: the solver was created without "
                                                     "options.distributed (a communicator is for distributed solves)");
    int dup = 0, size = 1;
    Status st = api::dupCommunicator(fortran_comm, &dup, &size);
    if (!st.ok()) return st;
    if (s->hasComm) api::freeCommunicator(s->comm);
    s->hasComm = true;
    s->comm = dup;
    // as amrgrav_create decides it for the world: a collective only over several ranks
    api::BackendChoice choice;
    if (!(st = api::chooseBackend(s->requested, size > 1, "CUDA", choice)).ok()) return st;
    if (!choice.distributed && choice.backend == api::BackendKind::Cuda && s->options.groupSize > 64)
      return Status::error(ErrorCode::InvalidOption, "group_size must be at most 64 on the CUDA backend, got " +
                                                         std::to_string(s->options.groupSize));
    s->choice = choice;
    s->ran = !choice.distributed && choice.backend == api::BackendKind::Cuda ? AMRGRAV_BACKEND_CUDA : AMRGRAV_BACKEND_CPU;
    return Status::success();
  });
}

}  // extern "C"
