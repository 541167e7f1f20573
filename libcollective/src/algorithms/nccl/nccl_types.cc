#include "algorithms/nccl/nccl_types.h"

namespace collective::internal {

ncclDataType_t nccl_data_type(DataType type) {
  switch (type) {
    case DataType::kFloat16: return ncclFloat16;
    case DataType::kBFloat16: return ncclBfloat16;
    case DataType::kFloat32: return ncclFloat32;
    case DataType::kFloat64: return ncclFloat64;
    case DataType::kInt8: return ncclInt8;
    case DataType::kUInt8: return ncclUint8;
    case DataType::kInt32: return ncclInt32;
    case DataType::kInt64: return ncclInt64;
  }
  return ncclFloat32;  // unreachable: validation rejects values outside the enum
}

ncclRedOp_t nccl_red_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return ncclSum;
    case ReduceOp::kMean: return ncclAvg;
    case ReduceOp::kMin: return ncclMin;
    case ReduceOp::kMax: return ncclMax;
    case ReduceOp::kProd: return ncclProd;
    case ReduceOp::kBitwiseAnd:
    case ReduceOp::kBitwiseOr:
    case ReduceOp::kBitwiseXor: break;  // refused by NcclAlgorithm::supports_served
  }
  return ncclSum;  // unreachable: validation rejects values outside the enum
}

namespace {

const char* result_name(ncclResult_t result) {
  // Over the number: NCCL adds results across versions, and a newer one
  // must still compile here (-Wswitch-enum would name the new values).
  switch (static_cast<int>(result)) {
    case ncclSuccess: return "ncclSuccess";
    case ncclUnhandledCudaError: return "ncclUnhandledCudaError";
    case ncclSystemError: return "ncclSystemError";
    case ncclInternalError: return "ncclInternalError";
    case ncclInvalidArgument: return "ncclInvalidArgument";
    case ncclInvalidUsage: return "ncclInvalidUsage";
    case ncclRemoteError: return "ncclRemoteError";
    case ncclInProgress: return "ncclInProgress";
    default: return "ncclResult";
  }
}

}  // namespace

std::string nccl_error_text(ncclResult_t result, ncclComm_t comm) {
  std::string text = std::string(result_name(result)) + " (" + ncclGetErrorString(result) + ")";
  // The detail NCCL logged for the failure; it may belong to an earlier
  // asynchronous error, which is still the best cause there is.
  const char* detail = ncclGetLastError(comm);
  if (detail != nullptr && *detail != '\0') text += ": " + std::string(detail);
  return text;
}

std::string nccl_runtime_version() {
  int code = 0;
  if (ncclGetVersion(&code) != ncclSuccess) return "unknown";
  // NCCL_VERSION(X,Y,Z) is X*10000 + Y*100 + Z since 2.9.
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." +
         std::to_string(code % 100);
}

}  // namespace collective::internal
