// What an input function needs to know to build its part of the input
// (tf.distribute.InputContext, InputReplicationMode, InputOptions).
#pragma once

#include <cstdint>

namespace collective::distribute {

// How many input pipelines a strategy runs: one per worker, feeding that
// worker's replicas (tf.distribute.InputReplicationMode.PER_WORKER).
enum class InputReplicationMode : int { kPerWorker = 0 };

struct InputOptions {
  InputReplicationMode experimental_replication_mode = InputReplicationMode::kPerWorker;
};

class InputContext {
 public:
  // num_input_pipelines >= 1, 0 <= input_pipeline_id < num_input_pipelines,
  // num_replicas_in_sync >= 1 (InvalidArgumentError otherwise).
  InputContext(int num_input_pipelines = 1, int input_pipeline_id = 0,
               int num_replicas_in_sync = 1);

  int num_input_pipelines() const { return num_input_pipelines_; }
  int input_pipeline_id() const { return input_pipeline_id_; }
  int num_replicas_in_sync() const { return num_replicas_in_sync_; }

  // global_batch_size / num_replicas_in_sync; InvalidArgumentError when it
  // does not divide evenly.
  std::int64_t get_per_replica_batch_size(std::int64_t global_batch_size) const;

 private:
  int num_input_pipelines_;
  int input_pipeline_id_;
  int num_replicas_in_sync_;
};

}  // namespace collective::distribute
