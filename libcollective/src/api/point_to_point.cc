// Communicator::send and recv: a checked, synchronous point-to-point
// protocol over the communicator's MPI duplicate, on tags no collective
// uses (PeerExchange::kPointToPoint*Tag).
//
// The k-th send from rank i to rank j pairs with the k-th recv on j from i.
// The sender's first message is a record of its call (tag, count, type,
// pair number), with the data itself when it is small (eager); the
// receiver compares the record with its own call and answers with a
// verdict record. On agreement a large message's data follows into the
// receiver's buffer; on disagreement both ranks raise MismatchError naming
// both sides, and the receiver's buffer is untouched. The sender returns
// once the verdict arrived: a synchronous send, whose wait also names the
// peer when it never calls.
//
// Records, verdicts and data each have a tag of their own, and MPI keeps
// the messages of one sender and tag in order: so the calls of one pair
// and direction pair in program order whatever runs at the same time, and
// a send and a recv between the same two ranks, or around a ring, may be
// in flight at once. The started ones run on one thread per peer and
// direction (CommunicatorState::point_to_point_engines), not behind the
// collectives: an isend/irecv exchange completes as it does under MPI.
#include <algorithm>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <sstream>
#include <vector>

#include "api/progress_engine.h"
#include "api/work_state.h"
#include "api/usable_communicator.h"
#include "collective/communicator.h"
#include "collective/errors.h"
#include "core/communicator_state.h"
#include "core/exclusive_use.h"
#include "core/mpi_thread_level.h"
#include "core/request.h"
#include "core/scratch_buffer.h"
#include "gpu/device_runtime.h"
#include "transport/mpi/peer_exchange.h"

