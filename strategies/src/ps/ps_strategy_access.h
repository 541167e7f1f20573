// What the coordinator needs of the ParameterServerStrategy it is made
// from, without parameter_server_strategy.h, which includes the
// coordinator's header. Defined with the strategy, in
// parameter_server_strategy.cc.
#pragma once

namespace collective::distribute {
class ParameterServerStrategy;
}  // namespace collective::distribute

namespace collective::distribute::detail {

struct PsCluster;

// strategy.cluster() and strategy.is_coordinator().
PsCluster& cluster_of(const ParameterServerStrategy& strategy);
bool coordinates(const ParameterServerStrategy& strategy);

}  // namespace collective::distribute::detail
