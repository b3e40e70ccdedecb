/// \file particle_gather.cpp
/// \brief The particles' allgather of a distributed system solve (particle_gather.h).
#include "mpi/particle_gather.h"

#include <climits>
#include <string>

#include "mpi/mpi_check.h"

namespace amrgrav {

ParticlesView GatheredParticles::view() const {
  ParticlesView p;
  p.x = x.data();
  p.y = y.data();
  p.z = z.data();
  p.mass = mass.data();
  p.softening = softening.data();
  p.n = x.size();
  return p;
}

Status gatherParticles(const ParticlesView& mine, bool takesParticles, GatheredParticles& out) {
  out = GatheredParticles{};
  MPI_Comm comm = amrgravComm();
  int rank = 0, size = 1;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MPI_CHECK(MPI_Comm_size(comm, &size));
  // every rank's count and whether its engine takes particles: every rank then decides the same
  double me[2] = {double(mine.n), takesParticles ? 1.0 : 0.0};
  std::vector<double> table(2 * std::size_t(size));
  MPI_CHECK(MPI_Allgather(me, 2, MPI_DOUBLE, table.data(), 2, MPI_DOUBLE, comm));
  constexpr int kWords = 5;  // x, y, z, mass, softening per particle
  double total = 0;
  int refusing = -1;
  for (int r = 0; r < size; ++r) {
    total += table[2 * r];
    if (table[2 * r + 1] == 0.0 && refusing < 0) refusing = r;
  }
  if (total == 0) return Status::success();
  if (refusing >= 0)
    return Status::error(ErrorCode::InvalidOption,
                         "particles in a distributed solve need every rank on the CPU (backend 'cpu'): rank " +
                             std::to_string(refusing) + " runs on a GPU, which does not take particles yet (issue "
                             "#18)");
  if (total * kWords > double(INT_MAX))
    return Status::error(ErrorCode::InvalidInput,
                         "particles in a distributed solve: at most " + std::to_string(INT_MAX / kWords) +
                             " over all ranks (they are gathered on every rank; got " +
                             std::to_string(static_cast<long long>(total)) + ")");
  std::vector<int> counts(size), displs(size);
  int at = 0;
  for (int r = 0; r < size; ++r) {
    counts[r] = kWords * int(table[2 * r]);
    displs[r] = at;
    if (r == rank) out.ownBegin = std::size_t(at / kWords);
    at += counts[r];
  }
  out.ownCount = mine.n;
  std::vector<double> send(kWords * mine.n), all(static_cast<std::size_t>(at));
  for (std::size_t i = 0; i < mine.n; ++i) {
    double* w = &send[kWords * i];
    w[0] = mine.x[i];
    w[1] = mine.y[i];
    w[2] = mine.z[i];
    w[3] = mine.mass[i];
    w[4] = mine.softeningOf(i);
  }
  MPI_CHECK(MPI_Allgatherv(send.data(), kWords * int(mine.n), MPI_DOUBLE, all.data(), counts.data(),
                           displs.data(), MPI_DOUBLE, comm));
  const std::size_t n = std::size_t(at / kWords);
  std::vector<double>* to[kWords] = {&out.x, &out.y, &out.z, &out.mass, &out.softening};
  for (int k = 0; k < kWords; ++k) {
    to[k]->resize(n);
    for (std::size_t i = 0; i < n; ++i) (*to[k])[i] = all[kWords * i + k];
  }
  return Status::success();
}

}  // namespace amrgrav
