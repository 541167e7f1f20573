// One description per collective, shared by collective_bench and the tests'
// sweep: how a count maps to each rank's send and receive elements (and a
// byte size to a count, as nccl-tests rounds it), where inputs and results
// lie in the out-of-place and in-place forms, the inputs, the result every
// element must hold, nccl-tests' name and bus-bandwidth factor, and the
// call through libcollective. One small file per collective
// (all_reduce_case.cc, ...) implements it. The MPI counterpart of each call
// is the bench's (bench/mpi_counterparts.h): the tests never time MPI.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "collective/communicator.h"
#include "value_pattern.h"

namespace collective::cases {

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
};

class CollectiveCase {
 public:
  virtual ~CollectiveCase() = default;

  virtual CollectiveKind kind() const = 0;
  // nccl-tests' name (-C allreduce); the library's (all_reduce) is to_string(kind()).
  virtual std::string_view nccl_tests_name() const = 0;
  virtual bool reduces() const = 0;
  virtual bool rooted() const = 0;

  // nccl-tests' factor from algorithm bandwidth to bus bandwidth.
  virtual double bus_factor(int ranks) const = 0;
  // The buffers of a call with this count.
  virtual Geometry geometry(std::size_t count, std::size_t element_bytes, int ranks) const = 0;
  // The call whose reported size is `bytes`, rounded down as nccl-tests
  // rounds it (to whole elements, and for reduce_scatter and all_gather to
  // whole blocks of `ranks` elements).
  Geometry geometry_for_bytes(std::size_t bytes, std::size_t element_bytes, int ranks) const;
  // broadcast has one buffer: only its in-place form exists.
  virtual bool has_out_of_place() const { return true; }

  // Fills send/recv from the bases for the placement (args.in_place).
  virtual void place(CallArgs& args) const = 0;
  // Where this rank's input lives (empty on broadcast's non-roots).
  virtual Region input(const CallArgs& args) const = 0;
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

 protected:
  // How many elements of the reported size one unit of `count` stands for.
  virtual std::size_t elements_per_count(int ranks) const {
    (void)ranks;
    return 1;
  }
};

// The collectives with a case, in the order "-C all" runs them.
std::span<const CollectiveKind> kinds_with_cases();
// The case of `kind`; std::invalid_argument for a kind without one.
std::unique_ptr<CollectiveCase> make_collective_case(CollectiveKind kind);
// A kind by nccl-tests' name (allreduce) or the library's (all_reduce).
std::optional<CollectiveKind> parse_case_name(std::string_view name);

std::unique_ptr<CollectiveCase> make_all_reduce_case();
std::unique_ptr<CollectiveCase> make_reduce_scatter_case();
std::unique_ptr<CollectiveCase> make_all_gather_case();
std::unique_ptr<CollectiveCase> make_broadcast_case();
std::unique_ptr<CollectiveCase> make_reduce_case();

}  // namespace collective::cases
