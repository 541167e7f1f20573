#include "core/elastic_step.h"

#include <exception>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "collective/distribute/communication_options.h"
#include "core/distributed_dataset.h"
#include "core/strategy_impl.h"
#include "core/variable_state.h"
#include "reduce/worker_calls.h"

namespace collective::distribute::detail {
namespace {

// The values of the strategy's variables when the step began.
struct SavedVariable {
  std::shared_ptr<VariableState> state;
  std::vector<Tensor> copies;
};

std::vector<SavedVariable> save_variables(StrategyImpl::ElasticState& elastic) {
  std::vector<SavedVariable> saved;
  const std::lock_guard<std::mutex> lock(elastic.mutex);
  for (const std::weak_ptr<VariableState>& weak : elastic.variables) {
    std::shared_ptr<VariableState> state = weak.lock();
    if (!state) continue;
    const std::lock_guard<std::mutex> copies_lock(state->mutex);
    saved.push_back(SavedVariable{state, state->copies});
  }
  return saved;
}

void restore_variables(const std::vector<SavedVariable>& saved) {
  for (const SavedVariable& variable : saved) {
    const std::lock_guard<std::mutex> lock(variable.state->mutex);
    variable.state->copies = variable.copies;
  }
}

// A batch cut for more workers than there are now is cut anew, for this
// worker's place among the survivors; run()'s argument is replaced by it
// (elastic_part).
void cut_anew_if_needed(StrategyImpl& impl) {
  StrategyImpl::ElasticState& elastic = *impl.elastic_state;
  elastic.recut_active = false;
  elastic.recut.clear();
  if (elastic.part_keys.empty() || elastic.batch_membership == elastic.membership) return;
  elastic.recut = this_workers_parts(impl, elastic.global_batch);
  elastic.recut_active = true;
}

}  // namespace

void run_elastic_step(StrategyImpl& impl, const std::function<void()>& attempt) {
  WorkerCalls& calls = *impl.worker_calls;
  StrategyImpl::ElasticState& elastic = *impl.elastic_state;
  const std::vector<SavedVariable> saved = save_variables(elastic);
  struct EndCut {
    StrategyImpl::ElasticState& elastic;
    ~EndCut() {
      elastic.recut_active = false;
      elastic.recut.clear();
    }
  } end_cut{elastic};
  AllReduceOptions commit;
  commit.timeout = effective_timeout(impl.communication_options);
  for (;;) {
    cut_anew_if_needed(impl);
    try {
      attempt();
      calls.commit_step(commit);
      return;
    } catch (...) {
      // Only a lost worker is recovered; any other error is the caller's.
      if (!calls.step_lost_peer()) throw;
    }
    if (calls.recover_step() == WorkerCalls::Decision::kStepStands) return;
    restore_variables(saved);
    calls.restart_step();
    ++elastic.steps_redone;
  }
}

}  // namespace collective::distribute::detail
