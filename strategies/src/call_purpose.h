// What the strategies layer is doing on this thread when it makes a
// cross-worker call ("Strategy.reduce", "Variable.value of sync-on-read
// 'total'"), as a stack of scopes. WorkerCalls folds it into each call's
// tag, so calls made for different purposes never pair, and names it when
// they meet.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace collective::distribute::detail {

class CallPurpose {
 public:
  // `what` must outlive the scope (a string literal); `subject` (a
  // variable's name) is copied.
  explicit CallPurpose(std::string_view what, std::string_view subject = {});
  ~CallPurpose();
  CallPurpose(const CallPurpose&) = delete;
  CallPurpose& operator=(const CallPurpose&) = delete;

  // Of this thread's innermost scope: a hash of the whole stack (0 when no
  // scope is open), and its text, outermost first ("SGD.apply_gradients >
  // StrategyExtended.batch_reduce_to"; "an unnamed call" when none).
  static std::uint64_t current_hash();
  static std::string current_description();

 private:
  std::string_view what_;
  std::string subject_;
  std::uint64_t hash_;
  const CallPurpose* parent_;
};

// FNV-1a, then a 64-bit finalizer: well spread for short texts.
std::uint64_t hash_text(std::string_view text, std::uint64_t seed);
std::uint64_t mix_hash(std::uint64_t a, std::uint64_t b);

}  // namespace collective::distribute::detail
