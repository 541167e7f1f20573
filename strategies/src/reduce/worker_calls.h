// Every cross-worker call of a strategy, on its communicator: serialized
// by one lock, and tagged with what the call is (CommonOptions::call_tag)
// so that calls which do not belong together are refused instead of
// reduced together. A call's identity is its step (the run() it belongs
// to, or the cross-replica phase after one), its place among the step's
// cross-worker calls, and its purpose (call_purpose.h). libcollective's
// cross-rank check compares the tags; on a mismatch the workers, all
// raising at the same call, exchange what each was doing and every one
// raises MismatchError naming each side. Workers found in different steps
// stay out of step: every later call fails at once (no worker waits for
// a peer that has moved on). Rules: docs/strategies.md, "Pairing of
// cross-worker calls".
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "collective/communicator.h"
#include "collective/errors.h"
#include "collective/options.h"
#include "collective/work.h"
#include "reduce/elastic_recovery_plan.h"

namespace collective::distribute::detail {

class WorkerCalls {
 public:
  WorkerCalls(Communicator communicator, std::shared_ptr<std::mutex> mutex);

  // A strategy whose own communicator carries nothing but these calls: its
  // label names it in errors, and a mismatch is explained by an exchange
  // among the workers (on a caller's shared communicator the other ranks
  // may be in calls of their own, so only this worker's side is named).
  void adopt(std::string owner_label);

  // run() of the owning strategy: a new step begins; its replica functions
  // run until end_step(), after which calls belong to the phase after it.
  void begin_step();
  void end_step();

  Communicator& communicator() { return communicator_; }
  int size() const { return size_; }

  // ---- Elastic training (CommunicationOptions::elastic; docs/strategies.md,
  // "Elastic training"). A cross-worker call that raises PeerFailedError is
  // recovered: the survivors shrink the communicator and tell each other
  // where each stood (the calls it completed, the step, whether its failed
  // call was a step's call, the step's commit or a call between steps), and
  // every one takes the same decision from the same reports:
  //   - a step whose calls some survivor failed is redone by every survivor
  //     inside it (the strategy restores the variables and re-cuts the batch);
  //   - a survivor that failed only the step's commit has every step call
  //     done, like every other survivor: the step stands;
  //   - a call between steps that another survivor completed is completed
  //     here from that survivor's output (broadcast); one that no survivor
  //     completed is made again on the survivors (all_reduce, broadcast), or
  //     raises PeerFailedError after the shrink (a gather, whose layout
  //     depends on the number of workers).
  // A worker completes a call only when every worker entered it, so two
  // survivors are never more than one call apart: the rules above cover
  // every case (docs/strategies.md).
  using Decision = RecoveryDecision;
  // Called after a shrink, before any call on the survivors: the strategy
  // renumbers its workers. `lost`: ranks of the communicator before it.
  // `decision`: none when another worker died during the recovery, which
  // then goes on over the survivors of that death too.
  using ShrinkHandler = std::function<void(Communicator& survivors, const std::vector<int>& lost,
                                           std::uint64_t step, std::optional<Decision> decision)>;
  void make_elastic(ShrinkHandler on_shrink);
  bool elastic() const { return static_cast<bool>(on_shrink_); }
  // The step's commit (elastic): one 8-byte all-reduce after its replica
  // functions returned; raises PeerFailedError as any call.
  void commit_step(AllReduceOptions options);
  // Whether a call of the current step (its commit included) raised
  // PeerFailedError since the step began or was last redone.
  bool step_lost_peer() const { return step_failure_.has_value(); }
  // Recovers the step's failed call (above): kRedoStep or kStepStands.
  Decision recover_step();
  // A redo of the current step starts: its calls are numbered from 0 again
  // and its count of completed calls is the one it started with.
  void restart_step();

  // An all-reduce started by Session::all_reduce_async: its handle and what
  // explains a mismatch when it fails.
  struct InFlightCall {
    Work work;
    std::uint64_t step = 0;
    bool in_run = false;
    std::uint64_t index = 0;
    std::uint64_t purpose = 0;
    CommonOptions options;
  };

