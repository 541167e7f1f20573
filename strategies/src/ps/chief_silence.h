// How a parameter server or a worker decides that the chief is gone: it has
// sent nothing for the failure timeout, and still nothing after this process
// kept polling a little longer. The second condition matters when this
// process was itself stopped (SIGSTOP, a debugger) while the chief wrote:
// right after it runs again, the silence it measures is its own, and the
// chief's messages are waiting to be seen.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace collective::distribute::detail {

struct PsCluster;

class ChiefSilence {
 public:
  using Clock = std::chrono::steady_clock;

  // How long a process keeps polling after it first finds the chief silent.
  static constexpr std::chrono::milliseconds kRecheck{250};

  // `label` names this process in the error ("ps 0", "worker 1").
  ChiefSilence(const PsCluster& cluster, std::string label);

  // Called on every turn of the process's loop with when the chief was last
  // heard from; raises UnavailableError once the chief is judged gone.
  void check(Clock::time_point last_heard, Clock::time_point now);

 private:
  const PsCluster& cluster_;
  std::string label_;
  std::optional<Clock::time_point> noticed_;  // when the silence first passed the timeout
};

}  // namespace collective::distribute::detail
