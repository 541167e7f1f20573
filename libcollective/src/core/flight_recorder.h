// The flight recorder: every communicator remembers its last N calls
// (COLLECTIVE_FLIGHT_RECORDER, 512 by default, 0 off) in a ring of
// fixed-size records, and the process writes them all to one file when a
// call fails, on SIGUSR1, or on demand (docs/errors.md, "Flight recorder").
//
// Cost on the hot path: a call fills one record in place (no allocation,
// no formatting, no lock) and reads the clock once more, at its end. Only
// the calling thread writes a record; a dump from another thread (the
// SIGUSR1 watcher) reads it under a per-record sequence lock and skips a
// record caught half written.
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

enum class CallState : std::uint8_t { kEmpty = 0, kStarted, kFinished, kFailed };

// One call, one cache line. begin() fills it between two bumps of
// `version` (odd while written), so a reader can tell a consistent copy;
// every field is an atomic written with relaxed stores (plain stores on
// x86), so a concurrent reader is never a data race.
struct alignas(64) FlightRecord {
  std::atomic<std::uint32_t> version{0};
  std::atomic<CallState> state{CallState::kEmpty};
  std::atomic<Algorithm> algorithm{Algorithm::kAuto};  // what ran (kAuto: not chosen yet)
  std::atomic<Algorithm> requested{Algorithm::kAuto};
  std::atomic<CollectiveKind> kind{CollectiveKind::kAllReduce};
  std::atomic<DataType> type{DataType::kFloat32};
  std::atomic<ReduceOp> op{ReduceOp::kSum};
  std::atomic<std::int32_t> root{0};
  std::atomic<std::uint64_t> sequence{0};
  std::atomic<std::uint64_t> count{0};
  std::atomic<std::int64_t> start_ns{
      0};  // steady clock at its tick (coarse_clock.h); 0: not started yet
  // CLOCK_MONOTONIC_COARSE (the steady clock to the kernel's tick, 1-4 ms):
  // a precise clock read would cost a small call 40 ns (docs/performance.md).
  std::atomic<std::int64_t> end_ns{0};  // 0: still running
};

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

  // The record for `request` (its sequence number set), marked started.
  FlightRecord& begin(const Request& request);
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

  // One JSON object: the identity, the wait note, the records oldest first.
  void write_json(std::string& out, std::int64_t steady_to_unix_ns) const;

  const CommunicatorIdentity& identity() const { return identity_; }
  // Last dump-request generation this communicator's wait loops answered.
  std::atomic<std::uint32_t> dump_generation_seen{0};

 private:
  CommunicatorIdentity identity_;
  std::vector<FlightRecord> records_;
  std::atomic<std::uint64_t> started_{0};
  mutable std::mutex wait_mutex_;  // guards wait_ and failures_
  WaitNote wait_;
  std::vector<FailureNote> failures_;  // the last few, oldest first
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
