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

// A 64-bit finalizer over a combination of a and b.
constexpr std::uint64_t mix_hash(std::uint64_t a, std::uint64_t b) {
  std::uint64_t x = a ^ (b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2));
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

// FNV-1a, then the finalizer: well spread for short texts. Inline, so a
// literal purpose is hashed by the compiler, not on every call.
constexpr std::uint64_t hash_text(std::string_view text, std::uint64_t seed) {
  std::uint64_t hash = 1469598103934665603ull ^ seed;
  for (char c : text) hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return mix_hash(hash, text.size());
}

class CallPurpose {
 public:
  // `what` must outlive the scope (a string literal); `subject` (a
  // variable's name) is copied.
  explicit CallPurpose(std::string_view what, std::string_view subject = {})
      : CallPurpose(what, subject, hash_text(subject, hash_text(what, 0))) {}
  ~CallPurpose();
  CallPurpose(const CallPurpose&) = delete;
  CallPurpose& operator=(const CallPurpose&) = delete;

  // Of this thread's innermost scope: a hash of the whole stack (0 when no
  // scope is open), and its text, outermost first ("SGD.apply_gradients >
  // StrategyExtended.batch_reduce_to"; "an unnamed call" when none).
  static std::uint64_t current_hash();
  static std::string current_description();

 private:
  CallPurpose(std::string_view what, std::string_view subject, std::uint64_t own_hash);

  std::string_view what_;
  std::string subject_;
  std::uint64_t hash_;
  const CallPurpose* parent_;
};

}  // namespace collective::distribute::detail
