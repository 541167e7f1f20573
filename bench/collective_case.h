// What the driver needs to know about one collective: how a byte size maps
// to an element count and buffers, where inputs and results live for the
// out-of-place and in-place forms, its bus-bandwidth factor, and how to run
// it through libcollective and through MPI. One small file per collective
// (all_reduce.cc, ...) implements it; the driver (driver.cc) is shared.
#pragma once

#include <cstddef>
#include <memory>

#include "collective/communicator.h"
#include "mpi_baseline.h"
#include "value_pattern.h"

namespace collective::bench {

// Element counts for one size, as nccl-tests computes them: the size is
// rounded down to whole elements (and, for reduce_scatter and all_gather,
// to whole blocks of `ranks` elements).
struct Geometry {
  std::size_t count = 0;          // the `count` argument of the call
  std::size_t send_elements = 0;  // elements in the send buffer
  std::size_t recv_elements = 0;  // elements in the recv buffer
  std::size_t bytes = 0;          // the size the row reports
};

// One call's arguments inside the driver's two buffers.
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

enum class Implementation { kLibrary, kMpi };

class CollectiveCase {
 public:
  virtual ~CollectiveCase() = default;

  virtual CollectiveKind kind() const = 0;
  bool reduces() const;
  bool rooted() const;

  // nccl-tests' factor from algorithm bandwidth to bus bandwidth.
  virtual double bus_factor(int ranks) const = 0;
  virtual Geometry geometry(std::size_t bytes, std::size_t element_bytes, int ranks) const = 0;
  // broadcast has one buffer: only its in-place form exists.
  virtual bool has_out_of_place() const { return true; }

  // Fills send/recv from the bases for the placement (args.in_place).
  virtual void place(CallArgs& args, const Geometry& geometry) const = 0;
  // Where this rank's input lives (empty on broadcast's non-roots).
  virtual Region input(const CallArgs& args) const = 0;
  // Where this rank's result lives after `implementation` ran (empty on
  // reduce's non-roots). MPI's in-place reduce_scatter leaves it elsewhere.
  virtual Region result(const CallArgs& args, Implementation implementation) const = 0;
  // The inputs that make this collective's results exact.
  ValuePattern pattern(const CallArgs& args) const;
  // Counts the wrong elements of this rank's result.
  WrongElements check(const CallArgs& args, Implementation implementation) const;

  virtual void run(Communicator& communicator, const CallArgs& args) const = 0;
  virtual void run_mpi(const MpiBaseline& mpi, const CallArgs& args) const = 0;
  // Whether MPI's int counts can express this call; else the reason.
  virtual const char* mpi_limit(const Geometry& geometry) const;
};

std::unique_ptr<CollectiveCase> make_all_reduce_case();
std::unique_ptr<CollectiveCase> make_reduce_scatter_case();
std::unique_ptr<CollectiveCase> make_all_gather_case();
std::unique_ptr<CollectiveCase> make_broadcast_case();
std::unique_ptr<CollectiveCase> make_reduce_case();
std::unique_ptr<CollectiveCase> make_collective_case(CollectiveKind kind);

}  // namespace collective::bench
