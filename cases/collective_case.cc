#include "collective_case.h"

#include <stdexcept>
#include <string>

namespace collective::cases {

Geometry CollectiveCase::geometry_for_bytes(std::size_t bytes, std::size_t element_bytes,
                                            const Shape& shape) const {
  const std::size_t per_count = elements_per_count(shape);
  // uneven 0 with one rank: no element stands for the count.
  const std::size_t count = per_count == 0 ? 0 : bytes / (element_bytes * per_count);
  return geometry(count, element_bytes, shape);
}

ValuePattern CollectiveCase::pattern(const CallArgs& args) const {
  return reduces() ? ValuePattern::reduction(args.type, args.op, args.ranks)
                   : ValuePattern::copy(args.type, args.ranks);
}

WrongElements CollectiveCase::check(const CallArgs& args) const {
  return check(args, result(args));
}

WrongElements CollectiveCase::check(const CallArgs& args, const ResultLayout& layout) const {
  return check_result(pattern(args), layout);
}

std::span<const CollectiveKind> kinds_with_cases() {
  static constexpr CollectiveKind kKinds[] = {
      CollectiveKind::kAllReduce, CollectiveKind::kReduceScatter, CollectiveKind::kAllGather,
      CollectiveKind::kBroadcast, CollectiveKind::kReduce};
  return kKinds;
}

std::unique_ptr<CollectiveCase> make_collective_case(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce: return make_all_reduce_case();
    case CollectiveKind::kReduceScatter: return make_reduce_scatter_case();
    case CollectiveKind::kAllGather: return make_all_gather_case();
    case CollectiveKind::kBroadcast: return make_broadcast_case();
    case CollectiveKind::kReduce: return make_reduce_case();
    case CollectiveKind::kBarrier:
    case CollectiveKind::kAllToAll:
    case CollectiveKind::kAllToAllV:
    case CollectiveKind::kAllGatherV:
    case CollectiveKind::kReduceScatterV:
    case CollectiveKind::kGather:
    case CollectiveKind::kGatherV:
    case CollectiveKind::kScatter:
    case CollectiveKind::kScatterV: break;
  }
  throw std::invalid_argument(std::string(to_string(kind)) + " has no collective case");
}

std::optional<CollectiveKind> parse_case_name(std::string_view name) {
  for (const CollectiveKind kind : kinds_with_cases()) {
    if (name == to_string(kind) || name == make_collective_case(kind)->nccl_tests_name()) {
      return kind;
    }
  }
  return std::nullopt;
}

}  // namespace collective::cases
