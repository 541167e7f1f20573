#include "algorithms/nccl/nccl.h"

#include <array>
#include <cuda_runtime_api.h>

#include <algorithm>

#include "algorithms/nccl/nccl_hierarchical.h"
#include "algorithms/nccl/nccl_resources.h"
#include "algorithms/nccl/nccl_types.h"
#include "algorithms/ring.h"
#include "collective/errors.h"
#include "core/log.h"
#include "gpu/cuda_check.h"
#include "gpu/device_guard.h"
#include "gpu/device_runtime.h"

namespace collective::internal {
namespace {

// The device the call's buffers are on (memory_kind.cc made sure send and
// recv agree); the current device for managed memory that names none.
int device_of(const Request& request, int rank) {
  const void* buffer = request.kind == CollectiveKind::kBroadcast ? request.recv : request.send;
  const gpu::PointerLocation location = gpu::locate(buffer);
  if (location.on_device && location.device >= 0) return location.device;
  int device = 0;
  gpu::check_cuda(cudaGetDevice(&device), "cudaGetDevice", request.label(), rank);
  return device;
}

// One NCCL collective over all ranks of the communicator.
void run_flat(const Request& request, NcclCommunicator& nccl, int rank) {
  const ncclDataType_t type = nccl_data_type(request.type);
  const ncclRedOp_t op = nccl_red_op(request.op);
  ncclComm_t comm = nccl.get();
  cudaStream_t stream = nccl.stream();
  switch (request.kind) {
    case CollectiveKind::kAllReduce:
      nccl.accept(ncclAllReduce(request.send, request.recv, request.count, type, op, comm, stream),
                  "ncclAllReduce", request);
      break;
    case CollectiveKind::kReduceScatter:
      nccl.accept(
          ncclReduceScatter(request.send, request.recv, request.count, type, op, comm, stream),
          "ncclReduceScatter", request);
      break;
    case CollectiveKind::kAllGather:
      nccl.accept(ncclAllGather(request.send, request.recv, request.count, type, comm, stream),
                  "ncclAllGather", request);
      break;
    case CollectiveKind::kBroadcast:
      nccl.accept(ncclBroadcast(request.recv, request.recv, request.count, type, request.root, comm,
                                stream),
                  "ncclBroadcast", request);
      break;
    case CollectiveKind::kReduce: {
      // NCCL writes recvbuff on the root only; elsewhere recv may be null.
      void* recv = rank == request.root ? request.recv : const_cast<void*>(request.send);
      nccl.accept(
          ncclReduce(request.send, recv, request.count, type, op, request.root, comm, stream),
          "ncclReduce", request);
      break;
    }
    case CollectiveKind::kBarrier:
    case CollectiveKind::kAllToAll:
    case CollectiveKind::kAllToAllV:
    case CollectiveKind::kAllGatherV:
    case CollectiveKind::kReduceScatterV:
    case CollectiveKind::kGather:
    case CollectiveKind::kGatherV:
    case CollectiveKind::kScatter:
    case CollectiveKind::kScatterV:
      throw UnsupportedError(request.label(), rank,
                             "nccl does not implement " + std::string(to_string(request.kind)));
  }
  nccl.synchronize(request, "the NCCL collective");
}

// The hierarchical variant's steps on NCCL and CUDA.
class NcclSteps final : public HierarchicalSteps {
 public:
  NcclSteps(const Request& request, NcclResources& resources, NcclCommunicator& node, int rank)
      : request_(request),
        resources_(resources),
        node_(node),
        rank_(rank),
        type_(nccl_data_type(request.type)) {}

