/// \file world.cpp
/// \brief The MPI world for the front ends (world.h) over mpi/.
#include "api/world.h"

#include <mutex>

#include "mpi/agreement.h"
#include "mpi/distributed_solve.h"
#include "mpi/mpi_world.h"

namespace amrgrav {
namespace api {

World world() {
  const MpiWorld w = mpiWorld();
  World o;
  o.built = w.built;
  o.active = w.active;
  o.rank = w.rank;
  o.size = w.size;
  o.reason = w.reason;
  return o;
}

Status initWorld(bool force) { return initMpiWorld(force); }

void finalizeWorld() { finalizeMpiWorld(); }

void abortWorld(const std::string& message, int code) { abortMpiWorld(message, code); }

int nodeLocalRank() { return ::amrgrav::nodeLocalRank(); }

int deviceForLocalRank(int localRank, int deviceCount) { return ::amrgrav::deviceForLocalRank(localRank, deviceCount); }

Status gatherToRoot(const double* local, std::size_t n, std::vector<double>& out) {
  std::lock_guard<std::mutex> lock(mpiLock());
  if (mpiWorld().active) return ::amrgrav::gatherToRoot(local, n, out);
  out.assign(local, local + n);
  return Status::success();
}

Status failDistributedSolve(const Status& why) { return ::amrgrav::failDistributedSolve(why); }

Status dupCommunicator(int fortranHandle, int* dupHandle, int* size) {
  return dupCallerCommunicator(fortranHandle, dupHandle, size);
}

void freeCommunicator(int dupHandle) { freeCallerCommunicator(dupHandle); }

CommunicatorScope::CommunicatorScope(int dupHandle) : scope_(new ScopedCommunicator(dupHandle)) {}

CommunicatorScope::~CommunicatorScope() { delete static_cast<ScopedCommunicator*>(scope_); }

}  // namespace api
}  // namespace amrgrav
