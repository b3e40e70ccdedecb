/// \file mpi_world.cpp
/// \brief MPI initialisation and finalisation inside a Node process (see mpi_world.h).
#include "mpi/mpi_world.h"

#include <cstdio>
#include <cstdlib>

#if defined(AMRGRAV_HAVE_MPI)
#include <dlfcn.h>

#include "mpi/mpi_check.h"
#endif

namespace amrgrav {

bool launchedByMpiLauncher() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"})
    if (std::getenv(v) != nullptr) return true;
  return false;
}

std::mutex& mpiLock() {
  static std::mutex m;
  return m;
}

namespace {
int gLocalRank = 0;
}  // namespace

int nodeLocalRank() { return gLocalRank; }

#if defined(AMRGRAV_HAVE_MPI)

namespace {

/// The node-local rank the launcher exported, or -1.
int localRankFromEnvironment() {
  for (const char* v : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMIX_LOCAL_RANK"}) {
    const char* s = std::getenv(v);
    if (s == nullptr || *s == '\0') continue;
    char* end = nullptr;
    const long r = std::strtol(s, &end, 10);
    if (end != s && *end == '\0' && r >= 0 && r < (1l << 30)) return int(r);
  }
  return -1;
}

MPI_Comm gComm = MPI_COMM_NULL;
bool gInitialisedHere = false;
std::string gReason = "not started by mpirun (set AMRGRAV_MPI=1 or call mpiInit() to force)";
}  // namespace

/// The communicator of a ScopedCommunicator on this thread, if any.
thread_local MPI_Comm tComm = MPI_COMM_NULL;

MPI_Comm amrgravComm() { return tComm != MPI_COMM_NULL ? tComm : gComm; }

Status dupCallerCommunicator(int fortranHandle, int* dupHandle, int* size) {
  int initialised = 0, finalised = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalised);
  if (!initialised || finalised)
    return Status::error(ErrorCode::InvalidInput, "a communicator needs MPI initialised (MPI_Init before amrgrav_create) "
                                                  "and not yet finalised");
  const MPI_Comm c = MPI_Comm_f2c(MPI_Fint(fortranHandle));
  if (c == MPI_COMM_NULL)
    return Status::error(ErrorCode::InvalidInput, "the communicator is MPI_COMM_NULL (Fortran handle " +
                                                      std::to_string(fortranHandle) + ")");
  std::lock_guard<std::mutex> lock(mpiLock());
  MPI_Comm dup = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_dup(c, &dup));
  MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
  MPI_CHECK(MPI_Comm_size(dup, size));
  *dupHandle = int(MPI_Comm_c2f(dup));
  return Status::success();
}

void freeCallerCommunicator(int dupHandle) {
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (finalised) return;
  MPI_Comm c = MPI_Comm_f2c(MPI_Fint(dupHandle));
  if (c == MPI_COMM_NULL) return;
  std::lock_guard<std::mutex> lock(mpiLock());
  MPI_Comm_free(&c);
}

ScopedCommunicator::ScopedCommunicator(int dupHandle) {
  const MPI_Comm c = MPI_Comm_f2c(MPI_Fint(dupHandle));
  if (c == MPI_COMM_NULL) return;
  tComm = c;
  set_ = true;
}

ScopedCommunicator::~ScopedCommunicator() {
  if (set_) tComm = MPI_COMM_NULL;
}

Status initMpiWorld(bool force) {
  if (gComm != MPI_COMM_NULL) return Status::success();
  if (!force && !launchedByMpiLauncher()) return Status::success();
  int already = 0;
  MPI_Initialized(&already);
  if (!already) {
    // Node loads the addon with RTLD_LOCAL, so Open MPI's plugins (dlopen'ed later) would not see libmpi's symbols;
    // promoting libmpi to the global namespace first lets them resolve.
    for (const char* lib : {"libmpi.so.40", "libmpi.so.12", "libmpi.so"})
      if (dlopen(lib, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD) || dlopen(lib, RTLD_NOW | RTLD_GLOBAL)) break;
    int provided = 0;
    MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided));
    gInitialisedHere = true;
    if (provided < MPI_THREAD_SERIALIZED) {
      MPI_Finalize();
      gInitialisedHere = false;
      return Status::error(ErrorCode::Internal, "the MPI library provides thread level " + std::to_string(provided) +
                                                    "; amrgrav needs MPI_THREAD_SERIALIZED (solves run on worker threads)");
    }
    std::atexit(finalizeMpiWorld);
  }
  MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &gComm));
  // errors come back as codes (MPI_CHECK), never as MPI's default abort
  MPI_Comm_set_errhandler(gComm, MPI_ERRORS_RETURN);
  // the node-local rank (the GPU choice) once, here, where every rank is: the split is a collective
  gLocalRank = localRankFromEnvironment();
  if (gLocalRank < 0) {
    MPI_Comm node = MPI_COMM_NULL;
    gLocalRank = 0;
    if (MPI_Comm_split_type(gComm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
      MPI_Comm_rank(node, &gLocalRank);
      MPI_Comm_free(&node);
    }
  }
  gReason = force ? "initialised on request" : "started by an MPI launcher";
  return Status::success();
}

MpiWorld mpiWorld() {
  MpiWorld w;
  w.built = true;
  w.reason = gReason;
  const MPI_Comm c = amrgravComm();
  if (c == MPI_COMM_NULL) return w;
  w.active = true;
  MPI_Comm_rank(c, &w.rank);
  MPI_Comm_size(c, &w.size);
  return w;
}

void finalizeMpiWorld() {
  if (gComm == MPI_COMM_NULL) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) {
    MPI_Comm_free(&gComm);
    if (gInitialisedHere) MPI_Finalize();
  }
  gComm = MPI_COMM_NULL;
  gReason = "finalised";
}

void abortMpiWorld(const std::string& message, int code) {
  const MpiWorld w = mpiWorld();
  std::fprintf(stderr, "amrgrav: rank %d of %d: %s; aborting every rank\n", w.rank, w.size, message.c_str());
  std::fflush(stderr);
  MPI_Abort(w.active ? amrgravComm() : MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; this only satisfies [[noreturn]]
}

#else  // no MPI in this build

Status initMpiWorld(bool force) {
  if (force) return Status::error(ErrorCode::InvalidOption, "this build of amrgrav has no MPI (no MPI library was found at build time)");
  // each rank would silently solve its own cells alone
  if (launchedByMpiLauncher())
    return Status::error(ErrorCode::InvalidOption, "started by an MPI launcher, but this build of amrgrav has no MPI: "
                                                   "install an MPI library (apt-get install libopenmpi-dev) and rebuild "
                                                   "(npm run build:native), or run without mpirun");
  return Status::success();
}

MpiWorld mpiWorld() {
  MpiWorld w;
  w.reason = "this build has no MPI (no MPI library was found at build time)";
  return w;
}

void finalizeMpiWorld() {}

Status dupCallerCommunicator(int, int*, int*) {
  return Status::error(ErrorCode::InvalidOption, "this build of amrgrav has no MPI (no MPI library was found at build time)");
}

void freeCallerCommunicator(int) {}

ScopedCommunicator::ScopedCommunicator(int) {}

ScopedCommunicator::~ScopedCommunicator() {}

void abortMpiWorld(const std::string& message, int code) {
  std::fprintf(stderr, "amrgrav: %s\n", message.c_str());
  std::_Exit(code);
}

#endif

}  // namespace amrgrav
