/// \file world.h
/// \brief The MPI world as the front ends see it (binding/mpi_exports.cc, capi/): the calls of mpi/ they need,
/// behind api/ so that they include no mpi/ header. Without MPI in the build: a world of one rank.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "core/status.h"

namespace amrgrav {
namespace api {

struct World {
  bool built = false;   ///< this build has MPI
  bool active = false;  ///< MPI is initialised in this process
  int rank = 0;
  int size = 1;
  std::string reason;   ///< why MPI is (not) active
};

/// The current world (rank 0 of 1 when MPI is not active).
World world();

/// Initialises MPI if `force` or if launched by mpirun (uses the caller's MPI when it initialised MPI already);
/// idempotent. Call on the main thread.
Status initWorld(bool force);

/// Finalises MPI if this process initialised it; idempotent.
void finalizeWorld();

/// Prints `message` (prefixed with the rank) to stderr and ends every rank of the job.
[[noreturn]] void abortWorld(const std::string& message, int code = 1);

/// This process's rank among the ranks on its node (may be collective without a launcher's variables).
int nodeLocalRank();

/// The GPU a rank with this node-local rank uses among `deviceCount` (its local rank modulo the count).
int deviceForLocalRank(int localRank, int deviceCount);

/// Every rank's values in rank order on rank 0 (`out` empty elsewhere; the values themselves when MPI is not
/// active). Collective, under amrgrav's MPI lock.
Status gatherToRoot(const double* local, std::size_t n, std::vector<double>& out);

/// For a rank that failed before it could call the distributed solve: takes part in the solve's agreement with
/// `why`, so that every rank returns the lowest failing rank's error (`why` itself in a world of one rank).
Status failDistributedSolve(const Status& why);

/// The caller's communicator (amrgrav_set_communicator): a duplicate of the communicator whose Fortran handle is
/// `fortranHandle` (MPI_Comm_c2f of a C one), its handle and size (mpi/mpi_world.h dupCallerCommunicator).
Status dupCommunicator(int fortranHandle, int* dupHandle, int* size);
/// Frees a duplicate of dupCommunicator (nothing once MPI is finalised).
void freeCommunicator(int dupHandle);

/// While alive, amrgrav's MPI calls on this thread use the duplicate `dupHandle` instead of the world.
class CommunicatorScope {
 public:
  explicit CommunicatorScope(int dupHandle);
  ~CommunicatorScope();
  CommunicatorScope(const CommunicatorScope&) = delete;
  CommunicatorScope& operator=(const CommunicatorScope&) = delete;

 private:
  void* scope_;  ///< the mpi/ scope it holds (opaque: front ends include no mpi/ header)
};

}  // namespace api
}  // namespace amrgrav
