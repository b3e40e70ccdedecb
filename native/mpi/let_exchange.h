/// \file let_exchange.h
/// \brief Non-blocking exchange of locally essential trees: each LET goes out with MPI_Isend as soon as it is
/// packed, receives are posted for all expected senders up front, and progress() lets messages move while the
/// local walk runs. Include only in files compiled with MPI.
#pragma once
#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "let/let.h"
#include "core/status.h"
#include "core/types.h"

namespace amrgrav {

/// Bytes and times of one exchange (seconds on a steady clock, relative to the exchange's construction).
struct LetExchangeStats {
  std::uint64_t bytesSent = 0, bytesReceived = 0, letsSent = 0, letsReceived = 0;
  double firstSend = -1;     ///< when the first LET was handed to MPI
  double lastArrival = -1;   ///< when the last expected LET was seen complete
};

/// A distributed solve's exchange figures into its stats: the bytes and LETs each way, and when the exchange ran
/// (from the first send, or the local walk's start, to the last arrival) and how much of it the local walk
/// [walkStart, walkEnd] overlapped (DistributedStats::secondsExchange, secondsOverlap).
void exchangeStatsInto(const LetExchangeStats& xs, double walkStart, double walkEnd, DistributedStats& ds);

/// The message buffers, kept from one solve to the next by the caller: a hydro code exchanges LETs of about the same
/// size every step, and fresh buffers of tens of MB would be zero-filled and page-faulted each time.
struct LetBuffers {
  std::vector<PackedLet> out;                   ///< per LET sent, in the order of send()
  std::vector<std::vector<std::uint64_t>> in;   ///< per source rank
};

class LetExchange {
 public:
  /// `expectFrom[r]`: a LET will come from rank r. Posts the receives of the sizes. `buffers` must outlive the
  /// exchange; its `in` buffers are the received LETs' (their views stay valid while they are not reused).
  /// `tags`: the message tags of the sizes and the payloads (tags + 1); two exchanges at once (the cells' LETs and
  /// the particles') take different ones.
  static constexpr int kCellTags = 4101, kParticleTags = 4111, kFmmTags = 4121;
  LetExchange(MPI_Comm comm, const std::vector<bool>& expectFrom, LetBuffers& buffers, int tags = kCellTags);
  ~LetExchange();
  LetExchange(const LetExchange&) = delete;
  LetExchange& operator=(const LetExchange&) = delete;

  Status start();
  /// The buffer of the next LET to send (buffers.out), to be filled and then passed to send().
  PackedLet& nextOutgoing();
  /// Sends the LET that nextOutgoing() gave to rank `dest` (it must stay untouched until finish()).
  Status send(int dest, const PackedLet& let);
  /// Moves messages along without blocking: posts payload receives for sizes that have arrived.
  Status progress();
  /// Blocks until the LET from rank `from` is here and views it (valid until `buffers` is used again).
  Status receive(int from, ReceivedLet& out);
  /// The same without the view: the words as they arrived (another kind of LET, e.g. fmm/fmm_let.h's).
  Status receiveWords(int from, const std::uint64_t*& words, std::size_t& bytes);
  /// Whether every expected LET has been seen complete (by progress()); receive() then does not block.
  bool allArrived() const { return stats_.lastArrival >= 0; }
  /// Waits for every send.
  Status finish();

  double now() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count(); }
  const LetExchangeStats& stats() const { return stats_; }

 private:
  Status postPayload(int from);
  void noteArrivals();

  MPI_Comm comm_;
  int tagSize_, tagData_;
  std::chrono::steady_clock::time_point t0_;
  std::vector<bool> expect_;
  LetBuffers& buf_;
  std::vector<std::uint64_t> inSize_;               ///< per source rank: bytes of its LET
  std::vector<MPI_Request> sizeReq_, dataReq_;      ///< per source rank
  std::vector<bool> arrived_;
  std::size_t outCount_ = 0;                        ///< LETs sent (buf_.out[0, outCount_))
  std::vector<std::uint64_t> outSize_;
  std::vector<MPI_Request> sendReq_;
  LetExchangeStats stats_;
};

}  // namespace amrgrav
