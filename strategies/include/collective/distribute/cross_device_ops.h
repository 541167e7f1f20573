// Cross-device ops: how a strategy reduces the values of its replicas
// (tf.distribute.CrossDeviceOps and its implementations).
//
// The local replicas of a worker are threads of one process sharing host
// memory, so the in-process step reduces their buffers element by element;
// the implementations differ in summation order and packing, exactly the
// properties tf.distribute's classes differ in on a host:
//
//   ReductionToOneDevice       replica 0's value, then += replica 1, 2, ...
//                              in order; batch_reduce reduces tensor by tensor
//   HierarchicalCopyAllReduce  a pairwise tree ((v0+v1)+(v2+v3))+...;
//                              batch_reduce concatenates and splits into
//                              num_packs packs
//   NcclAllReduce              NCCL serves GPU memory only; on host tensors
//                              it reduces in ring order (chunk c starts at
//                              replica c+1) and says so once in the log;
//                              packs like HierarchicalCopyAllReduce
//   CollectiveAllReduce        MultiWorkerMirroredStrategy's: a local step
//                              (one of the above) then one cross-worker
//                              all-reduce per pack through a Communicator;
//                              packs by CommunicationOptions::bytes_per_pack
//                              (0: tensors up to 4 KiB in packs up to
//                              64 KiB, larger ones alone)
//
// Only a pack that joins several tensors across workers is copied into one
// buffer (the packing copy) and back out; a tensor that is a pack of its own,
// part of one, or any pack of an in-process reduction, is reduced straight
// from the replicas' buffers into its result.
//
// ReduceOp::kMean sums and divides once by the number of values reduced
// (all replicas of all workers). float16 and bfloat16 accumulate in float32
// and round once per step. Every call validates first: at least one value,
// the same dtype and shape on every replica.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "collective/communicator.h"
#include "collective/distribute/communication_options.h"
#include "collective/distribute/tensor.h"
#include "collective/distribute/values.h"
#include "collective/types.h"

namespace collective::distribute {

namespace detail {
class WorkerCalls;
struct WorkerCallsAccess;
}  // namespace detail

// A contiguous run of elements of one dtype's concatenated buffer that is
// reduced as one unit (one all-reduce across workers).
struct PackRange {
  std::size_t first_element = 0;
  std::size_t num_elements = 0;
};

class CrossDeviceOps {
 public:
  virtual ~CrossDeviceOps();
  CrossDeviceOps(const CrossDeviceOps&) = delete;
  CrossDeviceOps& operator=(const CrossDeviceOps&) = delete;

  // "ReductionToOneDevice", ...
  virtual std::string_view name() const = 0;

  // The reduction of one value over all replicas.
  Tensor reduce(ReduceOp op, const PerReplica<Tensor>& per_replica_value);

  // The reductions of several values (results in the same order). Values of
  // one dtype are concatenated and reduced in packs (see each class).
  std::vector<Tensor> batch_reduce(ReduceOp op,
                                   const std::vector<PerReplica<Tensor>>& per_replica_values);

  // Internal (the strategies' reductions and replica collectives): as
  // batch_reduce, on tensors the caller keeps, values[v][r] being local
  // replica r's tensor of value v. Nothing is copied in; a tensor that is a
  // pack of its own (or part of one) is reduced straight from the replicas'
  // buffers into its result.
  std::vector<Tensor> batch_reduce_views(ReduceOp op,
                                         const std::vector<std::vector<const Tensor*>>& values);

  // One copy of value per local replica.
  Mirrored<Tensor> broadcast(const Tensor& value, std::size_t num_local_replicas) const;

  // Packs reduced since construction (each reduce is one pack). Lets tests
  // and benchmarks see the packing.
  std::uint64_t packs_reduced() const { return packs_reduced_.load(); }
  // The most cross-worker pack reductions one batch_reduce has had in
  // flight at once (1 when each pack waits for its reduction; docs/
  // strategies.md, "Packs in flight").
  std::uint64_t most_packs_in_flight() const { return most_packs_in_flight_.load(); }

  // The in-process step: output[i] = op over inputs[k][i], in this class's
  // summation order. For kMean it sums (the caller divides once at the end).
  // Buffers hold count elements of type; output may alias none of the inputs.
  virtual void reduce_replica_buffers(ReduceOp op, DataType type,
                                      std::span<const void* const> inputs, void* output,
                                      std::size_t count) = 0;

  // Number of workers whose replicas take part (1 for in-process ops).
  virtual int num_workers() const { return 1; }

 protected:
  CrossDeviceOps() = default;

  // How one dtype's concatenated buffer is split into packs. tensor_sizes
  // are the element counts of the tensors in order.
  virtual std::vector<PackRange> plan_packs(const std::vector<std::size_t>& tensor_sizes,
                                            std::size_t element_size) const = 0;

  // Called once per pack after the in-process step, with the partial
  // result (for kMean the local sum). Cross-worker ops all-reduce it here.
  virtual void reduce_pack_across_workers(ReduceOp op, DataType type, void* buffer,
                                          std::size_t count);

  // A pack of a single local replica: output = the reduction of input over
  // the workers (input itself in-process). input may equal output. The
  // default copies and calls reduce_pack_across_workers; cross-worker ops
  // reduce out of place, so the input is read once and never copied.
  virtual void reduce_single_replica_pack(ReduceOp op, DataType type, const void* input,
                                          void* output, std::size_t count);
  // One pack of every local replica's input into `output` (for kMean the
  // sum): the in-process step, then reduce_pack_across_workers. Cross-worker
  // ops with another reduction order replace the pair.
  virtual void reduce_pack(ReduceOp op, DataType type, std::span<const void* const> inputs,
                           void* output, std::size_t count);

