// The requests one process (the chief or a worker) sends to ps tasks: one
// at a time, under the client's lock, which also guards the request
// sequence numbers and the staging segments shared with each ps on this
// node.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "ps/ps_staging.h"
#include "ps/ps_wire.h"

namespace collective::distribute::detail {

class PsClient {
 public:
  // rank: this process's; errors name it. Staging as the documented rule
  // (stages()) when same_node_shared_memory.
  PsClient(Wire& wire, int rank, int num_ps, std::chrono::milliseconds failure_timeout,
           bool same_node_shared_memory);

  // Sends a request to a ps and waits (at most the failure timeout) for its
  // reply; UnavailableError naming the ps on timeout, CommunicationError
  // with the ps's message when it refused.
  Message request(int ps, Header header, Bytes payload, const std::string& what);
  // The same for a payload of `bytes` that goes through the staging
  // segment shared with the ps: copied from `in` before the request (an
  // update), or into `out` from the reply (a read). Only where stages().
  Message staged_request(int ps, Header header, const std::byte* in, std::byte* out,
                         std::size_t bytes, const std::string& what);
  // The documented rule: shared memory on, the ps on this node, and a
  // payload too large to ride in a header message.
  bool stages(int ps, std::size_t bytes) const;

  // The cluster was shut down: every later request is refused.
  void close() { closed_ = true; }
  // How many requests went through staging (tests).
  std::uint64_t staged_requests() const { return staged_requests_.load(); }

 private:
  Message request_locked(int ps, Header header, Bytes payload, const std::string& what);

  Wire& wire_;
  const int rank_;
  const int num_ps_;
  const std::chrono::milliseconds failure_timeout_;
  const bool same_node_shared_memory_;
  std::atomic<bool> closed_{false};
  std::atomic<std::uint64_t> staged_requests_{0};

  std::mutex mutex_;  // one request at a time; guards the members below
  std::uint64_t next_sequence_ = 1;
  struct Staging {
    std::uint64_t generation = 0;
    std::unique_ptr<StagingSegment> segment;
  };
  std::map<int, Staging> staging_;  // by ps
  std::uint64_t next_generation_ = 1;
};

}  // namespace collective::distribute::detail
