#include "ps/ps_wire.h"

#include <mpi.h>
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <mutex>
#include <thread>

#include "collective/distribute/errors.h"
#include "collective/errors.h"

namespace collective::distribute::detail {

namespace {

// One lock for every MPI call of the parameter-server layer in this
// process (MPI runs at MPI_THREAD_SERIALIZED).
std::mutex& mpi_mutex() {
  static std::mutex mutex;
  return mutex;
}

void check(int code, const char* call, int rank) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw CommunicationError(std::string("ParameterServerStrategy ") + call, rank,
                           std::string(text, static_cast<std::size_t>(length)));
}

MPI_Comm comm_of(int handle) { return MPI_Comm_f2c(handle); }

}  // namespace

struct Wire::Pending {
  Bytes buffer;   // the header (and a small payload)
  Bytes payload;  // a large payload
  std::vector<MPI_Request> requests;
};

Wire::Wire(int mpi_fortran_handle) {
  std::lock_guard<std::mutex> lock(mpi_mutex());
  MPI_Comm dup = MPI_COMM_NULL;
  check(MPI_Comm_dup(MPI_Comm_f2c(mpi_fortran_handle), &dup), "MPI_Comm_dup", -1);
  // Errors come back as codes, so a dead peer is an exception, not an abort.
  MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
  comm_ = MPI_Comm_c2f(dup);
  MPI_Comm_rank(dup, &rank_);
  MPI_Comm_size(dup, &size_);
  // Which ranks share a node: the lowest rank of each node names it.
  MPI_Comm node = MPI_COMM_NULL;
  check(MPI_Comm_split_type(dup, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node),
        "MPI_Comm_split_type", rank_);
  int node_id = rank_;
  check(MPI_Allreduce(&rank_, &node_id, 1, MPI_INT, MPI_MIN, node), "MPI_Allreduce", rank_);
  MPI_Comm_free(&node);
  node_of_rank_.resize(static_cast<std::size_t>(size_));
  check(MPI_Allgather(&node_id, 1, MPI_INT, node_of_rank_.data(), 1, MPI_INT, dup), "MPI_Allgather",
        rank_);
  char token[32] = {};
  if (rank_ == 0) {
    const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
    std::snprintf(token, sizeof token, "%ld-%llx", static_cast<long>(getpid()),
                  static_cast<unsigned long long>(now) & 0xffffffffffULL);
  }
  check(MPI_Bcast(token, sizeof token, MPI_CHAR, 0, dup), "MPI_Bcast", rank_);
  token[sizeof token - 1] = '\0';
  job_token_ = token;
}

Wire::~Wire() {
  // Sends still pending belong to peers that stopped answering; their
  // buffers are leaked on purpose (freeing them under MPI would be unsafe).
  for (auto& pending : pending_) (void)pending.release();
}

void Wire::release() {
  std::lock_guard<std::mutex> lock(mpi_mutex());
  if (released_) return;
  released_ = true;
  MPI_Comm comm = comm_of(comm_);
  MPI_Comm_free(&comm);
}

void Wire::send(int destination, int tag, Header header, Bytes payload) {
  header.payload_bytes = payload.size();
  auto pending = std::make_unique<Pending>();
  const bool inline_payload = payload.size() <= kInlineBytes;
  // A small payload rides in the header's message (one copy of a few
  // bytes); a large one is sent from its own buffer, moved in, uncopied.
  pending->buffer.resize(sizeof(Header) + (inline_payload ? payload.size() : 0));
  std::memcpy(pending->buffer.data(), &header, sizeof(Header));
  if (inline_payload && !payload.empty()) {
    std::memcpy(pending->buffer.data() + sizeof(Header), payload.data(), payload.size());
  } else if (!inline_payload) {
    pending->payload = std::move(payload);
  }
  std::lock_guard<std::mutex> lock(mpi_mutex());
  MPI_Comm comm = comm_of(comm_);
  MPI_Request request;
  check(MPI_Isend(pending->buffer.data(), static_cast<int>(pending->buffer.size()), MPI_BYTE,
                  destination, tag, comm, &request),
        "MPI_Isend", rank_);
  pending->requests.push_back(request);
  for (std::size_t offset = 0; offset < pending->payload.size(); offset += kPieceBytes) {
    const std::size_t n = std::min(kPieceBytes, pending->payload.size() - offset);
    check(MPI_Isend(pending->payload.data() + offset, static_cast<int>(n), MPI_BYTE, destination,
                    tag, comm, &request),
          "MPI_Isend", rank_);
    pending->requests.push_back(request);
  }
  pending_.push_back(std::move(pending));
}

bool Wire::progress() {
  std::lock_guard<std::mutex> lock(mpi_mutex());
  for (auto it = pending_.begin(); it != pending_.end();) {
    int done = 0;
    MPI_Testall(static_cast<int>((*it)->requests.size()), (*it)->requests.data(), &done,
                MPI_STATUSES_IGNORE);
    it = done ? pending_.erase(it) : it + 1;
  }
  return pending_.empty();
}

bool Wire::flush(Clock::time_point deadline) {
  for (int round = 0;; ++round) {
    if (progress()) return true;
    if (Clock::now() > deadline) return false;
    idle_pause(round);
  }
}

