// The threads that run a strategy's local replicas. Replica 0 runs on the
// caller's thread; replicas 1..K-1 each have a persistent thread, started
// with the strategy and joined when it is destroyed, so run() costs a wake-up
// rather than a thread creation per step.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace collective::distribute::detail {

class ReplicaThreads {
 public:
  explicit ReplicaThreads(int num_replicas);
  ~ReplicaThreads();
  ReplicaThreads(const ReplicaThreads&) = delete;
  ReplicaThreads& operator=(const ReplicaThreads&) = delete;

  // Runs body(r) for every replica r and returns when all have returned.
  // body must not throw (the strategy wraps it).
  void run_all(const std::function<void(int replica)>& body);

 private:
  void serve(int replica);

  std::mutex mutex_;
  std::condition_variable work_posted_;
  std::condition_variable work_done_;
  const std::function<void(int)>* body_ = nullptr;
  std::uint64_t job_ = 0;
  int remaining_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace collective::distribute::detail
