// A ps task's service loop: holds variable shards and applies requests to
// them one at a time, in arrival order (so each update is atomic per
// shard). Needs no user code; returns when the chief shuts the cluster down.
#include "ps/ps_server.h"
#include <atomic>
#include <chrono>
#include <map>
#include <optional>

#include "collective/errors.h"
#include "values/element_math.h"
#include "base/log.h"
#include "ps/chief_silence.h"
#include "ps/ps_cluster.h"

namespace collective::distribute::detail {
namespace {

Bytes text_bytes(const std::string& text) {
  const auto* p = reinterpret_cast<const std::byte*>(text.data());
  return Bytes(p, p + text.size());
}

class ParameterStore {
 public:
  explicit ParameterStore(PsCluster& cluster) : cluster_(cluster) {}

  // The reply's payload (and, for a staged read, reply.staged_bytes);
  // InvalidArgumentError when the request is wrong.
  Bytes handle(const Message& m, Header& reply) {
    const std::string what =
        "ps " + std::to_string(cluster_.task_id) + " request from rank " + std::to_string(m.source);
    // An update's value: in the message, or in the requester's staging
    // segment (same node).
    const std::byte* payload = m.payload.data();
    std::size_t payload_size = m.payload.size();
    StagingSegment* staged = nullptr;
    if (m.header.staged_generation != 0) {
      staged = staging(m.source, m.header.staged_generation, what);
      if (m.header.staged_bytes > staged->size()) {
        throw InvalidArgumentError(what, cluster_.rank,
                                   "staged " + std::to_string(m.header.staged_bytes) +
                                       " bytes in a segment of " + std::to_string(staged->size()));
      }
      std::atomic_thread_fence(std::memory_order_seq_cst);  // the requester's stores first
      payload = staged->data();
      payload_size = m.header.op == Op::kRead ? 0 : static_cast<std::size_t>(m.header.staged_bytes);
    }
    if (m.header.op == Op::kCreate) {
      Reader reader(m.payload, what);
      Tensor initial = reader.tensor();
      if (!shards_.emplace(m.header.id, std::move(initial)).second) {
        throw InvalidArgumentError(what, cluster_.rank,
                                   "shard " + std::to_string(m.header.id) + " exists");
      }
      return {};
    }
    const auto it = shards_.find(m.header.id);
    if (it == shards_.end()) {
      throw InvalidArgumentError(
          what, cluster_.rank, "no variable shard " + std::to_string(m.header.id) + " on this ps");
    }
    Tensor& shard = it->second;
    if (m.header.op == Op::kRead) {
      const auto* p = static_cast<const std::byte*>(shard.raw_data());
      if (staged != nullptr) {
        if (m.header.staged_bytes != shard.num_bytes()) {
          throw InvalidArgumentError(what, cluster_.rank,
                                     "a staged read of " + std::to_string(m.header.staged_bytes) +
                                         " bytes for " + shard.debug_string() + " (" +
                                         std::to_string(shard.num_bytes()) + " bytes)");
        }
        if (shard.num_bytes() > 0) std::memcpy(staged->data(), p, shard.num_bytes());
        reply.staged_bytes = shard.num_bytes();
        std::atomic_thread_fence(std::memory_order_seq_cst);  // before the reply is sent
        return {};
      }
      return Bytes(p, p + shard.num_bytes());
    }
    if (payload_size != shard.num_bytes()) {
      throw InvalidArgumentError(what, cluster_.rank,
                                 "an update of " + std::to_string(payload_size) + " bytes for " +
                                     shard.debug_string() + " (" +
                                     std::to_string(shard.num_bytes()) + " bytes)");
    }
    if (m.header.op == Op::kAssign) {
      if (payload_size > 0) std::memcpy(shard.raw_data(), payload, payload_size);
      return {};
    }
    Tensor delta(shard.dtype(), shard.shape());
    if (payload_size > 0) std::memcpy(delta.raw_data(), payload, payload_size);
    switch (m.header.op) {
      case Op::kAdd: add_in_place(shard, delta, +1); break;
      case Op::kSubtract: add_in_place(shard, delta, -1); break;
      case Op::kSgd: subtract_scaled_in_place(shard, delta, m.header.scalar); break;
      case Op::kCreate:
      case Op::kRead:
      case Op::kAssign:
      case Op::kReply:
      case Op::kClosure:
      case Op::kResult:
      case Op::kHeartbeat:
      case Op::kShutdown:
      case Op::kBye:
      default:
        throw InvalidArgumentError(
            what, cluster_.rank,
            "unknown request " + std::to_string(static_cast<int>(m.header.op)));
    }
    return {};
  }