  // Waits for every call in order; once all finished, raises the first
  // failure as the blocking call would have (a mismatch explained).
  void finish(std::vector<InFlightCall>& calls);

  // The lock, held for one or several calls that must stay together.
  class Session {
   public:
    void all_reduce(const void* input, void* output, std::size_t count, DataType type,
                    AllReduceOptions options);
    // The same call, started in program order and left in flight.
    InFlightCall all_reduce_async(const void* input, void* output, std::size_t count, DataType type,
                                  AllReduceOptions options);
    void all_gather(const void* input, void* output, std::size_t count, DataType type,
                    AllGatherOptions options);
    // Communicator::all_gather_v: worker q's send_count elements land at
    // recv + recv_displacements[q]; recv_counts agree on every worker.
    void all_gather_v(const void* send, std::size_t send_count, void* recv,
                      std::span<const std::size_t> recv_counts,
                      std::span<const std::size_t> recv_displacements, DataType type,
                      AllGatherOptions options);
    void broadcast(void* buffer, std::size_t count, DataType type, BroadcastOptions options);

   private:
    friend class WorkerCalls;
    explicit Session(WorkerCalls& owner) : owner_(owner), lock_(*owner.mutex_) {}
    // `output`: what the call writes, kept between steps (elastic);
    // `may_call_again`: whether it can be made again on fewer workers.
    template <typename Options, typename Call>
    void tagged(Options& options, const Call& call, void* output, std::size_t output_bytes,
                bool may_call_again);

    WorkerCalls& owner_;
    std::unique_lock<std::mutex> lock_;
  };
  Session session() { return Session(*this); }

 private:
  struct Identity {
    std::uint64_t step = 0;
    bool in_run = false;
    std::uint64_t index = 0;  // among the phase's cross-worker calls
    std::uint64_t purpose = 0;
    std::uint64_t tag() const;
    std::string phase() const;  // "step 3, cross-worker call 1"
  };
  Identity next_identity();
  void refuse_when_out_of_step() const;

  struct Failure {
    FailedCall kind = FailedCall::kStepCall;
    std::uint64_t step = 0;
  };
  // A blocking call completed: counted, and between steps its output kept
  // (elastic) for a survivor that failed it.
  void completed(bool in_run, const void* output, std::size_t output_bytes);
  // The shrink, the exchange of reports, the decision and the broadcast of
  // a completed call's output (into `output` when this survivor needs it).
  Decision recover(FailedCall kind, std::uint64_t step, void* output, std::size_t output_bytes);
  void adopt_survivors(Communicator survivors, const std::vector<int>& lost, std::uint64_t step,
                       std::optional<Decision> decision);
  [[noreturn]] void explain_mismatch(const MismatchError& error, const Identity& identity,
                                     const CommonOptions& options);

  Communicator communicator_;
  std::shared_ptr<std::mutex> mutex_;
  int size_ = 1;
  int worker_ = 0;
  std::string label_ = "CollectiveAllReduce";
  bool own_communicator_ = false;
  // 2 x step + 1 inside the step's run(): written by the run()'s caller
  // thread only (no lock on every step), read by the calls.
  std::atomic<std::uint64_t> phase_{0};
  // Guarded by mutex_: the next call's place in index_phase_.
  std::uint64_t index_phase_ = 0;
  std::uint64_t index_ = 0;
  std::optional<std::string> out_of_step_;

  // Elastic only.
  ShrinkHandler on_shrink_;
  std::uint64_t completed_ = 0;         // calls completed, in program order
  std::uint64_t step_completed_ = 0;    // completed_ when the current step began
  std::vector<std::byte> last_output_;  // the last completed call's between steps
  bool last_output_valid_ = false;      // ... and whether it was the last call
  std::optional<Failure> step_failure_;
  bool committing_ = false;  // commit_step's call is in progress
};

}  // namespace collective::distribute::detail
