#include "core/wait_subject.h"

namespace collective::internal {

void WaitSubject::request_abort(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(abort_mutex_);
    if (abort_flag.load(std::memory_order_relaxed)) return;
    abort_reason_ = reason.empty() ? "no reason given" : reason;
  }
  abort_flag.store(true, std::memory_order_release);
}

std::string WaitSubject::abort_reason() const {
  std::lock_guard<std::mutex> lock(abort_mutex_);
  return abort_reason_;
}

}  // namespace collective::internal
