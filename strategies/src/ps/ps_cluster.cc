#include "ps/ps_cluster.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "collective/communicator.h"
#include "collective/distribute/errors.h"
#include "collective/errors.h"
#include "base/log.h"

namespace collective::distribute::detail {

PsCluster::PsCluster() = default;
PsCluster::~PsCluster() = default;

void PsCluster::shutdown() noexcept {
  if (shut_down || task_type != "chief") return;
  shut_down = true;
  if (client) client->close();
  try {
    std::vector<bool> workers_alive(static_cast<std::size_t>(num_workers), true);
    if (dispatcher) {
      dispatcher->stop();
      workers_alive = dispatcher->workers_alive();
    }
    // Workers first (they may still talk to ps tasks), then the ps tasks;
    // each answers bye. A peer that stays silent for the failure timeout
    // is left behind with a warning.
    bool everyone = true;
    // Workers already declared failed are sent the shutdown (a stopped one
    // may resume) but not waited for.
    const auto farewell = [&](int first_rank, int count, const char* kind,
                              const std::vector<bool>& waited) {
      for (int r = first_rank; r < first_rank + count; ++r) {
        Header header;
        header.op = Op::kShutdown;
        wire->send(r, kTagControl, header, {});
      }
      std::vector<bool> said_bye(static_cast<std::size_t>(count), false);
      int missing = 0;
      for (int i = 0; i < count; ++i) {
        if (waited[static_cast<std::size_t>(i)]) {
          ++missing;
        } else {
          said_bye[static_cast<std::size_t>(i)] = true;
          everyone = false;
        }
      }
      const Clock::time_point deadline = Clock::now() + failure_timeout;
      for (int round = 0; missing > 0 && Clock::now() < deadline; ++round) {
        bool any = false;
        while (std::optional<Message> m = wire->poll(-1, kTagResult, deadline, "a bye")) {
          any = true;
          const int index = m->source - first_rank;
          if (m->header.op == Op::kBye && index >= 0 && index < count &&
              !said_bye[static_cast<std::size_t>(index)]) {
            said_bye[static_cast<std::size_t>(index)] = true;
            --missing;
          }
        }
        while (wire->poll(-1, kTagHeartbeat, deadline, "a heartbeat")) any = true;
        wire->progress();
        if (!any) idle_pause(round);
      }
      for (int i = 0; i < count; ++i) {
        if (!said_bye[static_cast<std::size_t>(i)]) {
          everyone = false;
          DISTRIBUTE_LOG(kWarn, "ParameterServerStrategy shutdown: "
                                    << kind << " " << i << " (rank " << first_rank + i
                                    << ") did not answer the shutdown within "
                                    << std::chrono::duration<double>(failure_timeout).count()
                                    << " s; leaving it behind");
        }
      }
    };
    farewell(worker_rank(0), num_workers, "worker", workers_alive);
    farewell(ps_rank(0), num_ps, "ps", std::vector<bool>(static_cast<std::size_t>(num_ps), true));
    wire->flush(Clock::now() + failure_timeout);
    if (everyone) wire->release();
  } catch (const std::exception& error) {
    DISTRIBUTE_LOG(kWarn, "ParameterServerStrategy shutdown failed: " << error.what());
  }
}

// ---- variables ---------------------------------------------------------

}  // namespace collective::distribute::detail
