#include "case_names.h"

#include <string>

#include "collective/in_tree/collectives.h"

namespace collective::cases {

std::span<const CollectiveKind> kinds_with_cases() {
  static constexpr CollectiveKind kKinds[] = {
      CollectiveKind::kAllReduce, CollectiveKind::kReduceScatter, CollectiveKind::kAllGather,
      CollectiveKind::kBroadcast, CollectiveKind::kReduce,        CollectiveKind::kAllToAll,
      CollectiveKind::kAllToAllV, CollectiveKind::kAllGatherV,    CollectiveKind::kReduceScatterV,
      CollectiveKind::kGather,    CollectiveKind::kGatherV,       CollectiveKind::kScatter,
      CollectiveKind::kScatterV};
  return kKinds;
}

std::string_view command_line_name(CollectiveKind kind) {
  const CollectiveTraits& traits = traits_of(kind);
  return traits.nccl_tests_name.empty() ? traits.name : traits.nccl_tests_name;
}

std::optional<CollectiveKind> parse_case_name(std::string_view name) {
  auto without_underscores = [](std::string_view text) {
    std::string result(text);
    std::erase(result, '_');
    return result;
  };
  for (const CollectiveKind kind : kinds_with_cases()) {
    const std::string_view library_name = traits_of(kind).name;
    if (name == library_name || name == command_line_name(kind) ||
        name == without_underscores(library_name)) {
      return kind;
    }
  }
  return std::nullopt;
}

bool has_per_rank_counts(CollectiveKind kind) {
  return traits_of(kind).geometry == CollectiveGeometry::kVector;
}

}  // namespace collective::cases
