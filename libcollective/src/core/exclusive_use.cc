#include "core/exclusive_use.h"

#include <string>

#include "collective/errors.h"
#include "core/communicator_state.h"

namespace collective::internal {
namespace {

// The claim word: bit 63 marks a claim; for a collective, bits 0-3 hold its
// kind + 1 and bits 4-61 its sequence number + 1 (0 until started()); for
// another operation (bit 62), the low bits hold its Operation.
constexpr std::uint64_t kClaimed = std::uint64_t{1} << 63;
constexpr std::uint64_t kOperationFlag = std::uint64_t{1} << 62;
static_assert(kNumCollectiveKinds + 1 <= 0xF, "a kind + 1 fits the claim word's 4 bits");

const char* operation_name(ExclusiveUse::Operation operation) {
  switch (operation) {
    case ExclusiveUse::Operation::kSplit: return "Communicator::split";
    case ExclusiveUse::Operation::kShrink: return "Communicator::shrink";
    case ExclusiveUse::Operation::kFree: return "Communicator::free";
    case ExclusiveUse::Operation::kSend: return "Communicator::send";
    case ExclusiveUse::Operation::kRecv: return "Communicator::recv";
  }
  return "another operation";
}

std::uint64_t collective_mark(CollectiveKind kind, std::uint64_t sequence_plus_one) {
  const std::uint64_t kind_bits = static_cast<std::uint64_t>(kind) + 1;
  return kClaimed | ((sequence_plus_one << 4) & ~(kClaimed | kOperationFlag)) | kind_bits;
}

std::uint64_t operation_mark(ExclusiveUse::Operation operation) {
  return kClaimed | kOperationFlag | static_cast<std::uint64_t>(operation);
}

std::string describe(std::uint64_t mark) {
  if (mark & kOperationFlag) {
    return operation_name(static_cast<ExclusiveUse::Operation>(mark & 0xFF));
  }
  const auto kind = static_cast<CollectiveKind>((mark & 0xF) - 1);
  const std::uint64_t sequence_plus_one = (mark & ~(kClaimed | kOperationFlag)) >> 4;
  if (sequence_plus_one == 0) return std::string(to_string(kind)) + " (starting)";
  return std::string(to_string(kind)) + " #" + std::to_string(sequence_plus_one - 1);
}

[[noreturn]] void fail_concurrent(const CommunicatorState& state, const std::string& call,
                                  std::uint64_t holder) {
  throw InvalidArgumentError(call, state.rank,
                             "called while " + describe(holder) +
                                 " is running on the same communicator in another thread (" +
                                 state.describe() +
                                 "); a Communicator serves one thread at a time: give each "
                                 "thread its own (Communicator::split) or serialize the calls");
}

}  // namespace

ExclusiveUse::ExclusiveUse(CommunicatorState& state, CollectiveKind kind)
    : owner_(state.in_use), kind_(kind) {
  std::uint64_t expected = 0;
  if (owner_.compare_exchange_strong(expected, collective_mark(kind, 0),
                                     std::memory_order_acquire)) {
    return;
  }
  fail_concurrent(state, std::string(to_string(kind)), expected);
}

void ExclusiveUse::started(std::uint64_t sequence) {
  owner_.store(collective_mark(kind_, sequence + 1), std::memory_order_relaxed);
}

ExclusiveUse::ExclusiveUse(CommunicatorState& state, Operation operation) : owner_(state.in_use) {
  std::uint64_t expected = 0;
  if (owner_.compare_exchange_strong(expected, operation_mark(operation),
                                     std::memory_order_acquire)) {
    return;
  }
  fail_concurrent(state, operation_name(operation), expected);
}

ExclusiveUse::~ExclusiveUse() { owner_.store(0, std::memory_order_release); }

}  // namespace collective::internal
