/// \file distributed_fmm.cpp
/// \brief The MPI collectives of a distributed FMM solve (see distributed_fmm.h).
#include "mpi/distributed_fmm.h"

#include <cstdint>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "mpi/mpi_world.h"

#if defined(AMRGRAV_HAVE_MPI)
#include "mpi/agreement.h"
#include "mpi/let_exchange.h"
#include "mpi/mpi_check.h"
#endif

namespace amrgrav {

#if defined(AMRGRAV_HAVE_MPI)
namespace {

/// An MPI failure after the first agreement: not every rank may know it, so the job ends.
void orAbort(const Status& st) {
  if (!st.ok()) abortMpiWorld(std::string(errorCodeName(st.code)) + ": " + st.message);
}

class MpiRankComm final : public RankComm {
 public:
  MpiRankComm() : comm_(amrgravComm()), world_(mpiWorld()) {}
  int rank() const override { return world_.rank; }
  int size() const override { return world_.size; }
  bool agreedFailure() const { return agreedFailure_; }

  Status agree(const Status& local, double lo[3], double hi[3], const SolveOptions& opt) override {
    const Status st = agreeToProceed(local, lo, hi, &opt);
    agreedFailure_ = !st.ok();
    return st;
  }
  Status sum(double* v, std::size_t n) override { return reduce(v, n, MPI_SUM); }
  Status max(double* v, std::size_t n) override { return reduce(v, n, MPI_MAX); }
  Status min(double* v, std::size_t n) override { return reduce(v, n, MPI_MIN); }
  Status allgather(const double* mine, std::size_t n, double* all) override {
    orAbort(mpiStatus(MPI_Allgather(mine, int(n), MPI_DOUBLE, all, int(n), MPI_DOUBLE, comm_), "MPI_Allgather",
                      __FILE__, __LINE__));
    return Status::success();
  }

  Status allgatherWords(const std::vector<std::uint64_t>& mine, std::vector<std::uint64_t>& all,
                        std::vector<std::size_t>& counts) override {
    unsigned long long n = mine.size();
    std::vector<unsigned long long> each(static_cast<std::size_t>(size()));
    orAbort(mpiStatus(MPI_Allgather(&n, 1, MPI_UNSIGNED_LONG_LONG, each.data(), 1, MPI_UNSIGNED_LONG_LONG, comm_),
                      "MPI_Allgather", __FILE__, __LINE__));
    std::vector<int> cnt(each.size()), displs(each.size());
    unsigned long long total = 0;
    counts.assign(each.size(), 0);
    for (std::size_t r = 0; r < each.size(); ++r) {
      counts[r] = std::size_t(each[r]);
      cnt[r] = int(each[r]);
      displs[r] = int(total);
      total += each[r];
    }
    if (total > INT32_MAX)  // every rank sees the same total: an error every rank returns (fmm_ranks.cpp agrees on it)
      return Status::error(ErrorCode::InvalidInput, "the distributed FMM's shared top would gather more than 2^31 "
                                                    "words (too many cells in nodes shared by several ranks)");
    all.assign(std::size_t(total), 0);
    orAbort(mpiStatus(MPI_Allgatherv(mine.data(), int(n), MPI_UINT64_T, all.data(), cnt.data(), displs.data(),
                                     MPI_UINT64_T, comm_),
                      "MPI_Allgatherv", __FILE__, __LINE__));
    return Status::success();
  }

  /// As the tree's driver (distributed_solve.cpp): the LETs sent as each is packed, the local work with messages
  /// moving between its pieces, then every LET in rank order (so the sums have a fixed order).
  Status exchange(const LetRound& round, DistributedStats& ds) override {
    static LetBuffers buffers;  // kept between solves (under the MPI lock)
    LetExchange ex(comm_, round.expect, buffers, LetExchange::kFmmTags);
    orAbort(ex.start());
    for (std::size_t k = 0; k < round.dests.size(); ++k) {
      PackedLet& let = ex.nextOutgoing();
      std::size_t nodes = 0, cells = 0;
      AG_TRY(round.pack(k, let, nodes, cells));
      ds.letNodesSent += nodes;
      ds.letCellsSent += cells;
      orAbort(ex.send(round.dests[k], let));
      orAbort(ex.progress());
    }
    const double walkStart = ex.now();
    AG_TRY(round.localWork([&]() { return ex.progress(); }));
    const double walkEnd = ex.now();
    double waited = 0;
    for (int r = 0; r < size(); ++r) {
      if (!round.expect[r]) continue;
      const double w0 = ex.now();
      const std::uint64_t* words = nullptr;
      std::size_t bytes = 0;
      orAbort(ex.receiveWords(r, words, bytes));
      waited += ex.now() - w0;
      AG_TRY(round.received(r, words, bytes));
    }
    const double w0 = ex.now();
    orAbort(ex.finish());
    waited += ex.now() - w0;
    exchangeStatsInto(ex.stats(), walkStart, walkEnd, ds);
    ds.secondsExchangeWait = waited;
    return Status::success();
  }

 private:
  Status reduce(double* v, std::size_t n, MPI_Op op) {
    orAbort(mpiStatus(MPI_Allreduce(MPI_IN_PLACE, v, int(n), MPI_DOUBLE, op, comm_), "MPI_Allreduce", __FILE__,
                      __LINE__));
    return Status::success();
  }

  MPI_Comm comm_;
  MpiWorld world_;
  bool agreedFailure_ = false;
};

}  // namespace
#endif

Status solveDistributedFmm(const RankSolve& solve, const CellsView& cells, const SolveOptions& opt,
                           SolveResult& out) {
#if defined(AMRGRAV_HAVE_MPI)
  if (mpiWorld().size > 1) {
    std::lock_guard<std::mutex> lock(mpiLock());
    try {
      MpiRankComm comm;
      const Status st = solve(comm, cells, opt, out);
      // an error every rank agreed on is returned; any other after the agreement leaves ranks waiting: the job ends
      if (!st.ok() && !comm.agreedFailure()) orAbort(st);
      return st;
    } catch (const std::bad_alloc&) {
      abortMpiWorld("host memory exhausted during the distributed FMM solve");
    } catch (const std::exception& e) {
      abortMpiWorld(std::string("distributed FMM solve: ") + e.what());
    }
  }
#endif
  (void)solve;
  (void)cells;
  (void)opt;
  (void)out;
  return Status::error(ErrorCode::Internal, "solveDistributedFmm needs an MPI world of more than one rank");
}

}  // namespace amrgrav
