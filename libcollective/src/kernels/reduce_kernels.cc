#include "kernels/reduce_kernels.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "collective/errors.h"
#include "core/env_params.h"
#include "core/log.h"
#include "collective/in_tree/half_precision.h"

namespace collective::internal {

namespace generic_kernels {
void reduce_entry(void* dst, const void* a, const void* b, std::size_t count, DataType type,
                  ReduceOp op, int divisor);
}
namespace avx2_kernels {
void reduce_entry(void* dst, const void* a, const void* b, std::size_t count, DataType type,
                  ReduceOp op, int divisor);
}

namespace {

bool cpu_has_avx2() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") &&
         __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

KernelIsa pick_isa() {
  if (env_params().generic_kernels) return KernelIsa::kGeneric;
  return cpu_has_avx2() ? KernelIsa::kAvx2 : KernelIsa::kGeneric;
}

template <typename T>
void divide_typed(void* buffer, std::size_t count, int divisor) {
  T* values = static_cast<T*>(buffer);
  for (std::size_t i = 0; i < count; ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      values[i] = values[i] / static_cast<T>(divisor);
    } else {
      values[i] = static_cast<T>(static_cast<std::int64_t>(values[i]) / divisor);
    }
  }
}

template <float (*Load)(std::uint16_t), std::uint16_t (*Store)(float)>
void divide_16(void* buffer, std::size_t count, int divisor) {
  auto* values = static_cast<std::uint16_t*>(buffer);
  const float scale = static_cast<float>(divisor);
  for (std::size_t i = 0; i < count; ++i) values[i] = Store(Load(values[i]) / scale);
}

}  // namespace

bool kernel_isa_available(KernelIsa isa) {
  static const bool avx2 = cpu_has_avx2();  // asked on every reduction
  return isa == KernelIsa::kGeneric || avx2;
}

KernelIsa active_kernel_isa() {
  static const KernelIsa isa = pick_isa();
  return isa;
}

const char* to_string(KernelIsa isa) { return isa == KernelIsa::kAvx2 ? "avx2" : "generic"; }

void reduce_buffers_with(KernelIsa isa, void* dst, const void* a, const void* b, std::size_t count,
                         DataType type, ReduceOp op, int divisor) {
  if (count == 0) return;
  if (isa == KernelIsa::kAvx2) {
    if (!kernel_isa_available(KernelIsa::kAvx2)) {
      throw UnsupportedError("reduce_buffers", -1, "this processor lacks AVX2/F16C/FMA");
    }
    avx2_kernels::reduce_entry(dst, a, b, count, type, op, divisor);
  } else {
    generic_kernels::reduce_entry(dst, a, b, count, type, op, divisor);
  }
}

void reduce_buffers(void* dst, const void* a, const void* b, std::size_t count, DataType type,
                    ReduceOp op, int divisor) {
  reduce_buffers_with(active_kernel_isa(), dst, a, b, count, type, op, divisor);
}

void divide_buffer(void* buffer, std::size_t count, DataType type, int divisor) {
  if (divisor <= 1 || count == 0) return;
  switch (type) {
    case DataType::kFloat16:
      return divide_16<float16_to_float, float_to_float16>(buffer, count, divisor);
    case DataType::kBFloat16:
      return divide_16<bfloat16_to_float, float_to_bfloat16>(buffer, count, divisor);
    case DataType::kFloat32: return divide_typed<float>(buffer, count, divisor);
    case DataType::kFloat64: return divide_typed<double>(buffer, count, divisor);
    case DataType::kInt8: return divide_typed<std::int8_t>(buffer, count, divisor);
    case DataType::kUInt8: return divide_typed<std::uint8_t>(buffer, count, divisor);
    case DataType::kInt32: return divide_typed<std::int32_t>(buffer, count, divisor);
    case DataType::kInt64: return divide_typed<std::int64_t>(buffer, count, divisor);
  }
}

}  // namespace collective::internal
