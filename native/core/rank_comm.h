/// \file rank_comm.h
/// \brief The collectives a distributed FMM solve (cpu/fmm_ranks.h) needs, without MPI: the MPI driver
/// (mpi/distributed_fmm.h) implements them over amrgrav's communicator, so that the FMM's rank code includes no MPI
/// header and the MPI layer no FMM one.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/status.h"
#include "core/types.h"
#include "let/let.h"

namespace amrgrav {

/// One LET exchange: every LET sent as soon as it is packed, the local work done while they travel (progress moves
/// messages along), then the received LETs handed over in rank order.
struct LetRound {
  std::vector<int> dests;    ///< ranks to send a LET to, in this order
  std::vector<bool> expect;  ///< per rank: a LET comes from it
  /// The k-th LET (for dests[k]), with its node and cell counts.
  std::function<Status(std::size_t k, PackedLet& out, std::size_t& nodes, std::size_t& cells)> pack;
  std::function<Status(const std::function<Status()>& progress)> localWork;
  std::function<Status(int from, const std::uint64_t* words, std::size_t bytes)> received;
};

/// Collective over the ranks of one distributed solve: every rank calls the same methods in the same order.
class RankComm {
 public:
  virtual ~RankComm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Whether every rank's `local` is ok (else the lowest failing rank's error on every rank), with the global bounds
  /// (lo/hi in and out) and the options every rank must share compared (mpi/agreement.h agreeToProceed).
  virtual Status agree(const Status& local, double lo[3], double hi[3], const SolveOptions& opt) = 0;
  /// In place over every rank: sums, maxima, minima.
  virtual Status sum(double* v, std::size_t n) = 0;
  virtual Status max(double* v, std::size_t n) = 0;
  virtual Status min(double* v, std::size_t n) = 0;
  /// Every rank's n values, in rank order, into all (size() * n).
  virtual Status allgather(const double* mine, std::size_t n, double* all) = 0;
  /// Every rank's words (any number per rank), in rank order, into `all`, with each rank's count.
  virtual Status allgatherWords(const std::vector<std::uint64_t>& mine, std::vector<std::uint64_t>& all,
                                std::vector<std::size_t>& counts) = 0;
  /// One LET exchange (see LetRound); bytes, counts and times into `ds`.
  virtual Status exchange(const LetRound& round, DistributedStats& ds) = 0;
};

}  // namespace amrgrav
