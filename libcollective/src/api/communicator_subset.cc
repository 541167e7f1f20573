// Communicator::subset: a communicator of some ranks of this one, made by
// those ranks alone (MPI_Comm_create_group). torch.distributed's new_group
// creates a group's backend on its members only, so a making that needs
// every rank of the parent (split) would wait forever there.
//
// MPI_Comm_create_group blocks, and MPI pairs the members' calls by the
// group alone: a listed rank that never calls would hold the others
// forever, and lists that differ are erroneous. So the members first meet
// at the first listed rank (the arrival), within the timeout: each sends it
// its list and whether it holds the process's creation turn (below
// MPI_THREAD_MULTIPLE), and it answers every member with one verdict. Only
// when every member has arrived with the same list does anyone call MPI.
#include <mpi.h>

#include <algorithm>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "api/communicator_making.h"
#include "api/communicator_topology.h"
#include "api/flight_recorder_attach.h"
#include "api/progress_engine.h"
#include "collective/communicator.h"
#include "collective/errors.h"
#include "core/communicator_creation.h"
#include "core/communicator_state.h"
#include "core/env_params.h"
#include "core/exclusive_use.h"
#include "core/mpi_check.h"
#include "core/mpi_thread_level.h"
#include "core/wait_guard.h"

namespace collective {
namespace {

using internal::CommunicatorState;

constexpr const char* kSubsetOperation = "Communicator::subset";
// The arrival's messages. Every earlier call of this rank on the parent has
// finished, and MPI keeps one sender's messages of one tag in order, so a
// collective's or the shrink agreement's message of this tag sent after
// the arrival's cannot take its place.
constexpr int kArrivalTag = 32767;

// The verdict the first listed rank sends every member.
enum class Verdict : int { kAgreed = 0, kListsDiffer = 1, kNoCreationTurn = 2 };

std::string describe_list(const int* ranks, std::size_t n) {
  std::ostringstream out;
  out << "[";
  for (std::size_t i = 0; i < n; ++i) out << (i ? ", " : "") << ranks[i];
  out << "]";
  return out.str();
}

// The caller's list alone: non-empty, every rank inside the communicator
// and listed once, the caller among them.
void check_list(const CommunicatorState& self, const std::vector<int>& ranks) {
  auto fail = [&](const std::string& why) {
    throw InvalidArgumentError(kSubsetOperation, self.rank,
                               why + " (ranks " + describe_list(ranks.data(), ranks.size()) +
                                   "); nothing was made and this communicator stays usable");
  };
  if (ranks.empty()) fail("the list of ranks is empty");
  std::vector<bool> seen(static_cast<std::size_t>(self.size), false);
  for (int r : ranks) {
    if (r < 0 || r >= self.size) {
      fail("rank " + std::to_string(r) + " is outside the communicator (size " +
           std::to_string(self.size) + ")");
    }
    if (seen[static_cast<std::size_t>(r)]) fail("rank " + std::to_string(r) + " is listed twice");
    seen[static_cast<std::size_t>(r)] = true;
  }
  if (!seen[static_cast<std::size_t>(self.rank)]) {
    fail("this rank (" + std::to_string(self.rank) +
         ") is not listed: only the listed ranks call subset");
  }
}

// Waits for `requests` within the timeout; a stall or timeout names the
// peers whose message is still owed. On a timeout (or an abort) the
// unfinished requests are cancelled and freed, and the parent poisoned: a
// member's message may still arrive (and MPI may still use the buffers,
// which the caller abandons).
void wait_for_members(CommunicatorState& self, std::vector<MPI_Request>& requests,
                      const std::vector<int>& peers, const char* what) {
  internal::WaitGuard guard(kSubsetOperation, self.rank, internal::env_params().timeout, &self,
                            what);
  try {
    while (true) {
      bool all_done = true;
      {
        const internal::MpiLock lock;
        for (MPI_Request& request : requests) {  // MPI_Test nulls a finished request
          if (request == MPI_REQUEST_NULL) continue;
          int done = 0;
          internal::check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test",
                              kSubsetOperation, self.rank);
          all_done = all_done && done != 0;
        }
      }
      if (all_done) return;
      guard.idle([&] {
        internal::WaitTarget target{{}, what};
        for (std::size_t i = 0; i < requests.size(); ++i) {
          if (requests[i] != MPI_REQUEST_NULL) target.ranks.push_back(peers[i]);
        }
        return target;
      });
    }
  } catch (const CommunicationError& error) {
    {
      const internal::MpiLock lock;
      for (MPI_Request& request : requests) {
        if (request == MPI_REQUEST_NULL) continue;
        MPI_Cancel(&request);
        MPI_Request_free(&request);
      }
    }
    self.poison(error);
    throw;
  }
}

// The arrival's message buffers, apart so that a failed arrival can
// abandon them (MPI may still use them through the requests it freed).
struct ArrivalMessages {
  std::vector<int> mine;                                      // [holds the turn, n, ranks...]
  int verdict[2] = {static_cast<int>(Verdict::kAgreed), -1};  // verdict, offending rank
  std::vector<std::vector<int>> theirs;  // at the first listed rank: every other member's
};

// Each member sends the first listed rank its message and takes its
// verdict; the first listed rank compares the lists and answers everyone.
void exchange_at_the_first(CommunicatorState& self, const std::vector<int>& ranks, bool holds_turn,
                           ArrivalMessages& messages) {
  const int first = ranks.front();
  std::vector<int>& mine = messages.mine;
  int* verdict = messages.verdict;
  std::vector<std::vector<int>>& theirs = messages.theirs;
  if (self.rank != first) {
    std::vector<MPI_Request> requests(2, MPI_REQUEST_NULL);
    {
      const internal::MpiLock lock;
      internal::check_mpi(MPI_Isend(mine.data(), static_cast<int>(mine.size()), MPI_INT, first,
                                    kArrivalTag, self.comm, &requests[0]),
                          "MPI_Isend", kSubsetOperation, self.rank);
      internal::check_mpi(
          MPI_Irecv(verdict, 2, MPI_INT, first, kArrivalTag, self.comm, &requests[1]), "MPI_Irecv",
          kSubsetOperation, self.rank);
    }
    wait_for_members(self, requests, {first, first},
                     "the first listed rank's answer that every listed rank called subset");
  } else {
    const std::size_t others = ranks.size() - 1;
    theirs.assign(others, std::vector<int>(static_cast<std::size_t>(self.size) + 2, -1));
    std::vector<MPI_Request> requests(others, MPI_REQUEST_NULL);
    std::vector<int> peers(ranks.begin() + 1, ranks.end());
    {
      const internal::MpiLock lock;
      for (std::size_t i = 0; i < others; ++i) {
        internal::check_mpi(MPI_Irecv(theirs[i].data(), self.size + 2, MPI_INT, peers[i],
                                      kArrivalTag, self.comm, &requests[i]),
                            "MPI_Irecv", kSubsetOperation, self.rank);
      }
    }
    wait_for_members(self, requests, peers, "every listed rank to call subset");
    for (std::size_t i = 0; i < others && verdict[0] == 0; ++i) {
      const std::vector<int>& list = theirs[i];
      const bool same =
          list[1] == mine[1] && std::equal(mine.begin() + 2, mine.end(), list.begin() + 2);
      if (!same) {
        verdict[0] = static_cast<int>(Verdict::kListsDiffer);
      } else if (list[0] == 0) {
        verdict[0] = static_cast<int>(Verdict::kNoCreationTurn);
      }
      if (verdict[0] != 0) verdict[1] = peers[i];
    }
    if (verdict[0] == 0 && !holds_turn) {
      verdict[0] = static_cast<int>(Verdict::kNoCreationTurn);
      verdict[1] = self.rank;
    }
    std::vector<MPI_Request> answers(others, MPI_REQUEST_NULL);
    {
      const internal::MpiLock lock;
      for (std::size_t i = 0; i < others; ++i) {
        internal::check_mpi(
            MPI_Isend(verdict, 2, MPI_INT, peers[i], kArrivalTag, self.comm, &answers[i]),
            "MPI_Isend", kSubsetOperation, self.rank);
      }
    }
    wait_for_members(self, answers, peers, "every listed rank to take the answer");
  }
}

// The arrival: returns when every listed rank came with this list and,
// below MULTIPLE, its creation turn; raises on every member otherwise.
void meet_the_members(CommunicatorState& self, const std::vector<int>& ranks, bool holds_turn) {
  const int first = ranks.front();
  auto messages = std::make_unique<ArrivalMessages>();
  std::vector<int>& mine = messages->mine;
  int* verdict = messages->verdict;
  std::vector<std::vector<int>>& theirs = messages->theirs;
  mine = {holds_turn ? 1 : 0, static_cast<int>(ranks.size())};
  mine.insert(mine.end(), ranks.begin(), ranks.end());
  try {
    exchange_at_the_first(self, ranks, holds_turn, *messages);
  } catch (...) {
    (void)messages.release();  // abandoned: MPI may still write into it
    throw;
  }
  const Verdict outcome = static_cast<Verdict>(verdict[0]);
  const int offender = verdict[1];
  const std::string who =
      offender == self.rank ? std::string("this rank") : "rank " + std::to_string(offender);
  if (outcome == Verdict::kListsDiffer) {
    std::string lists = "; this rank listed " + describe_list(ranks.data(), ranks.size());
    if (self.rank == first) {
      const std::size_t index = static_cast<std::size_t>(
          std::find(ranks.begin(), ranks.end(), offender) - ranks.begin() - 1);
      const std::vector<int>& list = theirs[index];
      lists = ": it listed " +
              describe_list(list.data() + 2,
                            static_cast<std::size_t>(std::clamp(list[1], 0, self.size))) +
              ", rank " + std::to_string(first) + " listed " +
              describe_list(ranks.data(), ranks.size());
    }
    throw MismatchError(kSubsetOperation, self.rank,
                        who + " passed other ranks than rank " + std::to_string(first) +
                            " (the first listed)" + lists +
                            "; every listed rank passes the same list; nothing was made");
  }
  if (outcome == Verdict::kNoCreationTurn) {
    throw InvalidArgumentError(
        kSubsetOperation, self.rank,
        who +
            " was making another communicator in another thread at the same time; MPI was "
            "initialised at " +
            std::string(internal::mpi_thread_level_name(internal::mpi_thread_level())) +
            ", below which a process makes one communicator at a time: nothing was made and this "
            "communicator stays usable");
  }
}

}  // namespace

