// Names of the public enums, and their parsers.
#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <utility>

#include "collective/algorithm.h"
#include "collective/errors.h"
#include "collective/in_tree/collectives.h"
#include "collective/types.h"
#include "core/data_type_sizes.h"

namespace collective {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

template <typename Enum, std::size_t N>
std::optional<Enum> find_name(const std::array<std::pair<std::string_view, Enum>, N>& table,
                              std::string_view name) {
  const std::string key = lower(name);
  for (const auto& [text, value] : table) {
    if (text == key) return value;
  }
  return std::nullopt;
}

constexpr std::array<std::string_view, kNumDataTypes> kDataTypeNames = {
    "float16", "bfloat16", "float32", "float64", "int8", "uint8", "int32", "int64"};
constexpr std::array<std::string_view, kNumReduceOps> kReduceOpNames = {
    "sum", "mean", "min", "max", "prod", "band", "bor", "bxor"};
constexpr std::array<std::string_view, kNumAlgorithms> kAlgorithmNames = {
    "auto",         "ring", "recursive_doubling", "mpi",  "shared_memory",
    "hierarchical", "nccl", "pairwise",           "bruck"};
constexpr std::array<std::string_view, kNumCollectiveKinds> kCollectiveNames = [] {
  std::array<std::string_view, kNumCollectiveKinds> names{};
  for (std::size_t i = 0; i < names.size(); ++i) names[i] = kCollectiveTable[i].name;
  return names;
}();

template <std::size_t N>
std::string_view name_or_unknown(const std::array<std::string_view, N>& names, int index) {
  if (index < 0 || index >= static_cast<int>(N)) return "unknown";
  return names[static_cast<std::size_t>(index)];
}

}  // namespace

std::size_t element_size(DataType type) {
  const int index = static_cast<int>(type);
  if (index < 0 || index >= kNumDataTypes) {
    throw InvalidArgumentError("element_size", -1,
                               "unknown DataType value " + std::to_string(index));
  }
  return internal::kDataTypeSizes[static_cast<std::size_t>(index)];
}

std::string_view to_string(DataType type) {
  return name_or_unknown(kDataTypeNames, static_cast<int>(type));
}
std::string_view to_string(ReduceOp op) {
  return name_or_unknown(kReduceOpNames, static_cast<int>(op));
}
std::string_view to_string(Algorithm algorithm) {
  return name_or_unknown(kAlgorithmNames, static_cast<int>(algorithm));
}
std::string_view to_string(CollectiveKind kind) {
  return name_or_unknown(kCollectiveNames, static_cast<int>(kind));
}

std::optional<DataType> parse_data_type(std::string_view name) {
  static constexpr std::array<std::pair<std::string_view, DataType>, 22> kTable = {{
      {"float16", DataType::kFloat16},   {"half", DataType::kFloat16},
      {"fp16", DataType::kFloat16},      {"f16", DataType::kFloat16},
      {"bfloat16", DataType::kBFloat16}, {"bf16", DataType::kBFloat16},
      {"float32", DataType::kFloat32},   {"float", DataType::kFloat32},
      {"fp32", DataType::kFloat32},      {"f32", DataType::kFloat32},
      {"float64", DataType::kFloat64},   {"double", DataType::kFloat64},
      {"fp64", DataType::kFloat64},      {"f64", DataType::kFloat64},
      {"int8", DataType::kInt8},         {"char", DataType::kInt8},
      {"uint8", DataType::kUInt8},       {"byte", DataType::kUInt8},
      {"int32", DataType::kInt32},       {"int", DataType::kInt32},
      {"int64", DataType::kInt64},       {"long", DataType::kInt64},
  }};
  return find_name(kTable, name);
}

std::optional<ReduceOp> parse_reduce_op(std::string_view name) {
  static constexpr std::array<std::pair<std::string_view, ReduceOp>, 13> kTable = {{
      {"sum", ReduceOp::kSum},
      {"mean", ReduceOp::kMean},
      {"avg", ReduceOp::kMean},
      {"min", ReduceOp::kMin},
      {"max", ReduceOp::kMax},
      {"prod", ReduceOp::kProd},
      {"product", ReduceOp::kProd},
      {"band", ReduceOp::kBitwiseAnd},
      {"bitwise_and", ReduceOp::kBitwiseAnd},
      {"bor", ReduceOp::kBitwiseOr},
      {"bitwise_or", ReduceOp::kBitwiseOr},
      {"bxor", ReduceOp::kBitwiseXor},
      {"bitwise_xor", ReduceOp::kBitwiseXor},
  }};
  return find_name(kTable, name);
}

std::optional<Algorithm> parse_algorithm(std::string_view name) {
  const std::string key = lower(name);
  for (int i = 0; i < kNumAlgorithms; ++i) {
    if (kAlgorithmNames[static_cast<std::size_t>(i)] == key) return static_cast<Algorithm>(i);
  }
  if (key == "shm") return Algorithm::kSharedMemory;
  if (key == "rd") return Algorithm::kRecursiveDoubling;
  return std::nullopt;
}

std::optional<CollectiveKind> parse_collective_kind(std::string_view name) {
  const std::string key = lower(name);
  for (std::size_t i = 0; i < kCollectiveNames.size(); ++i) {
    if (kCollectiveNames[i] == key) return static_cast<CollectiveKind>(i);
  }
  return std::nullopt;
}

}  // namespace collective
