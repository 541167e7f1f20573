#include "transport/mpi/peer_exchange.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "collective/errors.h"
#include "core/env_params.h"
#include "core/log.h"
#include "core/mpi_check.h"
#include "core/mpi_thread_level.h"

namespace collective::internal {
namespace {

// Tags cycle with the call's sequence number, so a message from a call that
// one rank skipped never matches the next call: it times out with a message
// instead of delivering the wrong data. 2^15 - 1 is the smallest MPI_TAG_UB
// the standard allows; the top four tags are send/recv's three and the
// failure agreement's (core/failure_agreement.cc).
constexpr int kTagSpace = 32764;

}  // namespace

int PeerExchange::tag_for(std::uint64_t sequence) { return static_cast<int>(sequence % kTagSpace); }
static_assert(PeerExchange::kPointToPointRecordTag == kTagSpace, "above every collective's tag");

PeerExchange::PeerExchange(const Request& request, CommunicatorState& state,
                           const char* algorithm_name)
    : request_(request),
      state_(state),
      algorithm_name_(algorithm_name),
      tag_(tag_for(request.sequence)),
      guard_(request, state, algorithm_name) {}

PeerExchange::PeerExchange(const Request& request, CommunicatorState& state,
                           const char* algorithm_name, int tag)
    : request_(request),
      state_(state),
      algorithm_name_(algorithm_name),
      tag_(tag),
      uses_state_scratch_(false),
      guard_(request, state, algorithm_name) {}

PeerExchange::~PeerExchange() {
  // Normal paths wait for everything; an exception on the way out leaves
  // requests that must not outlive their buffers.
  cancel_outstanding();
}

PeerExchange::Handle PeerExchange::send(const void* buffer, std::size_t bytes, int peer,
                                        const char* purpose, int step) {
  return post(const_cast<void*>(buffer), bytes, peer, true, purpose, step);
}

PeerExchange::Handle PeerExchange::recv(void* buffer, std::size_t bytes, int peer,
                                        const char* purpose, int step) {
  return post(buffer, bytes, peer, false, purpose, step);
}

PeerExchange::Handle PeerExchange::post(void* buffer, std::size_t bytes, int peer, bool is_send,
                                        const char* purpose, int step) {
  Pending pending;
  pending.peer = peer;
  pending.is_send = is_send;
  pending.bytes = bytes;
  pending.purpose = purpose;
  pending.step = step;
  const std::size_t piece_limit = env_params().max_message_bytes;
  auto* bytes_ptr = static_cast<std::byte*>(buffer);
  std::size_t offset = 0;
  bool first = true;
  pending.rest_begin = pending.rest_end = split_parts_.size();
  do {
    const std::size_t piece = std::min(piece_limit, bytes - offset);
    MPI_Request mpi_request = MPI_REQUEST_NULL;
    const int count = static_cast<int>(piece);
    int rc = MPI_SUCCESS;
    {
      const MpiLock lock;
      rc = is_send ? MPI_Isend(bytes_ptr + offset, count, MPI_BYTE, peer, tag_, state_.comm,
                               &mpi_request)
                   : MPI_Irecv(bytes_ptr + offset, count, MPI_BYTE, peer, tag_, state_.comm,
                               &mpi_request);
    }
    if (rc != MPI_SUCCESS) {
      check_mpi(rc, is_send ? "MPI_Isend" : "MPI_Irecv", request_.label(), state_.rank);
    }
    if (first) {
      pending.first = mpi_request;
      first = false;
    } else {
      split_parts_.push_back(mpi_request);
      pending.rest_end = split_parts_.size();
    }
    offset += piece;
  } while (offset < bytes);
  pending_.push_back(pending);
  return pending_.size() - 1;
}

bool PeerExchange::poll(Pending& pending) {
  if (pending.done) return true;
  int flag = 0;
  // One lock for the transfer's parts: each test returns at once.
  const MpiLock lock;
  if (pending.first != MPI_REQUEST_NULL) {
    const int rc = MPI_Test(&pending.first, &flag, MPI_STATUS_IGNORE);
    // The label is built only on failure: polls are the hot path.
    if (rc != MPI_SUCCESS) check_mpi(rc, "MPI_Test", request_.label(), state_.rank);
    if (!flag) return false;
  }
  for (std::size_t i = pending.rest_begin; i < pending.rest_end; ++i) {
    MPI_Request& part = split_parts_[i];
    if (part == MPI_REQUEST_NULL) continue;
    const int rc = MPI_Test(&part, &flag, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) check_mpi(rc, "MPI_Test", request_.label(), state_.rank);
    if (!flag) return false;
  }
  pending.done = true;
  return true;
}

PeerExchange::Pending& PeerExchange::at(Handle handle) {
  if (handle >= pending_.size()) {
    throw std::out_of_range("PeerExchange: no transfer " + std::to_string(handle));
  }
  return pending_[handle];
}

bool PeerExchange::test(Handle handle) { return poll(at(handle)); }

void PeerExchange::wait(Handle handle) {
  Pending& pending = at(handle);
  guard_.begin_wait();
  while (!poll(pending)) guard_.idle([&] { return describe(pending); });
}

void PeerExchange::wait_all() {
  wait_range(first_open_, pending_.size());
  first_open_ = pending_.size();
}

void PeerExchange::wait_range(Handle first, Handle last) {
  if (last > pending_.size() || first > last) {
    throw std::out_of_range("PeerExchange: no transfers " + std::to_string(first) + ".." +
                            std::to_string(last));
  }
  guard_.begin_wait();
  while (first < last) {
    bool progressed = false;
    for (std::size_t i = first; i < last; ++i) {
      if (!pending_[i].done && poll(pending_[i])) progressed = true;
    }
    while (first < last && pending_[first].done) ++first;
    if (first == last) break;
    if (!progressed) guard_.idle([&] { return describe_open(first, last); });
  }
}

void PeerExchange::cancel(Handle handle) {
  Pending& pending = at(handle);
  if (pending.done || pending.is_send || pending.rest_end != pending.rest_begin) {
    throw std::logic_error("PeerExchange: only an open, unsplit receive can be cancelled");
  }
  // A cancelled receive completes locally: the wait does not wait for a
  // peer, so it may run under the lock.
  const MpiLock lock;
  int rc = MPI_Cancel(&pending.first);
  if (rc == MPI_SUCCESS) rc = MPI_Wait(&pending.first, MPI_STATUS_IGNORE);
  if (rc != MPI_SUCCESS) check_mpi(rc, "MPI_Cancel", request_.label(), state_.rank);
  pending.done = true;
}

WaitTarget PeerExchange::describe(const Pending& pending) const {
  std::ostringstream what;
  if (pending.is_send) {
    what << "to accept a message of " << pending.bytes << " B";
  } else {
    what << "a message of " << pending.bytes << " B";
  }
  what << " (" << pending.purpose;
  if (pending.step >= 0) what << " step " << pending.step;
  what << ")";
  return WaitTarget{{pending.peer}, what.str()};
}

WaitTarget PeerExchange::describe_open(std::size_t first, std::size_t last) const {
  WaitTarget target;
  std::size_t messages = 0;
  const Pending* example = nullptr;
  for (std::size_t i = first; i < last; ++i) {
    const Pending& pending = pending_[i];
    if (pending.done) continue;
    ++messages;
    if (example == nullptr) example = &pending;
    if (std::find(target.ranks.begin(), target.ranks.end(), pending.peer) == target.ranks.end()) {
      target.ranks.push_back(pending.peer);
    }
  }
  std::sort(target.ranks.begin(), target.ranks.end());
  if (example != nullptr) {
    target.what = std::to_string(messages) + (messages == 1 ? " transfer" : " transfers") +
                  " outstanding, e.g. " + describe(*example).what;
  }
  return target;
}

void PeerExchange::cancel_outstanding() noexcept {
  bool abandoned = false;
  const MpiLock lock;
  auto drop = [&](MPI_Request& part) {
    if (part == MPI_REQUEST_NULL) return;
    int flag = 0;
    MPI_Test(&part, &flag, MPI_STATUS_IGNORE);
    if (flag) return;
    MPI_Cancel(&part);
    MPI_Request_free(&part);
    abandoned = true;
  };
  for (Pending& pending : pending_) {
    if (pending.done) continue;
    drop(pending.first);
    for (std::size_t i = pending.rest_begin; i < pending.rest_end; ++i) drop(split_parts_[i]);
  }
  if (!abandoned) return;
  // MPI may still touch the scratch areas through the freed requests
  // (send/recv's exchanges use their caller's buffers, which it abandons).
  if (uses_state_scratch_) {
    state_.scratch_in.abandon();
    state_.scratch_work.abandon();
    state_.scratch_check.abandon();
  }
  COLLECTIVE_LOG(kDebug, request_.label() << ": abandoned incomplete requests after failure");
}

}  // namespace collective::internal
