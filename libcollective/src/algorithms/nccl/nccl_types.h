// The NCCL data type and reduction op for each of the library's types and
// ops, and NCCL's error texts. Internal: includes nccl.h.
#pragma once

#include <nccl.h>

#include <string>

#include "collective/types.h"

namespace collective::internal {

// Every DataType has an NCCL counterpart (bfloat16 included).
ncclDataType_t nccl_data_type(DataType type);

// kMean maps to ncclAvg, which NCCL computes as a pre-multiplied sum for
// floating types and as a sum divided after the reduction for integers.
ncclRedOp_t nccl_red_op(ReduceOp op);

// "ncclSystemError (unhandled system error): <ncclGetLastError text>".
// `comm` may be null (no communicator yet).
std::string nccl_error_text(ncclResult_t result, ncclComm_t comm);

// "2.28.9", from the linked library (ncclGetVersion), not the header.
std::string nccl_runtime_version();

}  // namespace collective::internal
