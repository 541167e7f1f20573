// What the parts of core that Strategy is built on (Variable, ReplicaContext,
// StrategyExtended's run()) need of a Strategy, without strategy.h, whose
// Strategy includes them: its implementation, and the default strategy.
// Defined with Strategy, in core/strategy.cc.
#pragma once

#include <memory>
#include <string>

namespace collective::distribute {
class ReplicaContext;
class Strategy;
}  // namespace collective::distribute

namespace collective::distribute::detail {

struct StrategyImpl;

// strategy.extended().impl() and its shared owner.
StrategyImpl& impl_of(const Strategy& strategy);
std::shared_ptr<StrategyImpl> shared_impl_of(const Strategy& strategy);

// get_strategy() and get_replica_context().
Strategy& current_strategy();
ReplicaContext* current_replica_context();

// The default strategy (a process-wide singleton) and its replica context.
Strategy& default_strategy();
ReplicaContext& default_replica_context();

// "MirroredStrategy #3": the strategy's name and its process-unique number.
std::string describe_strategy(const Strategy& strategy);

}  // namespace collective::distribute::detail
