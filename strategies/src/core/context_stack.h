// The per-thread stack of distribution contexts behind get_strategy(),
// get_replica_context() and in_cross_replica_context(). Scopes, replica
// functions and merge functions push a frame for as long as they run.
#pragma once

#include <cstdint>

namespace collective::distribute {
class ReplicaContext;
class Strategy;
}  // namespace collective::distribute

namespace collective::distribute::detail {

struct ContextFrame {
  enum class Kind {
    kScope,    // Strategy::scope(): keeps the enclosing frame's replica context
    kReplica,  // a replica function of run()
    kMerge,    // a merge function of merge_call(): cross-replica
  };
  std::uint64_t id = 0;
  Kind kind = Kind::kScope;
  Strategy* strategy = nullptr;
  ReplicaContext* replica = nullptr;  // nullptr: cross-replica context
};

// The innermost frame of this thread, or nullptr when the stack is empty.
const ContextFrame* current_frame();

// Pushes a frame and returns its id.
std::uint64_t push_frame(ContextFrame::Kind kind, Strategy* strategy, ReplicaContext* replica);

// Pops the frame with this id; returns false (and pops nothing) when it is
// not the innermost one.
bool pop_frame(std::uint64_t id);

// True when this thread is inside a replica or merge function.
bool inside_run_on_this_thread();

// Pushes on construction, pops on destruction (internal frames only, which
// always nest properly).
class FrameGuard {
 public:
  FrameGuard(ContextFrame::Kind kind, Strategy* strategy, ReplicaContext* replica)
      : id_(push_frame(kind, strategy, replica)) {}
  ~FrameGuard() { pop_frame(id_); }
  FrameGuard(const FrameGuard&) = delete;
  FrameGuard& operator=(const FrameGuard&) = delete;

 private:
  std::uint64_t id_;
};

}  // namespace collective::distribute::detail
