#include "reduce/worker_calls.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <optional>
#include <vector>

#include "base/call_purpose.h"
#include "collective/types.h"

namespace collective::distribute::detail {
namespace {

// The tag of the exchange that explains a mismatch: every worker makes it.
constexpr std::uint64_t kReportTag = 0x70616972696e6721ull;

// What a worker tells the others about its call when calls did not pair.
struct CallReport {
  std::uint64_t step;
  std::uint64_t index;
  std::uint8_t in_run;
  char text[239];
};
static_assert(sizeof(CallReport) == 256, "exchanged as 256 bytes");

std::string worker_list(const std::vector<int>& workers) {
  std::string text = workers.size() == 1 ? "worker " : "workers ";
  for (std::size_t i = 0; i < workers.size(); ++i) {
    std::size_t j = i;
    while (j + 1 < workers.size() && workers[j + 1] == workers[j] + 1) ++j;
    if (i > 0) text += ", ";
    text += std::to_string(workers[i]);
    if (j > i) {
      text += '-';
      text += std::to_string(workers[j]);
    }
    i = j;
  }
  return text;
}

}  // namespace

WorkerCalls::WorkerCalls(Communicator communicator, std::shared_ptr<std::mutex> mutex)
    : communicator_(std::move(communicator)), mutex_(std::move(mutex)) {
  if (!mutex_) mutex_ = std::make_shared<std::mutex>();
  size_ = communicator_.size();
  worker_ = communicator_.rank();
}

void WorkerCalls::adopt(std::string owner_label) {
  std::lock_guard<std::mutex> lock(*mutex_);
  label_ = std::move(owner_label);
  own_communicator_ = true;
}

void WorkerCalls::begin_step() {
  const std::uint64_t step = phase_.load(std::memory_order_relaxed) / 2 + 1;
  phase_.store(2 * step + 1, std::memory_order_release);
  if (elastic()) {
    std::lock_guard<std::mutex> lock(*mutex_);
    step_completed_ = completed_;
    step_failure_.reset();
  }
}

void WorkerCalls::end_step() {
  phase_.store(phase_.load(std::memory_order_relaxed) & ~std::uint64_t{1},
               std::memory_order_release);
}

std::uint64_t WorkerCalls::Identity::tag() const {
  const std::uint64_t tag = mix_hash(mix_hash(mix_hash(step, in_run ? 1 : 2), index), purpose);
  return tag != 0 ? tag : 1;  // 0 would mean "untagged"
}

std::string WorkerCalls::Identity::phase() const {
  std::string text = in_run      ? "step " + std::to_string(step)
                     : step == 0 ? std::string("before the first step")
                                 : "after step " + std::to_string(step);
  return text + ", cross-worker call " + std::to_string(index + 1);
}

WorkerCalls::Identity WorkerCalls::next_identity() {
  const std::uint64_t phase = phase_.load(std::memory_order_acquire);
  if (phase != index_phase_) {
    index_phase_ = phase;
    index_ = 0;
  }
  return Identity{phase / 2, (phase & 1) != 0, index_++, CallPurpose::current_hash()};
}

void WorkerCalls::refuse_when_out_of_step() const {
  if (out_of_step_) {
    throw MismatchError(label_, worker_,
                        "no cross-worker call of this strategy runs any more: the workers are "
                        "out of step since an earlier call, where " +
                            *out_of_step_);
  }
}

template <typename Options, typename Call>
void WorkerCalls::Session::tagged(Options& options, const Call& call, void* output,
                                  std::size_t output_bytes, bool may_call_again) {
  owner_.refuse_when_out_of_step();
  const Identity identity = owner_.next_identity();
  options.call_tag = identity.tag();
  for (;;) {
    try {
      call(options);
      owner_.completed(identity.in_run, output, output_bytes);
      return;
    } catch (const MismatchError& error) {
      owner_.explain_mismatch(error, identity, options);
    } catch (const PeerFailedError& error) {
      if (!owner_.elastic()) throw;
      if (identity.in_run) {
        // The step's recovery is its run()'s (recover_step), once every
        // local replica stopped.
        owner_.step_failure_ = Failure{
            owner_.committing_ ? FailedCall::kCommit : FailedCall::kStepCall, identity.step};
        throw;
      }
      const Decision decision =
          owner_.recover(FailedCall::kBetweenSteps, identity.step, output, output_bytes);
      if (decision == Decision::kCompletedFromPeer) {
        owner_.completed(false, output, output_bytes);
        return;
      }
      if (!may_call_again) {
        throw PeerFailedError(owner_.label_, owner_.worker_,
                              "a worker died during this call (" + std::string(error.what()) +
                                  "); the strategy now runs on the " +
                                  std::to_string(owner_.size_) +
                                  " survivors, and this call's result depends on the number of "
                                  "workers: call it again",
                              error.failed_ranks());
      }
      // Made again on the survivors, with the same identity: the others
      // make it there for the first time.
    }
  }
}

void WorkerCalls::Session::all_reduce(const void* input, void* output, std::size_t count,
                                      DataType type, AllReduceOptions options) {
  tagged(
      options,
      [&](const AllReduceOptions& tagged_options) {
        owner_.communicator_.all_reduce(input, output, count, type, tagged_options);
      },
      output, count * element_size(type), true);
}

WorkerCalls::InFlightCall WorkerCalls::Session::all_reduce_async(const void* input, void* output,
                                                                 std::size_t count, DataType type,
                                                                 AllReduceOptions options) {
  owner_.refuse_when_out_of_step();
  const Identity identity = owner_.next_identity();
  options.call_tag = identity.tag();
  InFlightCall call;
  call.step = identity.step;
  call.in_run = identity.in_run;
  call.index = identity.index;
  call.purpose = identity.purpose;
  call.options = options;
  call.work = owner_.communicator_.all_reduce_async(input, output, count, type, options);
  return call;
}

void WorkerCalls::finish(std::vector<InFlightCall>& calls) {
  std::exception_ptr first_failure;
  std::optional<MismatchError> mismatch;
  const InFlightCall* mismatched = nullptr;
  // Every call is waited for before raising: their buffers outlive them.
  for (InFlightCall& call : calls) {
    try {
      call.work.wait();
    } catch (const MismatchError& error) {
      if (!first_failure) {
        first_failure = std::current_exception();
        mismatch.emplace(error);
        mismatched = &call;
      }
    } catch (...) {
      if (!first_failure) first_failure = std::current_exception();
    }
  }
  if (mismatch) {
    const Identity identity{mismatched->step, mismatched->in_run, mismatched->index,
                            mismatched->purpose};
    const CommonOptions options = mismatched->options;
    calls.clear();
    const Session session(*this);
    explain_mismatch(*mismatch, identity, options);
  }
  calls.clear();
  if (first_failure) std::rethrow_exception(first_failure);
}

void WorkerCalls::Session::all_gather(const void* input, void* output, std::size_t count,
                                      DataType type, AllGatherOptions options) {
  tagged(
      options,
      [&](const AllGatherOptions& tagged_options) {
        owner_.communicator_.all_gather(input, output, count, type, tagged_options);
      },
      output, count * static_cast<std::size_t>(owner_.size_) * element_size(type), false);
}

void WorkerCalls::Session::all_gather_v(const void* send, std::size_t send_count, void* recv,
                                        std::span<const std::size_t> recv_counts,
                                        std::span<const std::size_t> recv_displacements,
                                        DataType type, AllGatherOptions options) {
  std::size_t extent = 0;
  for (std::size_t q = 0; q < recv_counts.size() && q < recv_displacements.size(); ++q) {
    extent = std::max(extent, recv_displacements[q] + recv_counts[q]);
  }
  tagged(
      options,
      [&](const AllGatherOptions& tagged_options) {
        owner_.communicator_.all_gather_v(send, send_count, recv, recv_counts, recv_displacements,
                                          type, tagged_options);
      },
      recv, extent * element_size(type), false);
}

void WorkerCalls::Session::broadcast(void* buffer, std::size_t count, DataType type,
                                     BroadcastOptions options) {
  tagged(
      options,
      [&](const BroadcastOptions& tagged_options) {
        owner_.communicator_.broadcast(buffer, count, type, tagged_options);
      },
      buffer, count * element_size(type), true);
}

// ---- Elastic training ---------------------------------------------------------

void WorkerCalls::make_elastic(ShrinkHandler on_shrink) {
  std::lock_guard<std::mutex> lock(*mutex_);
  on_shrink_ = std::move(on_shrink);
}

void WorkerCalls::completed(bool in_run, const void* output, std::size_t output_bytes) {
  ++completed_;
  if (!elastic()) return;
  last_output_valid_ = !in_run;
  if (!in_run) {
    const auto* bytes = static_cast<const std::byte*>(output);
    last_output_.assign(bytes, bytes + (output != nullptr ? output_bytes : 0));
  }
}

void WorkerCalls::commit_step(AllReduceOptions options) {
  const CallPurpose purpose("the step's commit (elastic training)");
  std::int64_t reached = 1;
  options.op = ReduceOp::kMin;
  options.memory = MemoryKind::kHost;
  Session session(*this);
  committing_ = true;
  try {
    session.all_reduce(&reached, &reached, 1, DataType::kInt64, options);
  } catch (...) {
    committing_ = false;
    throw;
  }
  committing_ = false;
}

void WorkerCalls::restart_step() {
  std::lock_guard<std::mutex> lock(*mutex_);
  index_phase_ = phase_.load(std::memory_order_acquire);
  index_ = 0;
  completed_ = step_completed_;
  last_output_valid_ = false;
  step_failure_.reset();
}

WorkerCalls::Decision WorkerCalls::recover_step() {
  std::lock_guard<std::mutex> lock(*mutex_);
  const Failure failure = step_failure_.value_or(Failure{FailedCall::kStepCall, phase_.load() / 2});
  return recover(failure.kind, failure.step, nullptr, 0);
}

WorkerCalls::Decision WorkerCalls::recover(FailedCall kind, std::uint64_t step, void* output,
                                           std::size_t output_bytes) {
  for (;;) {
    Communicator survivors = communicator_.shrink();
    const std::vector<int> lost = communicator_.failed_ranks();
    RecoveryReport mine{};
    mine.completed = completed_;
    mine.step = step;
    mine.output_bytes = kind == FailedCall::kBetweenSteps ? output_bytes : 0;
    mine.kind = static_cast<std::uint8_t>(kind);
    mine.has_last_output = last_output_valid_ ? 1 : 0;
    std::vector<RecoveryReport> reports(static_cast<std::size_t>(survivors.size()));
    Decision decision = Decision::kRedoStep;
    try {
      AllGatherOptions exchange;
      exchange.memory = MemoryKind::kHost;
      survivors.all_gather(&mine, reports.data(), sizeof(RecoveryReport), DataType::kUInt8,
                           exchange);
      const RecoveryPlan plan = plan_recovery(reports, static_cast<std::size_t>(survivors.rank()));
      decision = plan.decision;
      const std::uint64_t needed = plan.broadcast_bytes;
      const int source = plan.source;
      if (needed > 0) {
        if (source < 0) {
          throw CommunicationError(label_, worker_,
                                   "elastic recovery: a survivor failed a call that another "
                                   "completed, and no survivor kept that call's output");
        }
        std::vector<std::byte> buffer(needed);
        if (survivors.rank() == source) {
          std::memcpy(buffer.data(), last_output_.data(),
                      std::min(buffer.size(), last_output_.size()));
        }
        BroadcastOptions from_source;
        from_source.root = source;
        from_source.memory = MemoryKind::kHost;
        survivors.broadcast(buffer.data(), buffer.size(), DataType::kUInt8, from_source);
        if (decision == Decision::kCompletedFromPeer && output != nullptr && output_bytes > 0) {
          std::memcpy(output, buffer.data(), std::min<std::size_t>(output_bytes, buffer.size()));
        }
      }
    } catch (const PeerFailedError&) {
      // Another death while the survivors recovered: recover on them.
      adopt_survivors(std::move(survivors), lost, step, std::nullopt);
      continue;
    }
    adopt_survivors(std::move(survivors), lost, step, decision);
    if (decision == Decision::kStepStands) ++completed_;  // the commit
    return decision;
  }
}

void WorkerCalls::adopt_survivors(Communicator survivors, const std::vector<int>& lost,
                                  std::uint64_t step, std::optional<Decision> decision) {
  communicator_ = std::move(survivors);
  size_ = communicator_.size();
  worker_ = communicator_.rank();
  out_of_step_.reset();
  on_shrink_(communicator_, lost, step, decision);
}

void WorkerCalls::explain_mismatch(const MismatchError& error, const Identity& identity,
                                   const CommonOptions& options) {
  const std::string mine = identity.phase() + ": " + CallPurpose::current_description();
  if (!own_communicator_) {
    throw MismatchError(
        label_, worker_,
        "this worker's " + mine + " did not pair with the other ranks' calls: " + error.cause());
  }
  // Every worker raised at this call (the check's verdict is the same on
  // all), so all of them make this exchange next.
  CallReport report{};
  report.step = identity.step;
  report.index = identity.index;
  report.in_run = identity.in_run ? 1 : 0;
  std::memcpy(report.text, mine.data(), std::min(mine.size(), sizeof(report.text) - 1));
  std::vector<CallReport> reports(static_cast<std::size_t>(size_));
  AllGatherOptions exchange;
  exchange.algorithm = options.algorithm;
  exchange.timeout = options.timeout;
  exchange.memory = MemoryKind::kHost;
  exchange.call_tag = kReportTag;
  try {
    communicator_.all_gather(&report, reports.data(), sizeof(CallReport), DataType::kUInt8,
                             exchange);
  } catch (const Error& failure) {
    throw MismatchError(label_, worker_,
                        "this worker's " + mine + " did not pair with the other workers' calls (" +
                            error.cause() +
                            "); what they were doing could not be learned: " + failure.what());
  }
  // Workers grouped by what they were doing, in order of their first one.
  std::vector<std::string> texts;
  std::vector<std::vector<int>> groups;
  bool out_of_step = false;
  for (int w = 0; w < size_; ++w) {
    const CallReport& theirs = reports[static_cast<std::size_t>(w)];
    out_of_step |= theirs.step != reports[0].step || theirs.index != reports[0].index ||
                   theirs.in_run != reports[0].in_run;
    const std::string text(theirs.text, strnlen(theirs.text, sizeof(theirs.text)));
    const auto found = std::find(texts.begin(), texts.end(), text);
    if (found == texts.end()) {
      texts.push_back(text);
      groups.push_back({w});
    } else {
      groups[static_cast<std::size_t>(found - texts.begin())].push_back(w);
    }
  }
  std::string what;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    what += (g > 0 ? "; " : "") + worker_list(groups[g]) + ": " + texts[g];
  }
  if (!out_of_step) {
    throw MismatchError(label_, worker_,
                        "the workers made different cross-worker calls: " + what +
                            ". Nothing was reduced (" + error.cause() + ")");
  }
  out_of_step_ = what;
  throw MismatchError(
      label_, worker_,
      "cross-worker calls of different steps met: " + what +
          ". Nothing was reduced. The workers are now out of step: every later cross-worker "
          "call of this strategy fails at once, on every worker. A worker whose step failed "
          "must not go on alone: every worker calls run() equally often and makes the same "
          "cross-worker calls in the same order");
}

}  // namespace collective::distribute::detail