  // The packs' cross-worker calls started since the batch began, waited
  // for in the order they started; rethrows the first failure once all of
  // them finished (their buffers may then be freed). In-process ops have none.
  virtual void finish_packs_in_flight() {}
  // Recorded by the ops that keep packs in flight.
  void note_packs_in_flight(std::uint64_t count);

 private:
  // packing_element_size: the caller's dtype's, which plans the packs also
  // when the values are the float32 copies of 16-bit ones.
  std::vector<Tensor> reduce_group(ReduceOp op,
                                   const std::vector<std::vector<const Tensor*>>& values,
                                   const std::vector<std::size_t>& indices,
                                   std::size_t packing_element_size);

  std::atomic<std::uint64_t> packs_reduced_{0};
  std::atomic<std::uint64_t> most_packs_in_flight_{0};
};

class ReductionToOneDevice final : public CrossDeviceOps {
 public:
  ReductionToOneDevice() = default;
  std::string_view name() const override { return "ReductionToOneDevice"; }
  void reduce_replica_buffers(ReduceOp op, DataType type, std::span<const void* const> inputs,
                              void* output, std::size_t count) override;

 protected:
  std::vector<PackRange> plan_packs(const std::vector<std::size_t>& tensor_sizes,
                                    std::size_t element_size) const override;
};

class HierarchicalCopyAllReduce final : public CrossDeviceOps {
 public:
  // num_packs >= 1 (InvalidArgumentError otherwise).
  explicit HierarchicalCopyAllReduce(int num_packs = 1);
  std::string_view name() const override { return "HierarchicalCopyAllReduce"; }
  int num_packs() const { return num_packs_; }
  void reduce_replica_buffers(ReduceOp op, DataType type, std::span<const void* const> inputs,
                              void* output, std::size_t count) override;

 protected:
  std::vector<PackRange> plan_packs(const std::vector<std::size_t>& tensor_sizes,
                                    std::size_t element_size) const override;

 private:
  int num_packs_;
};

class NcclAllReduce final : public CrossDeviceOps {
 public:
  // num_packs >= 1 (InvalidArgumentError otherwise).
  explicit NcclAllReduce(int num_packs = 1);
  std::string_view name() const override { return "NcclAllReduce"; }
  int num_packs() const { return num_packs_; }
  void reduce_replica_buffers(ReduceOp op, DataType type, std::span<const void* const> inputs,
                              void* output, std::size_t count) override;

 protected:
  std::vector<PackRange> plan_packs(const std::vector<std::size_t>& tensor_sizes,
                                    std::size_t element_size) const override;

 private:
  int num_packs_;
  std::once_flag host_fallback_logged_;
};

// The local step, then the cross-worker all-reduce of each pack. Only one
// thread at a time may use a Communicator (MPI runs at
// MPI_THREAD_SERIALIZED): every use here holds communicator_mutex. Each
// cross-worker call is tagged with what it is (docs/strategies.md, "Pairing
// of cross-worker calls").
class CollectiveAllReduce final : public CrossDeviceOps {
 public:
  // The packing rule when CommunicationOptions::bytes_per_pack is 0,
  // measured (docs/performance.md, "batch_reduce against single
  // reductions"): packing saves a call's fixed cost per tensor (about 1-2 us
  // at 2 ranks) but costs two copies of its bytes. Tensors of up to 4 KiB
  // are packed, in packs of up to 64 KiB (16 x 4 KiB: 1.8-2.7x faster than
  // single calls); an 8 KiB tensor already lost (0.77x in 64 KiB packs), so
  // larger tensors go alone, without the copies.
  static constexpr std::size_t kDefaultLargestPackedTensor = std::size_t{4} << 10;
  static constexpr std::size_t kDefaultBytesPerPack = std::size_t{64} << 10;

  CollectiveAllReduce(Communicator communicator, CommunicationOptions options,
                      std::unique_ptr<CrossDeviceOps> local_ops,
                      std::shared_ptr<std::mutex> communicator_mutex);
  std::string_view name() const override { return "CollectiveAllReduce"; }
  int num_workers() const override;
  const CommunicationOptions& options() const { return options_; }
  CrossDeviceOps& local_ops() { return *local_ops_; }
  void reduce_replica_buffers(ReduceOp op, DataType type, std::span<const void* const> inputs,
                              void* output, std::size_t count) override;

 protected:
  std::vector<PackRange> plan_packs(const std::vector<std::size_t>& tensor_sizes,
                                    std::size_t element_size) const override;
  void reduce_pack_across_workers(ReduceOp op, DataType type, void* buffer,
                                  std::size_t count) override;
  void reduce_single_replica_pack(ReduceOp op, DataType type, const void* input, void* output,
                                  std::size_t count) override;
  void reduce_pack(ReduceOp op, DataType type, std::span<const void* const> inputs, void* output,
                   std::size_t count) override;
  void finish_packs_in_flight() override;

 private:
  void all_reduce_across_workers(ReduceOp op, DataType type, const void* input, void* output,
                                 std::size_t count);
  // CommunicationOptions::deterministic with several local replicas and
  // workers: every replica's pack gathered, reduced in global order.
  void gather_and_reduce_in_order(ReduceOp op, DataType type, std::span<const void* const> inputs,
                                  void* output, std::size_t count);

  friend struct detail::WorkerCallsAccess;

  Communicator communicator_;
  CommunicationOptions options_;
  std::unique_ptr<CrossDeviceOps> local_ops_;
  std::shared_ptr<detail::WorkerCalls> worker_calls_;
};

}  // namespace collective::distribute
