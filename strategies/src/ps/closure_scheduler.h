// What the coordinator and the cluster's shutdown ask of the chief's
// dispatcher (ps_dispatcher.h): an interface, so that neither depends on the
// dispatcher, which depends on both.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "ps/ps_wire.h"

namespace collective::distribute::detail {

struct RemoteValueState;

class ClosureScheduler {
 public:
  virtual ~ClosureScheduler() = default;
  // Queues closure `function` with its serialized arguments; the state is
  // finished (or failed) when a worker has run it.
  virtual std::shared_ptr<RemoteValueState> schedule(std::uint32_t function, Bytes arguments) = 0;
  virtual void join() = 0;
  virtual bool done() = 0;
  // Raises UnavailableError once a ps or every worker has failed.
  virtual void check_available() = 0;
  virtual void stop() noexcept = 0;
  // Whether each worker is still considered alive.
  virtual std::vector<bool> workers_alive() = 0;
};

}  // namespace collective::distribute::detail
