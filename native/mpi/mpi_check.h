/// \file mpi_check.h
/// \brief MPI_CHECK: turns a failed MPI call into a Status naming the call, file, line and MPI's message.
/// Include only in files compiled with MPI.
#pragma once
#include <mpi.h>

#include <string>

#include "core/status.h"

namespace amrgrav {

/// amrgrav's own communicator (a duplicate of MPI_COMM_WORLD, so its messages never meet the caller's).
MPI_Comm amrgravComm();

inline Status mpiStatus(int rc, const char* call, const char* file, int line) {
  if (rc == MPI_SUCCESS) return Status::success();
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return Status::error(ErrorCode::Internal, std::string(call) + " failed at " + file + ":" + std::to_string(line) +
                                                ": " + std::string(text, len));
}

}  // namespace amrgrav

#define MPI_CHECK(call)                                                               \
  do {                                                                                \
    ::amrgrav::Status mpiCheckStatus_ = ::amrgrav::mpiStatus((call), #call, __FILE__, __LINE__); \
    if (!mpiCheckStatus_.ok()) return mpiCheckStatus_;                                \
  } while (0)
