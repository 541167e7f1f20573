#include "ps/chief_silence.h"

#include "collective/distribute/errors.h"
#include "ps/ps_cluster.h"
#include "ps/ps_wire.h"

namespace collective::distribute::detail {

ChiefSilence::ChiefSilence(const PsCluster& cluster, std::string label)
    : cluster_(cluster), label_(std::move(label)) {}

void ChiefSilence::check(Clock::time_point last_heard, Clock::time_point now) {
  if (now - last_heard <= cluster_.failure_timeout) {
    noticed_.reset();
  } else if (!noticed_) {
    noticed_ = now;
  } else if (now - *noticed_ > kRecheck) {
    throw UnavailableError("ParameterServerStrategy " + label_, cluster_.rank,
                           "the chief (rank 0) sent nothing for the failure timeout (" +
                               seconds_text(cluster_.failure_timeout) +
                               "); the coordinator is gone");
  }
}

}  // namespace collective::distribute::detail
