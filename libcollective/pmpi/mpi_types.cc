#include "mpi_types.h"

#include <array>
#include <utility>

namespace collective::pmpi {
namespace {

// An integer datatype's libcollective type by its size (1, 4, 8 bytes).
std::optional<DataType> signed_integer_of_size(int bytes) {
  switch (bytes) {
    case 1: return DataType::kInt8;
    case 4: return DataType::kInt32;
    case 8: return DataType::kInt64;
    default: return std::nullopt;
  }
}

bool is_one_of(MPI_Datatype datatype, std::initializer_list<MPI_Datatype> list) {
  for (MPI_Datatype candidate : list) {
    if (candidate != MPI_DATATYPE_NULL && candidate == datatype) return true;
  }
  return false;
}

}  // namespace

std::optional<ReductionType> reduction_type(MPI_Datatype datatype, MPI_Op op, std::string& reason) {
  std::optional<ReduceOp> reduce_op;
  if (op == MPI_SUM) reduce_op = ReduceOp::kSum;
  else if (op == MPI_PROD) reduce_op = ReduceOp::kProd;
  else if (op == MPI_MIN) reduce_op = ReduceOp::kMin;
  else if (op == MPI_MAX) reduce_op = ReduceOp::kMax;
  if (!reduce_op) {
    reason = "op is not MPI_SUM, MPI_PROD, MPI_MIN or MPI_MAX";
    return std::nullopt;
  }

  int bytes = 0;
  if (datatype == MPI_DATATYPE_NULL || PMPI_Type_size(datatype, &bytes) != MPI_SUCCESS) {
    reason = "invalid datatype";
    return std::nullopt;
  }
  std::optional<DataType> type;
  if (is_one_of(datatype, {MPI_FLOAT, MPI_REAL, MPI_REAL4})) {
    type = DataType::kFloat32;
  } else if (is_one_of(datatype, {MPI_DOUBLE, MPI_DOUBLE_PRECISION, MPI_REAL8})) {
    type = DataType::kFloat64;
  } else if (is_one_of(datatype, {MPI_UNSIGNED_CHAR, MPI_UINT8_T})) {
    type = DataType::kUInt8;
  } else if (is_one_of(datatype,
                       {MPI_SIGNED_CHAR, MPI_INT8_T, MPI_INT, MPI_INT32_T, MPI_LONG, MPI_LONG_LONG,
                        MPI_LONG_LONG_INT, MPI_INT64_T, MPI_AINT, MPI_OFFSET, MPI_COUNT,
                        MPI_INTEGER, MPI_INTEGER1, MPI_INTEGER4, MPI_INTEGER8})) {
    type = signed_integer_of_size(bytes);
  } else if (is_one_of(datatype, {MPI_UNSIGNED, MPI_UINT32_T, MPI_UNSIGNED_LONG,
                                  MPI_UNSIGNED_LONG_LONG, MPI_UINT64_T})) {
    if (*reduce_op != ReduceOp::kSum) {
      reason = "unsigned integers are served with MPI_SUM only";
      return std::nullopt;
    }
    if (bytes == 4 || bytes == 8) type = signed_integer_of_size(bytes);
  }
  if (!type) {
    reason = "datatype is not a predefined 1/4/8-byte integer or 4/8-byte float";
    return std::nullopt;
  }
  return ReductionType{*type, *reduce_op};
}

std::optional<std::size_t> contiguous_bytes(MPI_Datatype datatype, int count, std::string& reason) {
  int size = 0;
  MPI_Aint lb = 0, extent = 0, true_lb = 0, true_extent = 0;
  if (datatype == MPI_DATATYPE_NULL || PMPI_Type_size(datatype, &size) != MPI_SUCCESS ||
      PMPI_Type_get_extent(datatype, &lb, &extent) != MPI_SUCCESS ||
      PMPI_Type_get_true_extent(datatype, &true_lb, &true_extent) != MPI_SUCCESS) {
    reason = "invalid datatype";
    return std::nullopt;
  }
  if (size != 0 && (lb != 0 || true_lb != 0 || extent != size || true_extent != size)) {
    reason = "datatype is not contiguous (gaps, or a lower bound other than 0)";
    return std::nullopt;
  }
  return static_cast<std::size_t>(size) * static_cast<std::size_t>(count);
}

}  // namespace collective::pmpi
