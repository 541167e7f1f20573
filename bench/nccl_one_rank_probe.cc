// nccl_one_rank_probe: NCCL's one-rank all-reduce (a one-GPU communicator)
// for every type and op over 467 counts from 1 to 1,048,577, every element
// compared with the input, which is what one rank's result must be. It
// found NCCL 2.28.9's one-rank ncclAvg leaving elements unwritten on
// floating types; the library copies one-rank calls itself for that
// reason (docs/gpu.md, "What ran where"). Rerun it on a newer NCCL to see
// whether that still holds. Exit 0: every result right; 1: some wrong.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

struct TypeCase {
  ncclDataType_t type;
  const char* name;
  std::size_t bytes;
};
struct OpCase {
  ncclRedOp_t op;
  const char* name;
};

constexpr std::array kTypes = {
    TypeCase{ncclInt8, "int8", 1},       TypeCase{ncclUint8, "uint8", 1},
    TypeCase{ncclInt32, "int32", 4},     TypeCase{ncclInt64, "int64", 8},
    TypeCase{ncclFloat16, "float16", 2}, TypeCase{ncclBfloat16, "bfloat16", 2},
    TypeCase{ncclFloat32, "float32", 4}, TypeCase{ncclFloat64, "float64", 8}};
constexpr std::array kOps = {OpCase{ncclSum, "sum"}, OpCase{ncclProd, "prod"},
                             OpCase{ncclMax, "max"}, OpCase{ncclMin, "min"},
                             OpCase{ncclAvg, "avg"}};

bool ok(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return true;
  std::fprintf(stderr, "nccl_one_rank_probe: %s: %s\n", what, cudaGetErrorString(error));
  return false;
}
bool ok(ncclResult_t result, const char* what) {
  if (result == ncclSuccess) return true;
  std::fprintf(stderr, "nccl_one_rank_probe: %s: %s\n", what, ncclGetErrorString(result));
  return false;
}

std::vector<std::size_t> probe_counts() {
  std::vector<std::size_t> counts;
  for (std::size_t c = 1; c <= 300; ++c) counts.push_back(c);
  for (std::size_t c = 301; c < 600000; c = c * 11 / 10 + 1) {
    counts.push_back(c);
    counts.push_back(c + 1);
  }
  for (std::size_t c : {65535, 65536, 65537, 131071, 131073, 262145, 1048577}) counts.push_back(c);
  return counts;
}

}  // namespace

int main() {
  int version = 0;
  ncclGetVersion(&version);
  std::printf("NCCL %d\n", version);
  ncclComm_t comm;
  int device = 0;
  cudaStream_t stream;
  if (!ok(ncclCommInitAll(&comm, 1, &device), "ncclCommInitAll") ||
      !ok(cudaStreamCreate(&stream), "cudaStreamCreate")) {
    return 2;
  }
  const std::vector<std::size_t> counts = probe_counts();
  const std::size_t largest = 1048577 + 8;
  void* input = nullptr;
  void* output = nullptr;
  if (!ok(cudaMalloc(&input, largest * 8), "cudaMalloc") ||
      !ok(cudaMalloc(&output, largest * 8), "cudaMalloc")) {
    return 2;
  }
  // Bytes 16..60: normal numbers in every floating type, no NaN or subnormal.
  std::vector<unsigned char> in(largest * 8), out(largest * 8);
  for (std::size_t i = 0; i < in.size(); ++i)
    in[i] = static_cast<unsigned char>((i * 7 + 3) % 45 + 16);
  if (!ok(cudaMemcpy(input, in.data(), in.size(), cudaMemcpyHostToDevice), "cudaMemcpy")) return 2;

  int wrong_pairs = 0;
  for (const TypeCase& type : kTypes) {
    for (const OpCase& op : kOps) {
      std::size_t wrong_counts = 0, wrong_elements = 0, first_count = 0, first_index = 0;
      for (const std::size_t count : counts) {
        const std::size_t bytes = count * type.bytes;
        if (!ok(cudaMemset(output, 0, bytes), "cudaMemset") ||
            !ok(ncclAllReduce(input, output, count, type.type, op.op, comm, stream),
                "ncclAllReduce") ||
            !ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize") ||
            !ok(cudaMemcpy(out.data(), output, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy")) {
          return 2;
        }
        std::size_t wrong = 0;
        for (std::size_t i = 0; i < count; ++i) {
          if (std::memcmp(&out[i * type.bytes], &in[i * type.bytes], type.bytes) == 0) continue;
          if (wrong_counts == 0 && wrong == 0) {
            first_count = count;
            first_index = i;
          }
          ++wrong;
        }
        if (wrong > 0) ++wrong_counts;
        wrong_elements += wrong;
      }
      if (wrong_counts > 0) {
        ++wrong_pairs;
        std::printf(
            "%s %s: %zu of %zu counts wrong (%zu elements); first at count %zu, index %zu\n",
            type.name, op.name, wrong_counts, counts.size(), wrong_elements, first_count,
            first_index);
      }
    }
  }
  std::printf("%zu counts x %zu types x %zu ops: %d type/op pairs with wrong results\n",
              counts.size(), kTypes.size(), kOps.size(), wrong_pairs);
  ncclCommDestroy(comm);
  return wrong_pairs == 0 ? 0 : 1;
}
