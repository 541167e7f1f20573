#include "collective/plan.h"

#include <chrono>
#include <string>
#include <utility>

#include "api/dispatch.h"
#include "api/plan_state.h"
#include "api/progress_engine.h"
#include "api/usable_communicator.h"
#include "collective/errors.h"
#include "collective/in_tree/collectives.h"

namespace collective {
namespace internal {

PlanState::PlanState(std::shared_ptr<CommunicatorState> communicator, PreparedCall prepared)
    : communicator_(std::move(communicator)),
      call_(std::make_shared<PlanCall>(std::move(prepared))),
      engine_access_(progress_engine_of(*communicator_).access()) {
  progress_engine_of(*communicator_).add_plan();
}

PlanState::~PlanState() {
  const std::lock_guard<std::mutex> helping(engine_access_->mutex);
  if (engine_access_->engine != nullptr) {
    static_cast<ProgressEngine*>(engine_access_->engine)->remove_plan();
  }
}

std::string PlanState::describe() const {
  const Request& request = call_->prepared.request;
  std::string text = std::string(to_string(request.kind)) + " plan #" +
                     std::to_string(call_->prepared.created_as) + " (count " +
                     std::to_string(request.count) + ", " + std::string(to_string(request.type));
  if (traits_of(request.kind).reduces) text += ", " + std::string(to_string(request.op));
  return text + ")";
}

std::shared_ptr<PlanState> prepare_plan(const std::shared_ptr<CommunicatorState>& state,
                                        Request request, const CommonOptions& options) {
  finish_work_in_flight(*state);
  PreparedCall prepared = prepare_call(*state, request, options);
  const auto own = [](std::vector<std::size_t>& copy, std::span<const std::size_t>& span) {
    copy.assign(span.begin(), span.end());
    span = copy;
  };
  own(prepared.send_counts, prepared.request.send_counts);
  own(prepared.send_displacements, prepared.request.send_displacements);
  own(prepared.recv_counts, prepared.request.recv_counts);
  own(prepared.recv_displacements, prepared.request.recv_displacements);
  return std::make_shared<PlanState>(state, std::move(prepared));
}

std::shared_ptr<WorkState> PlanState::start() {
  const std::lock_guard<std::mutex> lock(mutex_);
  CommunicatorState& state = *communicator_;
  const auto label = [&] { return describe() + " start"; };
  // The previous start still owns the buffers; a second one queued behind
  // it would also be a second call the other ranks do not expect.
  if (last_start_ && !last_start_->finished()) {
    throw InvalidArgumentError(label(), state.rank,
                               "the plan's previous start (" + last_start_->operation() +
                                   ") is still in flight: wait for its Work (or test it until "
                                   "complete) before starting the plan again");
  }
  const auto* engine = static_cast<const ProgressEngine*>(state.progress_engine.get());
  // As start_async: with calls in flight, poison and abort are judged when
  // this start runs, in program order.
  if (engine == nullptr || !engine->busy()) require_usable(state, label);
  const std::uint64_t sequence = state.next_sequence++;
  auto call = std::make_unique<QueuedCall>();
  // What the flight recorder shows of the start while it is queued.
  call->request = call_->prepared.request;
  call->request.sequence = sequence;
  call->work = std::make_shared<WorkState>(std::string(to_string(call_->prepared.request.kind)) +
                                           " #" + std::to_string(sequence));
  call->plan = call_;
  call->wake_engine = call_->wake_on_start.load(std::memory_order_relaxed);
  if (!call->wake_engine) call->queued_at = std::chrono::steady_clock::now();
  last_start_ = call->work;
  progress_engine_of(state).enqueue(std::move(call));
  return last_start_;
}

std::shared_ptr<WorkState> PlanState::last_start() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return last_start_;
}

}  // namespace internal

namespace {

internal::PlanState& require_plan(const std::shared_ptr<internal::PlanState>& state,
                                  const char* operation) {
  if (!state) {
    throw InvalidArgumentError(operation, -1,
                               "an empty plan (default-constructed or moved from): make one "
                               "with Communicator::all_reduce_init");
  }
  return *state;
}

}  // namespace

Plan::Plan(std::shared_ptr<internal::PlanState> state) : state_(std::move(state)) {}

Plan::~Plan() = default;

Work Plan::start() { return Work(require_plan(state_, "Plan::start").start()); }

Work Plan::last_start() const {
  auto work = require_plan(state_, "Plan::last_start").last_start();
  return work ? Work(std::move(work)) : Work();
}

std::string Plan::describe() const {
  return state_ ? state_->describe() : std::string("empty plan");
}

}  // namespace collective
