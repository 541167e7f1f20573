#include "core/failure_agreement.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <sstream>

#include "core/env_params.h"
#include "core/mpi_check.h"
#include "core/mpi_thread_level.h"
#include "core/wait_guard.h"

namespace collective::internal {
namespace {

// The point-to-point tag (transport/mpi/peer_exchange.h): no collective uses
// it, and a communicator that lost a rank takes no more send or recv, so a
// view meets no message but a stale one from before the failure, which its
// magic number and instance tell apart.
constexpr int kAgreementTag = 32767;
constexpr std::int32_t kViewMagic = 0x5348524b;  // "SHRK"
// How often a waiting survivor looks for dead ranks itself: a death is then
// part of the view within 10 ms, well inside a shrink's budget.
constexpr std::chrono::milliseconds kLivenessEvery{10};

// A view on the wire: magic, instance, size, then a flag per rank.
constexpr std::size_t kViewHeader = 3;

class Agreement {
 public:
  Agreement(const WaitSubject& state, int size, std::uint32_t instance, const char* operation)
      : state_(state),
        size_(size),
        instance_(static_cast<std::int32_t>(instance)),
        operation_(operation),
        failed_(static_cast<std::size_t>(size), 0),
        heard_(static_cast<std::size_t>(size)),
        inbox_(kViewHeader + static_cast<std::size_t>(size)) {}

  ~Agreement() {
    // What is still posted: the receive is cancelled; a send to a rank that
    // died may never complete, so it is let go and its buffer kept for the
    // process's life (a few bytes per rank, only after a death).
    const MpiLock lock;
    if (receive_ != MPI_REQUEST_NULL) {
      MPI_Cancel(&receive_);
      MPI_Request_free(&receive_);
    }
    for (Send& send : sends_) {
      int done = 0;
      if (send.request != MPI_REQUEST_NULL) MPI_Test(&send.request, &done, MPI_STATUS_IGNORE);
      if (send.request != MPI_REQUEST_NULL) {
        MPI_Request_free(&send.request);
        abandoned_buffers().push_back(std::move(send.buffer));
      }
    }
  }

  std::vector<int> run(const std::vector<int>& known) {
    for (const int rank : known) failed_[static_cast<std::size_t>(rank)] = 1;
    failed_[static_cast<std::size_t>(state_.rank)] = 0;
    look_for_deaths();
    post_receive();
    send_view();
    WaitGuard guard(operation_, state_.rank, env_params().timeout, nullptr, "failure agreement");
    Clock::time_point next_look = Clock::now() + kLivenessEvery;
    for (;;) {
      bool grew = receive_views();
      if (Clock::now() >= next_look) {
        grew = look_for_deaths() || grew;
        next_look = Clock::now() + kLivenessEvery;
      }
      if (grew) {
        send_view();
        continue;
      }
      // A last look before deciding: a death seen now still changes the view.
      if (everyone_agrees() && !look_for_deaths()) break;
      guard.idle([&] { return waiting_for(); });
    }
    std::vector<int> failed;
    for (int rank = 0; rank < size_; ++rank) {
      if (failed_[static_cast<std::size_t>(rank)]) failed.push_back(rank);
    }
    return failed;
  }

 private:
  struct Send {
    std::unique_ptr<std::vector<std::int32_t>> buffer;
    MPI_Request request = MPI_REQUEST_NULL;
  };

  static std::deque<std::unique_ptr<std::vector<std::int32_t>>>& abandoned_buffers() {
    static auto* buffers = new std::deque<std::unique_ptr<std::vector<std::int32_t>>>;
    return *buffers;
  }

  bool alive(int rank) const { return !failed_[static_cast<std::size_t>(rank)]; }

  bool look_for_deaths() {
    bool grew = false;
    for (const int rank : state_.liveness.gone()) {
      if (alive(rank)) {
        failed_[static_cast<std::size_t>(rank)] = 1;
        grew = true;
      }
    }
    return grew;
  }