  void local_reduce_scatter(const void* send, void* recv, std::size_t recv_count,
                            ReduceOp op) override {
    node_.accept(ncclReduceScatter(send, recv, recv_count, type_, nccl_red_op(op), node_.get(),
                                   node_.stream()),
                 "ncclReduceScatter (inside the node)", request_);
  }
  void local_all_reduce(const void* send, void* recv, std::size_t count, ReduceOp op) override {
    node_.accept(
        ncclAllReduce(send, recv, count, type_, nccl_red_op(op), node_.get(), node_.stream()),
        "ncclAllReduce (inside the node)", request_);
  }
  void local_all_gather_in_place(void* recv, std::size_t block) override {
    const auto* own = static_cast<std::byte*>(recv) + static_cast<std::size_t>(node_.comm_rank()) *
                                                          block * request_.element_bytes();
    node_.accept(ncclAllGather(own, recv, block, type_, node_.get(), node_.stream()),
                 "ncclAllGather (inside the node)", request_);
  }
  void copy_to_host(void* host, const void* local, std::size_t bytes) override {
    node_.check(cudaMemcpyAsync(host, local, bytes, cudaMemcpyDeviceToHost, node_.stream()),
                "cudaMemcpyAsync (device to host)", request_);
  }
  void copy_from_host(void* local, const void* host, std::size_t bytes) override {
    node_.check(cudaMemcpyAsync(local, host, bytes, cudaMemcpyHostToDevice, node_.stream()),
                "cudaMemcpyAsync (host to device)", request_);
  }
  void wait(const char* what) override { node_.synchronize(request_, what); }
  std::byte* staging(std::size_t bytes) override { return resources_.staging(bytes, request_); }

  void cross_all_reduce(void* host, std::size_t count, DataType type, ReduceOp op) override {
    CommunicatorState& across = resources_.across_nodes(request_);
    if (Clock::now() >= request_.deadline) {
      throw TimeoutError(
          request_.label(), rank_,
          "no time left for the all_reduce across nodes of the hierarchical variant");
    }
    // The ring itself (not COLLECTIVE_ALGORITHM, which could
    // redirect this host step to nccl): bandwidth-optimal for the large
    // shards the hierarchical variant exists for. It runs as a step of this
    // call, under its deadline and sequence number (the call was checked
    // across ranks already); a failure fails, and poisons, this call.
    Request step = request_;
    step.send = host;
    step.recv = host;
    step.count = count;
    step.type = type;
    step.op = op;
    step.requested = Algorithm::kRing;
    step.forced = true;
    step.memory = MemoryKind::kHost;
    step.carried_check = nullptr;
    const std::string context = "the all_reduce across nodes of the hierarchical variant: ";
    try {
      kRingAlgorithm.run(step, across);
    } catch (const TimeoutError& error) {
      throw TimeoutError(request_.label(), rank_, context + error.what());
    } catch (const CommunicationError& error) {
      throw CommunicationError(request_.label(), rank_, context + error.what());
    }
  }

 private:
  const Request& request_;
  NcclResources& resources_;
  NcclCommunicator& node_;
  int rank_;
  ncclDataType_t type_;
};

}  // namespace

std::span<const CollectiveKind> NcclAlgorithm::serves() const {
  static constexpr std::array kServed = {CollectiveKind::kAllReduce, CollectiveKind::kReduceScatter,
                                         CollectiveKind::kAllGather, CollectiveKind::kBroadcast,
                                         CollectiveKind::kReduce};
  return kServed;
}

Support NcclAlgorithm::supports_served(const Request& request,
                                       const CommunicatorState& state) const {
  (void)state;
  if (request.memory != MemoryKind::kDevice) {
    return Support::no(
        "nccl serves CUDA device buffers only, and this call's buffers are host memory");
  }
  if (is_bitwise(request.op)) {
    return Support::no(std::string("nccl has no ") + std::string(to_string(request.op)) +
                       " (NCCL reduces with sum, prod, min, max and avg)");
  }
  if (request.deterministic) {
    // NCCL's reduction order follows its algorithm and protocol (ring,
    // tree, NVLS), which it picks by size and topology.
    return Support::no(
        "nccl cannot be deterministic: NCCL's order of combining ranks depends on "
        "the algorithm and protocol it picks per size");
  }
  return Support::yes();
}

void NcclAlgorithm::run(const Request& request, CommunicatorState& state) const {
  // Counts agree on every rank, so no rank communicates when one has nothing.
  if (request.count == 0) return;
  const int device = device_of(request, state.rank);
  NcclResources& resources = NcclResources::of(state);
  const NcclPlan plan =
      choose_nccl_plan(request.kind, resources.layout(request), hierarchical_mode());
  COLLECTIVE_LOG(kDebug, request.label()
                             << ": nccl on CUDA device " << device << ", " << plan.reason);
  gpu::DeviceGuard guard(device, request.label(), state.rank);
  if (!plan.hierarchical) {
    run_flat(request, resources.all_ranks(device, request), state.rank);
    return;
  }
  NcclSteps steps(request, resources, resources.this_node(device, request), state.rank);
  run_hierarchical_all_reduce(request, resources.layout(request), steps);
}

}  // namespace collective::internal
