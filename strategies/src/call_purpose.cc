#include "call_purpose.h"

namespace collective::distribute::detail {
namespace {

thread_local const CallPurpose* t_innermost = nullptr;

}  // namespace

std::uint64_t mix_hash(std::uint64_t a, std::uint64_t b) {
  std::uint64_t x = a ^ (b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2));
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

std::uint64_t hash_text(std::string_view text, std::uint64_t seed) {
  std::uint64_t hash = 1469598103934665603ull ^ seed;
  for (char c : text) hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return mix_hash(hash, text.size());
}

CallPurpose::CallPurpose(std::string_view what, std::string_view subject)
    : what_(what), subject_(subject), parent_(t_innermost) {
  const std::uint64_t own = hash_text(subject_, hash_text(what_, 0));
  hash_ = mix_hash(parent_ != nullptr ? parent_->hash_ : 0, own);
  t_innermost = this;
}

CallPurpose::~CallPurpose() { t_innermost = parent_; }

std::uint64_t CallPurpose::current_hash() { return t_innermost != nullptr ? t_innermost->hash_ : 0; }

std::string CallPurpose::current_description() {
  if (t_innermost == nullptr) return "an unnamed call";
  std::string text;
  for (const CallPurpose* scope = t_innermost; scope != nullptr; scope = scope->parent_) {
    std::string part(scope->what_);
    if (!scope->subject_.empty()) part += " '" + scope->subject_ + "'";
    text = text.empty() ? part : part + " > " + text;
  }
  return text;
}

}  // namespace collective::distribute::detail
