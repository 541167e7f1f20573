#include "core/context_stack.h"

#include <atomic>
#include <vector>

namespace collective::distribute::detail {
namespace {

thread_local std::vector<ContextFrame> t_frames;
std::atomic<std::uint64_t> g_next_frame_id{1};

}  // namespace

const ContextFrame* current_frame() { return t_frames.empty() ? nullptr : &t_frames.back(); }

std::uint64_t push_frame(ContextFrame::Kind kind, Strategy* strategy, ReplicaContext* replica) {
  const std::uint64_t id = g_next_frame_id.fetch_add(1, std::memory_order_relaxed);
  t_frames.push_back(ContextFrame{id, kind, strategy, replica});
  return id;
}

bool pop_frame(std::uint64_t id) {
  if (t_frames.empty() || t_frames.back().id != id) return false;
  t_frames.pop_back();
  return true;
}

bool inside_run_on_this_thread() {
  for (const ContextFrame& frame : t_frames) {
    if (frame.kind != ContextFrame::Kind::kScope) return true;
  }
  return false;
}

}  // namespace collective::distribute::detail
