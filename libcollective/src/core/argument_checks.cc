#include "core/argument_checks.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <sstream>
#include <vector>

#include "collective/errors.h"
#include "collective/in_tree/collectives.h"

namespace collective::internal {
namespace {

constexpr std::size_t kMaxSize = std::numeric_limits<std::size_t>::max();

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

// Checks one rank's arguments; `fail` raises.
class ArgumentCheck {
 public:
  ArgumentCheck(const Request& request, int rank, int size)
      : request_(request),
        traits_(traits_of(request.kind)),
        rank_(rank),
        size_(static_cast<std::size_t>(size)),
        element_(element_size(request.type)) {}

  [[noreturn]] void fail(const std::string& cause) const {
    throw InvalidArgumentError(request_.label(), rank_, cause);
  }

  bool is_root() const { return !traits_.rooted || request_.root == rank_; }
  bool uses(BufferUse use) const {
    return use == BufferUse::kEveryRank || (use == BufferUse::kRootOnly && is_root());
  }

  // The elements a buffer spans: p blocks of `count`, or count.
  std::size_t blocks_extent(bool blocks, const char* buffer) const {
    if (!blocks) return request_.count;
    if (request_.count > kMaxSize / element_ / size_) {
      std::ostringstream cause;
      cause << traits_.count_name << " " << request_.count << " of " << to_string(request_.type)
            << " times " << size_ << " ranks overflows the byte size of the " << buffer
            << " buffer";
      fail(cause.str());
    }
    return request_.count * size_;
  }

  // The elements a v-form's buffer spans: up to the furthest block end.
  // Spans were checked to have size() entries.
  std::size_t vector_extent(std::span<const std::size_t> counts,
                            std::span<const std::size_t> displacements, const char* side) const {
    std::size_t extent = 0;
    for (std::size_t q = 0; q < size_; ++q) {
      if (counts[q] == 0) continue;
      if (counts[q] > kMaxSize / element_ || displacements[q] > kMaxSize / element_ - counts[q]) {
        std::ostringstream cause;
        cause << side << "_displacements[" << q << "] " << displacements[q] << " + " << side
              << "_counts[" << q << "] " << counts[q] << " of " << to_string(request_.type)
              << " overflows the byte size";
        fail(cause.str());
      }
      extent = std::max(extent, displacements[q] + counts[q]);
    }
    return extent;
  }

  void require_entries(std::span<const std::size_t> values, const char* name) const {
    if (values.size() != size_) {
      std::ostringstream cause;
      cause << name << " has " << values.size() << " entries; it needs one per rank (" << size_
            << ")";
      fail(cause.str());
    }
  }

  // The blocks written into one receive buffer must not overlap: MPI leaves
  // that undefined, and the result would depend on the algorithm.
  void require_disjoint(std::span<const std::size_t> counts,
                        std::span<const std::size_t> displacements, const char* side) const {
    std::vector<std::size_t> order;
    for (std::size_t q = 0; q < size_; ++q) {
      if (counts[q] > 0) order.push_back(q);
    }
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return displacements[a] < displacements[b]; });
    for (std::size_t i = 1; i < order.size(); ++i) {
      const std::size_t a = order[i - 1];
      const std::size_t b = order[i];
      if (displacements[a] + counts[a] > displacements[b]) {
        std::ostringstream cause;
        cause << "blocks " << a << " and " << b << " of the " << side << " buffer overlap (" << side
              << "_displacements " << displacements[a] << " and " << displacements[b] << ", "
              << side << "_counts[" << a << "] " << counts[a] << ")";
        fail(cause.str());
      }
    }
  }

  void require_equal(std::size_t value, const std::string& value_name, std::size_t expected,
                     const std::string& expected_name) const {
    if (value == expected) return;
    std::ostringstream cause;
    cause << value_name << " " << value << " differs from " << expected_name << " " << expected;
    fail(cause.str());
  }

