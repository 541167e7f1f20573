#include "kernels/multi_source_reduce.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "collective/in_tree/half_precision.h"
#include "kernels/reduce_kernels.h"
#include "kernels/plain_copy.h"

namespace collective::internal {
namespace {

// Blocks small enough that partial results stay in the L1 cache between
// the passes over the sources.
constexpr std::size_t kBlockBytes = 8 * 1024;
constexpr std::size_t kHalfBlock = 1024;  // elements, for the float32 accumulator

const std::byte* at(const void* base, std::size_t offset) {
  return static_cast<const std::byte*>(base) + offset;
}

// Types reduced in their own arithmetic, three sources or more.
void reduce_native(void* dst, const void* const* sources, int n, std::size_t count, DataType type,
                   ReduceOp op, int divisor) {
  const std::size_t element = element_size(type);
  alignas(64) std::byte partial[kBlockBytes];
  const std::size_t block = kBlockBytes / element;
  for (std::size_t first = 0; first < count; first += block) {
    const std::size_t m = std::min(block, count - first);
    const std::size_t offset = first * element;
    reduce_buffers(partial, at(sources[0], offset), at(sources[1], offset), m, type, op, 1);
    for (int q = 2; q + 1 < n; ++q) {
      reduce_buffers(partial, partial, at(sources[q], offset), m, type, op, 1);
    }
    // The last pass writes dst: every source block was read before it.
    reduce_buffers(static_cast<std::byte*>(dst) + offset, partial, at(sources[n - 1], offset), m,
                   type, op, divisor);
  }
}

// Accumulates block by block in float32; `finish` writes each block out.
template <float (*Load)(std::uint16_t), typename Finish>
void accumulate_16(const void* const* sources, int n, std::size_t count, ReduceOp op,
                   Finish finish) {
  alignas(64) float accumulator[kHalfBlock];
  alignas(64) float incoming[kHalfBlock];
  if (op == ReduceOp::kMean) op = ReduceOp::kSum;
  for (std::size_t first = 0; first < count; first += kHalfBlock) {
    const std::size_t m = std::min(kHalfBlock, count - first);
    const auto* s0 = static_cast<const std::uint16_t*>(sources[0]) + first;
    for (std::size_t i = 0; i < m; ++i) accumulator[i] = Load(s0[i]);
    for (int q = 1; q < n; ++q) {
      const auto* s = static_cast<const std::uint16_t*>(sources[q]) + first;
      for (std::size_t i = 0; i < m; ++i) incoming[i] = Load(s[i]);
      reduce_buffers(accumulator, accumulator, incoming, m, DataType::kFloat32, op, 1);
    }
    finish(first, accumulator, m);
  }
}

template <float (*Load)(std::uint16_t), std::uint16_t (*Store)(float)>
void reduce_16(void* dst, const void* const* sources, int n, std::size_t count, ReduceOp op,
               int divisor) {
  const bool divide = op == ReduceOp::kMean && divisor > 1;
  const float scale = static_cast<float>(divisor);
  auto* out = static_cast<std::uint16_t*>(dst);
  accumulate_16<Load>(sources, n, count, op,
                      [&](std::size_t first, const float* accumulator, std::size_t m) {
                        for (std::size_t i = 0; i < m; ++i) {
                          out[first + i] = Store(divide ? accumulator[i] / scale : accumulator[i]);
                        }
                      });
}

}  // namespace

void reduce_sources_to_float32(float* dst, const void* const* sources, int n, std::size_t count,
                               DataType type, ReduceOp op) {
  auto keep = [dst](std::size_t first, const float* accumulator, std::size_t m) {
    plain_copy(dst + first, accumulator, m * sizeof(float));
  };
  if (type == DataType::kFloat16) {
    return accumulate_16<float16_to_float>(sources, n, count, op, keep);
  }
  accumulate_16<bfloat16_to_float>(sources, n, count, op, keep);
}

void reduce_sources(void* dst, const void* const* sources, int n, std::size_t count, DataType type,
                    ReduceOp op, int divisor) {
  if (count == 0) return;
  if (op != ReduceOp::kMean) divisor = 1;
  switch (type) {
    case DataType::kFloat16:
      return reduce_16<float16_to_float, float_to_float16>(dst, sources, n, count, op, divisor);
    case DataType::kBFloat16:
      return reduce_16<bfloat16_to_float, float_to_bfloat16>(dst, sources, n, count, op, divisor);
    case DataType::kFloat32:
    case DataType::kFloat64:
    case DataType::kInt8:
    case DataType::kUInt8:
    case DataType::kInt32:
    case DataType::kInt64:
    default: break;
  }
  if (n == 1) {
    if (dst != sources[0]) std::memmove(dst, sources[0], count * element_size(type));
    divide_buffer(dst, count, type, divisor);
    return;
  }
  // Two sources need no partial block: reduce_native's 8 KiB frame
  // costs a small call more than its reduction.
  if (n == 2) return reduce_buffers(dst, sources[0], sources[1], count, type, op, divisor);
  reduce_native(dst, sources, n, count, type, op, divisor);
}

}  // namespace collective::internal