namespace collective {
namespace {

using internal::CommunicatorState;
using internal::PeerExchange;
using internal::Request;
namespace gpu = internal::gpu;

// Up to this many bytes travel in the sender's first message.
constexpr std::size_t kEagerBytes = 4096;

struct CallRecord {
  enum Kind : std::uint32_t { kSend = 0x53454e44, kVerdict = 0x56455244 };
  std::uint32_t kind = kSend;
  std::int32_t tag = 0;
  std::uint64_t pair_sequence = 0;
  std::uint64_t count = 0;
  std::int8_t type = 0;
  std::uint8_t flag = 0;  // send: the data follows in this message; verdict: accepted
  std::uint8_t padding[6] = {};
};
static_assert(sizeof(CallRecord) == 32);

// "send #3 of 7 x int32 with tag 5"
std::string describe_call(const char* what, const CallRecord& record) {
  std::ostringstream out;
  const int type = record.type;
  out << what << " #" << record.pair_sequence << " of " << record.count << " x "
      << (type >= 0 && type < kNumDataTypes ? to_string(static_cast<DataType>(type))
                                            : std::string_view("unknown type"))
      << " with tag " << record.tag;
  return out.str();
}

bool same_call(const CallRecord& a, const CallRecord& b) {
  return a.tag == b.tag && a.pair_sequence == b.pair_sequence && a.count == b.count &&
         a.type == b.type;
}

// The largest first message: a record and eager data, within one MPI piece.
std::size_t eager_limit(const internal::EnvParams& params) {
  const std::size_t piece = params.max_message_bytes;
  return piece > sizeof(CallRecord) ? std::min(kEagerBytes, piece - sizeof(CallRecord)) : 0;
}

// This rank's own checks, before anything is sent.
void validate(const Request& request, const PointToPointOptions& options, int rank, int size) {
  auto fail = [&](const std::string& cause) {
    throw InvalidArgumentError(request.label(), rank, cause);
  };
  if (request.peer < 0 || request.peer >= size) {
    fail("peer " + std::to_string(request.peer) + " is outside the communicator (size " +
         std::to_string(size) + ")");
  }
  if (request.peer == rank) {
    fail(
        "peer is this rank: a send to oneself waits for a recv that the same thread can "
        "never make (copy the buffer instead)");
  }
  const int type_index = static_cast<int>(request.type);
  if (type_index < 0 || type_index >= kNumDataTypes) {
    fail("unknown data type (DataType value " + std::to_string(type_index) + ")");
  }
  if (options.tag < 0) fail("negative tag " + std::to_string(options.tag));
  if (options.timeout.count() < 0) {
    fail("negative timeout (" + std::to_string(options.timeout.count()) + " ms)");
  }
  const int algorithm = static_cast<int>(options.algorithm);
  if (algorithm < 0 || algorithm >= kNumAlgorithms) {
    fail("unknown algorithm (Algorithm value " + std::to_string(algorithm) + ")");
  }
  if (options.algorithm != Algorithm::kAuto && options.algorithm != Algorithm::kMpi) {
    throw UnsupportedError(request.label(), rank,
                           std::string(to_string(options.algorithm)) +
                               " does not implement point-to-point; send and recv go over MPI "
                               "(Algorithm::kAuto or kMpi)");
  }
  if (options.memory == MemoryKind::kDevice) {
    throw UnsupportedError(request.label(), rank,
                           "send and recv serve host buffers only (device buffers: use the "
                           "collectives, which NCCL serves)");
  }
  const std::size_t element = element_size(request.type);
  if (request.count > std::numeric_limits<std::size_t>::max() / element) {
    fail("count " + std::to_string(request.count) + " of " + std::string(to_string(request.type)) +
         " overflows the byte size");
  }
  const void* buffer = request.send != nullptr ? request.send : request.recv;
  if (request.count > 0 && buffer == nullptr) {
    fail("buffer is null with count " + std::to_string(request.count));
  }
  // This Open MPI reads device memory as host memory (a crash, not an
  // error), so an undeclared device buffer is found by where it lives.
  if (request.count > 0 && options.memory == MemoryKind::kAuto && gpu::cuda_built_in() &&
      gpu::device_count().count > 0) {
    const gpu::PointerLocation location = gpu::locate(buffer);
    if (location.on_device) {
      throw UnsupportedError(request.label(), rank,
                             "the buffer is CUDA device memory (device " +
                                 std::to_string(location.device) +
                                 "); send and recv serve host buffers only (device buffers: use "
                                 "the collectives, which NCCL serves)");
    }
  }
}

[[noreturn]] void mismatch(const Request& request, int rank, const CallRecord& sender,
                           const CallRecord& receiver) {
  const int sending_rank = request.point_to_point[0] == 's' ? rank : request.peer;
  const int receiving_rank = request.point_to_point[0] == 's' ? request.peer : rank;
  throw MismatchError(request.label(), rank,
                      "rank " + std::to_string(sending_rank) + "'s " +
                          describe_call("send", sender) + " met rank " +
                          std::to_string(receiving_rank) + "'s " + describe_call("recv", receiver) +
                          ": the k-th send to a rank pairs with that rank's k-th recv from the "
                          "sender, and their tags, counts and types must agree; neither buffer "
                          "was used");
}

// The messages of one call: the record, the verdict and the data travel
// on tags of their own (see the top of this file).
struct PairMessages {
  PairMessages(const Request& request, CommunicatorState& state, const char* name)
      : record(request, state, name, PeerExchange::kPointToPointRecordTag),
        verdict(request, state, name, PeerExchange::kPointToPointVerdictTag),
        data(request, state, name, PeerExchange::kPointToPointDataTag) {}
  PeerExchange record;
  PeerExchange verdict;
  PeerExchange data;
};

// The buffer of this thread's call for its record and verdict: calls on
// several threads at once (the per-peer engines, the caller's, the
// collectives' thread) share no scratch. Abandoned (left to MPI) when a
// call fails with requests that MPI may still complete.
internal::ScratchBuffer& message_buffer() {
  thread_local internal::ScratchBuffer buffer;
  return buffer;
}

void run_send(CommunicatorState& state, Request& request, const CallRecord& mine,
              std::size_t eager) {
  PairMessages messages(request, state, "send");
  const std::size_t bytes = request.bytes();
  const bool inline_data = bytes <= eager;
  std::byte* out = message_buffer().get(2 * sizeof(CallRecord) + eager);
  std::byte* in = out + sizeof(CallRecord) + eager;
  CallRecord record = mine;
  record.flag = inline_data ? 1 : 0;
  std::memcpy(out, &record, sizeof record);
  if (inline_data && bytes > 0) std::memcpy(out + sizeof record, request.send, bytes);
  messages.verdict.recv(in, sizeof(CallRecord), request.peer, "the matching recv's verdict");
  messages.record.send(out, sizeof record + (inline_data ? bytes : 0), request.peer,
                       "the call's record (and small data)");
  messages.record.wait_all();
  messages.verdict.wait_all();
  CallRecord verdict;
  std::memcpy(&verdict, in, sizeof verdict);
  if (verdict.flag == 0) mismatch(request, state.rank, mine, verdict);
  if (inline_data) return;
  messages.data.send(request.send, bytes, request.peer, "the data");
  messages.data.wait_all();
}

void run_recv(CommunicatorState& state, Request& request, const CallRecord& mine,
              std::size_t eager) {
  PairMessages messages(request, state, "recv");
  std::byte* in = message_buffer().get(2 * sizeof(CallRecord) + eager);
  std::byte* out = in + sizeof(CallRecord) + eager;
  messages.record.recv(in, sizeof(CallRecord) + eager, request.peer, "the matching send's record");
  messages.record.wait_all();
  CallRecord theirs;
  std::memcpy(&theirs, in, sizeof theirs);
  CallRecord verdict = mine;
  verdict.kind = CallRecord::kVerdict;
  const bool agree = theirs.kind == CallRecord::kSend && same_call(theirs, mine);
  verdict.flag = agree ? 1 : 0;
  std::memcpy(out, &verdict, sizeof verdict);
  const std::size_t bytes = request.bytes();
  // The data's receive is posted before the verdict goes: the sender's
  // data, sent once the verdict arrived, finds it waiting.
  const bool data_follows = agree && theirs.flag == 0;
  if (data_follows) messages.data.recv(request.recv, bytes, request.peer, "the data");
  messages.verdict.send(out, sizeof verdict, request.peer, "the verdict on the peer's send");
  messages.verdict.wait_all();
  if (theirs.kind != CallRecord::kSend) {
    throw MismatchError(request.label(), state.rank,
                        "rank " + std::to_string(request.peer) +
                            " sent a message that is not a send's record; the calls of the two "
                            "ranks do not pair");
  }
  if (!agree) mismatch(request, state.rank, theirs, mine);
  if (!data_follows) {
    if (bytes > 0) std::memcpy(request.recv, in + sizeof(CallRecord), bytes);
    return;
  }
  messages.data.wait_all();
}

Request make_request(bool sending, const void* buffer, std::size_t count, DataType type, int peer) {
  Request request;
  request.point_to_point = sending ? "send" : "recv";
  request.peer = peer;
  request.type = type;
  request.count = count;
  request.send = sending ? buffer : nullptr;
  request.recv = sending ? nullptr : const_cast<void*>(buffer);
  return request;
}

// The pair's number, taken in program order (on the caller's thread for
// an `_async` call): sends to and receives from each peer are numbered
// apart from the collectives.
std::uint64_t take_pair_number(CommunicatorState& state, bool sending, int peer) {
  auto& calls = sending ? state.sends_to : state.receives_from;
  calls.resize(static_cast<std::size_t>(state.size), 0);
  return calls[static_cast<std::size_t>(peer)]++;
}

// The first failure of a send or recv, which every later one raises
// (CommunicatorState::point_to_point_failed).
void require_point_to_point_usable(CommunicatorState& state, const Request& request) {
  if (!state.point_to_point_failed.load(std::memory_order_acquire)) return;
  std::string cause;
  {
    const std::lock_guard<std::mutex> lock(state.point_to_point_failure_mutex);
    cause = state.point_to_point_failure;
  }
  throw CommunicationError(request.label(), state.rank,
                           "send and recv unusable after an earlier failure of one: " + cause);
}

void record_point_to_point_failure(CommunicatorState& state, const CommunicationError& error) {
  const std::lock_guard<std::mutex> lock(state.point_to_point_failure_mutex);
  if (state.point_to_point_failed.load(std::memory_order_relaxed)) return;
  state.point_to_point_failure = error.what();
  state.point_to_point_failed.store(true, std::memory_order_release);
}

// The exchange itself, its arguments checked and its pair number taken.
// `claim`: below MPI_THREAD_MULTIPLE, where nothing else of the
// communicator can be in flight, the call claims it as any call does;
// otherwise it runs beside the calls in flight (the collectives' thread,
// the other peers' and directions' engines) and claims nothing.
void run_point_to_point(CommunicatorState& state, bool sending, Request request,
                        const PointToPointOptions& options, bool claim) {
  std::optional<internal::ExclusiveUse> exclusive;
  const internal::EnvParams* params = nullptr;
  if (claim) {
    exclusive.emplace(state, sending ? internal::ExclusiveUse::Operation::kSend
                                     : internal::ExclusiveUse::Operation::kRecv);
    params = &internal::require_usable(state, [&] { return request.label(); });
  } else {
    params = &internal::env_params();
  }
  require_point_to_point_usable(state, request);
  request.timeout =
      options.timeout.count() > 0 ? std::min(options.timeout, kLongestTimeout) : params->timeout;
  request.deadline = internal::Clock::now() + request.timeout;
  CallRecord mine;
  mine.tag = options.tag;
  mine.pair_sequence = request.sequence;
  mine.count = request.count;
  mine.type = static_cast<std::int8_t>(request.type);
  try {
    if (sending) {
      run_send(state, request, mine, eager_limit(*params));
    } else {
      run_recv(state, request, mine, eager_limit(*params));
    }
  } catch (const CommunicationError& error) {
    // Messages of this pair may still be in flight: no later send or recv
    // could trust what it receives, and MPI may still write this call's
    // buffer. The collectives go on: no message of a send or recv can
    // match theirs.
    message_buffer().abandon();
    record_point_to_point_failure(state, error);
    throw;
  }
}

// The engine that runs the started calls with `peer` in one direction;
// null when none was made and `make` is false.
internal::ProgressEngine* point_to_point_engine(CommunicatorState& state, bool sending, int peer,
                                                bool make) {
  auto& engines = state.point_to_point_engines;
  if (engines.empty()) {
    if (!make) return nullptr;
    engines.resize(2 * static_cast<std::size_t>(state.size));
  }
  auto& engine = engines[2 * static_cast<std::size_t>(peer) + (sending ? 1 : 0)];
  if (!engine && make) engine = std::make_unique<internal::ProgressEngine>(state);
  return static_cast<internal::ProgressEngine*>(engine.get());
}

// The checks of a call that may run beside calls in flight, on the
// caller's thread: the communicator's state is read only while its
// collectives' thread is idle.
void check_beside_calls_in_flight(CommunicatorState& state, const Request& request,
                                  const PointToPointOptions& options) {
  const auto* engine = static_cast<const internal::ProgressEngine*>(state.progress_engine.get());
  if (engine == nullptr || !engine->busy()) {
    internal::require_usable(state, [&] { return request.label(); });
  }
  validate(request, options, state.rank, state.size);
  require_point_to_point_usable(state, request);
}

// The call queued on the engine of its peer and direction.
std::shared_ptr<internal::WorkState> queue_point_to_point(CommunicatorState& state, bool sending,
                                                          const Request& request,
                                                          const PointToPointOptions& options) {
  auto call = std::make_unique<internal::QueuedCall>();
  call->work = std::make_shared<internal::WorkState>(request.label());
  // The engine outlives every queued call: the state is referred to.
  call->run_instead = [state = &state, sending, request, options] {
    run_point_to_point(*state, sending, request, options, false);
  };
  call->request = request;
  std::shared_ptr<internal::WorkState> work = call->work;
  point_to_point_engine(state, sending, request.peer, true)->enqueue(std::move(call));
  return work;
}

// send / recv. Below MPI_THREAD_MULTIPLE nothing can be in flight: the
// call runs here as any call. Otherwise it runs here too, beside the calls
// in flight, unless started calls with the same peer and direction are
// still queued: then it takes its turn behind them (returned, to be
// waited for). It never waits for the collectives or the other engines,
// so an MPI_Irecv-then-MPI_Send exchange (recv_async, then send) pairs.
std::shared_ptr<internal::WorkState> point_to_point(CommunicatorState& state, bool sending,
                                                    const void* buffer, std::size_t count,
                                                    DataType type, int peer,
                                                    const PointToPointOptions& options) {
  Request request = make_request(sending, buffer, count, type, peer);
  if (internal::mpi_thread_level() < MPI_THREAD_MULTIPLE) {
    {
      const internal::ExclusiveUse exclusive(state, sending
                                                        ? internal::ExclusiveUse::Operation::kSend
                                                        : internal::ExclusiveUse::Operation::kRecv);
      internal::require_usable(state, [&] { return request.label(); });
      validate(request, options, state.rank, state.size);
      require_point_to_point_usable(state, request);
    }
    request.sequence = take_pair_number(state, sending, peer);
    run_point_to_point(state, sending, request, options, true);
    return nullptr;
  }
  check_beside_calls_in_flight(state, request, options);
  request.sequence = take_pair_number(state, sending, peer);
  const internal::ProgressEngine* engine = point_to_point_engine(state, sending, peer, false);
  if (engine != nullptr && engine->busy()) {
    return queue_point_to_point(state, sending, request, options);
  }
  run_point_to_point(state, sending, request, options, false);
  return nullptr;
}

// send_async / recv_async: the blocking call's checks on the caller's
// thread (same text), the pair number taken there in program order, the
// exchange queued on the engine of its peer and direction.
std::shared_ptr<internal::WorkState> point_to_point_async(CommunicatorState& state, bool sending,
                                                          const void* buffer, std::size_t count,
                                                          DataType type, int peer,
                                                          const PointToPointOptions& options) {
  Request request = make_request(sending, buffer, count, type, peer);
  check_beside_calls_in_flight(state, request, options);
  if (internal::mpi_thread_level() < MPI_THREAD_MULTIPLE) {
    throw InvalidArgumentError(
        request.label() + " (async)", state.rank,
        std::string("an _async call needs MPI_THREAD_MULTIPLE, MPI was initialised at ") +
            internal::mpi_thread_level_name(internal::mpi_thread_level()) +
            ": the library's progress thread calls MPI while the program's threads may too");
  }
  request.sequence = take_pair_number(state, sending, peer);
  return queue_point_to_point(state, sending, request, options);
}

}  // namespace

void Communicator::send(const void* buffer, std::size_t count, DataType type, int peer,
                        const PointToPointOptions& options) {
  if (auto queued = point_to_point(state(), true, buffer, count, type, peer, options)) {
    Work(std::move(queued)).wait();
  }
}

void Communicator::recv(void* buffer, std::size_t count, DataType type, int peer,
                        const PointToPointOptions& options) {
  if (auto queued = point_to_point(state(), false, buffer, count, type, peer, options)) {
    Work(std::move(queued)).wait();
  }
}

Work Communicator::send_async(const void* buffer, std::size_t count, DataType type, int peer,
                              const PointToPointOptions& options) {
  return Work(point_to_point_async(state(), true, buffer, count, type, peer, options));
}

Work Communicator::recv_async(void* buffer, std::size_t count, DataType type, int peer,
                              const PointToPointOptions& options) {
  return Work(point_to_point_async(state(), false, buffer, count, type, peer, options));
}

}  // namespace collective
