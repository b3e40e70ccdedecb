/// \file agreement.cpp
/// \brief Status agreement, global bounds and the gather to rank 0 (see agreement.h).
#include "mpi/agreement.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "mpi/mpi_world.h"

#if defined(AMRGRAV_HAVE_MPI)
#include "mpi/mpi_check.h"
#endif

namespace amrgrav {

#if defined(AMRGRAV_HAVE_MPI)
namespace {
constexpr int kMessageBytes = 1024;
}

Status agreeToProceed(const Status& local, double lo[3], double hi[3]) {
  MPI_Comm comm = amrgravComm();
  int rank = 0, size = 1;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MPI_CHECK(MPI_Comm_size(comm, &size));
  // one MIN reduction carries the bounds (hi negated) and the lowest failing rank (size when none fails)
  double v[7] = {lo[0], lo[1], lo[2], -hi[0], -hi[1], -hi[2], local.ok() ? double(size) : double(rank)};
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, v, 7, MPI_DOUBLE, MPI_MIN, comm));
  for (int d = 0; d < 3; ++d) { lo[d] = v[d]; hi[d] = -v[3 + d]; }
  const int failed = int(v[6]);
  if (failed >= size) return Status::success();
  char msg[kMessageBytes] = {0};
  if (rank == failed) {
    msg[0] = char(int(local.code));
    std::strncpy(msg + 1, local.message.c_str(), kMessageBytes - 2);
  }
  MPI_CHECK(MPI_Bcast(msg, kMessageBytes, MPI_CHAR, failed, comm));
  msg[kMessageBytes - 1] = 0;
  return Status::error(ErrorCode(int(msg[0])), "rank " + std::to_string(failed) + " of " + std::to_string(size) +
                                                   ": " + std::string(msg + 1));
}

Status gatherToRoot(const double* local, std::size_t n, std::vector<double>& out) {
  MPI_Comm comm = amrgravComm();
  int rank = 0, size = 1;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MPI_CHECK(MPI_Comm_size(comm, &size));
  if (n > std::size_t(INT32_MAX)) abortMpiWorld("gather of more than 2^31 values from one rank");
  int mine = int(n);
  std::vector<int> counts(rank == 0 ? size : 0), displs(rank == 0 ? size : 0);
  MPI_CHECK(MPI_Gather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm));
  out.clear();
  if (rank == 0) {
    long long total = 0;
    for (int r = 0; r < size; ++r) { displs[r] = int(total); total += counts[r]; }
    if (total > INT32_MAX) abortMpiWorld("gather of more than 2^31 values to rank 0");  // the others are in Gatherv
    out.resize(std::size_t(total));
  }
  MPI_CHECK(MPI_Gatherv(local, mine, MPI_DOUBLE, out.data(), counts.data(), displs.data(), MPI_DOUBLE, 0, comm));
  return Status::success();
}

#else  // a build without MPI is a world of one rank

Status agreeToProceed(const Status& local, double*, double*) { return local; }

Status gatherToRoot(const double* local, std::size_t n, std::vector<double>& out) {
  out.assign(local, local + n);
  return Status::success();
}

#endif

}  // namespace amrgrav
