#include "core/failure_record.h"

#include <mutex>

namespace collective::internal {
namespace {

struct FailureRecord {
  std::mutex mutex;
  std::optional<std::string> first;
  std::optional<std::string> first_peer_loss;
};

FailureRecord& record() {
  static FailureRecord instance;
  return instance;
}

}  // namespace

void record_communication_failure(const std::string& what) {
  FailureRecord& failures = record();
  std::lock_guard<std::mutex> lock(failures.mutex);
  if (!failures.first) failures.first = what;
}

std::optional<std::string> first_communication_failure() {
  FailureRecord& failures = record();
  std::lock_guard<std::mutex> lock(failures.mutex);
  return failures.first;
}

void record_peer_loss(const std::string& what) {
  FailureRecord& failures = record();
  std::lock_guard<std::mutex> lock(failures.mutex);
  if (!failures.first_peer_loss) failures.first_peer_loss = what;
}

std::optional<std::string> first_peer_loss() {
  FailureRecord& failures = record();
  std::lock_guard<std::mutex> lock(failures.mutex);
  return failures.first_peer_loss;
}

}  // namespace collective::internal
