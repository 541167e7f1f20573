// The flight recorder: every communicator remembers its last N calls
// (COLLECTIVE_FLIGHT_RECORDER, 512 by default, 0 off) in a ring of
// fixed-size records, and the process writes them all to one file when a
// call fails, on SIGUSR1, or on demand (docs/errors.md, "Flight recorder").
//
// Cost on the hot path: a call fills one record in place (no allocation,
// no formatting, no lock) and reads the clock once more, at its end. A
// blocking call is recorded with nothing in flight, by its own thread
// alone. A call in flight (`_async`, a plan's start) is recorded twice:
// queued by the caller's thread, then started and ended by the thread that
// runs it, so both claim a slot with a compare-and-swap of its version,
// and a slot whose call is still queued or running is never taken by
// another call (that call goes unrecorded, counted in `not_recorded`). A
// dump from another thread (the SIGUSR1 watcher) reads a record under the
// same per-record sequence lock and skips a record caught half written.
#pragma once

#include <time.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "collective/algorithm.h"
#include "collective/types.h"
#include "core/coarse_clock.h"
#include "core/request.h"

namespace collective::internal {

enum class CallState : std::uint8_t { kEmpty = 0, kStarted, kFinished, kFailed, kQueued };

// An enum of the API held in one byte (each has far fewer than 256
// enumerators), so that a record with its queue time stays one cache line.
template <typename Enum>
class ByteEnum {
 public:
  void store(Enum value, std::memory_order order) {
    byte_.store(static_cast<std::uint8_t>(value), order);
  }
  Enum load(std::memory_order order) const { return static_cast<Enum>(byte_.load(order)); }

 private:
  std::atomic<std::uint8_t> byte_{0};
};

// One call, one cache line. begin() fills it between two bumps of
// `version` (odd while written), so a reader can tell a consistent copy;
// every field is an atomic written with relaxed stores (plain stores on
// x86), so a concurrent reader is never a data race.
struct alignas(64) FlightRecord {
  std::atomic<std::uint32_t> version{0};
  std::atomic<CallState> state{CallState::kEmpty};
  ByteEnum<Algorithm> algorithm;  // what ran (kAuto: not chosen yet)
  ByteEnum<Algorithm> requested;
  ByteEnum<CollectiveKind> kind;
  ByteEnum<DataType> type;
  ByteEnum<ReduceOp> op;
  // The creation of a persistent plan (Communicator::*_init), a collective
  // call of its own: dumped as "<collective>_init".
  std::atomic<bool> creates_plan{false};
  std::atomic<std::int32_t> root{0};
  std::atomic<std::uint64_t> sequence{0};
  std::atomic<std::uint64_t> count{0};
  std::atomic<std::int64_t> start_ns{
      0};  // steady clock at its tick (coarse_clock.h); 0: not started yet
  // CLOCK_MONOTONIC_COARSE (the steady clock to the kernel's tick, 1-4 ms):
  // a precise clock read would cost a small call 40 ns (docs/performance.md).
  std::atomic<std::int64_t> end_ns{0};  // 0: still running
  // When an `_async` call or a plan's start was queued (coarse clock);
  // 0: a blocking call, never queued.
  std::atomic<std::int64_t> queued_ns{0};
};
static_assert(sizeof(FlightRecord) == 64, "one record, one cache line");

// Why a call failed; kept apart from the records (failures are rare).
struct FailureNote {
  std::uint64_t sequence = 0;
  std::string why;
};

// Who the communicator is, the same on every member, so that a reader of
// every rank's dump can match them: its members' world ranks and how many
// communicators with the same members this process made before it.
struct CommunicatorIdentity {
  std::vector<int> members;  // world rank of each rank of the communicator
  int ordinal = 0;
  std::string origin;  // "Communicator::world", "Communicator::split", ...
  int rank = 0;
  int size = 1;
  std::string shrunk_from;  // Communicator::shrink: the id of the one it shrank
};

// A death seen on a communicator, and the shrink of it, if any.
struct LossNote {
  std::vector<int> ranks;  // world ranks, ascending
  std::int64_t at_ns = 0;  // steady clock: when this rank first learned of it
  std::string shrunk_into;
  std::int64_t shrunk_at_ns = 0;
  double agreed_ms = 0;
  double made_ms = 0;
};

// What the call in flight waits for, as the wait loop last described it.
struct WaitNote {
  std::uint64_t sequence = 0;
  std::string phase;       // "cross-rank check", "ring", ...
  std::vector<int> ranks;  // ranks of the communicator it waits for
  std::string what;        // "a message of 4096 B (recursive doubling exchange)"
  bool valid = false;
};

class FlightRecorder {
 public:
  FlightRecorder(std::size_t capacity, CommunicatorIdentity identity);

