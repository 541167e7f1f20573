#include "base/call_purpose.h"

namespace collective::distribute::detail {
namespace {

thread_local const CallPurpose* t_innermost = nullptr;

}  // namespace

CallPurpose::CallPurpose(std::string_view what, std::string_view subject, std::uint64_t own_hash)
    : what_(what), subject_(subject), parent_(t_innermost) {
  hash_ = mix_hash(parent_ != nullptr ? parent_->hash_ : 0, own_hash);
  t_innermost = this;
}

CallPurpose::~CallPurpose() { t_innermost = parent_; }

std::uint64_t CallPurpose::current_hash() {
  return t_innermost != nullptr ? t_innermost->hash_ : 0;
}

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