std::optional<Message> Wire::poll(int source, int tag, Clock::time_point deadline,
                                  const std::string& what) {
  Message message;
  std::size_t rest = 0;
  std::size_t received = 0;
  {
    std::lock_guard<std::mutex> lock(mpi_mutex());
    MPI_Comm comm = comm_of(comm_);
    int flag = 0;
    MPI_Message handle;
    MPI_Status status;
    check(MPI_Improbe(source < 0 ? MPI_ANY_SOURCE : source, tag, comm, &flag, &handle, &status),
          "MPI_Improbe", rank_);
    if (!flag) return std::nullopt;
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    Bytes first(static_cast<std::size_t>(count));
    check(MPI_Mrecv(first.data(), count, MPI_BYTE, &handle, &status), "MPI_Mrecv", rank_);
    message.source = status.MPI_SOURCE;
    if (first.size() < sizeof(Header)) {
      throw CommunicationError("ParameterServerStrategy receive", rank_,
                               "a message of " + std::to_string(first.size()) +
                                   " bytes from rank " + std::to_string(message.source) +
                                   " is shorter than a header");
    }
    std::memcpy(&message.header, first.data(), sizeof(Header));
    message.payload.assign(first.begin() + sizeof(Header), first.end());
    received = message.payload.size();
    rest = message.header.payload_bytes -
           std::min<std::uint64_t>(message.header.payload_bytes, received);
  }
  if (rest == 0) return message;
  // A large payload: its pieces follow from the same source on the same tag.
  message.payload.resize(message.header.payload_bytes);
  std::vector<MPI_Request> requests;
  {
    std::lock_guard<std::mutex> lock(mpi_mutex());
    MPI_Comm comm = comm_of(comm_);
    for (std::size_t offset = received; offset < message.payload.size(); offset += kPieceBytes) {
      const std::size_t n = std::min(kPieceBytes, message.payload.size() - offset);
      MPI_Request request;
      check(MPI_Irecv(message.payload.data() + offset, static_cast<int>(n), MPI_BYTE,
                      message.source, tag, comm, &request),
            "MPI_Irecv", rank_);
      requests.push_back(request);
    }
  }
  for (int round = 0;; ++round) {
    {
      std::lock_guard<std::mutex> lock(mpi_mutex());
      int done = 0;
      MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE);
      if (done) return message;
    }
    if (Clock::now() > deadline) {
      // The posted receives stay behind (a late sender completes them into
      // a leaked buffer); freeing them under MPI would be unsafe.
      new Bytes(std::move(message.payload));
      throw UnavailableError("ParameterServerStrategy receive", rank_,
                             "rank " + std::to_string(message.source) +
                                 " did not finish sending the " +
                                 std::to_string(message.header.payload_bytes) +
                                 "-byte payload of " + what + " within the failure timeout");
    }
    idle_pause(round, kReplyYieldRounds);
  }
}

std::string seconds_text(std::chrono::milliseconds duration) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", std::chrono::duration<double>(duration).count());
  return text;
}

int mpi_world_handle() { return MPI_Comm_c2f(MPI_COMM_WORLD); }

void idle_pause(int idle_rounds, int yield_rounds) {
  // Yield for a few rounds (a message usually arrives within microseconds),
  // then sleep briefly, later longer: when ranks outnumber cores, processes
  // that keep yielding stay runnable and take the cores from the ranks doing
  // the work, while a short sleep wakes promptly.
  if (idle_rounds < yield_rounds) {
    sched_yield();
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(idle_rounds < 16384 ? 20 : 200));
  }
}

void Writer::tensor(const Tensor& t) {
  u32(static_cast<std::uint32_t>(t.dtype()));
  u32(static_cast<std::uint32_t>(t.rank()));
  for (std::int64_t d : t.shape()) i64(d);
  u64(t.num_bytes());
  put(t.raw_data(), t.num_bytes());
}

std::string Reader::str() {
  const std::uint64_t n = u64();
  if (n > bytes_.size() - offset_) get(nullptr, n);  // raises
  std::string s(reinterpret_cast<const char*>(bytes_.data() + offset_), n);
  offset_ += n;
  return s;
}

Tensor Reader::tensor() {
  const std::uint32_t dtype = u32();
  const std::uint32_t rank = u32();
  if (rank > 64) {
    throw InvalidArgumentError(what_, -1, "a tensor of rank " + std::to_string(rank));
  }
  Shape shape(rank);
  for (auto& d : shape) d = i64();
  // Sized with overflow checks and against the message before anything is
  // allocated: a damaged shape is an error, never a huge or 0-byte tensor.
  std::size_t expected = 0;
  try {
    expected = num_bytes(shape, static_cast<DataType>(dtype));
  } catch (const Error& error) {
    throw InvalidArgumentError(what_, -1,
                               "a tensor of shape " + shape_string(shape) + ": " + error.cause());
  }
  const std::uint64_t n = u64();
  if (n != expected || n > bytes_.size() - offset_) {
    throw InvalidArgumentError(what_, -1,
                               "tensor " + std::string(to_string(static_cast<DataType>(dtype))) +
                                   " " + shape_string(shape) + " (" + std::to_string(expected) +
                                   " bytes) carries " + std::to_string(n) + " bytes, " +
                                   std::to_string(bytes_.size() - offset_) + " in the message");
  }
  Tensor t(static_cast<DataType>(dtype), shape);
  get(t.raw_data(), n);
  return t;
}

void Reader::get(void* out, std::size_t n) {
  if (n > bytes_.size() - offset_) {
    throw InvalidArgumentError(what_, -1,
                               "truncated: needs " + std::to_string(n) + " bytes at offset " +
                                   std::to_string(offset_) + " of " +
                                   std::to_string(bytes_.size()));
  }
  if (n > 0) std::memcpy(out, bytes_.data() + offset_, n);
  offset_ += n;
}

}  // namespace collective::distribute::detail
