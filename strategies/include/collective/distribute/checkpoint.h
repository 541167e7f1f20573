// Checkpoints of training state (tf.train.Checkpoint with a
// CheckpointManager's `latest` pointer): named variables, the optimizer's
// step count and a step counter, in one versioned file with a checksum
// (format: docs/strategies.md, "Checkpoints").
//
//   Checkpoint checkpoint(strategy, {{"kernel", kernel}, {"bias", bias}}, &optimizer);
//   if (checkpoint.restore(dir)) start = checkpoint.step();   // resume
//   ... checkpoint.set_step(step); checkpoint.save(dir);
//
// Which processes take part:
//  - MultiWorkerMirroredStrategy: save() and restore() are collective over
//    the strategy's workers. The chief (worker 0) writes the file; restore()
//    has the chief read and check it and broadcast it, so every worker (and
//    every replica's copy) ends with the same values. An error on the chief
//    is raised on every worker.
//  - ParameterServerStrategy: the chief alone calls them; save() reads the
//    variables from the ps tasks, restore() assigns them there.
//  - Other strategies: one process.
// A checkpoint holds whole variables, so it restores under any number of
// workers, replicas, ps tasks or shards.
//
// Atomic: the file is written under a temporary name, fsynced and renamed,
// then `latest` is replaced the same way; a process killed during save()
// leaves the previous checkpoint and pointer intact.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "collective/distribute/optimizer.h"
#include "collective/distribute/variable.h"

namespace collective::distribute::detail {
struct StrategyImpl;
}  // namespace collective::distribute::detail

namespace collective::distribute {

class Strategy;

class Checkpoint {
 public:
  // Names must be unique, non-empty and at most 4096 bytes
  // (InvalidArgumentError). The strategy, variables and optimizer must
  // outlive the checkpoint. optimizer may be null.
  Checkpoint(Strategy& strategy, std::vector<std::pair<std::string, Variable>> variables,
             SGD* optimizer = nullptr);

  // The step counter saved with the variables (tf's checkpoint.step).
  std::int64_t step() const { return step_; }
  void set_step(std::int64_t step) { step_ = step; }

  // Writes <directory>/ckpt-<step> and points <directory>/latest at it
  // (creating the directory). Returns the file's path (on every worker).
  std::string save(const std::string& directory);

  // Loads the checkpoint <directory>/latest names: every tracked variable,
  // the optimizer's iterations and the step. Returns false when the
  // directory holds no `latest` (nothing saved yet: start fresh). A file
  // that is missing, truncated, corrupted (checksum), of another format
  // version, or whose variable names, shapes or dtypes differ from the
  // tracked ones raises InvalidArgumentError naming the file and what is
  // wrong, before any variable changes.
  bool restore(const std::string& directory);

  // The path `latest` in directory points to; std::nullopt without one.
  static std::optional<std::string> latest_checkpoint(const std::string& directory);

 private:
  // The strategy's state, shared: a checkpoint may outlive the strategy
  // object (its variables share the same state).
  std::shared_ptr<detail::StrategyImpl> strategy_;
  std::vector<std::pair<std::string, Variable>> variables_;
  SGD* optimizer_;
  std::int64_t step_ = 0;
};

}  // namespace collective::distribute
