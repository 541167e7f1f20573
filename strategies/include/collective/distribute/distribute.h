// tf.distribute's model in C++: strategies, replica contexts, distributed
// values and variables, cross-device ops and distributed input, on top of
// libcollective. docs/strategies.md maps every tf.distribute name to its
// C++ name here.
#pragma once

#include "collective/distribute/central_storage_strategy.h"
#include "collective/distribute/checkpoint.h"
#include "collective/distribute/cluster_coordinator.h"
#include "collective/distribute/cluster_resolver.h"
#include "collective/distribute/communication_options.h"
#include "collective/distribute/cross_device_ops.h"
#include "collective/distribute/dataset.h"
#include "collective/distribute/distributed_dataset.h"
#include "collective/distribute/errors.h"
#include "collective/distribute/input_context.h"
#include "collective/distribute/losses.h"
#include "collective/distribute/mirrored_strategy.h"
#include "collective/distribute/multi_worker_mirrored_strategy.h"
#include "collective/distribute/one_device_strategy.h"
#include "collective/distribute/optimizer.h"
#include "collective/distribute/parameter_server_strategy.h"
#include "collective/distribute/replica_context.h"
#include "collective/distribute/strategy.h"
#include "collective/distribute/strategy_extended.h"
#include "collective/distribute/tensor.h"
#include "collective/distribute/values.h"
#include "collective/distribute/variable.h"
