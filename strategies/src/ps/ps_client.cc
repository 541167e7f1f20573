#include "ps/ps_client.h"

#include <atomic>
#include <cstring>
#include <optional>

#include "collective/distribute/errors.h"
#include "collective/errors.h"
#include "ps/ps_roles.h"

namespace collective::distribute::detail {

PsClient::PsClient(Wire& wire, int rank, int num_ps, std::chrono::milliseconds failure_timeout,
                   bool same_node_shared_memory)
    : wire_(wire),
      rank_(rank),
      num_ps_(num_ps),
      failure_timeout_(failure_timeout),
      same_node_shared_memory_(same_node_shared_memory) {}

bool PsClient::stages(int ps, std::size_t bytes) const {
  return same_node_shared_memory_ && bytes > Wire::kInlineBytes && wire_.same_node(ps_rank_of(ps));
}

Message PsClient::staged_request(int ps, Header header, const std::byte* in, std::byte* out,
                                 std::size_t bytes, const std::string& what) {
  std::unique_lock<std::mutex> lock(mutex_);
  Staging& staging_of_ps = staging_[ps];
  if (!staging_of_ps.segment || staging_of_ps.segment->size() < bytes) {
    // A new generation, sized to the next power of two so that a growing
    // variable does not remake it every time.
    std::size_t capacity = std::size_t{1} << 20;
    while (capacity < bytes) capacity *= 2;
    const std::uint64_t generation = next_generation_++;
    staging_of_ps.segment.reset();
    staging_of_ps.segment = StagingSegment::create(
        StagingSegment::name(wire_.job_token(), rank_, ps_rank_of(ps), generation), capacity, what,
        rank_);
    staging_of_ps.generation = generation;
  }
  if (in != nullptr) std::memcpy(staging_of_ps.segment->data(), in, bytes);
  // The request message orders these stores before the ps's loads (and
  // the reply the ps's stores before ours); the fences say so explicitly.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  header.staged_generation = staging_of_ps.generation;
  header.staged_bytes = bytes;
  Message reply = request_locked(ps, header, {}, what);
  staged_requests_.fetch_add(1);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (out != nullptr) {
    if (reply.header.staged_bytes != bytes) {
      throw CommunicationError(what, rank_,
                               ps_label_of(ps) + " staged " +
                                   std::to_string(reply.header.staged_bytes) +
                                   " bytes for a shard of " + std::to_string(bytes));
    }
    std::memcpy(out, staging_of_ps.segment->data(), bytes);
  }
  return reply;
}

Message PsClient::request(int ps, Header header, Bytes payload, const std::string& what) {
  std::lock_guard<std::mutex> lock(mutex_);
  return request_locked(ps, header, std::move(payload), what);
}

Message PsClient::request_locked(int ps, Header header, Bytes payload, const std::string& what) {
  if (ps < 0 || ps >= num_ps_) {
    throw InvalidArgumentError(what, rank_, "no ps " + std::to_string(ps));
  }
  if (closed_) {
    throw InvalidArgumentError(what, rank_,
                               "the parameter-server cluster was shut down (its strategy was "
                               "destroyed or shutdown() was called)");
  }
  header.seq = next_sequence_++;
  const int destination = ps_rank_of(ps);
  wire_.send(destination, kTagRequest, header, std::move(payload));
  const Clock::time_point deadline = Clock::now() + failure_timeout_;
  for (int round = 0;; ++round) {
    std::optional<Message> reply = wire_.poll(destination, kTagReply, deadline, what);
    if (reply && reply->header.seq == header.seq) {
      if (reply->header.status != Status::kOk) {
        throw CommunicationError(
            what, rank_,
            ps_label_of(ps) + " refused: " +
                std::string(reinterpret_cast<const char*>(reply->payload.data()),
                            reply->payload.size()));
      }
      wire_.progress();
      return std::move(*reply);
    }
    if (reply) continue;  // the reply to an earlier request that timed out
    if (Clock::now() > deadline) {
      throw UnavailableError(what, rank_,
                             ps_label_of(ps) + " did not answer within the failure timeout (" +
                                 seconds_text(failure_timeout_) +
                                 ", COLLECTIVE_PS_FAILURE_TIMEOUT); the ps task is unavailable");
    }
    if ((round & 63) == 0) wire_.progress();
    idle_pause(round, kReplyYieldRounds);
  }
}

}  // namespace collective::distribute::detail