Communicator Communicator::subset(const std::vector<int>& ranks) const {
  CommunicatorState& self = state();
  internal::require_can_make_communicator(self, kSubsetOperation);
  (void)internal::env_params();  // a malformed variable raises before any MPI call
  check_list(self, ranks);
  internal::finish_work_in_flight(self);  // program order
  const internal::ExclusiveUse exclusive(self, internal::ExclusiveUse::Operation::kSplit);
  const internal::ParentTurn parent_turn(self.comm);
  const internal::CreationTurn creation_turn;
  meet_the_members(self, ranks, creation_turn.held());
  MPI_Comm child = MPI_COMM_NULL;
  {
    // Blocking, but every member has arrived with this list (above).
    const internal::MpiLock lock;
    MPI_Group parent_group = MPI_GROUP_NULL;
    MPI_Group group = MPI_GROUP_NULL;
    internal::check_mpi(MPI_Comm_group(self.comm, &parent_group), "MPI_Comm_group",
                        kSubsetOperation, self.rank);
    const int rc_incl =
        MPI_Group_incl(parent_group, static_cast<int>(ranks.size()), ranks.data(), &group);
    MPI_Group_free(&parent_group);
    internal::check_mpi(rc_incl, "MPI_Group_incl", kSubsetOperation, self.rank);
    const int rc_create = MPI_Comm_create_group(self.comm, group, 0, &child);
    MPI_Group_free(&group);
    internal::check_mpi(rc_create, "MPI_Comm_create_group", kSubsetOperation, self.rank);
  }
  auto made = std::make_shared<CommunicatorState>(child, kSubsetOperation);
  internal::attach_topology(*made, kSubsetOperation);
  internal::attach_flight_recorder(*made);
  return Communicator(std::move(made));
}

}  // namespace collective
