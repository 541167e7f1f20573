#include "transport/mpi/mpi_datatypes.h"

#include <array>
#include <mutex>

#include "core/mpi_thread_level.h"
#include "kernels/reduce_kernels.h"

namespace collective::internal {
namespace {

template <DataType Type, ReduceOp Op>
void user_reduce(void* in, void* in_out, int* length, MPI_Datatype* /*datatype*/) {
  reduce_buffers(in_out, in_out, in, static_cast<std::size_t>(*length), Type, Op);
}

template <DataType Type>
void create_ops(std::array<MPI_Op, kNumReduceOps>& ops) {
  MPI_Op_create(&user_reduce<Type, ReduceOp::kSum>, 1, &ops[static_cast<int>(ReduceOp::kSum)]);
  ops[static_cast<int>(ReduceOp::kMean)] = ops[static_cast<int>(ReduceOp::kSum)];
  MPI_Op_create(&user_reduce<Type, ReduceOp::kMin>, 1, &ops[static_cast<int>(ReduceOp::kMin)]);
  MPI_Op_create(&user_reduce<Type, ReduceOp::kMax>, 1, &ops[static_cast<int>(ReduceOp::kMax)]);
  MPI_Op_create(&user_reduce<Type, ReduceOp::kProd>, 1, &ops[static_cast<int>(ReduceOp::kProd)]);
}

struct UserOps {
  std::array<MPI_Op, kNumReduceOps> float16{};
  std::array<MPI_Op, kNumReduceOps> bfloat16{};
  // Open MPI 4.1's AVX op component saturates 8-bit integer SUM instead of
  // wrapping around (open-mpi/ompi#8045, closed as won't fix), so 8-bit
  // integers reduce with the library's kernels, which wrap as types.h says.
  std::array<MPI_Op, kNumReduceOps> int8{};
  std::array<MPI_Op, kNumReduceOps> uint8{};
  MPI_Op float32_min = MPI_OP_NULL, float32_max = MPI_OP_NULL;
  MPI_Op float64_min = MPI_OP_NULL, float64_max = MPI_OP_NULL;
};

// Created once, after MPI_Init; MPI_Finalize releases them.
const UserOps& user_ops() {
  static std::once_flag once;
  static UserOps ops;
  std::call_once(once, [] {
    const MpiLock lock;
    create_ops<DataType::kFloat16>(ops.float16);
    create_ops<DataType::kBFloat16>(ops.bfloat16);
    create_ops<DataType::kInt8>(ops.int8);
    create_ops<DataType::kUInt8>(ops.uint8);
    MPI_Op_create(&user_reduce<DataType::kFloat32, ReduceOp::kMin>, 1, &ops.float32_min);
    MPI_Op_create(&user_reduce<DataType::kFloat32, ReduceOp::kMax>, 1, &ops.float32_max);
    MPI_Op_create(&user_reduce<DataType::kFloat64, ReduceOp::kMin>, 1, &ops.float64_min);
    MPI_Op_create(&user_reduce<DataType::kFloat64, ReduceOp::kMax>, 1, &ops.float64_max);
  });
  return ops;
}

MPI_Op builtin_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kMean: return MPI_SUM;
    case ReduceOp::kMin: return MPI_MIN;
    case ReduceOp::kMax: return MPI_MAX;
    case ReduceOp::kProd: return MPI_PROD;
    case ReduceOp::kBitwiseAnd: return MPI_BAND;
    case ReduceOp::kBitwiseOr: return MPI_BOR;
    case ReduceOp::kBitwiseXor: return MPI_BXOR;
  }
  return MPI_SUM;
}

}  // namespace

MPI_Datatype mpi_datatype(DataType type) {
  switch (type) {
    case DataType::kFloat16:
    case DataType::kBFloat16: return MPI_UINT16_T;
    case DataType::kFloat32: return MPI_FLOAT;
    case DataType::kFloat64: return MPI_DOUBLE;
    case DataType::kInt8: return MPI_INT8_T;
    case DataType::kUInt8: return MPI_UINT8_T;
    case DataType::kInt32: return MPI_INT32_T;
    case DataType::kInt64: return MPI_INT64_T;
  }
  return MPI_BYTE;
}

MPI_Op mpi_op(DataType type, ReduceOp op) {
  const auto index = static_cast<std::size_t>(op);
  switch (type) {
    case DataType::kFloat16: return user_ops().float16[index];
    case DataType::kBFloat16: return user_ops().bfloat16[index];
    // MPI's bitwise ops have no saturation to avoid (and no user op is made for them).
    case DataType::kInt8: return is_bitwise(op) ? builtin_op(op) : user_ops().int8[index];
    case DataType::kUInt8: return is_bitwise(op) ? builtin_op(op) : user_ops().uint8[index];
    case DataType::kFloat32:
      if (op == ReduceOp::kMin) return user_ops().float32_min;
      if (op == ReduceOp::kMax) return user_ops().float32_max;
      return builtin_op(op);
    case DataType::kFloat64:
      if (op == ReduceOp::kMin) return user_ops().float64_min;
      if (op == ReduceOp::kMax) return user_ops().float64_max;
      return builtin_op(op);
    case DataType::kInt32:
    case DataType::kInt64:
    default: return builtin_op(op);
  }
}

}  // namespace collective::internal
