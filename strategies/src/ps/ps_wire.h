// The parameter-server transport: framed messages over MPI point-to-point
// on a private duplicate of the cluster's communicator. Private to
// strategies/src (mpi.h stays out of every header here too).
//
// A message is one header plus a payload. Payloads up to kInlineBytes ride
// in the header's MPI message; larger ones follow as pieces of at most
// kPieceBytes on the same tag (MPI keeps one sender's messages in order).
// Every send owns its buffer and is nonblocking; progress() retires
// finished sends. Every MPI call holds one process-wide mutex, because
// libcollective initializes MPI at MPI_THREAD_SERIALIZED and the
// coordinator and workers call MPI from two threads. Every wait is bounded
// by a deadline and names what it waited for.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collective/distribute/tensor.h"

namespace collective::distribute::detail {

using Bytes = std::vector<std::byte>;
using Clock = std::chrono::steady_clock;

// Tags: one per direction and purpose, so each loop probes only its own.
enum Tag : int {
  kTagControl = 101,    // chief -> ps/worker: closures, heartbeats, shutdown
  kTagRequest = 102,    // anyone -> ps: variable requests
  kTagReply = 103,      // ps -> requester
  kTagResult = 104,     // worker/ps -> chief: closure results, bye
  kTagHeartbeat = 105,  // worker/ps -> chief
};

enum class Op : std::uint32_t {
  kCreate = 1,
  kRead,
  kAssign,
  kAdd,
  kSubtract,
  kSgd,    // requests to a ps
  kReply,  // ps's answer
  kClosure,
  kResult,  // chief <-> worker
  kHeartbeat,
  kShutdown,
  kBye,
};

// Result and reply status.
enum class Status : std::uint32_t { kOk = 0, kError = 1, kPsUnavailable = 2 };

struct Header {
  Op op = Op::kHeartbeat;
  Status status = Status::kOk;
  std::uint64_t id = 0;   // variable shard id, closure id
  std::uint64_t seq = 0;  // request sequence, closure attempt
  double scalar = 0;      // learning rate of kSgd
  std::uint64_t payload_bytes = 0;
  // Non-zero: the request's payload (update) or the reply's (read) of
  // staged_bytes lies in the requester's same-node staging segment of this
  // generation (ps_staging.h) instead of the message.
  std::uint64_t staged_generation = 0;
  std::uint64_t staged_bytes = 0;
};

struct Message {
  int source = -1;
  Header header;
  Bytes payload;
};

class Wire {
 public:
  static constexpr std::size_t kInlineBytes = 64 << 10;
  static constexpr std::size_t kPieceBytes = std::size_t{1} << 30;

  // Duplicates the MPI communicator given by its Fortran handle.
  explicit Wire(int mpi_fortran_handle);
  ~Wire();
  Wire(const Wire&) = delete;
  Wire& operator=(const Wire&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Whether `rank` shares this process's node (MPI_COMM_TYPE_SHARED).
  bool same_node(int rank) const {
    return node_of_rank_.at(static_cast<std::size_t>(rank)) ==
           node_of_rank_.at(static_cast<std::size_t>(rank_));
  }
  // A string every rank of the job shares and other jobs do not (rank 0's
  // pid and clock), for naming shared-memory segments.
  const std::string& job_token() const { return job_token_; }

  void send(int destination, int tag, Header header, Bytes payload);
  // One message from source (-1: any) on tag, if one has arrived; the
  // pieces of a large payload are awaited until deadline.
  std::optional<Message> poll(int source, int tag, Clock::time_point deadline,
                              const std::string& what);
  // Retires finished sends; true when none is pending.
  bool progress();
  // Waits (bounded) until every pending send finished; false on timeout.
  bool flush(Clock::time_point deadline);
  // Frees the communicator (only when every peer is known to be done).
  void release();

 private:
  struct Pending;
  int comm_ = 0;  // MPI_Fint of the duplicate
  int rank_ = 0;
  int size_ = 0;
  bool released_ = false;
  std::vector<int> node_of_rank_;  // lowest rank of each rank's node
  std::string job_token_;
  std::deque<std::unique_ptr<Pending>> pending_;
};

// "3 s", "0.25 s": a duration for messages.
std::string seconds_text(std::chrono::milliseconds duration);

// MPI_COMM_WORLD as a Fortran handle.
int mpi_world_handle();

// Pauses a wait loop that found nothing for idle_rounds rounds: yields for
// the first yield_rounds, then sleeps (ranks may outnumber cores). Loops
// that wait for an answer due any moment yield longer than idle servers.
inline constexpr int kIdleYieldRounds = 16;
inline constexpr int kReplyYieldRounds = 256;
void idle_pause(int idle_rounds, int yield_rounds = kIdleYieldRounds);

// Little-endian-as-host serialization of what the wire carries.
class Writer {
 public:
  void u32(std::uint32_t v) { put_scalar(v); }
  void u64(std::uint64_t v) { put_scalar(v); }
  void i64(std::int64_t v) { put_scalar(v); }
  void str(const std::string& s) {
    u64(s.size());
    put(s.data(), s.size());
  }
  void raw(const void* data, std::size_t n) { put(data, n); }
  void tensor(const Tensor& t);
  Bytes take() { return std::move(bytes_); }

 private:
  void put(const void* data, std::size_t n) {
    const auto* p = static_cast<const std::byte*>(data);
    bytes_.insert(bytes_.end(), p, p + n);
  }
  // Grows and copies rather than insert(): gcc 12 at -O3 reports a false
  // -Wstringop-overflow for a small insert into an empty vector. A few
  // bytes, so the zero fill of resize() costs nothing.
  template <typename Scalar>
  void put_scalar(Scalar v) {
    const std::size_t size = bytes_.size();
    bytes_.resize(size + sizeof v);
    std::memcpy(bytes_.data() + size, &v, sizeof v);
  }
  Bytes bytes_;
};

// Raises InvalidArgumentError naming `what` on truncated or bad input.
class Reader {
 public:
  Reader(const Bytes& bytes, std::string what) : bytes_(bytes), what_(std::move(what)) {}
  std::uint32_t u32() {
    std::uint32_t v;
    get(&v, sizeof v);
    return v;
  }
  std::uint64_t u64() {
    std::uint64_t v;
    get(&v, sizeof v);
    return v;
  }
  std::int64_t i64() {
    std::int64_t v;
    get(&v, sizeof v);
    return v;
  }
  std::string str();
  Tensor tensor();
  void raw(void* out, std::size_t n) { get(out, n); }
  bool at_end() const { return offset_ == bytes_.size(); }

 private:
  void get(void* out, std::size_t n);
  const Bytes& bytes_;
  std::string what_;
  std::size_t offset_ = 0;
};

}  // namespace collective::distribute::detail
