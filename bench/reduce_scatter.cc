// reduce_scatter: rank r gets block r of op over all ranks' buffers.
// The size is the whole input (ranks * count elements), as in nccl-tests;
// busbw = algbw * (n-1)/n: each rank sends all but its own block once.
#include <climits>
#include <cstddef>

#include "collective_case.h"

namespace collective::bench {
namespace {

class ReduceScatterCase final : public CollectiveCase {
 public:
  CollectiveKind kind() const override { return CollectiveKind::kReduceScatter; }

  double bus_factor(int ranks) const override { return static_cast<double>(ranks - 1) / ranks; }

  Geometry geometry(std::size_t bytes, std::size_t element_bytes, int ranks) const override {
    const auto n = static_cast<std::size_t>(ranks);
    const std::size_t count = bytes / (element_bytes * n);
    return Geometry{count, count * n, count, count * n * element_bytes};
  }

  void place(CallArgs& args, const Geometry& geometry) const override {
    (void)geometry;
    args.send = args.send_base;
    const std::size_t own = static_cast<std::size_t>(args.rank) * args.count;
    args.recv = args.in_place
                    ? static_cast<std::byte*>(args.send_base) + own * element_size(args.type)
                    : args.recv_base;
  }

  Region input(const CallArgs& args) const override {
    return Region{args.send_base, args.count * static_cast<std::size_t>(args.ranks), 0};
  }

  Region result(const CallArgs& args, Implementation implementation) const override {
    const std::uint64_t own = static_cast<std::uint64_t>(args.rank) * args.count;
    // MPI's in-place form leaves block r at the start of the buffer.
    if (implementation == Implementation::kMpi && args.in_place) {
      return Region{args.send_base, args.count, own};
    }
    return Region{args.recv, args.count, own};
  }

  void run(Communicator& communicator, const CallArgs& args) const override {
    ReduceScatterOptions options;
    options.algorithm = args.algorithm;
    options.op = args.op;
    options.deterministic = args.deterministic;
    communicator.reduce_scatter(args.send, args.recv, args.count, args.type, options);
  }

  void run_mpi(const MpiBaseline& mpi, const CallArgs& args) const override {
    const int count = static_cast<int>(args.count);
    void* target = args.in_place ? args.send_base : args.recv;
    const void* source = args.in_place ? MPI_IN_PLACE : args.send;
    mpi.check(MPI_Reduce_scatter_block(source, target, count, MpiBaseline::datatype(args.type),
                                       mpi.op(args.type, args.op), mpi.comm()),
              "MPI_Reduce_scatter_block");
    mpi.finish_mean(target, args.count, args.type, args.op);
  }

  const char* mpi_limit(const Geometry& geometry) const override {
    if (geometry.count <= static_cast<std::size_t>(INT_MAX)) return nullptr;
    return "MPI_Reduce_scatter_block takes an int count per rank; the block exceeds 2^31-1 "
           "elements";
  }
};

}  // namespace

std::unique_ptr<CollectiveCase> make_reduce_scatter_case() {
  return std::make_unique<ReduceScatterCase>();
}

}  // namespace collective::bench
