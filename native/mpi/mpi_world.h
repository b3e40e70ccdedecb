/// \file mpi_world.h
/// \brief The process's MPI world: initialised when the process was started by mpirun (or when asked), finalised
/// at exit. Every MPI call of amrgrav goes through the communicator and the lock kept here. Without MPI at build
/// time these are stubs that report a world of one rank, so callers need no #ifdef.
#pragma once
#include <mutex>
#include <string>

#include "core/status.h"

namespace amrgrav {

struct MpiWorld {
  bool built = false;   ///< this build has MPI (AMRGRAV_HAVE_MPI)
  bool active = false;  ///< MPI is initialised in this process
  int rank = 0;
  int size = 1;
  std::string reason;   ///< why MPI is (not) active
};

/// True when an MPI launcher started this process (Open MPI's, PMIx or MPICH's Hydra environment variables).
bool launchedByMpiLauncher();

/// Initialises MPI (thread level SERIALIZED: solves run on worker threads, one at a time) if `force` or if
/// launched by mpirun; idempotent. Call on the main thread.
Status initMpiWorld(bool force);

/// The current world (rank 0 of 1 when MPI is not active).
MpiWorld mpiWorld();

/// Finalises MPI if this process initialised it; idempotent, also registered with atexit.
void finalizeMpiWorld();

/// Prints `message` (prefixed with the rank) to stderr and ends every rank of the job (MPI_Abort). The way out
/// of a failure after the ranks agreed to go ahead, where returning would leave the others waiting for ever.
[[noreturn]] void abortMpiWorld(const std::string& message, int code = 1);

/// This process's rank among the ranks on its node: OMPI_COMM_WORLD_LOCAL_RANK (Open MPI), MPI_LOCALRANKID
/// (MPICH's Hydra) or PMIX's, else from MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) (collective then); 0 without MPI.
int nodeLocalRank();

/// The GPU a rank uses: its node-local rank modulo the node's device count, so several ranks on one node spread
/// over its GPUs and share them when there are more ranks than GPUs. 0 when deviceCount <= 0.
inline int deviceForLocalRank(int localRank, int deviceCount) {
  if (deviceCount <= 0 || localRank < 0) return 0;
  return localRank % deviceCount;
}

/// Serialises amrgrav's use of its communicator between worker threads (a distributed solve holds it throughout).
std::mutex& mpiLock();

/// A communicator of the caller's (the C API's amrgrav_set_communicator), given by its Fortran handle (MPI_Fint:
/// MPI_Comm_c2f from C), duplicated so that amrgrav's messages never match the caller's. Collective over it; MPI
/// must be initialised (initMpiWorld). `*dupHandle` is the duplicate's Fortran handle, `*size` its size.
Status dupCallerCommunicator(int fortranHandle, int* dupHandle, int* size);
/// Frees a duplicate of dupCallerCommunicator (nothing once MPI is finalised).
void freeCallerCommunicator(int dupHandle);

/// While alive, amrgravComm() and mpiWorld() on this thread are those of a duplicate from dupCallerCommunicator
/// instead of the world's (a distributed solve makes its MPI calls on the calling thread). No-op without MPI.
class ScopedCommunicator {
 public:
  explicit ScopedCommunicator(int dupHandle);
  ~ScopedCommunicator();
  ScopedCommunicator(const ScopedCommunicator&) = delete;
  ScopedCommunicator& operator=(const ScopedCommunicator&) = delete;

 private:
  bool set_ = false;
};

}  // namespace amrgrav