  void post_receive() {
    const MpiLock lock;
    check_mpi(MPI_Irecv(inbox_.data(), static_cast<int>(inbox_.size()), MPI_INT32_T, MPI_ANY_SOURCE,
                        kAgreementTag, state_.comm, &receive_),
              "MPI_Irecv", operation_, state_.rank);
  }

  // Takes in every view that arrived; true when one grew this rank's.
  bool receive_views() {
    bool grew = false;
    for (;;) {
      int done = 0;
      MPI_Status status;
      {
        const MpiLock lock;
        const int rc = MPI_Test(&receive_, &done, &status);
        // A stale message longer than a view is refused by MPI (truncated):
        // it is not a view.
        if (rc != MPI_SUCCESS) done = 1, status.MPI_SOURCE = -1;
      }
      if (!done) return grew;
      const int from = status.MPI_SOURCE;
      if (from >= 0 && from < size_ && inbox_[0] == kViewMagic && inbox_[1] == instance_ &&
          inbox_[2] == size_) {
        std::vector<char>& view = heard_[static_cast<std::size_t>(from)];
        view.assign(inbox_.begin() + kViewHeader, inbox_.end());
        for (int rank = 0; rank < size_; ++rank) {
          if (view[static_cast<std::size_t>(rank)] && alive(rank) && rank != state_.rank) {
            failed_[static_cast<std::size_t>(rank)] = 1;
            grew = true;
          }
        }
      }
      post_receive();
    }
  }

  void send_view() {
    std::vector<std::int32_t> view(kViewHeader + static_cast<std::size_t>(size_));
    view[0] = kViewMagic;
    view[1] = instance_;
    view[2] = size_;
    for (int rank = 0; rank < size_; ++rank) {
      view[kViewHeader + static_cast<std::size_t>(rank)] = failed_[static_cast<std::size_t>(rank)];
    }
    // The sends of earlier views that completed are done with.
    std::erase_if(sends_, [](Send& send) {
      int done = 0;
      const MpiLock lock;
      MPI_Test(&send.request, &done, MPI_STATUS_IGNORE);
      return done != 0;
    });
    for (int rank = 0; rank < size_; ++rank) {
      if (rank == state_.rank || !alive(rank)) continue;
      Send send;
      send.buffer = std::make_unique<std::vector<std::int32_t>>(view);
      const MpiLock lock;
      // A send to a rank that died meanwhile may fail: the next look finds it.
      MPI_Isend(send.buffer->data(), static_cast<int>(send.buffer->size()), MPI_INT32_T, rank,
                kAgreementTag, state_.comm, &send.request);
      sends_.push_back(std::move(send));
    }
  }

  bool everyone_agrees() const {
    for (int rank = 0; rank < size_; ++rank) {
      if (rank == state_.rank || !alive(rank)) continue;
      if (heard_[static_cast<std::size_t>(rank)] != failed_) return false;
    }
    return true;
  }

  WaitTarget waiting_for() const {
    WaitTarget target;
    std::ostringstream what;
    what << "the failure agreement's view of ";
    bool first = true;
    for (int rank = 0; rank < size_; ++rank) {
      if (rank == state_.rank || !alive(rank)) continue;
      if (heard_[static_cast<std::size_t>(rank)] == failed_) continue;
      target.ranks.push_back(rank);
      what << (first ? "" : ", ") << "rank " << rank;
      first = false;
    }
    what << " (every survivor calls shrink)";
    target.what = what.str();
    return target;
  }

  const WaitSubject& state_;
  const int size_;
  const std::int32_t instance_;
  const char* operation_;
  // The view: failed_[r] != 0 when rank r is known to have failed.
  std::vector<char> failed_;
  // The latest view from each rank (empty: none yet).
  std::vector<std::vector<char>> heard_;
  std::vector<std::int32_t> inbox_;
  MPI_Request receive_ = MPI_REQUEST_NULL;
  std::vector<Send> sends_;
};

}  // namespace

std::vector<int> agree_on_failed_ranks(const WaitSubject& state, int size,
                                       const std::vector<int>& known, std::uint32_t instance,
                                       const char* operation) {
  Agreement agreement(state, size, instance, operation);
  return agreement.run(known);
}

}  // namespace collective::internal
