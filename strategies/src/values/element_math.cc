#include "values/element_math.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "collective/errors.h"
#include "collective/in_tree/half_precision.h"
#include "values/tensor_access.h"

namespace collective::distribute::detail {

namespace {

// ---- per-type traits: storage type, accumulation type, conversions ----------

template <typename S, typename A>
struct PlainTraits {
  using Storage = S;
  using Acc = A;
  static Acc load(Storage value) { return static_cast<Acc>(value); }
  static Storage store(Acc value) { return static_cast<Storage>(value); }
};
struct HalfTraits {
  using Storage = std::uint16_t;
  using Acc = float;
  static Acc load(Storage value) { return float16_to_float(value); }
  static Storage store(Acc value) { return float_to_float16(value); }
};
struct BFloat16Traits {
  using Storage = std::uint16_t;
  using Acc = float;
  static Acc load(Storage value) { return bfloat16_to_float(value); }
  static Storage store(Acc value) { return float_to_bfloat16(value); }
};

template <typename F>
decltype(auto) dispatch_type(DataType type, F&& f) {
  switch (type) {
    case DataType::kFloat16: return f(HalfTraits{});
    case DataType::kBFloat16: return f(BFloat16Traits{});
    case DataType::kFloat32: return f(PlainTraits<float, float>{});
    case DataType::kFloat64: return f(PlainTraits<double, double>{});
    case DataType::kInt8: return f(PlainTraits<std::int8_t, std::int8_t>{});
    case DataType::kUInt8: return f(PlainTraits<std::uint8_t, std::uint8_t>{});
    case DataType::kInt32: return f(PlainTraits<std::int32_t, std::int32_t>{});
    case DataType::kInt64: return f(PlainTraits<std::int64_t, std::int64_t>{});
  }
  throw InvalidArgumentError("element arithmetic", -1,
                             "unknown DataType value " + std::to_string(static_cast<int>(type)));
}

template <ReduceOp Op>
using OpTag = std::integral_constant<ReduceOp, Op>;

template <typename F>
decltype(auto) dispatch_op(ReduceOp op, F&& f) {
  switch (op) {
    case ReduceOp::kSum: return f(OpTag<ReduceOp::kSum>{});
    case ReduceOp::kMean: return f(OpTag<ReduceOp::kSum>{});  // divided at the end
    case ReduceOp::kMin: return f(OpTag<ReduceOp::kMin>{});
    case ReduceOp::kMax: return f(OpTag<ReduceOp::kMax>{});
    case ReduceOp::kProd: return f(OpTag<ReduceOp::kProd>{});
    case ReduceOp::kBitwiseAnd: return f(OpTag<ReduceOp::kBitwiseAnd>{});
    case ReduceOp::kBitwiseOr: return f(OpTag<ReduceOp::kBitwiseOr>{});
    case ReduceOp::kBitwiseXor: return f(OpTag<ReduceOp::kBitwiseXor>{});
  }
  throw InvalidArgumentError("element arithmetic", -1,
                             "unknown ReduceOp value " + std::to_string(static_cast<int>(op)));
}

template <ReduceOp Op, typename A>
inline A combine(A a, A b) {
  if constexpr (std::is_floating_point_v<A>) {
    if constexpr (Op == ReduceOp::kSum) return a + b;
    if constexpr (Op == ReduceOp::kProd) return a * b;
    if constexpr (Op == ReduceOp::kMin) return (a != a || b != b) ? a + b : (b < a ? b : a);
    if constexpr (Op == ReduceOp::kMax) return (a != a || b != b) ? a + b : (b > a ? b : a);
    if constexpr (is_bitwise(Op)) {
      throw InvalidArgumentError(
          "element arithmetic", -1,
          "reduce op " + std::string(to_string(Op)) + " combines bits, of integer types only");
    }
  } else {
    using U = std::make_unsigned_t<A>;
    if constexpr (Op == ReduceOp::kSum)
      return static_cast<A>(static_cast<U>(a) + static_cast<U>(b));
    if constexpr (Op == ReduceOp::kProd) {
      // Promotions make uint8 * uint8 an int; the product fits, the cast wraps.
      return static_cast<A>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
    }
    if constexpr (Op == ReduceOp::kMin) return b < a ? b : a;
    if constexpr (Op == ReduceOp::kMax) return b > a ? b : a;
    if constexpr (Op == ReduceOp::kBitwiseAnd) return static_cast<A>(a & b);
    if constexpr (Op == ReduceOp::kBitwiseOr) return static_cast<A>(a | b);
    if constexpr (Op == ReduceOp::kBitwiseXor) return static_cast<A>(a ^ b);
  }
}

template <ReduceOp Op, typename A>
A identity_value() {
  if constexpr (Op == ReduceOp::kSum) return A(0);
  if constexpr (Op == ReduceOp::kProd) return A(1);
  if constexpr (std::is_floating_point_v<A>) {
    if constexpr (Op == ReduceOp::kMin) return std::numeric_limits<A>::infinity();
    if constexpr (Op == ReduceOp::kMax) return -std::numeric_limits<A>::infinity();
  } else {
    if constexpr (Op == ReduceOp::kMin) return std::numeric_limits<A>::max();
    if constexpr (Op == ReduceOp::kMax) return std::numeric_limits<A>::lowest();
    if constexpr (Op == ReduceOp::kBitwiseAnd) return static_cast<A>(~std::make_unsigned_t<A>{0});
  }
  return A(0);  // kBitwiseOr, kBitwiseXor (and nothing else reaches here)
}

constexpr std::size_t kBlock = 1024;

}  // namespace

bool is_floating(DataType type) {
  return type == DataType::kFloat16 || type == DataType::kBFloat16 || type == DataType::kFloat32 ||
         type == DataType::kFloat64;
}

void require_op_applies(ReduceOp op, DataType type, const std::string& operation, int rank) {
  if (!op_applies_to(op, type)) {
    throw InvalidArgumentError(operation, rank,
                               "reduce op " + std::string(to_string(op)) +
                                   " combines bits, of integer types only (int8, uint8, int32, "
                                   "int64), not " +
                                   std::string(to_string(type)));
  }
}

bool reduces_in_float32(DataType type, ReduceOp op) {
  return (type == DataType::kFloat16 || type == DataType::kBFloat16) &&
         (op == ReduceOp::kSum || op == ReduceOp::kMean || op == ReduceOp::kProd);
}

Tensor widened_to_float32(const Tensor& value) {
  Tensor wide = TensorAccess::uninitialized(DataType::kFloat32, value.shape());
  const auto* in = static_cast<const std::uint16_t*>(value.raw_data());
  auto* out = static_cast<float*>(wide.raw_data());
  const bool half = value.dtype() == DataType::kFloat16;
  for (std::size_t i = 0; i < value.num_elements(); ++i) {
    out[i] = half ? float16_to_float(in[i]) : bfloat16_to_float(in[i]);
  }
  return wide;
}

Tensor rounded_from_float32(const Tensor& value, DataType type) {
  Tensor narrow = TensorAccess::uninitialized(type, value.shape());
  const auto* in = static_cast<const float*>(value.raw_data());
  auto* out = static_cast<std::uint16_t*>(narrow.raw_data());
  const bool half = type == DataType::kFloat16;
  for (std::size_t i = 0; i < value.num_elements(); ++i) {
    out[i] = half ? float_to_float16(in[i]) : float_to_bfloat16(in[i]);
  }
  return narrow;
}

void reduce_in_order(ReduceOp op, DataType type, std::span<const void* const> inputs,
                     std::span<const int> order, void* output, std::size_t count) {
  dispatch_type(type, [&](auto traits) {
    using Traits = decltype(traits);
    using S = typename Traits::Storage;
    using A = typename Traits::Acc;
    dispatch_op(op, [&](auto op_tag) {
      constexpr ReduceOp kOp = decltype(op_tag)::value;
      A acc[kBlock];
      for (std::size_t base = 0; base < count; base += kBlock) {
        const std::size_t n = std::min(kBlock, count - base);
        const S* first = static_cast<const S*>(inputs[static_cast<std::size_t>(order[0])]) + base;
        for (std::size_t i = 0; i < n; ++i) acc[i] = Traits::load(first[i]);
        for (std::size_t j = 1; j < order.size(); ++j) {
          const S* in = static_cast<const S*>(inputs[static_cast<std::size_t>(order[j])]) + base;
          for (std::size_t i = 0; i < n; ++i) acc[i] = combine<kOp>(acc[i], Traits::load(in[i]));
        }
        S* out = static_cast<S*>(output) + base;
        for (std::size_t i = 0; i < n; ++i) out[i] = Traits::store(acc[i]);
      }
    });
  });
}

void reduce_as_tree(ReduceOp op, DataType type, std::span<const void* const> inputs, void* output,
                    std::size_t count) {
  const std::size_t k = inputs.size();
  dispatch_type(type, [&](auto traits) {
    using Traits = decltype(traits);
    using S = typename Traits::Storage;
    using A = typename Traits::Acc;
    dispatch_op(op, [&](auto op_tag) {
      constexpr ReduceOp kOp = decltype(op_tag)::value;
      std::vector<A> acc(k * kBlock);
      for (std::size_t base = 0; base < count; base += kBlock) {
        const std::size_t n = std::min(kBlock, count - base);
        for (std::size_t r = 0; r < k; ++r) {
          const S* in = static_cast<const S*>(inputs[r]) + base;
          for (std::size_t i = 0; i < n; ++i) acc[r * kBlock + i] = Traits::load(in[i]);
        }
        for (std::size_t stride = 1; stride < k; stride *= 2) {
          for (std::size_t r = 0; r + stride < k; r += 2 * stride) {
            A* left = acc.data() + r * kBlock;
            const A* right = acc.data() + (r + stride) * kBlock;
            for (std::size_t i = 0; i < n; ++i) left[i] = combine<kOp>(left[i], right[i]);
          }
        }
        S* out = static_cast<S*>(output) + base;
        for (std::size_t i = 0; i < n; ++i) out[i] = Traits::store(acc[i]);
      }
    });
  });
}

void reduce_in_ring_order(ReduceOp op, DataType type, std::span<const void* const> inputs,
                          void* output, std::size_t count) {
  const std::size_t k = inputs.size();
  const std::size_t element = element_size(type);
  std::vector<int> order(k);
  std::vector<const void*> shifted(k);
  for (std::size_t chunk = 0; chunk < k; ++chunk) {
    const std::size_t begin = count * chunk / k;
    const std::size_t end = count * (chunk + 1) / k;
    if (begin == end) continue;
    for (std::size_t j = 0; j < k; ++j) {
      order[j] = static_cast<int>((chunk + 1 + j) % k);
      shifted[j] = static_cast<const std::byte*>(inputs[j]) + begin * element;
    }
    reduce_in_order(op, type, shifted, order, static_cast<std::byte*>(output) + begin * element,
                    end - begin);
  }
}

void divide_in_place(DataType type, void* buffer, std::size_t count, std::int64_t divisor) {
  dispatch_type(type, [&](auto traits) {
    using Traits = decltype(traits);
    using S = typename Traits::Storage;
    using A = typename Traits::Acc;
    S* values = static_cast<S*>(buffer);
    for (std::size_t i = 0; i < count; ++i) {
      if constexpr (std::is_floating_point_v<A>) {
        values[i] = Traits::store(Traits::load(values[i]) / static_cast<A>(divisor));
      } else {
        values[i] = static_cast<S>(static_cast<std::int64_t>(values[i]) / divisor);
      }
    }
  });
}

void add_in_place(Tensor& target, const Tensor& delta, int sign) {
  dispatch_type(target.dtype(), [&](auto traits) {
    using Traits = decltype(traits);
    using S = typename Traits::Storage;
    using A = typename Traits::Acc;
    S* out = static_cast<S*>(target.raw_data());
    const S* in = static_cast<const S*>(delta.raw_data());
    for (std::size_t i = 0; i < target.num_elements(); ++i) {
      const A a = Traits::load(out[i]);
      const A b = Traits::load(in[i]);
      if constexpr (std::is_floating_point_v<A>) {
        out[i] = Traits::store(sign > 0 ? a + b : a - b);
      } else {
        using U = std::make_unsigned_t<A>;
        const U result = sign > 0 ? static_cast<U>(static_cast<U>(a) + static_cast<U>(b))
                                  : static_cast<U>(static_cast<U>(a) - static_cast<U>(b));
        out[i] = static_cast<S>(result);
      }
    }
  });
}

void subtract_scaled_in_place(Tensor& target, const Tensor& delta, double scale) {
  dispatch_type(target.dtype(), [&](auto traits) {
    using Traits = decltype(traits);
    using S = typename Traits::Storage;
    using A = typename Traits::Acc;
    if constexpr (!std::is_floating_point_v<A>) {
      throw InvalidArgumentError("SGD.apply_gradients", -1,
                                 "variables of type " + std::string(to_string(target.dtype())) +
                                     " cannot take a gradient step; use a floating type");
    } else {
      const A factor = static_cast<A>(scale);
      S* out = static_cast<S*>(target.raw_data());
      const S* in = static_cast<const S*>(delta.raw_data());
      for (std::size_t i = 0; i < target.num_elements(); ++i) {
        out[i] = Traits::store(Traits::load(out[i]) - factor * Traits::load(in[i]));
      }
    }
  });
}

Tensor reduce_along_axis(ReduceOp op, const Tensor& value, int axis) {
  const Shape& shape = value.shape();
  std::size_t outer = 1;
  std::size_t inner = 1;
  for (int d = 0; d < axis; ++d)
    outer *= static_cast<std::size_t>(shape[static_cast<std::size_t>(d)]);
  for (int d = axis + 1; d < value.rank(); ++d) {
    inner *= static_cast<std::size_t>(shape[static_cast<std::size_t>(d)]);
  }
  const std::size_t length = static_cast<std::size_t>(shape[static_cast<std::size_t>(axis)]);
  Shape reduced_shape = shape;
  reduced_shape.erase(reduced_shape.begin() + axis);
  Tensor result(value.dtype(), reduced_shape);
  dispatch_type(value.dtype(), [&](auto traits) {
    using Traits = decltype(traits);
    using S = typename Traits::Storage;
    using A = typename Traits::Acc;
    dispatch_op(op, [&](auto op_tag) {
      constexpr ReduceOp kOp = decltype(op_tag)::value;
      const S* in = static_cast<const S*>(value.raw_data());
      S* out = static_cast<S*>(result.raw_data());
      for (std::size_t o = 0; o < outer; ++o) {
        for (std::size_t i = 0; i < inner; ++i) {
          A acc = identity_value<kOp, A>();
          for (std::size_t a = 0; a < length; ++a) {
            acc = combine<kOp>(acc, Traits::load(in[(o * length + a) * inner + i]));
          }
          out[o * inner + i] = Traits::store(acc);
        }
      }
    });
  });
  return result;
}

Tensor identity_tensor(ReduceOp op, DataType type, const Shape& shape) {
  Tensor result(type, shape);
  dispatch_type(type, [&](auto traits) {
    using Traits = decltype(traits);
    using S = typename Traits::Storage;
    using A = typename Traits::Acc;
    dispatch_op(op, [&](auto op_tag) {
      constexpr ReduceOp kOp = decltype(op_tag)::value;
      S* out = static_cast<S*>(result.raw_data());
      const S identity = Traits::store(identity_value<kOp, A>());
      for (std::size_t i = 0; i < result.num_elements(); ++i) out[i] = identity;
    });
  });
  return result;
}

Tensor concat(const std::vector<Tensor>& parts, int axis) {
  Shape shape = parts.front().shape();
  std::int64_t total = 0;
  for (const Tensor& part : parts) {
    // Checked: empty parts may carry any length along the axis.
    if (__builtin_add_overflow(total, part.shape()[static_cast<std::size_t>(axis)], &total)) {
      throw InvalidArgumentError("concat", -1,
                                 "the parts' lengths along axis " + std::to_string(axis) +
                                     " add up to more than 2^63 - 1 (first part " +
                                     parts.front().debug_string() + ")");
    }
  }
  shape[static_cast<std::size_t>(axis)] = total;
  Tensor result(parts.front().dtype(), shape);
  std::size_t outer = 1;
  for (int d = 0; d < axis; ++d)
    outer *= static_cast<std::size_t>(shape[static_cast<std::size_t>(d)]);
  std::size_t inner_bytes = element_size(result.dtype());
  for (std::size_t d = static_cast<std::size_t>(axis) + 1; d < shape.size(); ++d) {
    inner_bytes *= static_cast<std::size_t>(shape[d]);
  }
  auto* out = static_cast<std::byte*>(result.raw_data());
  for (std::size_t o = 0; o < outer; ++o) {
    for (const Tensor& part : parts) {
      const std::size_t bytes =
          static_cast<std::size_t>(part.shape()[static_cast<std::size_t>(axis)]) * inner_bytes;
      if (bytes == 0) continue;
      std::memcpy(out, static_cast<const std::byte*>(part.raw_data()) + o * bytes, bytes);
      out += bytes;
    }
  }
  return result;
}

}  // namespace collective::distribute::detail