  // Element extents of the send and recv buffers on this rank (0: unused).
  void extents(std::size_t& send, std::size_t& recv) const {
    const bool send_used = uses(traits_.send_use);
    const bool recv_used = uses(traits_.recv_use);
    switch (traits_.geometry) {
      case CollectiveGeometry::kNone: send = recv = 0; return;
      case CollectiveGeometry::kSame:
        send = send_used ? request_.count : 0;
        recv = recv_used ? request_.count : 0;
        return;
      case CollectiveGeometry::kSendBlocks:
        send = send_used ? blocks_extent(true, "send") : 0;
        recv = recv_used ? request_.count : 0;
        return;
      case CollectiveGeometry::kRecvBlocks:
        send = send_used ? request_.count : 0;
        recv = recv_used ? blocks_extent(true, "recv") : 0;
        return;
      case CollectiveGeometry::kBothBlocks:
        send = send_used ? blocks_extent(true, "send") : 0;
        recv = recv_used ? blocks_extent(true, "recv") : 0;
        return;
      case CollectiveGeometry::kVector: vector_extents(send, recv); return;
    }
  }

  void vector_extents(std::size_t& send, std::size_t& recv) const {
    const std::string own = "[" + std::to_string(rank_) + "]";
    const std::string at_root = "[" + std::to_string(request_.root) + "]";
    send = recv = 0;
    switch (request_.kind) {
      case CollectiveKind::kAllToAllV: {
        require_entries(request_.recv_counts, "recv_counts");
        require_entries(request_.recv_displacements, "recv_displacements");
        recv = vector_extent(request_.recv_counts, request_.recv_displacements, "recv");
        require_disjoint(request_.recv_counts, request_.recv_displacements, "recv");
        if (request_.in_place(rank_)) return;  // in place: recv's layout is both
        require_entries(request_.send_counts, "send_counts");
        require_entries(request_.send_displacements, "send_displacements");
        send = vector_extent(request_.send_counts, request_.send_displacements, "send");
        require_equal(request_.send_counts[static_cast<std::size_t>(rank_)], "send_counts" + own,
                      request_.recv_counts[static_cast<std::size_t>(rank_)],
                      "recv_counts" + own + " (what this rank sends itself)");
        return;
      }
      case CollectiveKind::kAllGatherV:
        require_entries(request_.recv_counts, "recv_counts");
        require_entries(request_.recv_displacements, "recv_displacements");
        require_equal(request_.count, "send_count",
                      request_.recv_counts[static_cast<std::size_t>(rank_)], "recv_counts" + own);
        send = request_.count;
        recv = vector_extent(request_.recv_counts, request_.recv_displacements, "recv");
        require_disjoint(request_.recv_counts, request_.recv_displacements, "recv");
        return;
      case CollectiveKind::kReduceScatterV: {
        require_entries(request_.recv_counts, "recv_counts");
        std::size_t total = 0;
        for (std::size_t q = 0; q < size_; ++q) {
          if (request_.recv_counts[q] > kMaxSize / element_ - total) {
            fail("the sum of recv_counts of " + std::string(to_string(request_.type)) +
                 " overflows the byte size");
          }
          total += request_.recv_counts[q];
        }
        require_equal(request_.count, "count",
                      request_.recv_counts[static_cast<std::size_t>(rank_)], "recv_counts" + own);
        send = total;
        recv = request_.count;
        return;
      }
      case CollectiveKind::kGatherV:
        send = request_.count;
        if (!is_root()) return;
        require_entries(request_.recv_counts, "recv_counts");
        require_entries(request_.recv_displacements, "recv_displacements");
        require_equal(request_.count, "send_count",
                      request_.recv_counts[static_cast<std::size_t>(rank_)],
                      "recv_counts" + at_root + " (the root's own block)");
        recv = vector_extent(request_.recv_counts, request_.recv_displacements, "recv");
        require_disjoint(request_.recv_counts, request_.recv_displacements, "recv");
        return;
      case CollectiveKind::kScatterV:
        recv = request_.count;
        if (!is_root()) return;
        require_entries(request_.send_counts, "send_counts");
        require_entries(request_.send_displacements, "send_displacements");
        require_equal(request_.count, "recv_count",
                      request_.send_counts[static_cast<std::size_t>(rank_)],
                      "send_counts" + at_root + " (the root's own block)");
        send = vector_extent(request_.send_counts, request_.send_displacements, "send");
        return;
      case CollectiveKind::kAllReduce:
      case CollectiveKind::kReduceScatter:
      case CollectiveKind::kAllGather:
      case CollectiveKind::kBroadcast:
      case CollectiveKind::kReduce:
      case CollectiveKind::kBarrier:
      case CollectiveKind::kAllToAll:
      case CollectiveKind::kGather:
      case CollectiveKind::kScatter: return;
    }
  }

