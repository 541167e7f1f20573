// One description per collective, shared by collective_bench and the tests'
// sweep: how a count maps to each rank's send and receive elements (and a
// byte size to a count, as nccl-tests rounds it), where inputs and results
// lie in the out-of-place and in-place forms, the inputs, the result every
// element must hold, nccl-tests' name and bus-bandwidth factor, and the
// call through libcollective, blocking and started. One small file per collective
// (all_reduce_case.cc, ...) implements it. The MPI counterpart of each call
// is the bench's (bench/mpi_counterparts.h): the tests never time MPI.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "case_names.h"
#include "collective/communicator.h"
#include "value_pattern.h"

namespace collective::cases {

// Who a call's geometry is for: the rank count, this rank, and for the
// collectives with per-rank counts (the v-variants) how many times the
// base count rank 0 contributes (the others contribute the base count;
// 0: rank 0 contributes nothing).
struct Shape {
  int ranks = 1;
  int rank = 0;
  std::size_t uneven = 1;
};

// Element counts of one call on one rank.
struct Geometry {
  std::size_t count = 0;          // the `count` argument of the call
  std::size_t send_elements = 0;  // elements in the send buffer
  std::size_t recv_elements = 0;  // elements in the recv buffer
  std::size_t bytes = 0;          // the size a bench row reports
};

// One call's arguments inside two caller-owned buffers of at least the
// geometry's send and recv elements.
struct CallArgs {
  void* send_base = nullptr;  // start of the send buffer
  void* recv_base = nullptr;  // start of the recv buffer
  const void* send = nullptr;
  void* recv = nullptr;
  std::size_t count = 0;
  DataType type = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  int root = 0;
  Algorithm algorithm = Algorithm::kAuto;
  bool deterministic = false;  // the reducing collectives' option
  bool in_place = false;
  int rank = 0;
  int ranks = 1;
  std::size_t uneven = 1;  // Shape::uneven
  // The v-variants' counts and displacements (elements), set by place().
  std::vector<std::size_t> send_counts;
  std::vector<std::size_t> send_displacements;
  std::vector<std::size_t> recv_counts;
  std::vector<std::size_t> recv_displacements;

  Shape shape() const { return Shape{ranks, rank, uneven}; }
};

// The address of element `index` of a buffer of `type`.
inline std::byte* element_at(void* base, std::size_t index, DataType type) {
  return static_cast<std::byte*>(base) + index * element_size(type);
}

class CollectiveCase {
 public:
  virtual ~CollectiveCase() = default;

  virtual CollectiveKind kind() const = 0;
  // The rest of what describes a collective is the library's one table
  // (collective/in_tree/collectives.h): its name, whether it reduces or
  // has a root, nccl-tests' name and bus-bandwidth factor.
  std::string_view name() const;
  // nccl-tests' name (-C allreduce), or the library's where nccl-tests has
  // none (all_to_all_v).
  std::string_view nccl_tests_name() const;
  bool reduces() const;
  bool rooted() const;
  // Whether counts differ by rank (Shape::uneven applies).
  virtual bool per_rank_counts() const { return false; }

  // nccl-tests' factor from algorithm bandwidth to bus bandwidth.
  double bus_factor(int ranks) const;
  // The buffers of a call with this count on shape.rank; `bytes` is the
  // same on every rank.
  virtual Geometry geometry(std::size_t count, std::size_t element_bytes,
                            const Shape& shape) const = 0;
  // The call whose reported size is `bytes`, rounded down as nccl-tests
  // rounds it (to whole elements, and where the size covers every rank's
  // block to whole blocks).
  Geometry geometry_for_bytes(std::size_t bytes, std::size_t element_bytes,
                              const Shape& shape) const;
  // broadcast has one buffer: only its in-place form exists.
  virtual bool has_out_of_place() const { return true; }
  virtual bool has_in_place() const { return true; }

  // Fills send/recv (and the v-variants' counts and displacements) from
  // the bases for the placement (args.in_place).
  virtual void place(CallArgs& args) const = 0;
  // Where this rank's inputs live (none on broadcast's non-roots).
  virtual std::vector<Region> inputs(const CallArgs& args) const = 0;
  // Where this rank's result lives after the call and what it must hold
  // (no parts on reduce's non-roots).
  virtual ResultLayout result(const CallArgs& args) const = 0;
  // The rank that holds a result on every rank count (for --inject-error).
  virtual int result_holder(const CallArgs& args) const { return args.ranks - 1; }

  // The inputs that make this collective's results exact.
  ValuePattern pattern(const CallArgs& args) const;
  // Every element of this rank's result (of `layout`, where another
  // implementation leaves it elsewhere).
  WrongElements check(const CallArgs& args) const;
  WrongElements check(const CallArgs& args, const ResultLayout& layout) const;

  // The call through libcollective.
  virtual void run(Communicator& communicator, const CallArgs& args) const = 0;
  // The same call started through its `_async` form (collective_bench
  // --nonblocking): the buffers belong to it until the Work is waited for.
  virtual Work start(Communicator& communicator, const CallArgs& args) const = 0;
  // The same call as a persistent plan (its `_init` form), made once and
  // started many times (plan.h).
  virtual Plan prepare(Communicator& communicator, const CallArgs& args) const = 0;

 protected:
  // How many elements of the reported size one unit of `count` stands for.
  virtual std::size_t elements_per_count(const Shape& shape) const {
    (void)shape;
    return 1;
  }
};

// The case of `kind`; std::invalid_argument for a kind without one.
std::unique_ptr<CollectiveCase> make_collective_case(CollectiveKind kind);

std::unique_ptr<CollectiveCase> make_all_reduce_case();
std::unique_ptr<CollectiveCase> make_reduce_scatter_case();
std::unique_ptr<CollectiveCase> make_all_gather_case();
std::unique_ptr<CollectiveCase> make_broadcast_case();
std::unique_ptr<CollectiveCase> make_reduce_case();
std::unique_ptr<CollectiveCase> make_all_to_all_case();
std::unique_ptr<CollectiveCase> make_all_to_all_v_case();
std::unique_ptr<CollectiveCase> make_all_gather_v_case();
std::unique_ptr<CollectiveCase> make_reduce_scatter_v_case();
std::unique_ptr<CollectiveCase> make_gather_case();
std::unique_ptr<CollectiveCase> make_gather_v_case();
std::unique_ptr<CollectiveCase> make_scatter_case();
std::unique_ptr<CollectiveCase> make_scatter_v_case();

}  // namespace collective::cases
