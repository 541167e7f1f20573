#include "core/argument_checks.h"

#include <cstdint>
#include <limits>
#include <sstream>

#include "collective/errors.h"

namespace collective::internal {
namespace {

bool uses_op(CollectiveKind kind) {
  return kind == CollectiveKind::kAllReduce || kind == CollectiveKind::kReduceScatter ||
         kind == CollectiveKind::kReduce;
}

struct ByteRange {
  std::uintptr_t begin = 0;
  std::size_t bytes = 0;
  bool overlaps(const ByteRange& other) const {
    if (bytes == 0 || other.bytes == 0) return false;
    return begin < other.begin + other.bytes && other.begin < begin + bytes;
  }
};

ByteRange range_of(const void* pointer, std::size_t bytes) {
  return ByteRange{reinterpret_cast<std::uintptr_t>(pointer), bytes};
}

}  // namespace

void validate_request(const Request& request, int rank, int size) {
  // The label is built only on failure: this runs on every call.
  auto fail = [&](const std::string& cause) {
    throw InvalidArgumentError(request.label(), rank, cause);
  };

  const int type_index = static_cast<int>(request.type);
  if (type_index < 0 || type_index >= kNumDataTypes) {
    fail("unknown data type (DataType value " + std::to_string(type_index) + ")");
  }
  const int op_index = static_cast<int>(request.op);
  if (uses_op(request.kind) && (op_index < 0 || op_index >= kNumReduceOps)) {
    fail("unknown reduce op (ReduceOp value " + std::to_string(op_index) + ")");
  }
  const int algorithm_index = static_cast<int>(request.requested);
  if (algorithm_index < 0 || algorithm_index >= kNumAlgorithms) {
    fail("unknown algorithm (Algorithm value " + std::to_string(algorithm_index) + ")");
  }
  const int memory_index = static_cast<int>(request.memory);
  if (memory_index < 0 || memory_index > static_cast<int>(MemoryKind::kDevice)) {
    fail("unknown memory kind (MemoryKind value " + std::to_string(memory_index) + ")");
  }
  if (request.timeout.count() < 0) {
    fail("negative timeout (" + std::to_string(request.timeout.count()) + " ms)");
  }
  const bool rooted =
      request.kind == CollectiveKind::kBroadcast || request.kind == CollectiveKind::kReduce;
  if (rooted && (request.root < 0 || request.root >= size)) {
    fail("root " + std::to_string(request.root) + " is outside the communicator (size " +
         std::to_string(size) + ")");
  }
  if (request.kind == CollectiveKind::kBarrier) return;

  // Byte counts must fit in size_t, including the whole-group buffers.
  const std::size_t element = element_size(request.type);
  const std::size_t limit = std::numeric_limits<std::size_t>::max();
  const bool blocked =
      request.kind == CollectiveKind::kReduceScatter || request.kind == CollectiveKind::kAllGather;
  const std::size_t multiplier = blocked ? static_cast<std::size_t>(size) : 1;
  if (request.count > limit / element / multiplier) {
    std::ostringstream cause;
    cause << "count " << request.count << " of " << to_string(request.type)
          << (blocked ? " times " + std::to_string(size) + " ranks" : std::string())
          << " overflows the byte size";
    fail(cause.str());
  }
  const std::size_t block_bytes = request.count * element;
  const std::size_t group_bytes = block_bytes * multiplier;
  if (request.count == 0) return;

  std::size_t send_bytes = block_bytes;
  std::size_t recv_bytes = block_bytes;
  if (request.kind == CollectiveKind::kReduceScatter) send_bytes = group_bytes;
  if (request.kind == CollectiveKind::kAllGather) recv_bytes = group_bytes;
  const bool recv_needed = request.kind != CollectiveKind::kReduce || request.root == rank;

  if (request.kind == CollectiveKind::kBroadcast) {
    if (request.recv == nullptr) fail("buffer is null with count " + std::to_string(request.count));
    return;
  }
  if (request.send == nullptr)
    fail("send buffer is null with count " + std::to_string(request.count));
  if (recv_needed && request.recv == nullptr) {
    fail("recv buffer is null with count " + std::to_string(request.count));
  }
  if (!recv_needed || request.recv == nullptr) return;

  // Overlap is allowed only in the exact in-place form of each collective.
  const auto* send = static_cast<const std::byte*>(request.send);
  const auto* recv = static_cast<const std::byte*>(request.recv);
  const std::size_t own_offset = static_cast<std::size_t>(rank) * block_bytes;
  bool in_place = false;
  std::string in_place_form = "send == recv";
  switch (request.kind) {
    case CollectiveKind::kReduceScatter:
      in_place = recv == send + own_offset;
      in_place_form = "recv == send + rank * recv_count";
      break;
    case CollectiveKind::kAllGather:
      in_place = send == recv + own_offset;
      in_place_form = "send == recv + rank * send_count";
      break;
    case CollectiveKind::kAllReduce:
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kReduce:
    case CollectiveKind::kBarrier:
    default: in_place = send == recv; break;
  }
  if (!in_place && range_of(send, send_bytes).overlaps(range_of(recv, recv_bytes))) {
    std::ostringstream cause;
    cause << "send buffer [" << request.send << ", +" << send_bytes << " B) and recv buffer ["
          << request.recv << ", +" << recv_bytes << " B) overlap but are not the in-place form ("
          << in_place_form << ")";
    fail(cause.str());
  }
}

}  // namespace collective::internal
