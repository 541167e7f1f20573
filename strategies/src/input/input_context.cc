#include "collective/distribute/input_context.h"

#include <string>

#include "collective/errors.h"

namespace collective::distribute {

InputContext::InputContext(int num_input_pipelines, int input_pipeline_id, int num_replicas_in_sync)
    : num_input_pipelines_(num_input_pipelines),
      input_pipeline_id_(input_pipeline_id),
      num_replicas_in_sync_(num_replicas_in_sync) {
  if (num_input_pipelines < 1 || input_pipeline_id < 0 ||
      input_pipeline_id >= num_input_pipelines || num_replicas_in_sync < 1) {
    throw InvalidArgumentError("InputContext", -1,
                               "needs num_input_pipelines >= 1, 0 <= input_pipeline_id < "
                               "num_input_pipelines and num_replicas_in_sync >= 1; got " +
                                   std::to_string(num_input_pipelines) + ", " +
                                   std::to_string(input_pipeline_id) + ", " +
                                   std::to_string(num_replicas_in_sync));
  }
}

std::int64_t InputContext::get_per_replica_batch_size(std::int64_t global_batch_size) const {
  if (global_batch_size < 0 || global_batch_size % num_replicas_in_sync_ != 0) {
    throw InvalidArgumentError("InputContext.get_per_replica_batch_size", input_pipeline_id_,
                               "the global batch size " + std::to_string(global_batch_size) +
                                   " is not divisible by num_replicas_in_sync " +
                                   std::to_string(num_replicas_in_sync_));
  }
  return global_batch_size / num_replicas_in_sync_;
}

ValueContext::ValueContext(int replica_id_in_sync_group, int num_replicas_in_sync)
    : replica_id_in_sync_group_(replica_id_in_sync_group),
      num_replicas_in_sync_(num_replicas_in_sync) {
  if (num_replicas_in_sync < 1 || replica_id_in_sync_group < 0 ||
      replica_id_in_sync_group >= num_replicas_in_sync) {
    throw InvalidArgumentError("ValueContext", -1,
                               "needs 0 <= replica_id_in_sync_group < num_replicas_in_sync; got " +
                                   std::to_string(replica_id_in_sync_group) + ", " +
                                   std::to_string(num_replicas_in_sync));
  }
}

}  // namespace collective::distribute
