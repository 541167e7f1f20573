// What an input function needs to know to build its part of the input
// (tf.distribute.InputContext, InputReplicationMode, InputOptions,
// AutoShardPolicy, experimental.ValueContext).
#pragma once

#include <cstdint>

namespace collective::distribute {

// How many input pipelines a strategy runs (tf.distribute.InputReplicationMode).
//   kPerWorker   one per worker, feeding that worker's replicas
//   kPerReplica  one per replica: distribute_datasets_from_function calls
//                its function once per local replica (InputContext with
//                num_input_pipelines = num_replicas_in_sync and
//                input_pipeline_id = the replica's id in the sync group);
//                experimental_distribute_dataset refuses it, as tf.distribute
//                does
enum class InputReplicationMode : int { kPerWorker = 0, kPerReplica };

// How experimental_distribute_dataset shards its input across workers
// (tf.data.experimental.AutoShardPolicy, which TF sets through
// tf.data.Options().experimental_distribute.auto_shard_policy; here it is
// an InputOptions field). With one worker there is nothing to shard.
//   kAuto  by file when the pipeline reads at least one file per worker,
//          else by element (with a log line)
//   kFile  by file; InvalidArgumentError when the pipeline reads no files or
//          fewer files than workers
//   kData  by element: every worker runs the whole pipeline and keeps its
//          replicas' rows of each global batch
//   kOff   no sharding: every worker runs the whole pipeline and its replicas
//          take the global batches' per-replica parts in turn, so each worker
//          sees every element (a pass takes num_workers times the steps)
enum class AutoShardPolicy : int { kAuto = 0, kFile, kData, kOff };

// tf.distribute.InputOptions. TF's experimental_fetch_to_device,
// experimental_place_dataset_on_device and experimental_per_replica_buffer_size
// move or buffer input on accelerators; this layer's tensors are host memory
// and its input is produced on the caller's thread, so they have no
// counterpart (Dataset::prefetch buffers ahead).
struct InputOptions {
  InputReplicationMode experimental_replication_mode = InputReplicationMode::kPerWorker;
  AutoShardPolicy auto_shard_policy = AutoShardPolicy::kAuto;
};

// What experimental_distribute_values_from_function tells its function
// (tf.distribute.experimental.ValueContext).
class ValueContext {
 public:
  // 0 <= replica_id_in_sync_group < num_replicas_in_sync
  // (InvalidArgumentError otherwise).
  explicit ValueContext(int replica_id_in_sync_group = 0, int num_replicas_in_sync = 1);
  int replica_id_in_sync_group() const { return replica_id_in_sync_group_; }
  int num_replicas_in_sync() const { return num_replicas_in_sync_; }

 private:
  int replica_id_in_sync_group_;
  int num_replicas_in_sync_;
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
