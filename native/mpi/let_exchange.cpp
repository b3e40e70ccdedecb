/// \file let_exchange.cpp
/// \brief The LET messages: a size (one uint64) then the packed tree, per pair of ranks (see let_exchange.h).
#include "mpi/let_exchange.h"

#include <algorithm>
#include <climits>
#include <string>

#include "mpi/mpi_check.h"

namespace amrgrav {

LetExchange::LetExchange(MPI_Comm comm, const std::vector<bool>& expectFrom, LetBuffers& buffers, int tags)
    : comm_(comm), tagSize_(tags), tagData_(tags + 1), t0_(std::chrono::steady_clock::now()), expect_(expectFrom),
      buf_(buffers) {
  const std::size_t n = expect_.size();
  inSize_.assign(n, 0);
  if (buf_.in.size() < n) buf_.in.resize(n);
  if (buf_.out.size() < n) buf_.out.resize(n);  // at most one LET per other rank: no reallocation while sending
  sizeReq_.assign(n, MPI_REQUEST_NULL);
  dataReq_.assign(n, MPI_REQUEST_NULL);
  arrived_.assign(n, false);
  outSize_.reserve(n);  // reserved: Isend reads these in place, so they must not move
  sendReq_.reserve(2 * n);
}

LetExchange::~LetExchange() {
  // only reached with requests pending after an error, and an error after the agreement aborts the job
  for (auto* v : {&sizeReq_, &dataReq_, &sendReq_})
    for (auto& r : *v)
      if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
}

void exchangeStatsInto(const LetExchangeStats& xs, double walkStart, double walkEnd, DistributedStats& ds) {
  ds.bytesSent = xs.bytesSent;
  ds.bytesReceived = xs.bytesReceived;
  ds.letsSent = xs.letsSent;
  ds.letsReceived = xs.letsReceived;
  if (xs.firstSend >= 0 || xs.letsReceived > 0) {
    const double begin = xs.firstSend >= 0 ? std::min(xs.firstSend, walkStart) : walkStart;
    const double end = std::max(xs.lastArrival, begin);
    ds.secondsExchange = end - begin;
    ds.secondsOverlap = std::max(0.0, std::min(end, walkEnd) - std::max(begin, walkStart));
  }
}

Status LetExchange::start() {
  for (std::size_t r = 0; r < expect_.size(); ++r)
    if (expect_[r]) MPI_CHECK(MPI_Irecv(&inSize_[r], 1, MPI_UINT64_T, int(r), tagSize_, comm_, &sizeReq_[r]));
  return Status::success();
}

PackedLet& LetExchange::nextOutgoing() {
  if (outCount_ >= buf_.out.size()) buf_.out.resize(outCount_ + 1);  // only before the first send()
  return buf_.out[outCount_];
}

Status LetExchange::send(int dest, const PackedLet& let) {
  if (outCount_ >= buf_.out.size() || &let != &buf_.out[outCount_])
    return Status::error(ErrorCode::Internal, "LetExchange::send: the LET is not the buffer nextOutgoing() gave");
  if (let.bytes() > std::size_t(INT_MAX))
    return Status::error(ErrorCode::Internal, "a LET of " + std::to_string(let.bytes()) + " bytes for rank " +
                                                  std::to_string(dest) + " exceeds one MPI message (2^31 bytes)");
  ++outCount_;
  outSize_.push_back(let.bytes());
  if (stats_.firstSend < 0) stats_.firstSend = now();
  sendReq_.push_back(MPI_REQUEST_NULL);
  MPI_CHECK(MPI_Isend(&outSize_.back(), 1, MPI_UINT64_T, dest, tagSize_, comm_, &sendReq_.back()));
  sendReq_.push_back(MPI_REQUEST_NULL);
  MPI_CHECK(MPI_Isend(let.words.data(), int(outSize_.back()), MPI_BYTE, dest, tagData_, comm_, &sendReq_.back()));
  stats_.bytesSent += outSize_.back() + sizeof(std::uint64_t);
  ++stats_.letsSent;
  return Status::success();
}

Status LetExchange::postPayload(int from) {
  const std::uint64_t bytes = inSize_[from];
  if (bytes % 8 != 0 || bytes > std::uint64_t(INT_MAX))
    return Status::error(ErrorCode::Internal, "rank " + std::to_string(from) + " announced a LET of " +
                                                  std::to_string(bytes) + " bytes");
  buf_.in[from].resize(bytes / 8);  // the message overwrites every word
  MPI_CHECK(MPI_Irecv(buf_.in[from].data(), int(bytes), MPI_BYTE, from, tagData_, comm_, &dataReq_[from]));
  return Status::success();
}

void LetExchange::noteArrivals() {
  bool all = true;
  for (std::size_t r = 0; r < expect_.size(); ++r) {
    if (!expect_[r] || arrived_[r]) continue;
    int done = 0;
    if (sizeReq_[r] == MPI_REQUEST_NULL && dataReq_[r] != MPI_REQUEST_NULL) {
      MPI_Request_get_status(dataReq_[r], &done, MPI_STATUS_IGNORE);
    }
    if (done) arrived_[r] = true;
    else all = false;
  }
  if (all && stats_.lastArrival < 0) stats_.lastArrival = now();
}

Status LetExchange::progress() {
  for (std::size_t r = 0; r < expect_.size(); ++r) {
    if (sizeReq_[r] == MPI_REQUEST_NULL) continue;
    int done = 0;
    MPI_CHECK(MPI_Test(&sizeReq_[r], &done, MPI_STATUS_IGNORE));
    if (done) {
      Status st = postPayload(int(r));
      if (!st.ok()) return st;
    }
  }
  // testing the sends too keeps large (rendezvous) messages moving on this side
  int flag = 0;
  if (!sendReq_.empty()) MPI_CHECK(MPI_Testall(int(sendReq_.size()), sendReq_.data(), &flag, MPI_STATUSES_IGNORE));
  noteArrivals();
  return Status::success();
}

Status LetExchange::receive(int from, ReceivedLet& out) {
  AG_TRY(receiveWords(from, out.words, out.bytes));
  return viewPackedLet(out.words, out.bytes, out.view);
}

Status LetExchange::receiveWords(int from, const std::uint64_t*& words, std::size_t& bytes) {
  if (sizeReq_[from] != MPI_REQUEST_NULL) {
    MPI_CHECK(MPI_Wait(&sizeReq_[from], MPI_STATUS_IGNORE));
    Status st = postPayload(from);
    if (!st.ok()) return st;
  }
  MPI_CHECK(MPI_Wait(&dataReq_[from], MPI_STATUS_IGNORE));
  arrived_[from] = true;
  noteArrivals();
  stats_.bytesReceived += inSize_[from] + sizeof(std::uint64_t);
  ++stats_.letsReceived;
  words = buf_.in[from].data();
  bytes = inSize_[from];
  return Status::success();
}

Status LetExchange::finish() {
  if (!sendReq_.empty()) MPI_CHECK(MPI_Waitall(int(sendReq_.size()), sendReq_.data(), MPI_STATUSES_IGNORE));
  noteArrivals();
  return Status::success();
}

}  // namespace amrgrav