  // The record for `request` (its sequence number set), marked started:
  // a blocking call's, with nothing in flight on the communicator.
  // `creates_plan`: the call is a plan's creation (prepare_call).
  FlightRecord& begin(const Request& request, bool creates_plan = false);
  // A call put in the queue of calls in flight, on the caller's thread in
  // program order: its record, marked queued.
  void queue(const Request& request);
  // The queued call `request` starts, on the thread that runs it: its
  // queued record marked started, or a fresh one when the ring dropped it;
  // nullptr when its slot holds a call still in flight.
  FlightRecord* begin_queued(const Request& request);
  static void set_start(FlightRecord& record, Clock::time_point start) {
    record.start_ns.store(
        std::chrono::duration_cast<std::chrono::nanoseconds>(start.time_since_epoch()).count(),
        std::memory_order_relaxed);
  }
  static void set_algorithm(FlightRecord& record, Algorithm algorithm, Algorithm requested) {
    record.algorithm.store(algorithm, std::memory_order_relaxed);
    record.requested.store(requested, std::memory_order_relaxed);
  }
  static void finish(FlightRecord& record) {
    const std::int64_t end = coarse_now_ns();
    const std::int64_t start = record.start_ns.load(std::memory_order_relaxed);
    record.end_ns.store(end > start ? end : start, std::memory_order_relaxed);
    record.state.store(CallState::kFinished, std::memory_order_release);
  }
  void fail(FlightRecord& record, const char* why);

  // Called by a wait loop when a report is due (stall, timeout, a dump
  // request): what the call in flight waits for.
  void note_wait(std::uint64_t sequence, const char* phase, const std::vector<int>& ranks,
                 const std::string& what);

  // The communicator lost ranks `ranks` (its own numbering; PeerFailedError
  // or the survivors' agreement): noted with the time this rank learned it.
  void note_lost(const std::vector<int>& ranks);
  // Communicator::shrink made the communicator `into` (its id) of this
  // one's survivors: how long they took to agree and to make it.
  void note_shrink(const std::string& into, double agreed_ms, double made_ms);
  // "[0,1,2]#0": its members' world ranks and ordinal, as dumps name it.
  std::string id() const;

  // One JSON object: the identity, the wait note, the records oldest first.
  void write_json(std::string& out, std::int64_t steady_to_unix_ns) const;

  const CommunicatorIdentity& identity() const { return identity_; }
  // Last dump-request generation this communicator's wait loops answered.
  std::atomic<std::uint32_t> dump_generation_seen{0};

 private:
  CommunicatorIdentity identity_;
  std::vector<FlightRecord> records_;
  // Claims the slot of `sequence` (version made odd) and fills it; false
  // when the slot holds a call still queued or running (left alone).
  bool claim_and_fill(const Request& request, CallState state, std::int64_t queued_ns);

  std::atomic<std::uint64_t> started_{0};       // highest sequence recorded + 1
  std::atomic<std::uint64_t> not_recorded_{0};  // in flight, their slots taken
  mutable std::mutex wait_mutex_;               // guards wait_ and failures_
  WaitNote wait_;
  std::vector<FailureNote> failures_;  // the last few, oldest first
  LossNote loss_;                      // guarded by wait_mutex_
};

// Makes the recorder of a new communicator (none when
// COLLECTIVE_FLIGHT_RECORDER=0) and registers it for dumps; installs the
// SIGUSR1 handler and its watcher thread with the first one, unless
// COLLECTIVE_FLIGHT_RECORDER_SIGNAL, or when unset the default below, is off.
std::shared_ptr<FlightRecorder> make_flight_recorder(CommunicatorIdentity identity);
// The default of COLLECTIVE_FLIGHT_RECORDER_SIGNAL (true until changed).
void set_signal_default(bool dump_on_sigusr1);

// Writes the records of every live communicator of this process to
// `<directory>/collective_flight_record.<world rank>.json` (directory
// empty: COLLECTIVE_FLIGHT_RECORDER_DIR, else the working directory), via
// a temporary file renamed into place. Returns the path. Throws
// CommunicationError naming the path when it cannot be written.
std::string dump_flight_records(const std::string& directory, const std::string& reason);
// As above for the failure paths: never throws, logs what it wrote.
void dump_flight_records_noexcept(const std::string& reason);

// Incremented by SIGUSR1: wait loops compare it with their communicator's
// dump_generation_seen and note what they wait for.
std::uint32_t dump_request_generation();

}  // namespace collective::internal
