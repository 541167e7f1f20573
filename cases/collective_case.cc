#include "collective_case.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "collective/in_tree/collectives.h"

namespace collective::cases {

Geometry CollectiveCase::geometry_for_bytes(std::size_t bytes, std::size_t element_bytes,
                                            const Shape& shape) const {
  const std::size_t per_count = elements_per_count(shape);
  // uneven 0 with one rank: no element stands for the count.
  const std::size_t count = per_count == 0 ? 0 : bytes / (element_bytes * per_count);
  return geometry(count, element_bytes, shape);
}

std::string_view CollectiveCase::name() const { return traits_of(kind()).name; }

std::string_view CollectiveCase::nccl_tests_name() const { return command_line_name(kind()); }

bool CollectiveCase::reduces() const { return traits_of(kind()).reduces; }

bool CollectiveCase::rooted() const { return traits_of(kind()).rooted; }

double CollectiveCase::bus_factor(int ranks) const {
  return bus_bandwidth_factor(traits_of(kind()).bus_factor, ranks);
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

std::unique_ptr<CollectiveCase> make_collective_case(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce: return make_all_reduce_case();
    case CollectiveKind::kReduceScatter: return make_reduce_scatter_case();
    case CollectiveKind::kAllGather: return make_all_gather_case();
    case CollectiveKind::kBroadcast: return make_broadcast_case();
    case CollectiveKind::kReduce: return make_reduce_case();
    case CollectiveKind::kAllToAll: return make_all_to_all_case();
    case CollectiveKind::kAllToAllV: return make_all_to_all_v_case();
    case CollectiveKind::kAllGatherV: return make_all_gather_v_case();
    case CollectiveKind::kReduceScatterV: return make_reduce_scatter_v_case();
    case CollectiveKind::kGather: return make_gather_case();
    case CollectiveKind::kGatherV: return make_gather_v_case();
    case CollectiveKind::kScatter: return make_scatter_case();
    case CollectiveKind::kScatterV: return make_scatter_v_case();
    case CollectiveKind::kBarrier: break;  // no buffers to check
  }
  throw std::invalid_argument(std::string(to_string(kind)) + " has no collective case");
}

}  // namespace collective::cases
