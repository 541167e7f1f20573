#include "collective_case.h"

#include <climits>
#include <stdexcept>
#include <string>

namespace collective::bench {

bool CollectiveCase::reduces() const {
  return kind() == CollectiveKind::kAllReduce || kind() == CollectiveKind::kReduceScatter ||
         kind() == CollectiveKind::kReduce;
}

bool CollectiveCase::rooted() const {
  return kind() == CollectiveKind::kBroadcast || kind() == CollectiveKind::kReduce;
}

ValuePattern CollectiveCase::pattern(const CallArgs& args) const {
  return reduces() ? ValuePattern::reduction(args.type, args.op, args.ranks)
                   : ValuePattern::copy(args.type, args.ranks);
}

WrongElements CollectiveCase::check(const CallArgs& args, Implementation implementation) const {
  const Region region = result(args, implementation);
  if (region.count == 0) return {};
  const ValuePattern values = pattern(args);
  if (reduces()) return check_reduction(values, region);
  CopySource source;
  if (kind() == CollectiveKind::kBroadcast) {
    source.root = args.root;
  } else {
    source.block = args.count;
  }
  return check_copy(values, region, source);
}

const char* CollectiveCase::mpi_limit(const Geometry& geometry) const {
  (void)geometry;
  return nullptr;  // single-buffer calls are split into pieces of INT_MAX elements
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
  throw std::invalid_argument("collective_bench does not benchmark " +
                              std::string(to_string(kind)));
}

}  // namespace collective::bench
