#include "base/replica_threads.h"

namespace collective::distribute::detail {

ReplicaThreads::ReplicaThreads(int num_replicas) {
  threads_.reserve(static_cast<std::size_t>(num_replicas > 1 ? num_replicas - 1 : 0));
  for (int replica = 1; replica < num_replicas; ++replica) {
    threads_.emplace_back([this, replica] { serve(replica); });
  }
}

ReplicaThreads::~ReplicaThreads() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_posted_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

void ReplicaThreads::run_all(const std::function<void(int)>& body) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    body_ = &body;
    remaining_ = static_cast<int>(threads_.size());
    ++job_;
  }
  work_posted_.notify_all();
  body(0);
  std::unique_lock<std::mutex> lock(mutex_);
  work_done_.wait(lock, [this] { return remaining_ == 0; });
  body_ = nullptr;
}

void ReplicaThreads::serve(int replica) {
  std::uint64_t seen = 0;
  while (true) {
    const std::function<void(int)>* body = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_posted_.wait(lock, [&] { return stopping_ || job_ != seen; });
      if (stopping_) return;
      seen = job_;
      body = body_;
    }
    (*body)(replica);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --remaining_;
      if (remaining_ == 0) work_done_.notify_one();
    }
  }
}

}  // namespace collective::distribute::detail