 private:
  // The requester's staging segment of this generation, mapped on first
  // use (the previous generation is unmapped).
  StagingSegment* staging(int source, std::uint64_t generation, const std::string& what) {
    if (!cluster_.wire->same_node(source)) {
      throw InvalidArgumentError(
          what, cluster_.rank,
          "a staged request from rank " + std::to_string(source) + ", which is on another node");
    }
    Staged& staged = staged_[source];
    if (staged.generation != generation || !staged.segment) {
      staged.segment.reset();
      staged.segment = StagingSegment::open(
          StagingSegment::name(cluster_.wire->job_token(), source, cluster_.rank, generation), what,
          cluster_.rank);
      staged.generation = generation;
    }
    return staged.segment.get();
  }

  struct Staged {
    std::uint64_t generation = 0;
    std::unique_ptr<StagingSegment> segment;
  };
  PsCluster& cluster_;
  std::map<std::uint64_t, Tensor> shards_;
  std::map<int, Staged> staged_;  // by requester rank
};

}  // namespace

bool serve_parameters(const std::shared_ptr<PsCluster>& cluster) {
  Wire& wire = *cluster->wire;
  ParameterStore store(*cluster);
  const std::string label = cluster->ps_label(cluster->task_id);
  Clock::time_point last_contact = Clock::now();
  ChiefSilence chief_silence(*cluster, label);
  Clock::time_point last_heartbeat = Clock::time_point{};
  for (int idle = 0;;) {
    bool any = false;
    const Clock::time_point deadline = Clock::now() + cluster->failure_timeout;
    // A bounded batch of requests, then the control channel, so that a
    // stream of requests cannot hide a shutdown or the chief's heartbeats.
    for (int n = 0; n < 64; ++n) {
      std::optional<Message> m = wire.poll(-1, kTagRequest, deadline, "a variable request");
      if (!m) break;
      any = true;
      Header reply;
      reply.op = Op::kReply;
      reply.seq = m->header.seq;
      Bytes payload;
      try {
        payload = store.handle(*m, reply);
      } catch (const std::exception& error) {
        reply.status = Status::kError;
        payload = text_bytes(error.what());
      }
      wire.send(m->source, kTagReply, reply, std::move(payload));
    }
    while (std::optional<Message> m = wire.poll(0, kTagControl, deadline, "a control message")) {
      any = true;
      last_contact = Clock::now();
      if (m->header.op == Op::kShutdown) {
        Header bye;
        bye.op = Op::kBye;
        wire.send(0, kTagResult, bye, {});
        const bool flushed = wire.flush(Clock::now() + cluster->failure_timeout);
        if (!flushed) DISTRIBUTE_LOG(kWarn, label << ": sends still pending at shutdown");
        DISTRIBUTE_LOG(kInfo, label << " shut down by the chief");
        return flushed;
      }
    }
    const Clock::time_point now = Clock::now();
    if (now - last_heartbeat >= cluster->heartbeat_interval) {
      Header heartbeat;
      heartbeat.op = Op::kHeartbeat;
      wire.send(0, kTagHeartbeat, heartbeat, {});
      last_heartbeat = now;
      wire.progress();
    }
    chief_silence.check(last_contact, now);
    if (any) {
      idle = 0;
    } else {
      if ((idle & 63) == 63) wire.progress();
      idle_pause(idle++, kReplyYieldRounds);
    }
  }
}

}  // namespace collective::distribute::detail
