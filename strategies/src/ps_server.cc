// A ps task's service loop: holds variable shards and applies requests to
// them one at a time, in arrival order (so each update is atomic per
// shard). Needs no user code; returns when the chief shuts the cluster down.
#include <map>

#include "collective/errors.h"
#include "element_math.h"
#include "log.h"
#include "ps_cluster.h"

namespace collective::distribute::detail {

namespace {

Bytes text_bytes(const std::string& text) {
  const auto* p = reinterpret_cast<const std::byte*>(text.data());
  return Bytes(p, p + text.size());
}

class ParameterStore {
 public:
  explicit ParameterStore(PsCluster& cluster) : cluster_(cluster) {}

  // The reply's payload; InvalidArgumentError when the request is wrong.
  Bytes handle(const Message& m) {
    const std::string what = "ps " + std::to_string(cluster_.task_id) + " request from rank " +
                             std::to_string(m.source);
    if (m.header.op == Op::kCreate) {
      Reader reader(m.payload, what);
      Tensor initial = reader.tensor();
      if (!shards_.emplace(m.header.id, std::move(initial)).second) {
        throw InvalidArgumentError(what, cluster_.rank, "shard " + std::to_string(m.header.id) + " exists");
      }
      return {};
    }
    const auto it = shards_.find(m.header.id);
    if (it == shards_.end()) {
      throw InvalidArgumentError(what, cluster_.rank,
                                 "no variable shard " + std::to_string(m.header.id) + " on this ps");
    }
    Tensor& shard = it->second;
    if (m.header.op == Op::kRead) {
      const auto* p = static_cast<const std::byte*>(shard.raw_data());
      return Bytes(p, p + shard.num_bytes());
    }
    if (m.payload.size() != shard.num_bytes()) {
      throw InvalidArgumentError(what, cluster_.rank,
                                 "an update of " + std::to_string(m.payload.size()) + " bytes for " +
                                     shard.debug_string() + " (" + std::to_string(shard.num_bytes()) +
                                     " bytes)");
    }
    if (m.header.op == Op::kAssign) {
      if (!m.payload.empty()) std::memcpy(shard.raw_data(), m.payload.data(), m.payload.size());
      return {};
    }
    Tensor delta(shard.dtype(), shard.shape());
    if (!m.payload.empty()) std::memcpy(delta.raw_data(), m.payload.data(), m.payload.size());
    switch (m.header.op) {
      case Op::kAdd: add_in_place(shard, delta, +1); break;
      case Op::kSubtract: add_in_place(shard, delta, -1); break;
      case Op::kSgd: subtract_scaled_in_place(shard, delta, m.header.scalar); break;
      default:
        throw InvalidArgumentError(what, cluster_.rank,
                                   "unknown request " + std::to_string(static_cast<int>(m.header.op)));
    }
    return {};
  }

 private:
  PsCluster& cluster_;
  std::map<std::uint64_t, Tensor> shards_;
};

}  // namespace

bool serve_parameters(const std::shared_ptr<PsCluster>& cluster) {
  Wire& wire = *cluster->wire;
  ParameterStore store(*cluster);
  const std::string label = cluster->ps_label(cluster->task_id);
  Clock::time_point last_contact = Clock::now();
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
        payload = store.handle(*m);
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
    if (now - last_contact > cluster->failure_timeout) {
      throw UnavailableError("ParameterServerStrategy " + label, cluster->rank,
                             "the chief (rank 0) sent nothing for the failure timeout (" +
                                 seconds_text(cluster->failure_timeout) +
                                 "); the coordinator is gone");
    }
    if (any) {
      idle = 0;
    } else {
      if ((idle & 63) == 63) wire.progress();
      idle_pause(idle++, kReplyYieldRounds);
    }
  }
}

}  // namespace collective::distribute::detail