  void run() const {
    const int type_index = static_cast<int>(request_.type);
    if (type_index < 0 || type_index >= kNumDataTypes) {
      fail("unknown data type (DataType value " + std::to_string(type_index) + ")");
    }
    const int op_index = static_cast<int>(request_.op);
    if (traits_.reduces && (op_index < 0 || op_index >= kNumReduceOps)) {
      fail("unknown reduce op (ReduceOp value " + std::to_string(op_index) + ")");
    }
    if (traits_.reduces && !op_applies_to(request_.op, request_.type)) {
      fail("reduce op " + std::string(to_string(request_.op)) + " combines bits, of integer " +
           "types only (int8, uint8, int32, int64), not " + std::string(to_string(request_.type)));
    }
    const int algorithm_index = static_cast<int>(request_.requested);
    if (algorithm_index < 0 || algorithm_index >= kNumAlgorithms) {
      fail("unknown algorithm (Algorithm value " + std::to_string(algorithm_index) + ")");
    }
    const int memory_index = static_cast<int>(request_.memory);
    if (memory_index < 0 || memory_index > static_cast<int>(MemoryKind::kDevice)) {
      fail("unknown memory kind (MemoryKind value " + std::to_string(memory_index) + ")");
    }
    if (request_.timeout.count() < 0) {
      fail("negative timeout (" + std::to_string(request_.timeout.count()) + " ms)");
    }
    if (traits_.rooted && (request_.root < 0 || static_cast<std::size_t>(request_.root) >= size_)) {
      fail("root " + std::to_string(request_.root) + " is outside the communicator (size " +
           std::to_string(size_) + ")");
    }
    if (traits_.geometry == CollectiveGeometry::kNone) return;
    if (traits_.geometry != CollectiveGeometry::kVector && request_.count > kMaxSize / element_) {
      std::ostringstream cause;
      cause << traits_.count_name << " " << request_.count << " of " << to_string(request_.type)
            << " overflows the byte size";
      fail(cause.str());
    }

    std::size_t send_elements = 0;
    std::size_t recv_elements = 0;
    extents(send_elements, recv_elements);
    const bool broadcast = request_.kind == CollectiveKind::kBroadcast;
    if (send_elements > 0 && request_.send == nullptr) {
      fail("send buffer is null with " + describe_extent(send_elements));
    }
    if (recv_elements > 0 && request_.recv == nullptr) {
      fail(std::string(broadcast ? "buffer" : "recv buffer") + " is null with " +
           describe_extent(recv_elements));
    }
    if (send_elements == 0 || recv_elements == 0) return;

    // Overlap is allowed only in the exact in-place form of each collective.
    if (request_.in_place(rank_)) return;
    const std::size_t send_bytes = send_elements * element_;
    const std::size_t recv_bytes = recv_elements * element_;
    if (range_of(request_.send, send_bytes).overlaps(range_of(request_.recv, recv_bytes))) {
      std::ostringstream cause;
      cause << "send buffer [" << request_.send << ", +" << send_bytes << " B) and recv buffer ["
            << request_.recv << ", +" << recv_bytes << " B) overlap but are not the in-place form ("
            << traits_.in_place_text << ")";
      fail(cause.str());
    }
  }

 private:
  std::string describe_extent(std::size_t elements) const {
    if (traits_.geometry == CollectiveGeometry::kVector) {
      return std::to_string(elements) + " elements to " +
             (request_.kind == CollectiveKind::kScatterV ? "send" : "move");
    }
    return std::string(traits_.count_name) + " " + std::to_string(request_.count);
  }

  const Request& request_;
  const CollectiveTraits& traits_;
  const int rank_;
  const std::size_t size_;
  const std::size_t element_;
};

}  // namespace

void validate_request(const Request& request, int rank, int size) {
  if (!is_collective_kind(static_cast<int>(request.kind))) {
    throw InvalidArgumentError("collective", rank,
                               "unknown collective kind (CollectiveKind value " +
                                   std::to_string(static_cast<int>(request.kind)) + ")");
  }
  // The type is checked before element_size is asked for it.
  const int type_index = static_cast<int>(request.type);
  if (type_index < 0 || type_index >= kNumDataTypes) {
    throw InvalidArgumentError(
        request.label(), rank,
        "unknown data type (DataType value " + std::to_string(type_index) + ")");
  }
  ArgumentCheck(request, rank, size).run();
}

}  // namespace collective::internal
