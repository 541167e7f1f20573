// Whether the processes behind a communicator's ranks still exist, for
// ranks on this host: a rank that died fails the waiting call at once,
// naming it, instead of after the whole timeout.
//
// Each rank publishes its pid, its process start time and a key for its
// kernel and pid namespace when the communicator is created. A peer with
// the same key and host is looked up in /proc: gone, a zombie, or a
// different process under a reused pid means it died; state T means it is
// stopped (SIGSTOP or a debugger), which the stall warning reports. Peers
// on other hosts, or in another pid namespace, are judged by the TCP
// connection to their liveness listener (core/liveness_link.h): reset or
// refused means gone; they are never seen as stopped.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace collective::internal {

// Fixed layout: exchanged as bytes between ranks.
struct ProcessIdentity {
  std::uint64_t kernel_key = 0;  // 0: unknown, never judged
  std::int64_t pid = -1;
  std::uint64_t start_ticks = 0;  // /proc/<pid>/stat field 22
  char host[64] = {};
  // Its liveness listener (core/liveness_link.h), for peers that cannot
  // look it up in /proc; 0: none.
  std::uint32_t link_ipv4 = 0;
  std::uint16_t link_port = 0;
};

// This process's identity.
ProcessIdentity own_identity();

enum class ProcessStatus { kUnknown, kRunning, kStopped, kGone };

class PeerLiveness {
 public:
  // identities[r] for every rank of the communicator; `self` is our rank.
  void adopt(std::vector<ProcessIdentity> identities, int self);

  bool empty() const { return identities_.empty(); }
  // Stops judging `rank` (a rank known dead that a watch of the survivors
  // must not count again).
  void forget(int rank) {
    judged_[static_cast<std::size_t>(rank)] = false;
    linked_[static_cast<std::size_t>(rank)] = false;
  }
  // How many peers can be judged: by /proc (on this host, same kernel and
  // pid namespace) or by their liveness listener (anywhere else).
  int judged_count() const;
  ProcessStatus status(int rank) const;
  // The ranks (other than ours) whose processes are gone, in order.
  std::vector<int> gone() const;
  // "rank 2 (pid 4711 on node7)"; `shown_rank` (when >= 0) is the number
  // printed in place of `rank` (WaitSubject::shown).
  std::string describe(int rank, int shown_rank = -1) const;
  // " (its process is stopped: SIGSTOP or a debugger)" or "".
  std::string status_note(int rank) const;

 private:
  std::vector<ProcessIdentity> identities_;
  std::vector<bool> judged_;  // same host and kernel key: /proc tells the truth
  std::vector<bool> linked_;  // elsewhere, with a listener: its connection tells
  int self_ = -1;
};

}  // namespace collective::internal
