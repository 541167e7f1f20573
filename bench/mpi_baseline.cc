#include "mpi_baseline.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "collective/in_tree/half_precision.h"

namespace collective::bench {
namespace {

template <float (*ToFloat)(std::uint16_t), std::uint16_t (*FromFloat)(float), ReduceOp Op>
void combine_16(void* in, void* in_out, int* length, MPI_Datatype* /*datatype*/) {
  const auto* a = static_cast<const std::uint16_t*>(in);
  auto* b = static_cast<std::uint16_t*>(in_out);
  for (int i = 0; i < *length; ++i) {
    const float x = ToFloat(a[i]);
    const float y = ToFloat(b[i]);
    float r = 0;
    if constexpr (Op == ReduceOp::kSum) r = x + y;
    if constexpr (Op == ReduceOp::kProd) r = x * y;
    if constexpr (Op == ReduceOp::kMin) r = x != x || y != y ? x + y : std::min(x, y);
    if constexpr (Op == ReduceOp::kMax) r = x != x || y != y ? x + y : std::max(x, y);
    b[i] = FromFloat(r);
  }
}

template <float (*ToFloat)(std::uint16_t), std::uint16_t (*FromFloat)(float)>
void create_ops(std::array<MPI_Op, kNumReduceOps>& ops) {
  auto at = [&](ReduceOp op) -> MPI_Op& { return ops[static_cast<std::size_t>(op)]; };
  MPI_Op_create(&combine_16<ToFloat, FromFloat, ReduceOp::kSum>, 1, &at(ReduceOp::kSum));
  MPI_Op_create(&combine_16<ToFloat, FromFloat, ReduceOp::kMin>, 1, &at(ReduceOp::kMin));
  MPI_Op_create(&combine_16<ToFloat, FromFloat, ReduceOp::kMax>, 1, &at(ReduceOp::kMax));
  MPI_Op_create(&combine_16<ToFloat, FromFloat, ReduceOp::kProd>, 1, &at(ReduceOp::kProd));
  at(ReduceOp::kMean) = at(ReduceOp::kSum);
}

template <typename T>
void divide(void* buffer, std::size_t count, int divisor) {
  auto* data = static_cast<T*>(buffer);
  for (std::size_t i = 0; i < count; ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      data[i] = data[i] / static_cast<T>(divisor);
    } else {
      data[i] = static_cast<T>(static_cast<std::int64_t>(data[i]) / divisor);  // truncates
    }
  }
}

template <float (*ToFloat)(std::uint16_t), std::uint16_t (*FromFloat)(float)>
void divide_16(void* buffer, std::size_t count, int divisor) {
  auto* data = static_cast<std::uint16_t*>(buffer);
  for (std::size_t i = 0; i < count; ++i) {
    data[i] = FromFloat(ToFloat(data[i]) / static_cast<float>(divisor));
  }
}

}  // namespace

MpiBaseline::MpiBaseline() {
  MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  create_ops<float16_to_float, float_to_float16>(float16_ops_);
  create_ops<bfloat16_to_float, float_to_bfloat16>(bfloat16_ops_);
}

MpiBaseline::~MpiBaseline() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  for (auto* ops : {&float16_ops_, &bfloat16_ops_}) {
    for (const ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProd}) {
      MPI_Op_free(&(*ops)[static_cast<std::size_t>(op)]);
    }
  }
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

MPI_Datatype MpiBaseline::datatype(DataType type) {
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

MPI_Op MpiBaseline::op(DataType type, ReduceOp op) const {
  if (type == DataType::kFloat16) return float16_ops_[static_cast<std::size_t>(op)];
  if (type == DataType::kBFloat16) return bfloat16_ops_[static_cast<std::size_t>(op)];
  switch (op) {
    case ReduceOp::kMin: return MPI_MIN;
    case ReduceOp::kMax: return MPI_MAX;
    case ReduceOp::kProd: return MPI_PROD;
    case ReduceOp::kSum:
    case ReduceOp::kMean: return MPI_SUM;
    case ReduceOp::kBitwiseAnd: return MPI_BAND;
    case ReduceOp::kBitwiseOr: return MPI_BOR;
    case ReduceOp::kBitwiseXor: return MPI_BXOR;
  }
  return MPI_SUM;
}

void MpiBaseline::finish_mean(void* buffer, std::size_t count, DataType type, ReduceOp op) const {
  if (op != ReduceOp::kMean || count == 0 || size_ == 1) return;
  switch (type) {
    case DataType::kFloat16:
      return divide_16<float16_to_float, float_to_float16>(buffer, count, size_);
    case DataType::kBFloat16:
      return divide_16<bfloat16_to_float, float_to_bfloat16>(buffer, count, size_);
    case DataType::kFloat32: return divide<float>(buffer, count, size_);
    case DataType::kFloat64: return divide<double>(buffer, count, size_);
    case DataType::kInt8: return divide<std::int8_t>(buffer, count, size_);
    case DataType::kUInt8: return divide<std::uint8_t>(buffer, count, size_);
    case DataType::kInt32: return divide<std::int32_t>(buffer, count, size_);
    case DataType::kInt64: return divide<std::int64_t>(buffer, count, size_);
  }
}

void MpiBaseline::for_each_piece(std::size_t count,
                                 const std::function<void(std::size_t, int)>& f) {
  constexpr auto kPiece = static_cast<std::size_t>(INT_MAX);
  if (count == 0) return f(0, 0);
  for (std::size_t first = 0; first < count; first += kPiece) {
    f(first, static_cast<int>(std::min(kPiece, count - first)));
  }
}

void MpiBaseline::check(int rc, const char* call) const {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  throw std::runtime_error(std::string("baseline ") + call + " failed on rank " +
                           std::to_string(rank_) + ": " + std::string(text, length));
}

}  // namespace collective::bench
