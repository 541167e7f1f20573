#include "value_pattern.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "element_types.h"

namespace collective::cases {
namespace {

// SplitMix64's finalizer: a bijection on 64 bits with full avalanche.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

std::uint64_t hash(std::uint64_t index, std::uint64_t salt) { return mix(index ^ mix(salt)); }

constexpr std::uint64_t kPairSalt = 0x5EED0000ull;

template <typename E>
std::string describe(typename E::Storage value) {
  std::ostringstream text;
  if constexpr (E::kFloating) {
    text << E::to_double(value);
  } else {
    text << static_cast<std::int64_t>(value);
  }
  return text.str();
}

template <typename E>
typename E::Storage from_integer(std::int64_t value) {
  if constexpr (E::kFloating) {
    return E::from_double(static_cast<double>(value));
  } else {
    return static_cast<typename E::Storage>(value);  // modular, as C++20 defines it
  }
}

template <typename E>
bool same(typename E::Storage actual, typename E::Storage expected) {
  if constexpr (E::kFloating) {
    const double a = E::to_double(actual);
    const double b = E::to_double(expected);
    return a == b || (std::isnan(a) && std::isnan(b));
  } else {
    return actual == expected;
  }
}

// op over every rank's input at `index`, in the arithmetic the library
// promises: integers wrap, MEAN divides the (wrapped) integer sum with
// truncation; floating results are exact by construction of the inputs.
template <typename E>
typename E::Storage expected_reduction(const ValuePattern& pattern, std::uint64_t index) {
  using Storage = typename E::Storage;
  const int ranks = pattern.ranks();
  const ReduceOp op = pattern.op();
  if constexpr (E::kFloating) {
    double value = static_cast<double>(pattern.input(0, index));
    for (int r = 1; r < ranks; ++r) {
      const double x = static_cast<double>(pattern.input(r, index));
      switch (op) {
        case ReduceOp::kSum:
        case ReduceOp::kMean: value += x; break;
        case ReduceOp::kMin: value = std::min(value, x); break;
        case ReduceOp::kMax: value = std::max(value, x); break;
        case ReduceOp::kProd: value *= x; break;
        case ReduceOp::kBitwiseAnd:
        case ReduceOp::kBitwiseOr:
        case ReduceOp::kBitwiseXor:
          throw std::logic_error("value pattern: a bitwise op has no floating inputs");
      }
    }
    if (op == ReduceOp::kMean) value /= ranks;
    return E::from_double(value);
  } else {
    if (op == ReduceOp::kMin || op == ReduceOp::kMax) {
      std::int64_t value = pattern.input(0, index);
      for (int r = 1; r < ranks; ++r) {
        const std::int64_t x = pattern.input(r, index);
        value = op == ReduceOp::kMin ? std::min(value, x) : std::max(value, x);
      }
      return static_cast<Storage>(value);
    }
    std::uint64_t value = static_cast<std::uint64_t>(pattern.input(0, index));
    for (int r = 1; r < ranks; ++r) {
      const auto x = static_cast<std::uint64_t>(pattern.input(r, index));
      switch (op) {
        case ReduceOp::kProd: value *= x; break;
        case ReduceOp::kBitwiseAnd: value &= x; break;
        case ReduceOp::kBitwiseOr: value |= x; break;
        case ReduceOp::kBitwiseXor: value ^= x; break;
        case ReduceOp::kSum:
        case ReduceOp::kMean:
        case ReduceOp::kMin:
        case ReduceOp::kMax: value += x; break;
      }
    }
    const auto wrapped = static_cast<Storage>(value);
    if (op != ReduceOp::kMean) return wrapped;
    return static_cast<Storage>(static_cast<std::int64_t>(wrapped) / ranks);
  }
}

// What no correct result holds: NaN, or the type's maximum.
template <typename E>
typename E::Storage sentinel() {
  if constexpr (E::kFloating) {
    return E::from_double(std::numeric_limits<double>::quiet_NaN());
  } else {
    return std::numeric_limits<typename E::Storage>::max();
  }
}

// The expected values of a part, one period long at most: element j of
// the part must equal block[j % block.size()] (inputs repeat with
// kValuePeriod along the index).
template <typename E, typename Expected>
std::vector<typename E::Storage> one_period(std::size_t count, Expected expected) {
  std::vector<typename E::Storage> block(std::min<std::size_t>(count, kValuePeriod));
  for (std::size_t j = 0; j < block.size(); ++j) block[j] = expected(j);
  return block;
}

// Compares a block at a time by bytes, and element by element (by value:
// -0 equals 0) only where the bytes differ.
template <typename E, typename Expected>
void compare_part(const void* data, const ResultPart& part, Expected expected,
                  WrongElements& wrong) {
  using Storage = typename E::Storage;
  const auto block = one_period<E>(part.count, expected);
  const auto* actual = static_cast<const Storage*>(data) + part.offset;
  wrong.checked += part.count;
  for (std::size_t first = 0; first < part.count; first += block.size()) {
    const std::size_t length = std::min(block.size(), part.count - first);
    if (std::memcmp(actual + first, block.data(), length * sizeof(Storage)) == 0) continue;
    for (std::size_t j = 0; j < length; ++j) {
      if (same<E>(actual[first + j], block[j])) continue;
      if (wrong.count == 0) {
        wrong.first_index = part.offset + first + j;
        wrong.first_expected = describe<E>(block[j]);
        wrong.first_actual = describe<E>(actual[first + j]);
      }
      ++wrong.count;
    }
  }
}

}  // namespace

ValuePattern::ValuePattern(DataType type, ReduceOp op, int ranks, bool reduction)
    : type_(type),
      op_(op),
      ranks_(ranks),
      reduction_(reduction),
      is_unsigned_(type == DataType::kUInt8) {}

ValuePattern ValuePattern::reduction(DataType type, ReduceOp op, int ranks) {
  return ValuePattern(type, op, ranks, true);
}

ValuePattern ValuePattern::copy(DataType type, int ranks) {
  return ValuePattern(type, ReduceOp::kSum, ranks, false);
}

std::int64_t ValuePattern::input(int rank, std::uint64_t global_index) const {
  const std::uint64_t index = global_index % kValuePeriod;
  const std::uint64_t h = hash(index, static_cast<std::uint64_t>(rank));
  if (!reduction_) {
    // |value| <= 100: exact in bfloat16 (8 significant bits) and int8.
    return is_unsigned_ ? static_cast<std::int64_t>(h % 201)
                        : static_cast<std::int64_t>(h % 201) - 100;
  }
  switch (op_) {
    case ReduceOp::kSum:
    case ReduceOp::kMean: {
      // A base value the same on every rank plus a deviation that cancels
      // within each pair of ranks (2k, 2k+1); with an odd count the last rank
      // deviates by 0. The sum is ranks * base: MEAN is exactly base however
      // the library divides, and every partial sum stays within 3 * ranks.
      const std::uint64_t base_hash = hash(index, ~std::uint64_t{0});
      const std::int64_t base = is_unsigned_ ? static_cast<std::int64_t>(base_hash % 3) + 2
                                             : static_cast<std::int64_t>(base_hash % 3) - 1;
      int sign = rank % 2 == 0 ? 1 : -1;
      if (ranks_ % 2 == 1 && rank == ranks_ - 1) sign = 0;
      const std::uint64_t pair_hash = hash(index, kPairSalt + static_cast<std::uint64_t>(rank / 2));
      return base + sign * static_cast<std::int64_t>(1 + (pair_hash & 1));
    }
    case ReduceOp::kMin:
    case ReduceOp::kMax:
      return is_unsigned_ ? static_cast<std::int64_t>(h % 7) : static_cast<std::int64_t>(h % 7) - 3;
    case ReduceOp::kProd: {
      // Signs and powers of two: products are exact until they overflow,
      // and then overflow the same way in any order (magnitudes only grow).
      static constexpr std::int64_t kSigned[] = {1, -1, 2, 1};
      static constexpr std::int64_t kUnsigned[] = {1, 2, 1, 1};
      return is_unsigned_ ? kUnsigned[h % 4] : kSigned[h % 4];
    }
    // Bit 0 is always clear, so that no result is the sentinel (the type's
    // maximum, an odd number). AND: mostly ones, each rank clearing a
    // random quarter, so that the AND over four ranks keeps about a third
    // of the bits; OR: mostly zeros, for the same reason.
    case ReduceOp::kBitwiseAnd:
      return static_cast<std::int64_t>(
          (h | hash(index, 0xA11D0000ull + static_cast<std::uint64_t>(rank))) & ~std::uint64_t{1});
    case ReduceOp::kBitwiseOr:
      return static_cast<std::int64_t>(
          (h & hash(index, 0x0B0B0000ull + static_cast<std::uint64_t>(rank))) & ~std::uint64_t{1});
    case ReduceOp::kBitwiseXor: return static_cast<std::int64_t>(h & ~std::uint64_t{1});
  }
  return 0;
}

void fill_inputs(const ValuePattern& pattern, int rank, Region region) {
  visit_type(pattern.type(), [&](auto element) {
    using E = decltype(element);
    const auto block = one_period<E>(region.count, [&](std::size_t j) {
      return from_integer<E>(pattern.input(rank, region.first_index + j));
    });
    auto* data = static_cast<typename E::Storage*>(region.data);
    for (std::size_t first = 0; first < region.count; first += block.size()) {
      const std::size_t length = std::min(block.size(), region.count - first);
      std::copy_n(block.data(), length, data + first);
    }
  });
}

void fill_sentinel(DataType type, Region region) {
  visit_type(type, [&](auto element) {
    using E = decltype(element);
    std::fill_n(static_cast<typename E::Storage*>(region.data), region.count, sentinel<E>());
  });
}

void fill_timing_values(DataType type, ReduceOp op, Region region) {
  visit_type(type, [&](auto element) {
    using E = decltype(element);
    // Fixed points of the op: x op x op ... == x (0 for SUM and XOR).
    const auto value = from_integer<E>(op == ReduceOp::kSum || op == ReduceOp::kBitwiseXor ? 0 : 1);
    std::fill_n(static_cast<typename E::Storage*>(region.data), region.count, value);
  });
}

std::size_t ResultLayout::elements() const {
  std::size_t total = 0;
  for (const ResultPart& part : parts) total += part.count;
  return total;
}

std::string describe_wrong(const WrongElements& wrong, int rank) {
  if (wrong.count == 0) return {};
  std::ostringstream text;
  text << "rank " << rank << ": " << wrong.count << " of " << wrong.checked << " element"
       << (wrong.checked == 1 ? "" : "s") << " wrong; first at index " << wrong.first_index
       << ": expected " << wrong.first_expected << ", actual " << wrong.first_actual;
  return text.str();
}

WrongElements check_result(const ValuePattern& pattern, const ResultLayout& result) {
  WrongElements wrong;
  visit_type(pattern.type(), [&](auto element) {
    using E = decltype(element);
    for (const ResultPart& part : result.parts) {
      if (part.count == 0) continue;
      if (part.from_rank == kUntouched) {
        compare_part<E>(
            result.data, part, [](std::size_t) { return sentinel<E>(); }, wrong);
      } else if (part.from_rank == kReducedOverRanks) {
        compare_part<E>(
            result.data, part,
            [&](std::size_t j) { return expected_reduction<E>(pattern, part.first_index + j); },
            wrong);
      } else {
        compare_part<E>(
            result.data, part,
            [&](std::size_t j) {
              return from_integer<E>(pattern.input(part.from_rank, part.first_index + j));
            },
            wrong);
      }
    }
  });
  return wrong;
}

WrongElements check_reduction(const ValuePattern& pattern, Region result) {
  return check_result(
      pattern, ResultLayout{result.data,
                            {ResultPart{0, result.count, kReducedOverRanks, result.first_index}}});
}

void corrupt_element(DataType type, Region region, std::size_t index) {
  if (index >= region.count) return;
  visit_type(type, [&](auto element) {
    using E = decltype(element);
    auto& value = static_cast<typename E::Storage*>(region.data)[index];
    if constexpr (E::kFloating) {
      // Small finite values move by one; anything else (inf from an
      // overflowing product) becomes 0.5, which no input or result is.
      const double v = E::to_double(value);
      value = E::from_double(std::isfinite(v) && std::fabs(v) < 256 ? v + 1.0 : 0.5);
    } else {
      value = static_cast<typename E::Storage>(value + 1);
    }
  });
}

}  // namespace collective::cases
