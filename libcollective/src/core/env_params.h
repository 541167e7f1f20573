// Every tunable of the library: one named environment variable each, read
// once per process, with the default documented in docs/parameters.md.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "core/block_route.h"
#include "core/handoff.h"
#include "collective/algorithm.h"
#include "collective/in_tree/log.h"

namespace collective::internal {

// The smallest COLLECTIVE_MAX_MESSAGE_BYTES: a fingerprint of the
// cross-rank check (256 B with a rejection's cause) must travel as one
// message. Its receive is sized for the largest; split, it would wait for
// pieces that a 40-byte fingerprint never sends, until the timeout.
inline constexpr std::size_t kMinMessageBytes = 256;

struct EnvParams {
  // COLLECTIVE_TIMEOUT (seconds, fractional allowed, at most 10^6): default
  // per-call timeout.
  std::chrono::milliseconds timeout{std::chrono::seconds(300)};
  // COLLECTIVE_STALL_WARNING: fraction of the timeout after which a waiting
  // call logs one warning naming the ranks it waits for; 0 turns it off.
  // Half: far beyond normal skew between ranks (milliseconds to seconds),
  // and it still leaves the other half of the timeout to look at the named
  // rank (py-spy, gdb) before the call fails.
  double stall_warning_fraction = 0.5;
  // COLLECTIVE_PEER_CHECK_INTERVAL (seconds, 0.001 to 60): how often a
  // waiting call looks in /proc for ranks on this host that died, once it
  // has waited that long, so the bound on noticing a dead rank. A quarter
  // second: a dead rank costs little time, and the few /proc reads per
  // interval cost nothing next to it; healthy calls that wait less never
  // read /proc.
  std::chrono::milliseconds peer_check_interval{250};
  // COLLECTIVE_VALIDATE: 1 (default) checks before every collective that all
  // ranks make the same call (docs/errors.md); 0 skips the check.
  bool validate = true;
  // COLLECTIVE_ALGORITHM: replaces Algorithm::kAuto in every call's options.
  std::optional<Algorithm> forced_algorithm;
  // COLLECTIVE_DETERMINISTIC: 1 makes every all_reduce, reduce_scatter and
  // reduce deterministic (AllReduceOptions::deterministic); 0 (default)
  // leaves it to each call's options.
  bool deterministic = false;
  // COLLECTIVE_RING_SEGMENT_BYTES: unit of pipelining in the ring.
  std::size_t ring_segment_bytes = 512 * 1024;
  // COLLECTIVE_RING_SEGMENT_BYTES_ACROSS_NODES: the same for a ring whose
  // ranks span nodes. Over TCP each segment is a rendezvous of its own;
  // 4 MiB segments ran the 16 MiB all_reduce at 2 hosts 1.2x faster than
  // 512 KiB ones (docs/performance.md).
  std::size_t ring_segment_bytes_across_nodes = 4 * 1024 * 1024;
  // COLLECTIVE_RING_PIPELINE_DEPTH: receive segments in flight per ring.
  int ring_pipeline_depth = 4;
  // COLLECTIVE_SMALL_MESSAGE_BYTES: up to this size all_reduce prefers
  // recursive doubling over the ring when no cost model is available.
  std::size_t small_message_bytes = 64 * 1024;
  // COLLECTIVE_MAX_MESSAGE_BYTES: largest single MPI message; bigger
  // transfers are split (MPI counts are int). At least kMinMessageBytes.
  std::size_t max_message_bytes = std::size_t{1} << 30;

  // Shared-memory algorithms (docs/algorithms.md).
  // COLLECTIVE_SHM_SLOT_BYTES: staging slot per rank and round in the node
  // segment; the unit a large buffer is pipelined in. 256 KiB keeps a
  // round's staging (ranks x slot) and results inside the last-level cache
  // and measured best on the development machine (docs/performance.md).
  std::size_t shm_slot_bytes = 256 * 1024;
  // COLLECTIVE_SHM_SMALL_BYTES: up to this size every rank of a node may
  // reduce the whole buffer itself (one flag wait per round instead of
  // two), when the cost model says the duplicated work is cheaper.
  std::size_t shm_small_bytes = 64 * 1024;
  // COLLECTIVE_SHM_HANDOFF: auto (none here: the way is measured, see
  // transport/shm/two_way_tuner.h), cache or memory (always that way; for
  // tests and measurements).
  std::optional<Handoff> shm_handoff;
  // COLLECTIVE_SHM_BLOCK_ROUTE: auto (none here: measured, see
  // transport/shm/two_way_tuner.h), kernel or slots (always that route for
  // the exchanges' blocks of 64 KiB and more; the node's first rank's
  // setting decides for the node).
  std::optional<BlockRoute> shm_block_route;

  // COLLECTIVE_DEBUG: NONE, WARN (default), INFO, DEBUG, TRACE (or 0-3).
  LogLevel log_level = LogLevel::kWarn;
  // COLLECTIVE_KERNELS: auto (default: AVX2 where the CPU has it) or
  // generic (the portable kernels).
  bool generic_kernels = false;
  // COLLECTIVE_NCCL_HIERARCHICAL: auto (default) or off.
  bool nccl_hierarchical_off = false;
  // COLLECTIVE_NCCL_RANKS_PER_NODE: 0 (unset) or 1..2^20.
  int nccl_ranks_per_node = 0;
  // File paths, empty when unset: COLLECTIVE_TOPOLOGY_FILE,
  // COLLECTIVE_TOPOLOGY_DUMP, COLLECTIVE_RULES_FILE.
  std::string topology_file;
  std::string topology_dump;
  std::string rules_file;

  // Diagnosis (docs/errors.md, "Flight recorder"). COLLECTIVE_FLIGHT_RECORDER:
  // calls each communicator remembers (0 turns the recorder off; at most
  // 2^20). COLLECTIVE_FLIGHT_RECORDER_DIR: where dumps go (empty: the
  // working directory). COLLECTIVE_TRACE: a directory for the per-rank
  // Chrome trace (empty: no trace).
  std::size_t flight_recorder_calls = 512;
  // COLLECTIVE_FLIGHT_RECORDER_SIGNAL: whether SIGUSR1 dumps (a handler and
  // its watcher thread, with the first communicator); unset: the process's
  // default (set_flight_recorder_signal_default, diagnostics.h).
  std::optional<bool> flight_recorder_signal;
  std::string flight_recorder_dir;
  std::string trace_dir;
};

// Looks up one variable: the value, or nullptr when unset.
using EnvLookup = std::function<const char*(const char* name)>;

// Parses every parameter through `lookup`; a malformed value raises
// InvalidArgumentError naming the variable. Pure: the fuzzer calls it.
EnvParams parse_env_params(const EnvLookup& lookup);

// The process's parameters: parse_env_params(getenv), on first use. Every
// COLLECTIVE_* variable is read here and nowhere else.
const EnvParams& env_params();

// The parameters as the environment holds them now, through the same
// parser: for COLLECTIVE_TOPOLOGY_FILE, which is read each time a
// communicator is made (a program or test may switch files between them).
EnvParams current_env_params();

}  // namespace collective::internal
